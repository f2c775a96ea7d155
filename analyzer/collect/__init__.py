"""Collect: the query profile (``queries/*.promql``) run through ``analyzer.prom`` → snapshot tables.

``run`` (``collect``: fetch, build, coverage), ``usage`` (nodes and node usage), ``pod_usage``,
``pods``, ``constraints`` (taints, tolerations, nodeSelectors), ``common`` (label and window
helpers), ``check`` (the pre-flight behind ``analyzer check``). Imports ``prom`` and ``core``.
"""
