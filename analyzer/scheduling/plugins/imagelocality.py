"""kube-scheduler ``ImageLocality`` score plugin (pkg/scheduler/framework/plugins/imagelocality).

Upstream, per node (no NormalizeScore; weight 1 in the v1 default profile):

- the pod's images: ``spec.initContainers`` then ``spec.containers`` (init containers since 1.30,
  PR #123366; app containers only before), each name normalised: ``:latest`` is appended when
  the last ``:`` does not come after the last ``/`` (``root`` → ``root:latest``,
  ``gcr.io:5000/root`` → ``gcr.io:5000/root:latest``; a digest ``root@sha256:…`` is kept);
- the node's images: every name of every ``status.images`` entry with its ``sizeBytes``;
  ``NumNodes`` = the nodes of the snapshot listing that name, ``totalNumNodes`` = all its nodes;
- per container whose normalised image the node lists:
  ``int64(float64(sizeBytes) × (float64(NumNodes) / float64(totalNumNodes)))`` (the spread
  damps images every node has), summed over the containers (a repeated image counts each time);
- ``maxThreshold = 1000 MiB × containers`` (since 1.19, PR #91138; a fixed 1000 MiB before) with
  ``containers`` = the pod's init + app containers (app only before 1.30); the sum is clamped to
  ``[23 MiB, maxThreshold]`` and the score is ``MaxNodeScore × (sum − 23 MiB) /
  (maxThreshold − 23 MiB)`` in int64 (MaxNodeScore 10 up to 1.16, else 100).

No node image data: every sum is 0, so every node scores 0, as upstream with empty node statuses.
Here the float step is the same IEEE-754 double arithmetic as Go's, so the scores are bit-exact.

Vectorised: one index per distinct image name (the nodes listing it and the sizes they give) is
built once per state (node images never change); a pod costs one gather per container. The spread
counts ``ClusterState.present`` (a replay's active nodes) when set.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.core.structured import plain, preview
from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.fields import mapping
from analyzer.scheduling.framework import ExplainRow
from analyzer.scheduling.state import ClusterState, PodDemand
from analyzer.scheduling.versions import KubeVersion

NAME = "ImageLocality"
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
_CACHE_KEY = "image_locality.index"


def normalized_image_name(name: str) -> str:
    """Upstream ``normalizedImageName``: append ``:latest`` when the name has no tag."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def parse_image_locality_args(raw: Mapping[str, Any] | None, where: str) -> None:
    """ImageLocality has no arguments (only ``apiVersion``/``kind`` are accepted)."""
    unknown = sorted(plain(k) for k in mapping(raw, where) if k not in ("apiVersion", "kind"))
    if unknown:
        raise InputError(f"{where}.{unknown[0]}: ImageLocality takes no arguments")


def priority(sums: Int64Array, containers: int, version: KubeVersion | None = None) -> Int64Array:
    """Upstream ``calculatePriority``: clamp each sum to the thresholds and scale to the top."""
    top = 100 if version is None else version.max_node_score
    scaled = version is None or (version.major, version.minor) >= (1, 19)
    high = MAX_CONTAINER_THRESHOLD * containers if scaled else MAX_CONTAINER_THRESHOLD
    clamped = np.clip(sums, MIN_THRESHOLD, max(high, MIN_THRESHOLD))
    if high <= MIN_THRESHOLD:  # a pod without containers: (23 MiB − 23 MiB) / (0 − 23 MiB) = 0
        return np.zeros(len(sums), dtype=np.int64)
    # non-negative operands: Go's truncating division is Python's floor division
    result: Int64Array = (top * (clamped - MIN_THRESHOLD) // (high - MIN_THRESHOLD)).astype(
        np.int64
    )
    return result


