"""Koordinator pod classes: priority band (koord-prod/mid/batch/free) and QoS (LSR/LS/BE ...).

Rules from research/koordinator.md §1.2 (``apis/extension/priority_utils.go``, ``qos_utils.go``):

1. label ``koordinator.sh/priority-class`` (koord-prod, koord-mid, koord-batch, koord-free);
2. else ``spec.priority`` bands: 9000–9999 prod, 7000–7999 mid, 5000–5999 batch, 3000–3999 free;
3. else from the QoS: label ``koordinator.sh/qosClass`` if set, else the Kubernetes QoS
   (Guaranteed → LSR, Burstable → LS, BestEffort → BE); LSE/LSR/LS/SYSTEM → prod, BE → batch.

So any non-BestEffort pod without a Koordinator priority counts as prod. Vectorised over the
snapshot's ``pods`` table.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

PRIORITY_LABEL = "koordinator.sh/priority-class"
QOS_LABEL = "koordinator.sh/qosClass"
PRIORITY_CLASSES = ("koord-prod", "koord-mid", "koord-batch", "koord-free")
PROD = "koord-prod"
NONE = ""
QOS_CLASSES = ("LSE", "LSR", "LS", "BE", "SYSTEM")
_KUBE_QOS = {"Guaranteed": "LSR", "Burstable": "LS", "BestEffort": "BE"}
_PRIORITY_BANDS = (
    (9000, 9999, "koord-prod"),
    (7000, 7999, "koord-mid"),
    (5000, 5999, "koord-batch"),
    (3000, 3999, "koord-free"),
)


def _label(labels: pd.Series, key: str) -> pd.Series:
    """One label's value per pod ("" when absent or the labels are not a JSON object)."""

    def pick(text: object) -> str:
        if not isinstance(text, str) or not text:
            return ""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError):  # a cell nested past the parser
            return ""
        value = data.get(key, "") if isinstance(data, dict) else ""
        return value if isinstance(value, str) else ""

    # Parse only the label sets that mention the key: most pods carry no Koordinator labels.
    text = labels.astype("string").fillna("")
    mentions = text.str.contains(key, regex=False).fillna(False).to_numpy(dtype=bool)
    result = pd.Series("", index=labels.index, dtype="string")
    if mentions.any():
        result[mentions] = text[mentions].map(pick).astype("string").fillna("")
    return result


def koord_qos(pods: pd.DataFrame) -> pd.Series:
    """Koordinator QoS per pod: the ``koordinator.sh/qosClass`` label, else from the Kubernetes QoS."""
    label = _label(pods["labels"], QOS_LABEL)
    kube = pods["qos_class"].astype("string").fillna("").map(lambda q: _KUBE_QOS.get(q, ""))
    known = label.isin(QOS_CLASSES)
    return pd.Series(np.where(known, label, kube), index=pods.index, dtype="string")


def koord_priority_class(pods: pd.DataFrame) -> pd.Series:
    """Koordinator priority class per pod (``koord-prod`` …, ``""`` when none applies)."""
    label = _label(pods["labels"], PRIORITY_LABEL)
    result = pd.Series(NONE, index=pods.index, dtype="object")
    priority = pods["priority"].astype("Float64")
    by_priority = pd.Series(NONE, index=pods.index, dtype="object")
    for low, high, name in _PRIORITY_BANDS:
        in_band = ((priority >= low) & (priority <= high)).fillna(False).astype(bool)
        by_priority[in_band.to_numpy()] = name
    qos = koord_qos(pods)
    by_qos = np.where(
        qos.isin(["LSE", "LSR", "LS", "SYSTEM"]),
        "koord-prod",
        np.where(qos == "BE", "koord-batch", ""),
    )
    from_label = label.isin(PRIORITY_CLASSES).to_numpy()
    from_priority = (by_priority != NONE).to_numpy()
    result[:] = np.where(from_label, label, np.where(from_priority, by_priority, by_qos))
    return result.astype("string")


def is_prod(pods: pd.DataFrame) -> pd.Series:
    """True for pods in Koordinator's prod band (the ones ``prodUsageThresholds`` measure)."""
    return koord_priority_class(pods) == PROD
