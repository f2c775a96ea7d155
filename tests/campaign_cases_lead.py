"""Cases of reliability-2026-11.md that no area's tests covered: concurrent and killed monthly
reviews, and a backfill whose node usage is missing."""

CASES: dict[int, str] = {
    55: "test_campaign_monthly_backfill.py::test_three_monthly_reviews_into_one_out_at_once_leave_one_whole_review",
    58: "test_campaign_monthly_backfill.py::test_sigkill_mid_write_keeps_the_old_review_and_the_next_run_clears_its_temp",
    110: "test_campaign_monthly_backfill.py::test_backfill_of_days_without_node_usage_writes_them_as_partial",
}
