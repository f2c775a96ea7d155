"""Peak memory of ``analyzer collect`` against VictoriaMetrics holding a large synthetic cluster.

Backfilling Prometheus with promtool is far too slow at 5,000 nodes (docs/benchmarks.md
"collectstream": ≈ 5 min per quarter-day at 500 nodes), so this loads the same series into a
VictoriaMetrics single node (``victoria-metrics``, bound to 127.0.0.1) through its JSON-lines
import (``/api/v1/import``: one line per series with its values and millisecond timestamps),
a few times less text than OpenMetrics' one line per sample. The series are exactly those of
``analyzer.sources.write_openmetrics`` (the generator's exporter, ``bench/collect.py``'s
settings: host-ip instances, one node-exporter cpu, KSM constants every ``--constant-step``),
rendered by a ``SeriesWriter`` that writes JSON lines instead of exposition text, a time slice
at a time and streamed into the import request (nothing is written to disk but VM's own data).

Then ``python -m analyzer collect`` of this tree and of ``--baseline-tree`` (a checkout put first
on ``PYTHONPATH``, as in ``bench/collect_stream.py``) runs against it, alternating which goes
first; each run's peak RSS (``os.wait4``'s ``ru_maxrss``), wall and CPU seconds are printed as
JSON lines, and VictoriaMetrics's own CPU seconds and peak RSS during each collect.

    .venv/bin/python bench/collect_vm.py --nodes 500 --days 1 --data /tmp/bigmem-vm/d500 \\
        --baseline-tree /tmp/bigmem-main            # load, then collect
    .venv/bin/python bench/collect_vm.py --data /tmp/bigmem-vm/d500 --skip-load ...

``--load-only`` stops after the import (prints the import's rate: samples per second).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from analyzer.sources.omtext import SeriesWriter  # noqa: E402

_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _metric_json(head: str) -> str:
    """``name{k="v",...}`` as VictoriaMetrics's ``metric`` object (JSON text)."""
    name, _, body = head.partition("{")
    labels = {"__name__": name}
    for key, value in _LABEL.findall(body[:-1] if body else ""):
        labels[key] = value.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
    return json.dumps(labels, separators=(",", ":"))


class JsonLinesWriter(SeriesWriter):
    """The exporter's series as ``/api/v1/import`` JSON lines (a line per series and call)."""

    def __init__(self, handle: Any, times: np.ndarray) -> None:
        super().__init__(handle, times)
        self.ms = [str(int(t) * 1000) for t in times]
        self.heads: dict[str, str] = {}

    def _line(self, head: str, values: list[str], stamps: list[str]) -> None:
        metric = self.heads.get(head)
        if metric is None:
            metric = self.heads[head] = _metric_json(self._with_extra(head))
        self._put(
            f'{{"metric":{metric},"values":[{",".join(values)}],'
            f'"timestamps":[{",".join(stamps)}]}}\n'
        )

    def const(self, head: str, value: str, lo: int, hi: int, *, new: bool = True) -> None:
        """One value at grid indices ``lo..hi`` (every grid point: no stride here)."""
        lo, hi = max(lo, self.window[0]), min(hi, self.window[1])
        if hi < lo:
            return
        # the text writer's points (strided runs keep both ends); seconds + "000" = ms
        stamps = [t + "000" for t in self._stamps(lo, hi)]
        self._line(head, [value] * len(stamps), stamps)
        self.series += new
        self.samples += len(stamps)

    def values(self, head: str, values: Any, lo: int, count: int) -> None:
        """One series with a value per grid index ``lo..lo+count−1`` (cut to the window)."""
        first, last = max(lo, self.window[0]), min(lo + count - 1, self.window[1])
        if last < first:
            return
        texts = list(values)[first - lo : last - lo + 1]
        self._line(head, texts, self.ms[first : last + 1])
        self.series += 1
        self.samples += len(texts)

    def close(self) -> None:
        """Flush (no ``# EOF`` in JSON lines)."""
        self.flush()


class _Pipe:
    """A file-like ``write`` that feeds a chunked HTTP POST running in a thread."""

    def __init__(self, host: str, port: int, path: str) -> None:
        self.chunks: queue.Queue[bytes | None] = queue.Queue(maxsize=8)
        self.status: list[Any] = []
        self.bytes = 0

        def post() -> None:
            conn = http.client.HTTPConnection(host, port, timeout=3600)
            conn.request("POST", path, body=iter(self.chunks.get, None), encode_chunked=True)
            response = conn.getresponse()
            self.status.append((response.status, response.read()[:300]))

        self.thread = threading.Thread(target=post, daemon=True)
        self.thread.start()

    def write(self, text: str) -> None:
        data = text.encode()
        self.bytes += len(data)
        self.chunks.put(data)

    def finish(self) -> None:
        self.chunks.put(None)
        self.thread.join()
        if not self.status or self.status[0][0] not in (200, 204):
            raise SystemExit(f"import failed: {self.status}")


def start_vm(data: Path, port: int) -> subprocess.Popen[bytes]:
    """VictoriaMetrics on 127.0.0.1:``port`` over ``data``, limits opened for a big collect."""
    data.mkdir(parents=True, exist_ok=True)
    log = (data.parent / f"{data.name}.log").open("ab")
    proc = subprocess.Popen(
        [
            "victoria-metrics",
            f"-storageDataPath={data}",
            f"-httpListenAddr=127.0.0.1:{port}",
            "-retentionPeriod=100y",
            "-search.disableCache",  # both collects do the same work
            "-search.maxQueryDuration=1800s",
            "-search.maxUniqueTimeseries=50000000",
            "-search.maxSamplesPerQuery=10000000000",
            "-search.maxPointsPerTimeseries=1000000",
            "-search.maxSeries=50000000",
            "-search.latencyOffset=0s",
        ],
        stdout=log,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}/health"
    for _ in range(300):
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("victoria-metrics did not start")


