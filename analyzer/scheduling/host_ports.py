"""Host ports: what a pod asks for (``containers[].ports[].hostPort``) and what each node has in use.

kube-scheduler's NodePorts plugin (``pkg/scheduler/framework/plugins/nodeports``) refuses a node
when one of the pod's host ports is already used there. The rules, read from upstream's
``HostPortInfo`` (``k8s.io/kube-scheduler/framework`` types):

- a port is the triple (protocol, hostIP, hostPort); a container port without a ``hostPort``
  (0) asks for nothing; an empty protocol is ``TCP`` and an empty hostIP is ``0.0.0.0``;
- ``0.0.0.0`` binds every address: it conflicts with any hostIP of the same protocol and port,
  and any hostIP conflicts with a ``0.0.0.0`` already in use;
- the pod's ports are those of its app containers and of its restartable (sidecar) init
  containers: a plain init container has exited before the app containers start;
- a ``hostNetwork`` pod's container ports are host ports: the API server defaults ``hostPort``
  to ``containerPort`` for it.

``PortIndex`` keeps, per (protocol, port), which nodes use it and with which hostIPs (counted:
two pods may each hold the same triple on one node when they came there without the filter).
Binding or unbinding a pod without host ports never touches it, so a replay of pods without
host ports pays one tuple test per event.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from analyzer.core.errors import InputError
from analyzer.core.structured import preview
from analyzer.scheduling.fields import listing, mapping, text

ANY_IP = "0.0.0.0"  # upstream DefaultBindAllHostIP
DEFAULT_PROTOCOL = "TCP"


class HostPort(NamedTuple):
    """One host port a container binds: protocol, host IP and port number."""

    protocol: str
    ip: str
    port: int


def host_port(protocol: str, ip: str, port: int) -> HostPort:
    """The sanitised triple (empty protocol TCP, empty IP ``0.0.0.0``), as upstream stores it."""
    return HostPort(protocol or DEFAULT_PROTOCOL, ip or ANY_IP, int(port))


def _port_number(raw: Any, where: str) -> int:
    if raw is None:
        return 0
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= 65535:
        raise InputError(f"{where}: {preview(raw)} is not a port number (an integer 0–65535)")
    return raw


def _container_ports(container: Any, where: str, host_network: bool) -> list[HostPort]:
    out = []
    for i, item in enumerate(listing(mapping(container, where).get("ports"), f"{where}.ports")):
        at = f"{where}.ports[{i}]"
        item = mapping(item, at)
        port = _port_number(item.get("hostPort"), f"{at}.hostPort")
        if port == 0 and host_network:  # API defaulting: hostPort = containerPort
            port = _port_number(item.get("containerPort"), f"{at}.containerPort")
        if port > 0:  # upstream skips hostPort <= 0: no port asked
            out.append(
                host_port(
                    text(item.get("protocol"), f"{at}.protocol"),
                    text(item.get("hostIP"), f"{at}.hostIP"),
                    port,
                )
            )
    return out


def pod_host_ports(spec: Mapping[str, Any], where: str) -> tuple[HostPort, ...]:
    """The host ports of a pod spec (app containers, then sidecar init containers), in order."""
    host_network = spec.get("hostNetwork") is True
    ports: list[HostPort] = []
    for i, container in enumerate(listing(spec.get("containers"), f"{where}.containers")):
        ports += _container_ports(container, f"{where}.containers[{i}]", host_network)
    for i, container in enumerate(listing(spec.get("initContainers"), f"{where}.initContainers")):
        if mapping(container, f"{where}.initContainers[{i}]").get("restartPolicy") == "Always":
            ports += _container_ports(container, f"{where}.initContainers[{i}]", host_network)
    return tuple(ports)


def host_ports_json(ports: Sequence[HostPort]) -> str:
    """The snapshot's ``pods.host_ports`` cell: ``[[protocol, hostIP, port], ...]`` ("[]": none)."""
    return json.dumps([list(p) for p in ports], separators=(",", ":"))


def host_ports_from_json(cell: str, where: str) -> tuple[HostPort, ...]:
    """Parse a ``pods.host_ports`` cell (empty or "[]": no host ports)."""
    if not cell or cell == "[]":
        return ()
    try:
        raw = json.loads(cell)
    except ValueError:
        raise InputError(
            f"{where}: {preview(cell)} is not JSON; expected [[protocol, hostIP, port], ...]"
        ) from None
    out = []
    for i, item in enumerate(listing(raw, where)):
        ok = isinstance(item, list) and len(item) == 3
        if not ok or not all(isinstance(x, str) for x in item[:2]):
            raise InputError(f"{where}[{i}]: expected [protocol, hostIP, port]")
        port = _port_number(item[2], f"{where}[{i}][2]")
        if port > 0:
            out.append(host_port(item[0], item[1], port))
    return tuple(out)


def fits(used: Iterable[HostPort], wanted: Iterable[HostPort]) -> bool:
    """Upstream ``Fits`` for one node: no wanted port conflicts with a used one (a plain loop,
    the reference the index is tested against)."""
    used = list(used)
    for want in wanted:
        for have in used:
            if have.protocol != want.protocol or have.port != want.port:
                continue
            if want.ip == ANY_IP or have.ip == ANY_IP or have.ip == want.ip:
                return False
    return True


class PortIndex:
    """Host ports in use per node, indexed by (protocol, port) -> node -> hostIP counts."""

    def __init__(self) -> None:
        self.by_port: dict[tuple[str, int], dict[int, Counter[str]]] = {}

    def add(self, node: int, ports: Sequence[HostPort]) -> None:
        """A pod holding ``ports`` was bound to ``node``."""
        for p in ports:
            self.by_port.setdefault((p.protocol, p.port), {}).setdefault(node, Counter())[p.ip] += 1

    def remove(self, node: int, ports: Sequence[HostPort]) -> None:
        """A pod holding ``ports`` left ``node``."""
        for p in ports:
            holders = self.by_port[(p.protocol, p.port)]
            ips = holders[node]
            ips[p.ip] -= 1
            if ips[p.ip] <= 0:
                del ips[p.ip]
                if not ips:
                    del holders[node]
                    if not holders:
                        del self.by_port[(p.protocol, p.port)]

    def node_copy(self, node: int) -> PortIndex:
        """A separate index holding only ``node``'s ports, as node 0 (a one-node state view)."""
        copy = PortIndex()
        for key, holders in self.by_port.items():
            if node in holders:
                copy.by_port[key] = {0: Counter(holders[node])}
        return copy

    def used(self, node: int) -> list[HostPort]:
        """The distinct host ports in use on ``node`` (for explanations and tests)."""
        return sorted(
            HostPort(proto, ip, port)
            for (proto, port), holders in self.by_port.items()
            for ip in holders.get(node, ())
        )

    def blocked(self, ports: Sequence[HostPort]) -> set[int]:
        """The nodes where one of ``ports`` conflicts with a port in use (empty: none)."""
        out: set[int] = set()
        for p in ports:
            holders = self.by_port.get((p.protocol, p.port))
            if not holders:
                continue
            if p.ip == ANY_IP:
                out.update(holders)
            else:
                out.update(n for n, ips in holders.items() if p.ip in ips or ANY_IP in ips)
        return out

    def conflicts(self, node: int, ports: Sequence[HostPort]) -> bool:
        """Whether one of ``ports`` conflicts on ``node``."""
        for p in ports:
            ips = self.by_port.get((p.protocol, p.port), {}).get(node)
            if ips and (p.ip == ANY_IP or p.ip in ips or ANY_IP in ips):
                return True
        return False
