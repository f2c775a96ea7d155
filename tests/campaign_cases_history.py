"""Cases of reliability-2026-11.md that the history store, monthly-output and backfill tests cover.

Value: test file (relative to tests/) "::" test function. A case absent here has no test that
reproduces it yet (see ``NOT_COVERED``, said in the helper's report rather than mapped loosely).
"""

from __future__ import annotations

_FILES = "test_history_files.py::"
_CAMPAIGN = "test_history_campaign.py::"
_CLUSTER = "test_history_cluster.py::"
_BACKFILL = "test_history_backfill.py::"

CASES: dict[int, str] = {
    1: _FILES + "test_a_damaged_pools_day_is_one_line_naming_it",
    2: _FILES + "test_a_damaged_pools_day_is_one_line_naming_it",
    3: _FILES + "test_a_damaged_pools_day_is_one_line_naming_it",
    4: _FILES + "test_scrambled_data_pages_name_the_file_exit_2_one_line",
    5: _CAMPAIGN + "test_a_truncated_workloads_day_stops_rightsize_naming_it",
    6: _FILES + "test_scrambled_data_pages_name_the_file_exit_2_one_line",
    7: _FILES + "test_a_foreign_schema_names_its_missing_columns",
    8: _FILES + "test_text_in_a_number_column_names_file_column_and_type",
    9: "test_history_capacity.py::test_a_newer_schema_is_refused_with_the_fix",
    10: _FILES + "test_versions_folders_and_links",
    11: _FILES + "test_versions_folders_and_links",
    12: "test_monthly.py::test_a_newer_stored_forecast_is_refused_with_the_fix",
    13: _FILES + "test_a_truncated_or_foreign_forecast_is_one_line",
    14: _FILES + "test_a_stored_forecast_of_the_wrong_shape_is_one_line",
    15: _FILES + "test_a_stored_forecast_of_the_wrong_shape_is_one_line",
    16: _FILES + "test_a_forecast_without_history_end_is_scored",
    17: _FILES + "test_versions_folders_and_links",
    18: _FILES + "test_versions_folders_and_links",
    19: _FILES + "test_stray_names_are_ignored_the_basic_form_too",
    20: _FILES + "test_stray_names_are_ignored_the_basic_form_too",
    21: _FILES + "test_rows_of_another_day_name_the_file",
    22: _CAMPAIGN + "test_missing_days_and_a_one_day_month_with_prices",
    23: _CAMPAIGN + "test_out_of_order_and_other_time_zone_backfills_write_the_same_files",
    24: _CLUSTER + "test_another_cluster_is_refused_naming_both_force_or_not",
    25: _CAMPAIGN + "test_missing_days_and_a_one_day_month_with_prices",
    26: "test_monthly.py::test_no_complete_month_says_which_month_to_pass",
    27: "test_monthly.py::test_bad_month_is_one_line_and_exit_2",
    28: _CAMPAIGN + "test_a_month_far_outside_the_history_is_one_line",
    29: _FILES + "test_rows_of_another_day_name_the_file",
    30: _FILES + "test_impossible_quantities_are_refused_naming_the_file",
    31: _FILES + "test_a_zero_row_pools_day_is_one_line",
    32: _CAMPAIGN + "test_a_truncated_present_day_is_skipped_named_on_read_and_remade",
    33: _CAMPAIGN + "test_the_default_until_is_yesterday_in_utc_under_any_tz",
    34: _CAMPAIGN + "test_out_of_order_and_other_time_zone_backfills_write_the_same_files",
    35: _CAMPAIGN + "test_the_review_is_the_same_under_any_time_zone",
    46: _CAMPAIGN + "test_bad_monthly_options_are_refused_before_work",
    47: _CAMPAIGN + "test_a_truncated_scenario_snapshot_is_one_line",
    48: _CAMPAIGN + "test_monthly_out_that_is_a_file_etc_or_a_user_folder",
    49: _CAMPAIGN + "test_unwritable_places_are_refused_before_any_work",
    50: _CAMPAIGN + "test_monthly_out_that_is_a_file_etc_or_a_user_folder",
    51: _CAMPAIGN + "test_monthly_out_that_is_a_file_etc_or_a_user_folder",
    52: _CAMPAIGN + "test_unwritable_places_are_refused_before_any_work",
    53: _CAMPAIGN + "test_monthly_out_a_link_to_an_empty_folder_replaces_the_link",
    56: _CAMPAIGN + "test_sigterm_during_a_review_keeps_the_old_one_whole",
    57: _CAMPAIGN + "test_sigterm_during_a_review_keeps_the_old_one_whole",
    54: _CLUSTER + "test_a_monthly_review_inside_the_nightly_out_keeps_it_usable",
    85: _FILES + "test_whatif_rightsize_history_goes_through_the_same_reader",
    111: _BACKFILL + "test_partial_day_is_written_and_exits_3",
    112: _BACKFILL + "test_unreachable_server_keeps_earlier_days",
    114: _BACKFILL + "test_days_without_data_are_counted_and_exit_3",
    115: _BACKFILL + "test_bad_input_is_one_line_exit_2",
    116: _BACKFILL + "test_bad_input_is_one_line_exit_2",
    117: _BACKFILL + "test_bad_input_is_one_line_exit_2",
    119: _BACKFILL + "test_missing_url_and_foreign_out",
    120: _CAMPAIGN + "test_unwritable_places_are_refused_before_any_work",
    121: _CAMPAIGN + "test_a_signal_during_a_day_s_fetch_leaves_the_days_before_whole",
    122: _CAMPAIGN + "test_a_signal_during_a_day_s_fetch_leaves_the_days_before_whole",
    123: "test_faults_files.py::test_next_report_removes_stale_temp_files_of_its_history",
    126: _CAMPAIGN + "test_two_backfills_into_one_out_at_once",
}

# Owned by this helper, no test reproduces them yet: concurrent monthly runs (55), SIGKILL during
# the monthly folder write (58), missing node usage on some days through a fault proxy (110).
NOT_COVERED = (55, 58, 110)
