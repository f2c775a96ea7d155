"""deploy/ renders, every object is valid Kubernetes, and every pod runs restricted.

Each overlay (``nightly``, ``full``, and ``full`` with the ``kube-objects`` component) is rendered
with ``kubectl kustomize`` (Debian's ``kubernetes-client``, or any kubectl with kustomize built
in) and every object is validated, strictly (no unknown fields), against the Kubernetes OpenAPI
schemas that ``kubernetes-validate`` bundles, for the oldest and the newest minor deploy/ supports
(docs/deploy.md). The CronJobs' command lines are parsed by analyzer's own CLI, so an option that
does not exist (or a renamed one) fails here rather than at 01:30 in a cluster.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import kubernetes_validate
import pytest
import yaml

from analyzer.cli import main
from analyzer.collect.kube_objects import KINDS

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
# The Kubernetes minors deploy/ supports (docs/deploy.md): 1.27 is the first with CronJob
# timeZone GA and podFailurePolicy on by default; 1.37 the newest schema kubernetes-validate has.
KUBERNETES_VERSIONS = ("1.27", "1.37")
OVERLAYS = ("nightly", "full", "full+kube-objects")
UID = 10001  # the Containerfile's USER

Obj = dict[str, Any]


def _kubectl() -> str:
    """kubectl with a kustomize new enough for deploy/ (v5: kubectl >= 1.27), or skip/fail why."""
    found = shutil.which("kubectl")
    problem = "kubectl not installed (apt-get install kubernetes-client); .ci/run installs it"
    if found:
        proc = subprocess.run(
            [found, "version", "--client", "--output", "json"],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        version = json.loads(proc.stdout or "{}").get("kustomizeVersion", "v0")
        if int(version.lstrip("v").split(".")[0] or 0) >= 5:
            return found
        problem = (
            f"{found} embeds kustomize {version}; deploy/ needs kustomize v5 (kubectl >= 1.27)"
        )
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(problem)
    pytest.skip(problem)


def _render(overlay: str, tmp: Path) -> list[Obj]:
    if overlay == "full+kube-objects":
        # the component is applied the way docs/deploy.md says: from a user's own kustomization
        # (kustomize accepts only relative paths to other kustomizations)
        rel = Path(os.path.relpath(DEPLOY, tmp))
        (tmp / "kustomization.yaml").write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kustomize.config.k8s.io/v1beta1",
                    "kind": "Kustomization",
                    "resources": [str(rel / "overlays" / "full")],
                    "components": [str(rel / "components" / "kube-objects")],
                }
            )
        )
        target = tmp
    else:
        target = DEPLOY / "overlays" / overlay
    proc = subprocess.run(
        [_kubectl(), "kustomize", str(target)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return [o for o in yaml.safe_load_all(proc.stdout) if o]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Obj]]:
    """Overlay name → its rendered objects."""
    return {name: _render(name, tmp_path_factory.mktemp("kustomize")) for name in OVERLAYS}


def _kinds(objects: list[Obj]) -> dict[str, list[Obj]]:
    by_kind: dict[str, list[Obj]] = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    return by_kind


def _pod_specs(objects: list[Obj]) -> Iterator[tuple[str, Obj]]:
    for obj in objects:
        name = f"{obj['kind']}/{obj['metadata']['name']}"
        if obj["kind"] == "CronJob":
            yield name, obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        elif obj["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
            yield name, obj["spec"]["template"]["spec"]


def test_overlays_hold_what_they_promise(rendered: dict[str, list[Obj]]) -> None:
    nightly, full = _kinds(rendered["nightly"]), _kinds(rendered["full"])
    assert [o["metadata"]["name"] for o in nightly["CronJob"]] == ["analyzer-nightly"]
    assert sorted(o["metadata"]["name"] for o in full["CronJob"]) == [
        "analyzer-monthly",
        "analyzer-nightly",
    ]
    assert "Deployment" not in nightly and [o["metadata"]["name"] for o in full["Service"]] == [
        "analyzer-web"
    ]
    for kinds in (nightly, full):
        assert {"ServiceAccount", "ConfigMap", "PersistentVolumeClaim", "NetworkPolicy"} <= set(
            kinds
        )
        # no API permissions without the kube-objects component
        assert not {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"} & set(kinds)
        [namespace] = kinds["Namespace"]
        assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for objects in rendered.values():
        assert {o["metadata"].get("namespace", "analyzer") for o in objects} == {"analyzer"}


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_object_validates_against_the_kubernetes_schemas(
    rendered: dict[str, list[Obj]], version: str
) -> None:
    for overlay, objects in rendered.items():
        for obj in objects:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as err:
                pytest.fail(
                    f"{overlay}: {obj['kind']}/{obj['metadata']['name']} ({version}): {err}"
                )


def test_the_validator_rejects_what_kubernetes_would(rendered: dict[str, list[Obj]]) -> None:
    """The schema check can fail: a misspelt field and a wrong type are both refused."""
    [cronjob] = [o for o in rendered["nightly"] if o["kind"] == "CronJob"]
    misspelt = {**cronjob, "spec": {**cronjob["spec"], "concurrencyPolicyy": "Forbid"}}
    wrong_type = {**cronjob, "spec": {**cronjob["spec"], "startingDeadlineSeconds": "6h"}}
    for bad in (misspelt, wrong_type):
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(bad, KUBERNETES_VERSIONS[0], strict=True)


def test_every_pod_and_container_runs_restricted(rendered: dict[str, list[Obj]]) -> None:
    seen = 0
    for overlay, objects in rendered.items():
        for name, spec in _pod_specs(objects):
            where = f"{overlay}: {name}"
            pod = spec["securityContext"]
            assert pod["runAsNonRoot"] is True, where
            assert pod["runAsUser"] == UID and pod["runAsGroup"] == UID, where
            assert pod["seccompProfile"] == {"type": "RuntimeDefault"}, where
            assert spec["automountServiceAccountToken"] is False, where
            assert not spec.get("hostNetwork") and not spec.get("hostPID"), where
            volumes = {v["name"]: v for v in spec["volumes"]}
            for container in [*spec.get("initContainers", []), *spec["containers"]]:
                seen += 1
                here = f"{where} container {container['name']}"
                ctx = container["securityContext"]
                assert ctx["allowPrivilegeEscalation"] is False, here
                assert ctx["readOnlyRootFilesystem"] is True, here
                assert ctx["runAsNonRoot"] is True, here
                assert ctx["capabilities"] == {"drop": ["ALL"]}, here
                assert not ctx.get("privileged"), here
                assert "runAsUser" not in ctx or ctx["runAsUser"] != 0, here
                # with a read-only root, /tmp must be a writable emptyDir
                mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
                assert "emptyDir" in volumes[mounts["/tmp"]["name"]], here
                resources = container["resources"]
                assert set(resources["requests"]) == set(resources["limits"]) == {"cpu", "memory"}
    assert seen == 1 + 3 + 5  # nightly; full: nightly, monthly, web; + 2 init containers


def test_jobs_are_scheduled_once_and_bounded(rendered: dict[str, list[Obj]]) -> None:
    for cronjob in _kinds(rendered["full"])["CronJob"]:
        spec, job = cronjob["spec"], cronjob["spec"]["jobTemplate"]["spec"]
        assert spec["concurrencyPolicy"] == "Forbid"
        assert spec["startingDeadlineSeconds"] > 0 and job["activeDeadlineSeconds"] > 0
        assert spec["successfulJobsHistoryLimit"] > 0 and spec["failedJobsHistoryLimit"] > 0
        assert spec["timeZone"] == "Etc/UTC"
    schedules = {
        c["metadata"]["name"]: c["spec"]["schedule"] for c in _kinds(rendered["full"])["CronJob"]
    }
    assert schedules == {"analyzer-nightly": "30 1 * * *", "analyzer-monthly": "0 4 1 * *"}


def test_the_web_server_mounts_the_reports_read_only(rendered: dict[str, list[Obj]]) -> None:
    [web] = _kinds(rendered["full"])["Deployment"]
    spec = web["spec"]["template"]["spec"]
    [claim] = [v for v in spec["volumes"] if "persistentVolumeClaim" in v]
    assert claim["persistentVolumeClaim"] == {"claimName": "analyzer-data", "readOnly": True}
    [container] = spec["containers"]
    [data] = [m for m in container["volumeMounts"] if m["name"] == claim["name"]]
    assert data["readOnly"] is True


def test_the_cluster_role_reads_exactly_the_kinds_collect_reads(
    rendered: dict[str, list[Obj]],
) -> None:
    # kind → (API group, resource): Kubernetes' names for the kinds analyzer reads
    resource_of = {
        "Deployment": ("apps", "deployments"), "StatefulSet": ("apps", "statefulsets"),
        "DaemonSet": ("apps", "daemonsets"), "ReplicaSet": ("apps", "replicasets"),
        "Job": ("batch", "jobs"), "CronJob": ("batch", "cronjobs"), "Pod": ("", "pods"),
        "Node": ("", "nodes"), "Service": ("", "services"), "Namespace": ("", "namespaces"),
        "ReplicationController": ("", "replicationcontrollers"),
        "PodDisruptionBudget": ("policy", "poddisruptionbudgets"),
        "PriorityClass": ("scheduling.k8s.io", "priorityclasses"),
    }  # fmt: skip
    assert set(resource_of) == set(KINDS)  # a kind added to the collector must be added here
    kinds = _kinds(rendered["full+kube-objects"])
    [role] = kinds["ClusterRole"]
    granted = set()
    for rule in role["rules"]:
        assert sorted(rule["verbs"]) == ["get", "list"]  # read-only
        granted |= {(g, r) for g in rule["apiGroups"] for r in rule["resources"]}
    assert granted == set(resource_of.values())
    [binding] = kinds["ClusterRoleBinding"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "analyzer", "namespace": "analyzer"}
    ]
    # the init container lists those same resources
    [monthly] = [c for c in kinds["CronJob"] if c["metadata"]["name"] == "analyzer-monthly"]
    init = monthly["spec"]["jobTemplate"]["spec"]["template"]["spec"]["initContainers"][0]
    script = init["command"][-1]
    listed = {
        word
        for line in script.splitlines()
        if line.startswith("kinds=")
        for word in line.split("=", 1)[1].replace("$kinds,", "").split(",")
    }
    assert listed == {r for _, r in resource_of.values()}


def _parses(args: list[str]) -> None:
    """analyzer's CLI accepts these arguments (parsed by click, not run)."""
    words = list(args)
    ctx = click.Context(main, info_name="analyzer")
    command: click.Command = main
    while isinstance(command, click.Group):
        name = words.pop(0)
        found = command.get_command(ctx, name)
        assert found is not None, f"analyzer has no command {name!r}: {args}"
        if isinstance(found, click.Group):
            ctx = click.Context(found, info_name=name, parent=ctx)
        else:
            with found.make_context(name, words, parent=ctx):
                pass
        command = found


