"""cluster-autoscaler's scale-down rules at the exact version where they changed, on both sides
of each boundary, in ``analyzer autoscale`` (the scenario's ``kubernetesVersion``; CA's minor
follows Kubernetes'). The expected values are read from upstream's code at the tags
``cluster-autoscaler-X.Y.0`` of kubernetes/autoscaler; the boundaries other test files already
pin on both sides are not repeated here (drain order 1.28/1.29 and the DaemonSet group 1.29/1.30:
``test_autoscale_version_drain.py``; StatefulSet group 1.32/1.33:
``test_autoscale_statefulset_group.py``; kube-system timeout 1.32/1.33:
``test_autoscale_system_pods.py``; the snapshot 1.32/1.33/1.35/1.36:
``test_autoscale_snapshot.py``; on-completion 1.35/1.36: ``test_autoscale_on_completion.py``).

- 1.31 → 1.32 (commit 714ab661ca): ``core/scaledown/eligibility/eligibility.go``
  ``unremovableReasonAndNodeUtilization`` returns ``UnexpectedError`` when
  ``utilization.Calculate`` fails (a missing cpu or memory allocatable); at 1.31.0 it logged
  the error and went on with the zero ``utilization.Info``, utilisation 0, under the threshold.
  ``tests/test_autoscale.py`` compares 1.31 with the default 1.36; here 1.32 itself.
- 1.34.2 → 1.34.3 → 1.35 (commit 285c687421 and the vendor additions after it, backported to
  1.34.3 without Intel's xe): ``utils/gpu/gpu.go``
  ``NodeHasGpu`` / ``DetectNodeGPUResourceName`` read every resource of
  ``GPUVendorResourceNames`` (nvidia, habana gaudi, intel xe, amd, directx; the first non-zero
  one is judged, ``simulator/utilization/info.go`` ``Calculate`` with
  ``gpuConfig.ExtendedResourceName``); 1.34.0 ``NodeHasGpu`` read ``nvidia.com/gpu`` alone.
  ``tests/test_autoscale_min_size.py`` has AMD at 1.34 and 1.36; here the other vendors and
  the first-vendor pick at 1.35 itself.
- 1.28 → 1.29, 1.31 → 1.32 → 1.33 → 1.34: how the utilisation reads a pod's requests
  (``pods.request_mode``), and 1.29 → 1.30 → 1.33 → 1.34: expendable pods and their
  preemptionPolicy (numbered comments below). Not modelled: the status resources of an in-place
  resize, which 1.33+ reads (``UseStatusResources``); a scenario's pods carry none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autoscale_cases import beside_spare, by_name, run

NOW = "2026-06-10T12:00:00Z"
RS = ["ReplicaSet", "rs", "apps/v1"]


@pytest.mark.parametrize(("version", "unexpected"), [("1.31", False), ("1.32", True)])
def test_a_utilisation_error_makes_the_node_unremovable_from_1_32(
    tmp_path: Path, version: str, unexpected: bool
) -> None:
    # "node" without a memory allocatable: CalculateUtilizationOfResource fails for memory
    scenario = beside_spare(version, NOW, {"p": {"cpu": 100, "memory": 1, "owner": RS}}, None)
    del scenario["nodes"][0]["status"]["allocatable"]["memory"]
    got = by_name(run(tmp_path, scenario))["node"]
    assert got["utilization"] == 0.0
    if unexpected:
        assert got["unremovableReason"] == "UnexpectedError"
        assert not got["candidate"] and not got["removable"]
    else:  # 1.31: utilisation 0 < 0.5, a candidate; its pod fits on "spare"
        assert got["candidate"] and got["removable"]
        assert got["destinations"] == {"default/p": "spare"}


def _gpu_node(tmp_path: Path, version: str, allocatable: dict[str, str],
              requests: dict[str, str]) -> dict[str, Any]:  # fmt: skip
    """Node "g" (1 core, 4 GiB and ``allocatable``) holding one 900m pod with ``requests``;
    judged by cpu it is over the threshold (0.9)."""
    scenario = {
        "autoscaler": "cluster-autoscaler", "kubernetesVersion": version, "now": NOW,
        "nodes": [{"metadata": {"name": "g"},
                   "status": {"allocatable": {"cpu": "1", "memory": "4Gi", **allocatable}}}],
        "pods": [{"metadata": {"name": "p", "namespace": "default"},
                  "spec": {"nodeName": "g", "containers": [
                      {"name": "c", "resources": {"requests": {"cpu": "900m", **requests}}}]}}],
    }  # fmt: skip
    if version.count(".") == 2:  # a CA release: its minor, and the release itself
        scenario["kubernetesVersion"] = version.rsplit(".", 1)[0]
        scenario["clusterAutoscalerVersion"] = version
    return by_name(run(tmp_path, scenario))["g"]


GAUDI, XE, DIRECTX = "habana.ai/gaudi", "gpu.intel.com/xe", "microsoft.com/directx"


@pytest.mark.parametrize(
    ("version", "resource", "gpu_node"),
    [
        ("1.34.2", GAUDI, False), ("1.34.2", XE, False), ("1.34.2", DIRECTX, False),
        # backported to 1.34.3 (189594e95f, 53b9917efd) without Intel's xe, which came in 1.35
        ("1.34.3", GAUDI, True), ("1.34.3", XE, False), ("1.34.3", DIRECTX, True),
        ("1.34", GAUDI, True), ("1.34", XE, False),  # 1.34's newest release known, 1.34.5
        ("1.35", GAUDI, True), ("1.35", XE, True), ("1.35", DIRECTX, True),
    ],
)  # fmt: skip
def test_other_vendors_gpus_make_a_gpu_node_from_1_35(
    tmp_path: Path, resource: str, version: str, gpu_node: bool
) -> None:
    got = _gpu_node(tmp_path, version, {resource: "4"}, {resource: "1"})
    if gpu_node:  # judged by its GPU: 1 of 4, under the GPU threshold
        assert got["utilizationResource"] == resource and got["utilization"] == 0.25
        assert got["candidate"]
    else:  # no GPU node; cpu decides, 900m of 1000m
        assert got["utilizationResource"] == "cpu" and got["utilization"] == 0.9
        assert got["unremovableReason"] == "NotUnderutilized"


@pytest.mark.parametrize(
    ("version", "resource", "utilization", "candidate"),
    [("1.35", GAUDI, 0.25, True), ("1.34.3", GAUDI, 0.25, True), ("1.34.2", "cpu", 0.9, False)],
)
def test_the_first_vendor_in_upstreams_order_is_judged(
    tmp_path: Path, version: str, resource: str, utilization: float, candidate: bool
) -> None:
    """A node offering nvidia.com/gpu "0", 4 Habana Gaudi and 2 AMD GPUs, its pod taking one
    Gaudi and both AMD GPUs. 1.35: ``GPUVendorResourceNames`` skips the zero nvidia allocatable
    and names habana.ai/gaudi before amd.com/gpu (1 of 4, not AMD's 2 of 2), as 1.34.3's list
    (nvidia, Gaudi, AMD, DirectX) does; 1.34.2: ``NodeHasGpu`` finds a zero nvidia.com/gpu and
    no GPU label, so no GPU node, and cpu decides (900m of 1000m)."""
    allocatable = {"nvidia.com/gpu": "0", "habana.ai/gaudi": "4", "amd.com/gpu": "2"}
    got = _gpu_node(tmp_path, version, allocatable, {"habana.ai/gaudi": "1", "amd.com/gpu": "2"})
    assert got["utilizationResource"] == resource
    assert got["utilization"] == utilization
    assert got["candidate"] is candidate


def _node(tmp_path: Path, version: str, pods: dict[str, dict[str, Any]],
          patch: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
    """Node "node" (1000m, 1 GiB) with ``pods`` next to the scale-down-disabled "spare";
    ``patch`` merges extra spec fields into a pod by name."""
    scenario = beside_spare(version, NOW, pods, None)
    for item in scenario["pods"]:
        item["spec"].update((patch or {}).get(item["metadata"]["name"], {}))
    return by_name(run(tmp_path, scenario))["node"]


# 2. CA 1.28.0 simulator/utilization/info.go CalculateUtilizationOfResource sums the requests of
#    ``pod.Spec.Containers`` only: no init containers, no sidecars, no overhead. From 1.29.0
#    (commit 54909eb9ff "Include restartable init containers in Pod utilization calc") it reads
#    ``resourcehelper.PodRequests`` (init containers as max, sidecars summed, overhead added).
@pytest.mark.parametrize(
    ("version", "cpu"),
    [("1.28", 0.1), ("1.29", 0.9)],
)
def test_init_containers_count_in_utilisation_from_1_29(
    tmp_path: Path, version: str, cpu: float
) -> None:
    facts = {"cpu": 100, "owner": RS, "initContainers": [{"cpu": 900}]}
    got = _node(tmp_path, version, {"p": facts})
    assert got["utilizationByResource"]["cpu"] == pytest.approx(cpu)
    assert got["candidate"] is (cpu < 0.5)


@pytest.mark.parametrize(("version", "cpu"), [("1.28", 0.1), ("1.29", 0.6)])
def test_pod_overhead_counts_in_utilisation_from_1_29(
    tmp_path: Path, version: str, cpu: float
) -> None:
    facts = {"cpu": 100, "owner": RS}
    got = _node(tmp_path, version, {"p": facts}, {"p": {"overhead": {"cpu": "500m"}}})
    assert got["utilizationByResource"]["cpu"] == pytest.approx(cpu)
    assert got["candidate"] is (cpu < 0.5)


# 3. Pod-level resources: CA's utils/pod/pod.go PodRequests (1.33.0+) passes
#    ``SkipPodLevelResources: !DefaultFeatureGate.Enabled(features.PodLevelResources)``; the gate
#    is alpha (off) in the Kubernetes 1.33 libraries CA 1.33 builds with, beta (on) from 1.34
#    (KEP-2837). Before 1.33 CA's utilisation read no pod-level field at all. So a pod whose
#    containers request 100m and whose spec.resources requests 800m counts 100m up to 1.33 and
#    800m from 1.34.
@pytest.mark.parametrize(("version", "cpu"), [("1.33", 0.1), ("1.34", 0.8)])
def test_pod_level_requests_count_from_1_34(tmp_path: Path, version: str, cpu: float) -> None:
    facts = {"cpu": 100, "owner": RS}
    patch = {"p": {"resources": {"requests": {"cpu": "800m"}}}}
    got = _node(tmp_path, version, {"p": facts}, patch)
    assert got["utilizationByResource"]["cpu"] == pytest.approx(cpu)
    assert got["candidate"] is (cpu < 0.5)


# 4. core/utils/expendable.go IsExpendablePod: from 1.30.0 (commit 6632bab4c8 "Consider
#    preemption policy for expandable pods") a pod is expendable only if its preemptionPolicy is
#    unset or PreemptLowerPriority; 1.34.0 reverted it (commit 6f0f000a20 "Do not consider pod
#    PreemptionPolicy while determining whether pod is expendable"). static_autoscaler.go
#    RunOnce builds the snapshot from FilterOutExpendablePods(scheduled pods) at every tag.
#    The revert was backported (the first tag of each branch with its subject): 1.30.5,
#    1.31.3, 1.32.2, 1.33.1; so a minor alone (its newest release known) has no such rule.
#    A priority -20 pod (cutoff -10) with preemptionPolicy Never: left out of the snapshot up to
#    1.29, from 1.34 and in the releases with the revert (its node empty, utilisation 0), kept
#    before the revert in 1.30-1.33 (800m of 1000m: NotUnderutilized).
@pytest.mark.parametrize(
    ("version", "expendable"),
    [
        ("1.29", True),
        ("1.30.0", False),
        ("1.30.4", False),
        ("1.30.5", True),
        ("1.31.2", False),
        ("1.31.3", True),
        ("1.32.1", False),
        ("1.32.2", True),
        ("1.33.0", False),
        ("1.33.1", True),
        ("1.33", True),
        ("1.34", True),
    ],
)
def test_preemption_never_pods_were_not_expendable_in_1_30_to_1_33(
    tmp_path: Path, version: str, expendable: bool
) -> None:
    facts = {"cpu": 800, "owner": RS, "priority": -20}
    got = _node(tmp_path, version, {"p": facts}, {"p": {"preemptionPolicy": "Never"}})
    if expendable:
        assert got["utilization"] == 0.0 and got["empty"] and got["removable"]
    else:
        assert got["utilizationByResource"]["cpu"] == pytest.approx(0.8)
        assert got["unremovableReason"] == "NotUnderutilized"


# 5. CA 1.32.0 simulator/utilization/info.go CalculateUtilizationOfResource reads
#    ``resourcehelper.GetResourceRequestQuantity(pod, resourceName)`` (k8s.io/kubernetes
#    pkg/api/v1/resource, commit 714ab661ca's rewrite), which adds ``spec.overhead`` only to a
#    non-zero request of that resource. 1.29-1.31 (``PodRequests``) and 1.33+ (CA's
#    ``podutils.PodRequests`` over component-helpers) add the overhead unconditionally.
#    A pod with no cpu request and 600m cpu overhead on a 1000m node: 0.6 at 1.31 and 1.33,
#    0 at 1.32. (k8s v1.32.0's text is not in the mirror; both the older and the newer forms
#    of GetResourceRequestQuantity carry the ``!requestQuantity.IsZero()`` guard.)
@pytest.mark.parametrize(("version", "cpu"), [("1.31", 0.6), ("1.32", 0.0), ("1.33", 0.6)])
def test_overhead_on_a_zero_request_in_1_32(tmp_path: Path, version: str, cpu: float) -> None:
    facts = {"memory": 1, "owner": RS}  # no cpu request
    got = _node(tmp_path, version, {"p": facts}, {"p": {"overhead": {"cpu": "600m"}}})
    assert got["utilizationByResource"]["cpu"] == pytest.approx(cpu)
    assert got["candidate"] is (cpu < 0.5)