class _Index:
    """Per distinct image name: the nodes listing it and the size each gives (state-wide)."""

    def __init__(self, state: ClusterState) -> None:
        rows: dict[str, list[int]] = {}
        sizes: dict[str, list[int]] = {}
        for node, images in enumerate(state.node_images):
            for name, size in images.items():
                rows.setdefault(name, []).append(node)
                sizes.setdefault(name, []).append(int(size))
        self.count = state.node_count
        self.names: dict[str, tuple[Int64Array, Int64Array]] = {
            name: (np.array(rows[name], np.int64), np.array(sizes[name], np.int64)) for name in rows
        }
        self.zeros = np.zeros(state.node_count, dtype=np.int64)  # shared: callers never write it


def _index(state: ClusterState) -> _Index:
    cached = state.cache.get(_CACHE_KEY)
    if isinstance(cached, _Index) and cached.count == state.node_count:
        return cached
    index = _Index(state)
    state.cache[_CACHE_KEY] = index
    return index


def _spread(state: ClusterState, rows: Int64Array) -> tuple[int, int]:
    """(NumNodes, totalNumNodes): the present nodes listing the image, the present nodes."""
    present = state.present
    if present is None:
        return len(rows), state.node_count
    return int(np.count_nonzero(present[rows])), int(np.count_nonzero(present))


def scaled_image_score(size: Int64Array | int, holders: int, total: int) -> Any:
    """Upstream ``scaledImageScore``: ``int64(float64(size) × (float64(NumNodes) / total))``."""
    spread = holders / total  # a Python float is an IEEE double, as Go's float64
    return (np.asarray(size, dtype=np.float64) * spread).astype(np.int64)


class ImageLocality:
    """The ImageLocality score plugin (no filter, no NormalizeScore)."""

    name = NAME
    static_score = True  # reads node images only: the replay caches it per pod image set
    counts_nodes = True  # ... and the present nodes: the replay recomputes it when they change
    normalizes = False  # no NormalizeScore: the replay adds it to each row like a resource score

    def __init__(self, args: Any = None, version: KubeVersion | None = None) -> None:
        self.version = version
        self.with_init = version is None or (version.major, version.minor) >= (1, 30)

    def images(self, pod: PodDemand) -> tuple[str, ...]:
        """The images the version scores: init containers' (1.30+) then app containers'."""
        return (*pod.init_images, *pod.images) if self.with_init else pod.images

    def sums(self, state: ClusterState, pod: PodDemand) -> Int64Array:
        """Upstream ``sumImageScores`` for every node."""
        index = _index(state)
        if not index.names:
            return index.zeros
        total = np.zeros(state.node_count, dtype=np.int64)
        for image in self.images(pod):
            found = index.names.get(normalized_image_name(image))
            if found is None:
                continue
            rows, sizes = found
            holders, nodes = _spread(state, rows)
            if nodes == 0:
                continue
            total[rows] += scaled_image_score(sizes, holders, nodes)  # rows: distinct nodes
        return total

    def score(self, state: ClusterState, pod: PodDemand, now: float) -> Int64Array:
        """The final score of every node (0–100; there is no NormalizeScore)."""
        index = _index(state)
        if not index.names:
            return index.zeros
        return priority(self.sums(state, pod), len(self.images(pod)), self.version)

    def normalize(self, raw: Int64Array, feasible: BoolArray) -> Int64Array:
        """No NormalizeScore upstream: the score as it is (for callers that normalise all)."""
        return raw

    def explain(
        self, state: ClusterState, pod: PodDemand, node: int, now: float
    ) -> list[ExplainRow]:
        """Each container image the node lists (size, spread, scaled score), then the sum."""
        index = _index(state)
        rows: list[ExplainRow] = []
        images = self.images(pod)
        for image in images:
            name = normalized_image_name(image)
            found = index.names.get(name)
            listed = found is not None and node in found[0]
            if found is None or not listed:
                note = "not on this node" if index.names else "no image data"
                rows.append(ExplainRow(self.name, name, None, None, None, 0, note))
                continue
            node_rows, sizes = found
            size = int(sizes[int(np.flatnonzero(node_rows == node)[0])])
            holders, nodes = _spread(state, node_rows)
            value = int(scaled_image_score(size, holders, nodes)) if nodes else 0
            note = f"{size} B × {holders}/{nodes} nodes with the image"
            rows.append(ExplainRow(self.name, name, None, size, None, value, note))
        total = int(self.sums(state, pod)[node])
        scaled = self.version is None or (self.version.major, self.version.minor) >= (1, 19)
        high = MAX_CONTAINER_THRESHOLD * (len(images) if scaled else 1)
        score = int(self.score(state, pod, now)[node])
        note = (
            f"sum {total} B clamped to [23 MiB, {high // MB} MiB]; "
            f"score = top × (sum − 23 MiB) / ({high // MB} MiB − 23 MiB)"
        )
        rows.append(ExplainRow(self.name, "sum", total, high, None, score, note))
        return rows


