"""The history store: one set of files per report day under ``OUT/history/`` (``store``: node
rollups and summaries; ``capacity``: the versioned pool and workload tables and their readers)."""