def load(args: argparse.Namespace, port: int) -> dict[str, Any]:
    """Generate the cluster and import it a slice at a time; the import's figures."""
    from analyzer.sources import SyntheticSpec, generate
    from analyzer.sources.openmetrics import OpenMetricsOptions, _render

    t = time.perf_counter()
    cluster = generate(
        SyntheticSpec(
            seed=1,
            nodes=args.nodes,
            days=args.days,
            step=args.step,
            pods_per_node=args.pods_per_node,
        )
    )
    figures: dict[str, Any] = {"generate_s": round(time.perf_counter() - t, 1)}
    options = OpenMetricsOptions(
        instance_convention="host-ip", node_exporter_cpus=1, constant_step=args.constant_step
    )
    times = cluster.grid.times
    chunk = int(args.slice_hours * 3600)
    samples = sent = 0
    t = time.perf_counter()
    for lo in range(int(times[0]), int(times[-1]) + 1, chunk):
        pipe = _Pipe("127.0.0.1", port, "/api/v1/import")
        out = JsonLinesWriter(pipe, times)
        out.stride = options.stride(cluster.grid.step)
        _render(out, cluster, replace(options, start_s=lo, end_s=lo + chunk - 1))
        out.close()
        pipe.finish()
        samples += out.samples
        sent += pipe.bytes
        rate = samples / (time.perf_counter() - t)
        print(f"slice from {lo}: {samples} samples so far, {rate:,.0f}/s", file=sys.stderr,
              flush=True)  # fmt: skip
    urllib.request.urlopen(f"http://127.0.0.1:{port}/internal/force_flush", timeout=600).read()
    seconds = time.perf_counter() - t
    truth = cluster.snapshot
    figures.update(
        samples=samples,
        json_bytes=sent,
        import_s=round(seconds, 1),
        samples_per_s=round(samples / seconds),
        start=int(truth.start.timestamp()),
        end=int(truth.end.timestamp()),
        nodes=args.nodes,
        days=args.days,
        step=args.step,
        pods=len(truth.pods),
    )
    return figures


def _server_usage(pid: int) -> tuple[float, int]:
    """(CPU seconds so far, peak RSS kB) of the server process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    hwm = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1])
    return cpu, hwm


def main() -> None:
    """Load (unless ``--skip-load``), then collect with each tree; JSON lines on stdout."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--days", type=float, default=1)
    parser.add_argument("--step", type=int, default=60)
    parser.add_argument("--pods-per-node", type=int, default=3)
    parser.add_argument("--constant-step", type=int, default=300)
    parser.add_argument("--slice-hours", type=float, default=2)
    parser.add_argument("--data", type=Path, required=True, help="VictoriaMetrics's data folder")
    parser.add_argument("--port", type=int, default=18428)
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument("--load-only", action="store_true")
    parser.add_argument("--baseline-tree", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/bigmem-vm/work"))
    args = parser.parse_args()

    from collect_stream import run as run_collect  # same measurement as collectstream

    record = args.data.with_name(args.data.name + ".json")
    server = start_vm(args.data, args.port)
    try:
        if not args.skip_load:
            figures = load(args, args.port)
            record.write_text(json.dumps(figures))
            print(json.dumps({"load": figures}), flush=True)
        if args.load_only:
            return
        recorded = json.loads(record.read_text())
        url = f"http://127.0.0.1:{args.port}"
        trees = {"branch": ROOT}
        if args.baseline_tree:
            trees["baseline"] = args.baseline_tree.resolve()
        shutil.rmtree(args.workdir, ignore_errors=True)
        args.workdir.mkdir(parents=True)
        for round_ in range(args.repeat):
            order = list(trees) if round_ % 2 == 0 else list(trees)[::-1]
            for side in order:
                out = args.workdir / side
                shutil.rmtree(out, ignore_errors=True)
                before = _server_usage(server.pid)
                load1 = round(os.getloadavg()[0], 2)
                wall, rss, cpu, text = run_collect(trees[side], [
                    "collect", "--prometheus", url, "--start", str(recorded["start"]),
                    "--end", str(recorded["end"]), "--step", f"{recorded['step']}s",
                    "--out", str(out),
                ])  # fmt: skip
                after = _server_usage(server.pid)
                row = {
                    "nodes": recorded["nodes"], "days": recorded["days"], "side": side,
                    "round": round_, "peak_rss_mb": round(rss), "cpu_s": round(cpu, 1),
                    "wall_s": round(wall, 1), "load_before": load1,
                    "vm_cpu_s": round(after[0] - before[0], 1),
                    "vm_peak_rss_mb_so_far": round(after[1] / 1024),
                    "wrote": text.strip().splitlines()[-1][:200] if text.strip() else "",
                }  # fmt: skip
                print(json.dumps(row), flush=True)
                shutil.rmtree(out, ignore_errors=True)
    finally:
        server.terminate()
        server.wait(timeout=120)
    print(json.dumps({"machine": f"{platform.machine()} {os.cpu_count()} cpus, Python "
                      f"{platform.python_version()}",
                      "finished": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}))  # fmt: skip


if __name__ == "__main__":
    main()
