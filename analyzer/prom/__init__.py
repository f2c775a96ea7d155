"""Everything that talks to a Prometheus-compatible HTTP API (the only network code in analyzer).

- ``settings``: ``PromSettings`` (URL, auth from files/env, TLS, headers, timeout, parallelism)
- ``client``: ``PromClient`` (``prometheus_api_client`` session underneath, raw JSON → numpy)
- ``profile``: the query profile (``queries/*.promql``)
- ``fetch``: chunked, parallel execution of the profile over a time grid
- ``check``: the pre-flight behind ``analyzer check``
"""

from analyzer.prom.client import PromClient, Series
from analyzer.prom.fetch import FetchPlan, QueryResult, TimeGrid, make_grid, run_profile
from analyzer.prom.profile import QuerySpec, load_profile
from analyzer.prom.settings import PromSettings, public_url

__all__ = [
    "FetchPlan",
    "PromClient",
    "PromSettings",
    "QueryResult",
    "QuerySpec",
    "Series",
    "TimeGrid",
    "load_profile",
    "make_grid",
    "public_url",
    "run_profile",
]