def _container(objects: list[Obj], cronjob: str) -> Obj:
    [job] = [o for o in objects if o["kind"] == "CronJob" and o["metadata"]["name"] == cronjob]
    container: Obj = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    return container


def _exec_line(script: str, **values: str) -> list[str]:
    """The words of a container script's `exec analyzer ...` line, its variables filled in."""
    [line] = [s for s in script.replace("\\\n", " ").splitlines() if s.startswith("exec analyzer")]
    for name, value in values.items():
        line = line.replace(f'"${name}"', value).replace(f"${name}", value)
    return shlex.split(line)[2:]


def test_the_command_lines_are_analyzers_own(
    rendered: dict[str, list[Obj]], tmp_path: Path
) -> None:
    # click checks that FILE/DIRECTORY options exist: stand-ins for the mounted paths
    token, reports = tmp_path / "token", tmp_path / "reports"
    token.write_text("t")
    reports.mkdir()
    nightly = _container(rendered["full"], "analyzer-nightly")["args"]
    assert nightly[:2] == ["report", "nightly"] and "--prometheus" not in nightly  # from the config
    _parses([a.replace("/var/run/secrets/analyzer/token", str(token)) for a in nightly])
    with pytest.raises(click.UsageError):
        _parses([*nightly[:2], "--no-such-option"])  # the parse check can fail

    for overlay in ("full", "full+kube-objects"):
        monthly = _container(rendered[overlay], "analyzer-monthly")
        words = _exec_line(monthly["command"][2], month="2026-10", **{"@": ""})
        words = [w.replace("/data/reports", str(reports)) for w in words if w]
        assert words[:2] == ["report", "monthly"]
        extra = [a.replace("/work/snapshot", str(reports)) for a in monthly["args"]]
        _parses([*words, *extra])
    [ko_monthly] = [
        o for o in rendered["full+kube-objects"] if o["metadata"]["name"] == "analyzer-monthly"
    ]
    snapshot = ko_monthly["spec"]["jobTemplate"]["spec"]["template"]["spec"]["initContainers"][1]
    objects = tmp_path / "objects.json"
    objects.write_text("{}")
    words = _exec_line(snapshot["command"][2], end="2026-11-01T00:00:00Z")
    words = [w.replace("/work/objects.json", str(objects)) for w in words]
    _parses([w.replace("/var/run/secrets/analyzer/token", str(token)) for w in words])
    assert "--kube-objects" in words and words[0] == "collect"


