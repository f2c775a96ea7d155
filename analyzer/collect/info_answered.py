"""Whether kube-state-metrics answered whole: an empty info series beside its other series.

``kube_pod_info`` and ``kube_node_info`` are what every pod and node row hangs off. When one of
them answers nothing while the same exporter's other series of the range (requests, capacity)
do, the answer is partial (a kube-state-metrics shard down, a Thanos partial response), not an
empty cluster and not bad input: the range has no usable data (``PartialDataError``, exit 3),
and a backfill counts the day without data and goes on.
"""

from __future__ import annotations

from collections.abc import Mapping

from analyzer.core.errors import PartialDataError
from analyzer.prom.fetch import QueryResult

# The info series every pod and node row hangs off, and series of the same exporter that show
# it was running: an empty info answer beside them is a partial answer, not an empty cluster.
_INFO_WITNESSES = {
    "pod_info": ("pod_container_requests", "pod_phase", "pod_created"),
    "node_info": ("node_allocatable", "node_capacity", "node_labels"),
}


def check_info_answered(
    results: Mapping[str, QueryResult], start: str, end: str, source: str
) -> None:
    """``PartialDataError`` when kube_pod_info or kube_node_info answered nothing while other
    kube-state-metrics series of the range did (a KSM shard down, a Thanos partial response):
    without the info series there are no pod or node rows, so the range has no usable data."""
    for info, witnesses in _INFO_WITNESSES.items():
        answer = results.get(info)
        if answer is None or answer.error is not None or answer.series:
            continue
        present = [w for w in witnesses if w in results and results[w].series_count]
        if present:
            metric = f"kube_{info}"
            raise PartialDataError(
                f"kube-state-metrics answered partially between {start} and "
                f"{end} at {source}: {metric} is empty while "
                f"{present[0]} has series (a kube-state-metrics shard down, or a partial "
                "response from the store); nothing written for this range, re-run it once "
                f"{metric} is served ('analyzer check')"
            )
