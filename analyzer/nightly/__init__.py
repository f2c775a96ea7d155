"""The nightly job: one day's violations, fragmentation, usage tables and rollups (``run``,
``tables``), ready for the report and the history store."""
