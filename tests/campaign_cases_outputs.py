"""Cases of reliability-2026-11.md that the outputs tests cover: names in YAML and CSV outputs,
rightsize's options and files, and the recommendations CSV read back by whatif."""

_RECS = "test_outputs_recommendations.py::"
_CELL = _RECS + "test_bad_recommended_cell_is_one_line_naming_it"
_UNREADABLE = _RECS + "test_unreadable_recommendations_are_one_line"
_MISSING_OR_TWICE = _RECS + "test_missing_column_and_duplicate_workload_are_refused"
_WALK = "test_outputs_csv.py::test_every_csv_of_every_command_is_formula_safe"
_RIGHTSIZE_OPTIONS = "test_outputs_cli_refusals.py::test_rightsize_options_are_refused_in_one_line"

CASES: dict[int, str] = {
    60: _RIGHTSIZE_OPTIONS,
    61: _RIGHTSIZE_OPTIONS,
    63: _WALK,
    64: "test_outputs_yaml.py::test_rightsize_yaml_from_hostile_names_holds_only_the_patches",
    65: "test_outputs_yaml.py::test_rightsize_yaml_from_hostile_names_holds_only_the_patches",
    66: "test_outputs_yaml.py::test_monthly_patches_from_hostile_names_hold_only_the_patches",
    67: "test_outputs_cli_refusals.py::test_rightsize_out_refused_by_the_system_is_one_line",
    68: "test_outputs_cli_refusals.py::test_rightsize_out_symlink_is_replaced_not_written_through",
    70: _CELL,
    71: _CELL,
    72: _CELL,
    73: _CELL,
    74: _RECS + "test_empty_or_nan_keeps_the_current_request",
    75: _MISSING_OR_TWICE,
    76: _RECS + "test_unknown_hostile_workloads_are_ignored_and_never_printed",
    77: _MISSING_OR_TWICE,
    78: _UNREADABLE,
    79: _UNREADABLE,
    80: _RECS + "test_no_dtype_warning_on_mixed_columns",
    81: "test_outputs_cli_refusals.py::test_whatif_recommendations_option_combinations_are_refused",
    82: _RECS + "test_rightsize_csv_of_hostile_names_round_trips",
    91: _WALK,
    101: _WALK,
    102: _WALK,
}
