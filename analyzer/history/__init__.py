"""The history store: one set of files per report day under ``OUT/history/`` (``store``)."""
