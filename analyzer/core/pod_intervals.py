"""When each pod of a snapshot held its node (``pod_intervals``), and the pods that stay on
their node in every strategy (``pinned_pods``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from analyzer.core.frames import utc
from analyzer.core.snapshot_schema import OPEN_END

if TYPE_CHECKING:
    from analyzer.core.snapshot import Snapshot


def pinned_pods(pods: pd.DataFrame) -> pd.Series:
    """Pods that stay on their node in every strategy: DaemonSet and static/mirror pods."""
    kind = pods["owner_kind"].fillna("")
    return (kind == "DaemonSet") | (kind == "Node")


def pod_intervals(snapshot: Snapshot) -> pd.DataFrame:
    """When each pod held its node: columns ``uid``, ``node``, ``start``, ``end`` (UTC, ``[start, end)``).

    start = scheduled, else started, first_seen, created; end = finished, else last_seen when the
    pod vanished before the snapshot's end; a pod still there at the end runs on (``OPEN_END``).
    Pods never bound to a node are left out.
    """
    pods = snapshot.pods
    bound = pods["node"].notna().to_numpy()
    col = {name: utc(pods[name]) for name in ("scheduled", "started", "first_seen", "created")}
    start = col["scheduled"].fillna(col["started"]).fillna(col["first_seen"])
    start = start.fillna(col["created"]).fillna(snapshot.start)
    last_seen = utc(pods["last_seen"])
    vanished = last_seen.where(last_seen < snapshot.end)
    end = utc(pods["finished"]).fillna(vanished).fillna(OPEN_END)
    frame = pd.DataFrame(
        {
            "uid": pods["uid"].to_numpy(),
            "node": pods["node"].to_numpy(),
            # the arrays themselves: ``to_numpy()`` of a tz-aware column is an object array of
            # Timestamps, built one by one (a tenth of a history day's rollups)
            "start": start.array,
            "end": end.array,
        }
    )
    return frame.loc[bound].reset_index(drop=True)
