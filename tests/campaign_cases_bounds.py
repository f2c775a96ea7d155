"""Cases of reliability-2026-11.md that the bounds tests cover (bounded work, partial
kube-state-metrics answers, OS write errors, a closed stdout, options named, chart labels)."""

CASES: dict[int, str] = {
    59: "test_bounds_cli.py::test_file_size_limit_in_the_monthly_folder_names_the_file",
    62: "test_bounds_cli.py::test_huge_counts_are_one_line_naming_the_option",
    69: "test_bounds_cli.py::test_file_size_limit_on_rightsize_out_names_the_file",
    83: "test_bounds_cli.py::test_closed_stdout_exits_141_silently",
    84: "test_bounds_cli.py::test_whatif_rightsize_recipe_errors_name_rightsize",
    86: "test_replay_arrivals.py::test_cli_whatif_arrivals_created",
    90: "test_bounds_cli.py::test_search_grid_too_large_is_refused_at_once",
    92: "test_bounds_cli.py::test_search_refuses_what_it_cannot_do_before_any_replay",
    93: "test_bounds_cli.py::test_search_refuses_what_it_cannot_do_before_any_replay",
    103: "test_bounds_cli.py::test_a_10000_character_pool_name_leaves_stderr_empty",
    113: "test_bounds_partial_ksm.py::test_backfill_counts_the_partial_day_and_writes_the_next",
    118: "test_bounds_cli.py::test_backfill_step_longer_than_the_day_names_step",
    124: "test_bounds_partial_ksm.py::test_backfill_write_refused_names_the_file_and_the_day",
    125: "test_bounds_cli.py::test_real_disk_full_names_the_file",
}