def image_lists(raw: Any, where: str) -> dict[str, int]:
    """A Node's ``status.images`` (``[{names, sizeBytes}]``) as name -> size (later names win)."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise InputError(f"{where}: expected a list of {{names, sizeBytes}}")
    out: dict[str, int] = {}
    for i, item in enumerate(raw):
        item = mapping(item, f"{where}[{i}]")
        size = item.get("sizeBytes", 0)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise InputError(
                f"{where}[{i}].sizeBytes: {preview(size)} is not a byte count (integer ≥ 0)"
            )
        names = item.get("names") or []
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise InputError(f"{where}[{i}].names: expected a list of image names")
        for name in names:
            out[name] = size
    return out


def container_images(raw: Any, where: str) -> tuple[str, ...]:
    """The ``image`` of each container in a pod spec's container list ("" when absent)."""
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        return ()
    out = []
    for i, item in enumerate(raw):
        image = mapping(item, f"{where}[{i}]").get("image") or ""
        if not isinstance(image, str):
            raise InputError(f"{where}[{i}].image: {preview(image)} is not an image name")
        out.append(image)
    return tuple(out)


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text) if text else None
    except (json.JSONDecodeError, RecursionError):  # a cell nested past the parser
        raise InputError(f"{where}: {text[:40]!r} is not JSON; re-create the snapshot") from None


def node_images_from_json(texts: Sequence[str], where: str) -> list[dict[str, int]]:
    """Snapshot ``nodes.images`` cells (JSON ``[{names, sizeBytes}]``) as name -> size per node;
    an empty list when no node lists any image. Equal cells are parsed once."""
    parsed: dict[str, dict[str, int]] = {}
    for text in dict.fromkeys(texts):
        parsed[text] = image_lists(_json(text, where), where)
    out = [parsed[t] for t in texts]
    return out if any(out) else []


def pod_images_from_json(text: str, where: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A snapshot ``pods.container_images`` cell as (app containers' images, init containers')."""
    raw = _json(text, where)
    if raw is None or raw == {}:
        return (), ()
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected a JSON object {{containers, initContainers}}")
    lists = []
    for key in ("containers", "initContainers"):
        images = raw.get(key) or []
        if not isinstance(images, list) or not all(isinstance(i, str) for i in images):
            raise InputError(f"{where}.{plain(key)}: expected a list of image names")
        lists.append(tuple(images))
    return lists[0], lists[1]


def pod_images_json(containers: Sequence[str], init_containers: Sequence[str]) -> str:
    """The ``pods.container_images`` cell of a pod ("{}" when no image is known)."""
    if not any(containers) and not any(init_containers):
        return "{}"
    return json.dumps(
        {"containers": list(containers), "initContainers": list(init_containers)}, sort_keys=True
    )


def node_images_json(raw: Any) -> str:
    """The ``nodes.images`` cell of a Node's ``status.images`` (sizes and names only)."""
    if not isinstance(raw, list):
        return "[]"
    out = [
        {
            "names": [str(n) for n in (item.get("names") or [])],
            "sizeBytes": int(item.get("sizeBytes") or 0),
        }
        for item in raw
        if isinstance(item, Mapping)
    ]
    return json.dumps(out, sort_keys=True)
