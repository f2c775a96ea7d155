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

``--load-only`` stops after the import (prints the import's rate: samples per second, and
``blocked_on_server_s``: how long the rendering waited for VictoriaMetrics to take the next
chunk — near 0 means the rendering is the bottleneck). ``--collect-days X`` collects only the
store's first X days; with a baseline tree the two snapshots of the first round are compared
file by file (``bench/collect_compare.py``).
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


_NAME_AT = re.compile(r'(^|",)([A-Za-z_][A-Za-z0-9_]*)="')
_AS_KEY = r'\1"\2":"'
_SLOW = re.compile(r"[\\\x00-\x1f]")  # a backslash or a control character: the slow path


def _metric_json(head: str) -> str:
    """``name{k="v",...}`` as VictoriaMetrics's ``metric`` object (JSON text).

    OpenMetrics escapes a label value's backslash, double quote and newline as JSON does, so a
    value's text is the same in both: only the names are rewritten (``k="`` → ``"k":"``). A
    value with a backslash takes the slow path (an escaped quote could look like a name's end).
    """
    name, _, body = head.partition("{")
    body = body[:-1] if body else ""
    if _SLOW.search(body):
        labels = {"__name__": name}
        for key, value in _LABEL.findall(body):
            labels[key] = value.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        return json.dumps(labels, separators=(",", ":"))
    if not body:
        return f'{{"__name__":"{name}"}}'
    return f'{{"__name__":"{name}",{_NAME_AT.sub(_AS_KEY, body)}}}'


class JsonLinesWriter(SeriesWriter):
    """The exporter's series as ``/api/v1/import`` JSON lines (a line per series and call).

    Rendering was the import's bottleneck (docs/benchmarks.md "collectweek": ≈ 190,000 samples/s
    rendered against ≈ 620,000/s ingested by VictoriaMetrics), so the per-sample work is kept in
    C: counters are written as their integer millicore-seconds with an ``e-3`` exponent (the
    same float as ``repr(ms / 1000)``: both are the double nearest the exact decimal) instead of
    a ``repr`` per sample, the timestamps of a whole slice are joined once and reused by every
    series that spans it, and each series' ``metric`` object is rendered once per run, not once
    per slice (``heads`` is shared across the slices' writers).
    """

    def __init__(self, handle: Any, times: np.ndarray, heads: dict[str, str]) -> None:
        super().__init__(handle, times)
        self.ms = [str(int(t)) + "000" for t in times]
        self.heads = heads
        self.joined: dict[tuple[int, int], str] = {}  # (first, last) grid index → their stamps

    def _line(self, head: str, values: str, stamps: str) -> None:
        metric = self.heads.get(head)
        if metric is None:
            metric = self.heads[head] = _metric_json(self._with_extra(head))
        self._put(f'{{"metric":{metric},"values":[{values}],"timestamps":[{stamps}]}}\n')

    def _stamps_ms(self, first: int, last: int) -> str:
        key = (first, last)
        text = self.joined.get(key)
        if text is None:
            text = ",".join(self.ms[first : last + 1])
            if len(self.joined) < 64:  # the slice's common spans; a pod's own span is one-off
                self.joined[key] = text
        return text

    def const(self, head: str, value: str, lo: int, hi: int, *, new: bool = True) -> None:
        """One value at grid indices ``lo..hi`` (every grid point: no stride here)."""
        lo, hi = max(lo, self.window[0]), min(hi, self.window[1])
        if hi < lo:
            return
        # the text writer's points (strided runs keep both ends); seconds + "000" = ms
        stamps = self._stamps(lo, hi)
        self._line(head, ",".join([value] * len(stamps)), "000,".join(stamps) + "000")
        self.series += new
        self.samples += len(stamps)

    def _texts(self, head: str, texts: str, first: int, last: int) -> None:
        self._line(head, texts, self._stamps_ms(first, last))
        self.series += 1
        self.samples += last - first + 1

    def values(self, head: str, values: Any, lo: int, count: int) -> None:
        """One series with a value per grid index ``lo..lo+count−1`` (cut to the window)."""
        first, last = max(lo, self.window[0]), min(lo + count - 1, self.window[1])
        if last < first:
            return
        texts = list(values)[first - lo : last - lo + 1]
        self._texts(head, ",".join(texts), first, last)

    def counter(self, head: str, millicore_seconds: np.ndarray, lo: int) -> None:
        """Core-seconds as integer millicore-seconds times ``e-3`` (exact, see the class)."""
        part, first = self._clip(millicore_seconds, lo)
        if len(part):
            ints = part.astype(np.int64)
            if not np.array_equal(ints, part):  # not whole millicore-seconds: the exact repr
                self.values(head, map(repr, (part / 1000).tolist()), first, len(part))
                return
            text = "e-3,".join(map(str, ints.tolist())) + "e-3"
            self._texts(head, text, first, first + len(part) - 1)

    def gauge(self, head: str, integers: np.ndarray, lo: int) -> None:
        """An integer-valued gauge series."""
        part, first = self._clip(integers, lo)
        if len(part):
            self._texts(head, ",".join(map(str, part.tolist())), first, first + len(part) - 1)

    def close(self) -> None:
        """Flush (no ``# EOF`` in JSON lines)."""
        self.flush()


