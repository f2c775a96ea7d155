"""What grows, by how much each month: the ``growth:`` config section and fitted rates, read into
one plan (docs/whatif.md "Growth replayed").

A plan is a list of changes. Each names the pods it grows and how:

- ``{namespace: shop, replicas: "+30%"}``: every workload of namespace ``shop`` gains 30 % of
  today's replicas each month (month m: today × (1 + 0.30 m), linear like the monthly
  forecast's trend); ``"-10%"`` shrinks; ``"+2"``/``"-1"`` is whole replicas per month;
  ``workload: NAME`` narrows it to one workload (its Deployment/StatefulSet/... name);
- ``{manifests: FILE.yaml, replicas: 5}``: the Pod (or the pod template of a Deployment,
  StatefulSet, ReplicaSet, DaemonSet-less controller) in FILE added as 5 pods running the whole
  window (``replicas`` defaults to the manifest's ``spec.replicas``, else 1); ``pool: NAME`` says
  which pool's nodes to add when they wait (default: the pool with the most nodes);
- ``month: K`` (any change, default 1): the first month the change applies.

Fitted rates (``--history DIR``) are changes of the first kind, one per namespace, made by
``analyzer.monthly.growth_rates`` and handed in by the command.

Rounding rule (one per workload, deterministic): month m's replicas = floor(r0 + Δ + 0.5), where
r0 is today's replicas and Δ the sum of every matching change's growth by month m; never below 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.quantity import resource_value
from analyzer.core.structured import describe_value, load_yaml_all, preview

SECTION = "growth"
KEYS = ("namespace", "workload", "replicas", "manifests", "month", "pool")
_CHANGE = re.compile(r"^([+-])(\d+(?:\.\d+)?)(%?)$")
CONTROLLERS = ("Deployment", "StatefulSet", "ReplicaSet", "Job")
MAX_MONTHS = 120  # ten years of months: a longer horizon is a typo


@dataclass(frozen=True)
class Change:
    """One change: ``rate`` (share of today's replicas per month) or ``count`` (replicas per
    month) for matching workloads; or ``copies`` pods of a manifest's ``pod`` from ``month``."""

    where: str  # what names it in messages and on the page: "growth[0]", "history"
    namespace: str | None = None
    workload: str | None = None
    rate: float = 0.0
    count: int = 0
    month: int = 1
    pod: Mapping[str, Any] | None = None  # the manifest's pod, already read (manifest changes)
    copies: int = 0
    pool: str | None = None

    def label(self) -> str:
        """A short description for the page: "shop +30 %/month", "web.yaml: 5 pods"."""
        if self.pod is not None:
            return f"{self.where}: {self.copies} pods of {self.pod['name']} from month {self.month}"
        target = "/".join(x for x in (self.namespace, self.workload) if x) or "every workload"
        amount = f"{self.rate * 100:+.1f} %" if self.rate else f"{self.count:+d} replicas"
        return f"{self.where}: {target} {amount} per month from month {self.month}"

    def growth(self, replicas: int, month: int) -> float:
        """Replicas this change adds to a workload of ``replicas`` by ``month`` (0 before)."""
        months = max(0, month - self.month + 1)
        return (self.rate * replicas + self.count) * months


@dataclass(frozen=True)
class GrowthPlan:
    """Every change, the horizon in months and where the changes came from."""

    changes: tuple[Change, ...]
    months: int
    sources: tuple[str, ...] = field(default=())

    def matching(self, namespace: str, workload: str) -> list[Change]:
        """The rate/count changes that apply to one workload."""
        return [
            c
            for c in self.changes
            if c.pod is None
            and (c.namespace is None or c.namespace == namespace)
            and (c.workload is None or c.workload == workload)
        ]

    def replicas(self, namespace: str, workload: str, today: int, month: int) -> int:
        """Month ``month``'s replicas of a workload with ``today`` (module rounding rule)."""
        delta = sum(c.growth(today, month) for c in self.matching(namespace, workload))
        return max(0, int(today + delta + 0.5) if today + delta >= 0 else 0)


def _fail(where: str, message: str) -> InputError:
    return InputError(f"--config {where}: {message}")


def _text(item: Mapping[str, Any], key: str, where: str) -> str | None:
    value = item.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise _fail(where, f"{key} must be a name, not {describe_value(value)}")
    return value


def _month(item: Mapping[str, Any], where: str, months: int) -> int:
    value = item.get("month", 1)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_MONTHS:
        raise _fail(where, f"month must be a whole month 1..{MAX_MONTHS}, not {preview(value)}")
    return value


def _replicas_change(value: Any, where: str) -> tuple[float, int]:
    """``"+30%"`` → (0.30, 0); ``"+2"``/``2`` → (0, 2)."""
    text = str(value).replace(" ", "") if isinstance(value, str | int) else None
    if isinstance(value, int) and not isinstance(value, bool):
        text = f"{value:+d}"
    found = _CHANGE.match(text or "")
    if found is None:
        raise _fail(
            where,
            f'replicas {preview(value)} is not a change per month; write "+30%", "-10%" or '
            '"+2" (whole replicas)',
        )
    sign = -1.0 if found.group(1) == "-" else 1.0
    amount = float(found.group(2))
    if found.group(3):
        if amount > 1000:
            raise _fail(where, f"replicas {value} is more than +1000 % a month; a typo?")
        return sign * amount / 100.0, 0
    if amount != int(amount):
        raise _fail(where, f"replicas {value}: whole replicas only, or a percentage")
    return 0.0, int(sign * amount)


