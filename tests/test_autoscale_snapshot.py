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

The rules came in 1.33 and 1.36 and were backported (``analyzer.autoscaler.release``): the
candidate out of the snapshot to 1.32.3, the ghost to 1.33.5, 1.34.4 and 1.35.1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from autoscale_cases import by_name, run

DATA = Path(__file__).parent / "data" / "autoscaler" / "snapshot"

# each scenario's answer under each set of rules (``removal_snapshot.rules_for``): the ghost
# (1.36, and 1.33.5+, 1.34.4+, 1.35.1+), the candidate out of the snapshot (1.33, and 1.32.3+),
# neither (up to 1.32.2)
GHOST, GONE, NONE = "ghost", "gone", "none"
ANSWERS: dict[tuple[str, str], tuple[list[str], tuple[str, Any]]] = {
    ("honor", GHOST): (["topo-n1"], ("topo-n2", "NoPlaceToMovePods")),
    ("honor", GONE): (["topo-n1"], ("topo-n2", "NoPlaceToMovePods")),
    ("honor", NONE): ([], ("topo-n1", "NoPlaceToMovePods")),
    ("phantom_zone", GHOST): ([], ("topo-n1", "NoPlaceToMovePods")),
    ("phantom_zone", GONE): (["topo-n1"], ("topo-n1", None)),  # the domain gone with the node
    ("phantom_zone", NONE): ([], ("topo-n1", "NoPlaceToMovePods")),
    ("removed_node_domain", GHOST): (["z1", "a2"], ("a2", None)),
    ("removed_node_domain", GONE): (["z1", "a2"], ("a2", None)),
    ("removed_node_domain", NONE): (["z1"], ("a2", "NoPlaceToMovePods")),
    ("own_zone", GHOST): ([], ("b1", "NoPlaceToMovePods")),
    ("own_zone", GONE): (["b1"], ("b1", None)),
}
# (scenario, kubernetesVersion or a CA release "1.x.y", its rules); a minor alone is its newest
# release known (``analyzer.autoscaler.release.NEWEST_PATCH``: 1.32.7, 1.33.6, 1.34.5, 1.35.2)
CASES = [
    ("honor", "1.36", GHOST),
    ("honor", "1.35.0", GONE),
    ("honor", "1.32.0", NONE),
    ("honor", "1.32.2", NONE),
    ("honor", "1.32.3", GONE),
    ("honor", "1.32", GONE),
    ("phantom_zone", "1.36", GHOST),
    ("phantom_zone", "1.35.0", GONE),
    ("phantom_zone", "1.35.1", GHOST),
    ("phantom_zone", "1.35", GHOST),
    ("phantom_zone", "1.33.4", GONE),
    ("phantom_zone", "1.33.5", GHOST),
    ("phantom_zone", "1.32.0", NONE),
    ("removed_node_domain", "1.36", GHOST),
    ("removed_node_domain", "1.33.0", GONE),
    ("removed_node_domain", "1.32.0", NONE),
    ("removed_node_domain", "1.32.3", GONE),
    ("own_zone", "1.35.0", GONE),
    ("own_zone", "1.33.0", GONE),
    ("own_zone", "1.34.3", GONE),
    ("own_zone", "1.34", GHOST),
    ("own_zone", "1.36", GHOST),
]


@pytest.mark.parametrize(("name", "version", "rules"), CASES)
def test_the_snapshot_holds_what_the_version_keeps(
    tmp_path: Path, name: str, version: str, rules: str
) -> None:
    scenario = yaml.safe_load((DATA / f"{name}.yaml").read_text(encoding="utf-8"))
    given = {"kubernetesVersion": version}
    if version.count(".") == 2:  # a CA release: its minor, and the release itself
        given = {
            "kubernetesVersion": version.rsplit(".", 1)[0],
            "clusterAutoscalerVersion": version,
        }
    result = run(tmp_path, {**scenario, **given})
    removed, reason = ANSWERS[(name, rules)]
    assert result["removed"] == removed
    node, why = reason
    assert by_name(result)[node]["unremovableReason"] == why
