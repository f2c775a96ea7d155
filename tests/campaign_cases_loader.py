"""Cases of reliability-2026-11.md that structured-input (loader) tests cover."""

_CLI = "test_structured_cli.py::"

CASES: dict[int, str] = {
    # prices
    36: _CLI + "test_prices_faults_end_in_one_line",
    37: _CLI + "test_prices_faults_end_in_one_line",
    38: _CLI + "test_prices_faults_end_in_one_line",
    39: _CLI + "test_prices_faults_end_in_one_line",
    40: _CLI + "test_prices_faults_end_in_one_line",
    41: _CLI + "test_prices_faults_end_in_one_line",
    42: _CLI + "test_hostile_currency_is_escaped_in_the_page_and_the_csv",
    43: _CLI + "test_prices_not_utf8_or_a_folder",
    44: _CLI + "test_prices_faults_end_in_one_line",
    45: _CLI + "test_prices_faults_end_in_one_line",
    # whatif --search grid
    87: _CLI + "test_search_grid_faults_end_in_one_line",
    88: _CLI + "test_search_grid_faults_end_in_one_line",
    89: _CLI + "test_search_grid_faults_end_in_one_line",
    # collect --kube-objects
    94: _CLI + "test_a_large_kubectl_list_is_read_within_the_bounds",
    95: _CLI + "test_kube_objects_faults_end_in_one_line",
    96: _CLI + "test_kube_objects_faults_end_in_one_line",
    97: _CLI + "test_kube_objects_faults_end_in_one_line",
    98: _CLI + "test_kube_objects_faults_end_in_one_line",
    99: _CLI + "test_kube_objects_faults_end_in_one_line",
    100: _CLI + "test_kube_objects_faults_end_in_one_line",
    # score scenarios
    104: "test_sched_taint_preemption.py::test_post_filter_through_cli",
    105: "test_sched_taint_preemption.py::test_post_filter_statuses_are_checked",
    106: _CLI + "test_malformed_post_filter_is_one_line",
    107: _CLI + "test_scenario_bomb_in_an_ignored_object_and_a_label",
    108: _CLI + "test_scenario_deep_or_binary",
    109: _CLI + "test_scenario_deep_or_binary",
    # the config file
    127: _CLI + "test_config_sections_of_the_new_commands_are_applied",
    128: _CLI + "test_config_keys_nothing_reads_and_bad_thresholds",
    129: _CLI + "test_config_keys_nothing_reads_and_bad_thresholds",
    130: _CLI + "test_config_keys_nothing_reads_and_bad_thresholds",
    131: _CLI + "test_config_bomb_and_depth",
    132: _CLI + "test_config_bomb_and_depth",
    133: _CLI + "test_secrets_in_the_new_config_sections_are_never_printed",
}
