"""``analyzer check``: is this server holding several clusters apart by a label?

A Thanos, Mimir or VictoriaMetrics behind many clusters usually tells them apart by an external
label on every series (``cluster``, ``cluster_id``, ``k8s_cluster``, …). The check looks at the
label names of kube-state-metrics' ``kube_node_info`` in the range; a known cluster label there
with more than one value means a collect without ``--cluster-label`` would mix the clusters'
same-named nodes and pods. The check names the label and its values and says which options
select one cluster (docs/fleet.md).
"""

from __future__ import annotations

from typing import Any

from analyzer.core.text import one_line
from analyzer.prom.client import PromClient

# Most likely first: the names the common stacks use for their external cluster label.
CANDIDATES = ("cluster", "cluster_id", "k8s_cluster", "cluster_name", "kubernetes_cluster",
              "clusterName", "tenant_cluster")  # fmt: skip
INFO = "kube_node_info"
SHOWN_VALUES = 10


def detect(client: PromClient, start: float, end: float) -> dict[str, Any] | None:
    """``{label, values, line}`` of the first candidate label with more than one value on
    ``kube_node_info`` in ``[start, end]``; None when there is none."""
    names = set(client.label_names([INFO], start, end))
    for label in (c for c in CANDIDATES if c in names):
        values = client.label_values(label, [INFO], start, end)
        if len(values) > 1:
            shown = ", ".join(one_line(v, 40) for v in values[:SHOWN_VALUES])
            more = ", …" if len(values) > SHOWN_VALUES else ""
            line = (
                f"{label} ({len(values)} values: {shown}{more}); pass --cluster-label {label} "
                "with --cluster VALUE or --all-clusters, or the clusters mix"
            )
            return {"label": label, "values": values, "line": line}
    return None
