"""Required pod anti-affinity per hostname, checked on a snapshot's observed placement.

A pod's required anti-affinity term over ``kubernetes.io/hostname`` with ``matchLabels`` excludes
every pod of its namespace whose labels match, on the same node, for as long as both run there:
from ``scheduled`` to ``finished`` (still running at the end of the data when ``finished`` is
empty). Computed from the snapshot's own columns, independently of any placer.
"""

from __future__ import annotations

import json

import pandas as pd

HOSTNAME = "kubernetes.io/hostname"


def required_hostname_selectors(text: object) -> list[dict[str, str]]:
    """The ``matchLabels`` of a pod's required anti-affinity terms over hostnames."""
    if not isinstance(text, str) or not text:
        return []
    anti = json.loads(text).get("podAntiAffinity") or {}
    return [
        dict(term["labelSelector"].get("matchLabels", {}))
        for term in anti.get("requiredDuringSchedulingIgnoredDuringExecution", [])
        if term.get("topologyKey") == HOSTNAME and term.get("labelSelector")
    ]


def anti_affinity_breaks(pods: pd.DataFrame) -> tuple[int, int]:
    """(pods that ran beside a pod their required hostname anti-affinity excludes, bound pods
    carrying such a term)."""
    bound = pods[pods["node"].notna()].reset_index(drop=True)
    never = pd.Timestamp("2200-01-01", tz="UTC")  # still running at the end of the data
    start = pd.to_datetime(bound["scheduled"], utc=True)
    end = pd.to_datetime(bound["finished"], utc=True).fillna(never)
    labels = [json.loads(t or "{}") for t in bound["labels"]]
    by_node: dict[tuple[str, str], list[int]] = {}
    for i, key in enumerate(zip(bound["node"], bound["namespace"], strict=True)):
        by_node.setdefault(key, []).append(i)
    carrying = breaking = 0
    for i, key in enumerate(zip(bound["node"], bound["namespace"], strict=True)):
        terms = required_hostname_selectors(bound["affinity"].iat[i])
        if not terms:
            continue
        carrying += 1
        beside = [
            j
            for j in by_node[key]
            if j != i and start.iat[i] < end.iat[j] and start.iat[j] < end.iat[i]
        ]
        if any(all(labels[j].get(k) == v for k, v in t.items()) for t in terms for j in beside):
            breaking += 1
    return breaking, carrying
