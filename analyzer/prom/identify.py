"""Which server answers the Prometheus API, and its version (``analyzer check``'s first line).

- Prometheus (and Thanos, whose build info has the same shape) answers
  ``/api/v1/status/buildinfo`` with ``version``, ``revision``, ``branch``, ``goVersion``;
- Grafana Mimir answers it with ``application: "Grafana Mimir"`` besides the version;
- VictoriaMetrics 1.x answers it with empty ``data`` (later releases with a Prometheus-like
  ``version`` only, no ``revision``): it is told by ``/-/healthy`` ("VictoriaMetrics is Healthy.")
  and its version read from the ``vm_app_version`` line of its own ``/metrics``
  (``short_version="v1.79.5"``; a build without a version stamp, like Debian's, leaves it empty);
- a server without build info (Prometheus before 2.14) is named by its ``/-/healthy`` text
  ("Prometheus Server is Healthy.", "Thanos ... is Healthy.") when it has one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from analyzer.prom.client import PromClient

PROMETHEUS = "Prometheus"
VICTORIAMETRICS = "VictoriaMetrics"
UNKNOWN = "unknown"
# names a /-/healthy text may carry, most specific first (Thanos' text may mention Prometheus)
_HEALTHY_NAMES = (VICTORIAMETRICS, "Thanos", PROMETHEUS)
_VM_VERSION = re.compile(r"^vm_app_version\{(?P<labels>[^}]*)\}", re.MULTILINE)
_SEMVER = re.compile(r"v\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?")


@dataclass(frozen=True)
class ServerIdentity:
    """The kind of server (``Prometheus``, ``VictoriaMetrics``, ``Grafana Mimir``, ``unknown``)
    and the version it reports (``""`` when it reports none)."""

    kind: str
    version: str = ""

    def describe(self) -> str:
        """One phrase for the report: "VictoriaMetrics v1.79.5", "Prometheus 2.42.0"."""
        if self.kind == UNKNOWN:
            return (
                "server unknown (no version in /api/v1/status/buildinfo, "
                "no known server name in /-/healthy)"
            )
        if not self.version:
            return f"{self.kind} (version not reported by the server)"
        return f"{self.kind} {self.version}"


def identify_server(client: PromClient) -> ServerIdentity:
    """Ask build info first; only a server that leaves it empty gets the two probes."""
    info = client.buildinfo()
    version = str(info.get("version") or "")
    application = str(info.get("application") or "")
    if application:
        return ServerIdentity(application, version)
    if version and info.get("revision"):
        return ServerIdentity(PROMETHEUS, version)
    healthy = client.get_text("/-/healthy", what="health check", limit=4096) or ""
    if VICTORIAMETRICS in healthy:
        metrics = client.get_text("/metrics", what="server metrics") or ""
        return ServerIdentity(VICTORIAMETRICS, victoriametrics_version(metrics))
    named = next((name for name in _HEALTHY_NAMES if name in healthy), None)
    if named is not None:
        return ServerIdentity(named, version)
    if version:
        return ServerIdentity(PROMETHEUS, version)
    return ServerIdentity(UNKNOWN)


def victoriametrics_version(metrics_text: str) -> str:
    """``v1.79.5`` from VictoriaMetrics' ``vm_app_version{version=..., short_version=...}``
    line (the short version, else the semantic version inside the long one); ``""`` if none."""
    match = _VM_VERSION.search(metrics_text)
    if match is None:
        return ""
    labels = dict(re.findall(r'(\w+)="([^"]*)"', match["labels"]))
    for key in ("short_version", "version"):
        found = _SEMVER.search(labels.get(key, ""))
        if found:
            return found.group(0)
    return ""
