"""A recommendation frame (``monthly/rightsize.py``) as strategic-merge patches (YAML) or CSV.

**Containers.** The history and the snapshot record requests per *pod* (the effective pod
request), not per container, and not the containers' names. A strategic-merge patch of
``spec.template.spec.containers`` merges on the container ``name``, so each patch names the
container **after the workload** (the common convention) and carries the *pod* total. For a
single-container pod whose container has that name this is exact. Otherwise edit the patch: put
the right name and split the values between the containers. A wrong name is never applied
silently: the API server rejects the new, image-less container it would add. Each document says
so in its header comment, beside the ``kubectl patch`` command that applies it.

Patches are emitted for Deployments, StatefulSets and DaemonSets with a recommendation that
changes a request (the pod template lives at ``spec.template``); a resource whose request stays
the same is left out of the patch; other kinds are in the CSV only (the frame's ``note`` says
how to apply them). A limit that is set and would fall below the new request is raised to it in
the same patch (Kubernetes refuses a request above its limit).

**Names.** Every comment line goes through ``core/yamltext.comment``, so a name holding a line
break (or any non-printable character) is written escaped on its one line and cannot add YAML
of its own. Beyond that, a workload whose namespace is not a DNS-1123 label or whose name is not
a DNS-1123 subdomain (what the API server accepts for a namespace and for a Deployment,
StatefulSet or DaemonSet) gets no patch: no cluster can hold it, so a patch for it could only
fail (or, worse, match another object after the name was mangled); it came from mislabelled
metrics. The file's first comment counts such workloads and names the first one, escaped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import pandas as pd
import yaml

from analyzer.core.csvsafe import csv_text
from analyzer.core.yamltext import SAFE_DUMPER, comment, comment_block
from analyzer.monthly.rightsize import MIB, PATCHABLE

API_VERSION = "apps/v1"
# apimachinery's validation: a namespace is a DNS-1123 label (IsDNS1123Label), a Deployment,
# StatefulSet or DaemonSet name a DNS-1123 subdomain (NameIsDNSSubdomain)
_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(_LABEL)
DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")


def cpu_quantity(millicores: float) -> str:
    """Whole millicores as a Kubernetes quantity: ``250m``."""
    return f"{math.ceil(millicores)}m"


def memory_quantity(size: float) -> str:
    """Bytes as a Kubernetes quantity: ``640Mi`` when a whole number of MiB, else plain bytes."""
    whole = math.ceil(size)
    return f"{whole // MIB}Mi" if whole % MIB == 0 else str(whole)


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def valid_kubernetes_name(namespace: object, name: object) -> bool:
    """Whether the API server could hold a workload named ``name`` in ``namespace``."""
    return (
        isinstance(namespace, str)
        and isinstance(name, str)
        and len(namespace) <= 63
        and len(name) <= 253
        and DNS1123_LABEL.fullmatch(namespace) is not None
        and DNS1123_SUBDOMAIN.fullmatch(name) is not None
    )


def patch_document(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """The strategic-merge patch of one recommended Deployment/StatefulSet/DaemonSet row
    (None for other kinds, skipped rows, no change, and names no cluster can hold)."""
    if not valid_kubernetes_name(row["namespace"], row["owner_name"]):
        return None
    return _patch(row)


def _patch(row: Mapping[str, Any]) -> dict[str, Any] | None:
    if row["owner_kind"] not in PATCHABLE or row["skipped_reason"]:
        return None
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    for resource, unit, render in (
        ("cpu", "millicores", cpu_quantity),
        ("memory", "bytes", memory_quantity),
    ):
        value = row[f"{resource}_recommended_{unit}"]
        current = row[f"{resource}_request_{unit}"]
        if not _present(value) or (_present(current) and render(value) == render(current)):
            continue  # nothing to recommend, or no change
        requests[resource] = render(value)
        limit = row[f"{resource}_limit_{unit}"]
        if _present(limit) and 0 < limit < value:
            limits[resource] = render(value)
    if not requests:
        return None
    resources: dict[str, Any] = {"requests": requests}
    if limits:
        resources["limits"] = limits
    return {
        "apiVersion": API_VERSION,
        "kind": row["owner_kind"],
        "metadata": {"name": row["owner_name"], "namespace": row["namespace"]},
        "spec": {
            "template": {
                "spec": {"containers": [{"name": row["owner_name"], "resources": resources}]}
            }
        },
    }


def _header(row: Mapping[str, Any]) -> str:
    changes = []
    for resource, unit, render in (
        ("cpu", "millicores", cpu_quantity),
        ("memory", "bytes", memory_quantity),
    ):
        new = row[f"{resource}_recommended_{unit}"]
        if _present(new):
            changes.append(
                f"{resource} {render(row[f'{resource}_request_{unit}'])} -> {render(new)}"
            )
    kind, name, namespace = row["owner_kind"], row["owner_name"], row["namespace"]
    return comment_block(
        [
            f"{namespace}/{name} ({kind}), per pod: {', '.join(changes)}; "
            f"recipe {row['recipe']}, {row['days']} day(s) of history",
            "Requests are per pod (the history has no per-container values): the container is "
            "named after the workload;",
            "with another name or several containers, edit the name and split the values.",
            f"kubectl patch {kind.lower()} {name} -n {namespace} --type strategic "
            "--patch-file THIS_DOCUMENT.yaml",
        ]
    )


def _left_out_note(left_out: list[str]) -> str:
    """A comment counting the workloads whose patch was left out for their names."""
    first = left_out[0] if len(left_out[0]) <= 80 else left_out[0][:79] + "…"
    return comment(
        f"{len(left_out)} workload(s) left out: a namespace that is not a DNS-1123 label or a "
        f"name that is not a DNS-1123 subdomain, which no cluster can hold (first: {first})"
    )


def patches_yaml(recommendations: pd.DataFrame) -> str:
    """Multi-document YAML: one strategic-merge patch per patchable recommended workload."""
    documents, left_out = [], []
    for row in recommendations.to_dict("records"):  # plain dicts: iterrows costs ~0.5 s / 2,000
        document = _patch(row)
        if document is None:
            continue
        if not valid_kubernetes_name(row["namespace"], row["owner_name"]):
            left_out.append(f"{row['namespace']}/{row['owner_name']}")
            continue
        body = yaml.dump(document, Dumper=SAFE_DUMPER, sort_keys=False, default_flow_style=False)
        documents.append(f"{_header(row)}\n{body}")
    text = (
        "---\n".join(documents)
        if documents
        else comment("no Deployment, StatefulSet or DaemonSet has a recommended change") + "\n"
    )
    return f"{_left_out_note(left_out)}\n{text}" if left_out else text


def recommendations_csv(recommendations: pd.DataFrame) -> str:
    """The frame as formula-safe CSV (every column, units in the names)."""
    return csv_text(recommendations)
