"""cluster-autoscaler's scheduling hints (cluster-autoscaler/simulator/scheduling/hints.go), shared by
the replay's CA (``analyzer.autoscaler.removal``) and the generator's (``analyzer.sources.
autoscaled_nodes``), which sit in one layer and may not import each other.

CA's ``HintingSimulator`` remembers, per pod, the node a simulation last placed it on. When it
next has to place the same pod it tries that node first (if the node still exists, is acceptable
and passes the filters) and searches round-robin only otherwise. The memory has two
generations: ``set`` writes the current one, ``get`` reads the current one and then the old one,
and ``drop_old`` (called once per autoscaler loop, after the scale-down simulations of
``Planner.UpdateClusterState``) makes the current generation the old one and starts an empty
current one. So a hint lives for the loop that set it and the next; a pod no simulation placed
in the last loop (a pod that left, or one whose node was not simulated) has none.

Keys are upstream's ``HintKeyFromPod`` (the pod's UID, else ``namespace/name``) or any
identifier a caller keeps per pod; values are whatever names a node for the caller.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Hints(Generic[K, V]):
    """``scheduling.Hints``: two generations of pod -> node (module docstring)."""

    def __init__(self) -> None:
        self.current: dict[K, V] = {}
        self.old: dict[K, V] = {}
        self.drops = 0  # ``drop_old`` calls so far (a caller tells the generations apart)

    def get(self, key: K) -> V | None:
        """``Get``: the current generation's hint, else the old one's, else None."""
        found = self.current.get(key)
        if found is not None:
            return found
        return self.old.get(key)

    def set(self, key: K, node: V) -> None:
        """``Set``: the pod was just placed on ``node``."""
        self.current[key] = node

    def same(self, looks: Iterable[tuple[K, V | None]]) -> bool:
        """Whether ``get`` of every key of ``looks`` reads its hint now."""
        current, old = self.current, self.old
        for key, hint in looks:
            found = current.get(key)
            if found is None:
                found = old.get(key)
            if found != hint:
                return False
        return True

    def same_keys(self, keys: tuple[K, ...], hints: tuple[V | None, ...]) -> bool:
        """``same`` of ``zip(keys, hints)``. Where no key has a hint of the current generation
        (an answer taken again reads its own pods' hints, which nothing before it in the pass
        set: most calls), ``get`` is the old generation's ``get`` for each key, compared in one
        step; else key by key."""
        current = self.current
        if current and not current.keys().isdisjoint(keys):
            return self.same(zip(keys, hints, strict=True))
        return tuple(map(self.old.get, keys)) == hints

    def drop_old(self) -> None:
        """``DropOld``: forget what the loop before the last one set."""
        self.old, self.current = self.current, {}
        self.drops += 1

    def forget(self, key: K) -> None:
        """Drop ``key`` in both generations (a caller whose pod keeps its key after an eviction,
        where upstream's replacement pod would have a new UID)."""
        self.current.pop(key, None)
        self.old.pop(key, None)
