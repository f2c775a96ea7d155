"""Everything that talks to a Prometheus-compatible HTTP API (the only network code in analyzer).

- ``settings``: ``PromSettings`` (URL, auth from files/env, TLS, headers, timeout, parallelism)
- ``client``: ``PromClient`` (``prometheus_api_client`` session underneath, raw JSON → numpy);
  ``matrix_text`` and ``series`` parse matrix responses and their label sets
- ``profile``: the query profile (``queries/*.promql``)
- ``fetch``: chunked, parallel execution of the profile over a time grid; ``samples``,
  ``grid_eval`` and ``sample_table`` evaluate raw samples on the grid client-side

The pre-flight behind ``analyzer check`` uses this package from ``analyzer.collect.check``.
"""