def read_manifest_pod(path: Path, where: str) -> tuple[dict[str, Any], int]:
    """The pod a manifest file declares (a Pod, or a controller's pod template) in the snapshot's
    terms, and its ``spec.replicas`` (1 for a Pod)."""
    docs = [d for d in load_yaml_all(path, what=f"--config {where} manifests") if d is not None]
    if len(docs) != 1 or not isinstance(docs[0], Mapping):
        raise _fail(where, f"manifests {path}: must hold one Pod or Deployment, not {len(docs)}")
    doc = docs[0]
    kind = doc.get("kind")
    meta: Mapping[str, Any] = doc["metadata"] if isinstance(doc.get("metadata"), Mapping) else {}
    replicas = 1
    if kind == "Pod":
        spec, labels = doc.get("spec"), meta.get("labels", {})
        body: Mapping[str, Any] = {}
    elif kind in CONTROLLERS:
        body = doc["spec"] if isinstance(doc.get("spec"), Mapping) else {}
        template = body.get("template")
        template = template if isinstance(template, Mapping) else {}
        spec = template.get("spec")
        tmeta = template.get("metadata")
        labels = tmeta.get("labels", {}) if isinstance(tmeta, Mapping) else {}
        replicas = body.get("replicas", 1)
    else:
        raise _fail(where, f"manifests {path}: kind {preview(kind)} is not a Pod or "
                    f"{', '.join(CONTROLLERS)}")  # fmt: skip
    if not isinstance(spec, Mapping) or not isinstance(spec.get("containers"), list):
        raise _fail(where, f"manifests {path}: no pod spec with containers")
    requests: dict[str, int] = {}
    for container in spec["containers"]:
        asked = ((container or {}).get("resources") or {}).get("requests") or {}
        if not isinstance(asked, Mapping):
            raise _fail(where, f"manifests {path}: a container's requests is not a mapping")
        for name, quantity in asked.items():
            try:
                requests[str(name)] = requests.get(str(name), 0) + resource_value(
                    str(name), str(quantity)
                )
            except (ValueError, InputError) as err:
                raise _fail(where, f"manifests {path}: request {name}: {err}") from None
    name = str(meta.get("name") or path.stem)
    pod = {
        "name": name,
        "namespace": str(meta.get("namespace") or "default"),
        "kind": str(kind),
        "requests": requests,
        "labels": json.dumps(labels if isinstance(labels, Mapping) else {}),
        "node_selector": json.dumps(spec.get("nodeSelector") or {}),
        "tolerations": json.dumps(spec.get("tolerations") or []),
        "affinity": json.dumps(spec.get("affinity") or {}),
        "topology_spread": json.dumps(spec.get("topologySpreadConstraints") or []),
        "priority_class": str(spec.get("priorityClassName") or ""),
    }
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        raise _fail(where, f"manifests {path}: spec.replicas {preview(replicas)} is not a count")
    return pod, replicas


def _change(item: Any, where: str, base: Path, months: int) -> Change:
    if not isinstance(item, Mapping):
        raise _fail(where, f"must be a mapping like {{namespace: shop, replicas: \"+30%\"}}, "
                    f"not {describe_value(item)}")  # fmt: skip
    unknown = sorted(set(map(str, item)) - set(KEYS))
    if unknown:
        raise _fail(where, f"unknown key {unknown[0]!r}; known: {', '.join(KEYS)}")
    month = _month(item, where, months)
    pool = _text(item, "pool", where)
    manifests = _text(item, "manifests", where)
    if manifests is not None:
        if item.get("namespace") is not None or item.get("workload") is not None:
            raise _fail(where, "manifests: give namespace/workload in the manifest, not beside it")
        path = Path(manifests) if Path(manifests).is_absolute() else base / manifests
        if not path.is_file():
            raise _fail(where, f"manifests {manifests}: no such file (relative to the config)")
        pod, declared = read_manifest_pod(path, where)
        copies = item.get("replicas", declared)
        if isinstance(copies, bool) or not isinstance(copies, int) or copies < 0:
            raise _fail(where, f"replicas {preview(copies)}: with manifests, a count of pods ≥ 0")
        return Change(where, month=month, pod=pod, copies=copies, pool=pool)
    namespace, workload = _text(item, "namespace", where), _text(item, "workload", where)
    if namespace is None and workload is None:
        raise _fail(where, "name a namespace, a workload or manifests")
    if "replicas" not in item:
        raise _fail(where, 'replicas is missing; e.g. replicas: "+30%"')
    rate, count = _replicas_change(item["replicas"], where)
    return Change(where, namespace, workload, rate, count, month, pool=pool)


def parse_growth(
    config: Mapping[str, Any], base: Path, months: int, fitted: tuple[Change, ...] = ()
) -> GrowthPlan:
    """The plan of the config's ``growth:`` list (files relative to ``base``, the config's folder)
    and the ``fitted`` changes; ``InputError`` naming ``--config growth[i]`` and the field."""
    if not 1 <= months <= MAX_MONTHS:
        raise InputError(f"--months: {months} must be 1..{MAX_MONTHS}")
    section = config.get(SECTION)
    items: list[Any] = []
    if section is not None:
        if not isinstance(section, list):
            raise InputError(
                f"--config {SECTION}: must be a list of changes like "
                f'- {{namespace: shop, replicas: "+30%"}}, not {describe_value(section)}'
            )
        items = section
    declared = tuple(_change(item, f"{SECTION}[{i}]", base, months) for i, item in enumerate(items))
    if not declared and not fitted:
        raise InputError(
            "--growth: nothing grows; give --history DIR (fitted rates) or a growth: section in "
            '--config (e.g. - {namespace: shop, replicas: "+30%"})'
        )
    sources = tuple(s for s, on in (("config", declared), ("history", fitted)) if on)
    return GrowthPlan(declared + tuple(fitted), months, sources)
