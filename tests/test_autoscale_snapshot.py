"""``analyzer autoscale``: what cluster-autoscaler's snapshot holds of a drained node, by version
(``analyzer/autoscaler/removal_snapshot.py``), seen through PodTopologySpread.

The scenarios are in tests/data/autoscaler/snapshot/, each with its reasoning in its header:

- ``honor``: upstream's TestSimulateNodeRemoval "node removable with nodeTaintsPolicy Honor"
  (simulator/cluster_test.go); from 1.36 the candidate is a ghost tainted ToBeDeleted, which
  Honor leaves out of the domains; 1.33–1.35 take it out of the snapshot; up to 1.32 it stays, a
  domain holding 0 pods, so its pod fits nowhere (skew 2).
- ``phantom_zone``: upstream's "node unremovable due to phantom zone": with the default policy
  (Ignore) the 1.36 ghost still counts as a domain; 1.33–1.35 removed the node, so its pod fit.
- ``removed_node_domain``: a node found removable earlier in the pass leaves the snapshot from
  1.33 (the fork committed), so its zone stops counting for the later candidates.
- ``own_zone``: the candidate is its zone's only node: 1.33–1.35 drop the zone while its pods are
  placed; 1.36's ghost keeps it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from autoscale_cases import by_name, run

DATA = Path(__file__).parent / "data" / "autoscaler" / "snapshot"

# (scenario, kubernetesVersion, the nodes removed now, a node's expected reason)
CASES = [
    ("honor", "1.36", ["topo-n1"], ("topo-n2", "NoPlaceToMovePods")),
    ("honor", "1.35", ["topo-n1"], ("topo-n2", "NoPlaceToMovePods")),
    ("honor", "1.32", [], ("topo-n1", "NoPlaceToMovePods")),
    ("phantom_zone", "1.36", [], ("topo-n1", "NoPlaceToMovePods")),
    ("phantom_zone", "1.35", ["topo-n1"], ("topo-n1", None)),  # the domain gone with the node
    ("phantom_zone", "1.32", [], ("topo-n1", "NoPlaceToMovePods")),
    ("removed_node_domain", "1.36", ["z1", "a2"], ("a2", None)),
    ("removed_node_domain", "1.33", ["z1", "a2"], ("a2", None)),
    ("removed_node_domain", "1.32", ["z1"], ("a2", "NoPlaceToMovePods")),
    ("own_zone", "1.35", ["b1"], ("b1", None)),
    ("own_zone", "1.33", ["b1"], ("b1", None)),
    ("own_zone", "1.36", [], ("b1", "NoPlaceToMovePods")),
]


@pytest.mark.parametrize(("name", "version", "removed", "reason"), CASES)
def test_the_snapshot_holds_what_the_version_keeps(
    tmp_path: Path, name: str, version: str, removed: list[str], reason: tuple[str, Any]
) -> None:
    scenario = yaml.safe_load((DATA / f"{name}.yaml").read_text(encoding="utf-8"))
    result = run(tmp_path, {**scenario, "kubernetesVersion": version})
    assert result["removed"] == removed
    node, why = reason
    assert by_name(result)[node]["unremovableReason"] == why
