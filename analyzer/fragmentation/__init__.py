"""Fragmentation of free capacity: the generalised FGD ratio, stranded capacity and headroom over
a snapshot or any placement (``measure``), and the FGD paper's cluster measure over per-GPU state.
"""
