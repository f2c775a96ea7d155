"""The control plane's versions from ``kubernetes_build_info`` (queries/control_plane_version.promql).

Every Kubernetes component exposes ``kubernetes_build_info{git_version}``. The kube-scheduler's
is the version whose arithmetic a replay should use; the API server's is the next best (the
scheduler is upgraded with it and never runs a newer minor). Both are kept in
``meta.json``'s ``extra["control_plane"]`` as ``{"kube-scheduler": "v1.33.4", "kube-apiserver":
…}``; a component seen with two versions in the range (an upgrade) keeps the newer one, as the
nodes' kubelets do (``scheduling.cluster_version.newer_version``).
"""

from __future__ import annotations

from analyzer.collect.common import window_values
from analyzer.prom.fetch import QueryResult
from analyzer.scheduling.cluster_version import (
    APISERVER,
    SCHEDULER,
    newer_version,
    release_key,
)

QUERY = "control_plane_version"


def component_of(job: str) -> str | None:
    """Which control-plane component a scrape job is (by the names the common charts use)."""
    name = job.lower()
    if "scheduler" in name:
        return SCHEDULER
    if "apiserver" in name:
        return APISERVER
    return None


def control_plane_versions(results: dict[str, QueryResult]) -> dict[str, str]:
    """``{component: git_version}`` of the kube-scheduler and the API server found in the range."""
    found: dict[str, str] = {}
    for value in window_values(results.get(QUERY)):
        component = component_of(str(value.labels.get("job", "")))
        version = str(value.labels.get("git_version", ""))
        if component is None or release_key(version) is None:
            continue
        found[component] = newer_version(found.get(component, ""), version)
    return found