def test_config_file_is_one_analyzer_reads(rendered: dict[str, list[Obj]], tmp_path: Path) -> None:
    [config] = [o for o in rendered["nightly"] if o["kind"] == "ConfigMap"]
    path = tmp_path / "analyzer.yaml"
    path.write_text(config["data"]["analyzer.yaml"])
    # a config error is exit 2 naming the key; a good config gets as far as the missing token file
    run = subprocess.run(
        [sys.executable, "-m", "analyzer", "--config", str(path), "report", "nightly", "--out", str(tmp_path / "r"),
         "--token-file", str(tmp_path / "absent")],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert run.returncode == 2 and "--token-file" in run.stderr, run.stderr


def _commented_patch() -> str:
    """The commented-out metrics + delivery patch of overlays/full, uncommented."""
    lines = (DEPLOY / "overlays" / "full" / "kustomization.yaml").read_text().splitlines()
    start = lines.index("  # - target:")
    return "\n".join(line.replace("  # ", "", 1) for line in lines[start:])


def test_the_commented_metrics_and_delivery_patch_works(tmp_path: Path) -> None:
    """Uncommented as docs/deploy.md says, the example renders, validates, and analyzer parses it."""
    rel = Path(os.path.relpath(DEPLOY, tmp_path))
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources:\n  - {rel / 'overlays' / 'full'}\npatches:\n{_commented_patch()}\n"
    )
    proc = subprocess.run(
        [_kubectl(), "kustomize", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    objects = [o for o in yaml.safe_load_all(proc.stdout) if o]
    for obj in objects:
        kubernetes_validate.validate(obj, KUBERNETES_VERSIONS[-1], strict=True)
    token = tmp_path / "token"
    token.write_text("t")
    nightly = _container(objects, "analyzer-nightly")["args"]
    assert "--notify=slack" in nightly and any(a.startswith("--pushgateway=") for a in nightly)
    _parses([a.replace("/var/run/secrets/analyzer/token", str(token)) for a in nightly])
    monthly = _container(objects, "analyzer-monthly")
    words = _exec_line(monthly["command"][2], month="2026-10", **{"@": ""})
    _parses([*[w.replace("/data/reports", str(tmp_path)) for w in words if w], *monthly["args"]])
