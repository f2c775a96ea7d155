"""Usage: what the scheduler would have read — aggregates, percentiles, NodeMetric, rollups,
thresholds and violations, with Koordinator's semantics. Imports ``core`` only.
"""
