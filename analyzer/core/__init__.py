"""Shared kernels every stage builds on; imports nothing else of analyzer.

``snapshot`` (the snapshot contract: meta.json + parquet tables), ``quantity`` (Kubernetes
quantities), ``resources`` (effective pod requests), ``durations``, ``columns`` (zero-copy pandas
columns), ``atomic`` (atomic files and folders), ``errors`` (exit codes), ``config`` (the config
file), ``paths`` (bundled queries and templates), ``memory`` (allocator and GC settings).
"""