class _Pipe:
    """A file-like ``write`` that feeds a chunked HTTP POST running in a thread."""

    def __init__(self, host: str, port: int, path: str) -> None:
        self.chunks: queue.Queue[bytes | None] = queue.Queue(maxsize=8)
        self.status: list[Any] = []
        self.bytes = 0
        self.wait_s = 0.0  # time ``write`` blocked on a full queue: VictoriaMetrics behind

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
        t = time.perf_counter()
        self.chunks.put(data)
        self.wait_s += time.perf_counter() - t

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
    waited = 0.0
    heads: dict[str, str] = {}
    t = time.perf_counter()
    for lo in range(int(times[0]), int(times[-1]) + 1, chunk):
        pipe = _Pipe("127.0.0.1", port, "/api/v1/import")
        out = JsonLinesWriter(pipe, times, heads)
        out.stride = options.stride(cluster.grid.step)
        _render(out, cluster, replace(options, start_s=lo, end_s=lo + chunk - 1))
        out.close()
        pipe.finish()
        samples += out.samples
        sent += pipe.bytes
        waited += pipe.wait_s
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
        # the rendering's share: the import's wall less the time it waited for the server
        blocked_on_server_s=round(waited, 1),
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
    parser.add_argument("--slice-hours", type=float, default=24)
    parser.add_argument("--data", type=Path, required=True, help="VictoriaMetrics's data folder")
    parser.add_argument("--port", type=int, default=18428)
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument("--load-only", action="store_true")
    parser.add_argument("--baseline-tree", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--collect-days", type=float, default=None, help="collect the first days")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/collectweek-vm/work"))
    args = parser.parse_args()

    from collect_compare import compare
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
        end = recorded["end"]
        if args.collect_days is not None:  # the first days of the store only
            end = min(end, recorded["start"] + round(args.collect_days * 86_400))
        for round_ in range(args.repeat):
            order = list(trees) if round_ % 2 == 0 else list(trees)[::-1]
            for side in order:
                out = args.workdir / side
                shutil.rmtree(out, ignore_errors=True)
                before = _server_usage(server.pid)
                load1 = round(os.getloadavg()[0], 2)
                wall, rss, cpu, text = run_collect(trees[side], [
                    "collect", "--prometheus", url, "--start", str(recorded["start"]),
                    "--end", str(end), "--step", f"{recorded['step']}s",
                    "--out", str(out),
                ])  # fmt: skip
                after = _server_usage(server.pid)
                row = {
                    "nodes": recorded["nodes"], "days": round((end - recorded["start"]) / 86_400, 3),
                    "side": side,
                    "round": round_, "peak_rss_mb": round(rss), "cpu_s": round(cpu, 1),
                    "wall_s": round(wall, 1), "load_before": load1,
                    "vm_cpu_s": round(after[0] - before[0], 1),
                    "vm_peak_rss_mb_so_far": round(after[1] / 1024),
                    "wrote": text.strip().splitlines()[-1][:200] if text.strip() else "",
                }  # fmt: skip
                print(json.dumps(row), flush=True)
            if round_ == 0 and len(trees) == 2:  # both snapshots: the same files?
                print(json.dumps({"compare": compare(args.workdir / "baseline",
                                                     args.workdir / "branch")}), flush=True)  # fmt: skip
            for side in trees:
                shutil.rmtree(args.workdir / side, ignore_errors=True)
    finally:
        server.terminate()
        server.wait(timeout=120)
    print(json.dumps({"machine": f"{platform.machine()} {os.cpu_count()} cpus, Python "
                      f"{platform.python_version()}",
                      "finished": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}))  # fmt: skip


if __name__ == "__main__":
    main()
