"""The HTTP client: ``prometheus_api_client.PrometheusConnect`` underneath, raw JSON on top.

``PrometheusConnect`` owns the session (auth, headers, TLS, retry adapter). Its query helpers drop
the response ``warnings`` (Thanos partial responses) and its DataFrame helpers build one Python dict
per sample, so we send the requests through its session ourselves and parse the JSON envelope into
numpy arrays. Every failure becomes one line: ``SourceError`` (exit 1) for the server side,
``InputError`` (exit 2) for settings the user must fix. Credentials never appear in messages.
"""

from __future__ import annotations

import io
import json
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import requests
from prometheus_api_client import PrometheusConnect
from requests.adapters import HTTPAdapter
from urllib3.exceptions import HTTPError, ReadTimeoutError
from urllib3.util.retry import Retry

from analyzer.errors import SourceError
from analyzer.prom.settings import (
    PromSettings,
    basic_auth,
    bearer_token,
    check_settings,
    is_loopback,
    normalise_url,
    public_url,
)

# Statuses worth retrying: proxies and overloaded servers recover; 4xx and 422 never do.
RETRY_STATUSES = (429, 502, 503, 504)


LabelKey = tuple[tuple[str, str], ...]


@dataclass
class Series:
    """One result series: its labels and samples (unix seconds, float values).

    ``key`` is the label set as sorted ``(name, value)`` pairs when the parser already has it
    (``series_key`` computes it otherwise).
    """

    labels: dict[str, str]
    timestamps: np.ndarray
    values: np.ndarray
    key: LabelKey | None = None


def series_key(series: Series) -> LabelKey:
    """The series' label set as a hashable, order-independent key."""
    return series.key if series.key is not None else tuple(sorted(series.labels.items()))


# label JSON of a series as the server sent it → (labels, key), from one response to the next
LabelCache = dict[bytes, tuple[dict[str, str], LabelKey]]


def _to_floats(strings: list[str]) -> np.ndarray:
    """Prometheus sends values as strings (``"NaN"``, ``"+Inf"`` included); numpy parses them all."""
    return np.array(strings, dtype=np.float64)


def parse_matrix(result: list[dict[str, Any]]) -> list[Series]:
    """``data.result`` of a matrix into ``Series`` with numpy arrays."""
    out: list[Series] = []
    for item in result:
        points = item.get("values") or []
        timestamps = np.fromiter((p[0] for p in points), dtype=np.float64, count=len(points))
        values = _to_floats([p[1] for p in points])
        out.append(Series(dict(item.get("metric", {})), timestamps, values))
    return out


_SERIES = b'{"metric":'
_VALUES = b',"values":['
# A one-to-one byte map (no deletions: the copy it makes is the only one): '[' → ',' and
# ']' → '⏎' turn [t,"v"],[t,"v"] into t,"v"⏎,,t,"v"⏎ (CSV unquotes "v").
_ROWS = bytes.maketrans(b"[]", b",\n")
_SENTINEL = b"[nan,0]"  # a row before every series; its NaN timestamp marks where a series starts
_CSV_READ = pa_csv.ReadOptions(column_names=["_", "__", "t", "v"], block_size=1 << 22)
_CSV_CONVERT = pa_csv.ConvertOptions(
    include_columns=["t", "v"],
    column_types={"t": pa.float64(), "v": pa.float64()},
    null_values=[],  # "NaN" is a value here, not a missing one
    strings_can_be_null=False,
)


def parse_matrix_fast(
    content: bytes, cache: LabelCache | None = None
) -> tuple[list[Series], list[str], LabelCache] | None:
    """Parse a successful matrix response straight from bytes; None if the shape is unexpected.

    ``json.loads`` builds a Python list and two objects per sample (~150 bytes each). Here only
    the labels go through ``json``: every series' ``[[t,"v"],...]`` text is viewed (not copied),
    the views are joined behind one ``[nan,0]`` sentinel row each, turned into ``,,t,"v"`` lines
    by one byte-for-byte ``bytes.translate`` and parsed as one CSV by Arrow (in C, on all cores;
    ≈ 2 × numpy's ``fromstring`` per series). Besides the response, the peak is the joined text,
    its translation (briefly both) and Arrow's columns.
    JSON cannot hold an unescaped ``"`` inside a string, so the markers searched for cannot
    occur inside label values; timestamps are never NaN, so the sentinels are unambiguous.

    ``cache`` maps label JSON seen in an earlier response (the previous chunk of the same query:
    mostly the same series) to its parsed labels and key, so repeated series skip ``json.loads``
    and the sort of their labels; the third item returned is this response's map, for the next.
    """
    prefix = b'{"status":"success","data":{"resultType":"matrix","result":['
    if not content.startswith(prefix):
        return None
    labels_list: list[dict[str, str]] = []
    keys: list[LabelKey] = []
    seen: LabelCache = {}
    previous: LabelCache = cache if cache is not None else {}
    parts: list[bytes | memoryview] = []
    view = memoryview(content)  # slices of it are not copies
    pos = content.find(_SERIES)
    end = len(prefix)
    while pos != -1:
        labels_end = content.find(_VALUES, pos)
        if labels_end == -1:
            return None
        text = content[pos + len(_SERIES) : labels_end]
        entry = previous.get(text)
        if entry is None:
            labels = json.loads(text)
            entry = (labels, tuple(sorted(labels.items())))
        seen[text] = entry
        labels_list.append(entry[0])
        keys.append(entry[1])
        parts.append(_SENTINEL)
        start = labels_end + len(_VALUES)
        if content[start : start + 1] == b"]":  # "values":[] (no samples)
            end = start
        else:
            stop = content.find(b"]]", start)
            if stop == -1:
                return None
            parts.append(view[start : stop + 1])
            end = stop
        pos = content.find(_SERIES, end)
    out: list[Series] = []
    if labels_list:
        # a leading "," makes every line ",,t,v" (four columns, the first two empty)
        text = b",".join([b"", *parts])
        del parts
        view.release()
        text = text.translate(_ROWS)
        try:
            table = pa_csv.read_csv(
                io.BytesIO(text), read_options=_CSV_READ, convert_options=_CSV_CONVERT
            )
        except (pa.ArrowInvalid, ValueError):
            return None
        del text
        ts, values = _column(table, "t"), _column(table, "v")
        del table
        starts = np.flatnonzero(np.isnan(ts))
        if len(starts) != len(labels_list):
            return None
        stops = np.r_[starts[1:], len(ts)]
        for labels, key, lo, hi in zip(labels_list, keys, starts + 1, stops, strict=True):
            # Views of the response's two arrays, not copies: thousands of small arrays per
            # response fragment the C heap (the collector's RSS grew far past its live data),
            # while the two large arrays are freed back to the OS at once when the last view goes.
            out.append(Series(labels, ts[lo:hi], values[lo:hi], key))
    warnings: list[str] = []
    marker = content.rfind(b',"warnings":', end)
    if marker != -1:
        found, _ = json.JSONDecoder().raw_decode(content[marker + len(b',"warnings":') :].decode())
        warnings = [str(w) for w in found]
    return out, warnings, seen


def _column(table: pa.Table, name: str) -> np.ndarray:
    """A float column of ``table`` as one numpy array.

    Each chunk converts without a copy, so numpy's ``concatenate`` is the only one.
    ``ChunkedArray.to_numpy()`` would copy through Arrow's C++ default pool (mimalloc), which
    ``pa.set_memory_pool`` does not reach and which keeps freed pages (``analyzer.memory``).
    """
    chunks = [chunk.to_numpy(zero_copy_only=False) for chunk in table.column(name).chunks]
    return np.concatenate(chunks) if chunks else np.zeros(0)


def parse_vector(result: list[dict[str, Any]]) -> list[Series]:
    """``data.result`` of a vector into one-sample ``Series``."""
    out: list[Series] = []
    for item in result:
        ts, value = item["value"]
        out.append(Series(dict(item.get("metric", {})), np.array([float(ts)]), _to_floats([value])))
    return out


def _timed_out(exc: requests.exceptions.ConnectionError) -> bool:
    """requests reports read timeouts that exhausted the retries as a ConnectionError."""
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, ReadTimeoutError) or isinstance(exc, requests.exceptions.Timeout)


class PromClient:
    """A thread-safe client for one Prometheus-compatible endpoint."""

    def __init__(self, settings: PromSettings) -> None:
        check_settings(settings)
        self.settings = settings
        self.url = normalise_url(settings.url)
        self.public_url = public_url(self.url)
        headers = dict(settings.headers)
        if is_loopback(self.url) and not any(k.lower() == "accept-encoding" for k in headers):
            # Prometheus gzips responses a client accepts; on this machine that only moves work
            # from the wire to the server's CPU (≈ 40 % of a large range query's cost). Over a
            # network gzip stays on; --header Accept-Encoding=gzip restores it here.
            headers["Accept-Encoding"] = "identity"
        token = bearer_token(settings)
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        retry = Retry(
            total=settings.retries,
            connect=1,  # a refused connection rarely heals within seconds; fail fast
            read=settings.retries,
            status=settings.retries,
            backoff_factor=settings.backoff,
            status_forcelist=RETRY_STATUSES,
            allowed_methods=frozenset({"GET", "POST"}),
            raise_on_status=False,  # keep the last response so its error body is reported
        )
        self._connect = PrometheusConnect(
            url=self.url,
            headers=headers,
            disable_ssl=settings.insecure_skip_verify,
            retry=retry,
            auth=basic_auth(settings),
            timeout=int(settings.timeout),
        )
        session = self._connect._session
        if settings.ca_bundle is not None and not settings.insecure_skip_verify:
            session.verify = str(settings.ca_bundle)
        # One pooled connection per worker thread.
        pool = max(10, settings.parallelism)
        session.mount(self.url, HTTPAdapter(max_retries=retry, pool_maxsize=pool))
        self._lock = threading.Lock()
        self._parse_lock = threading.Lock()
        self.warnings: list[str] = []
        self._labels: dict[str, LabelCache] = {}  # per query (``what``): its last response's

    def close(self) -> None:
        """Close the HTTP session."""
        self._labels.clear()
        self._connect.close()

    def __enter__(self) -> PromClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- low level -------------------------------------------------------------------------------

    def request(
        self,
        path: str,
        params: dict[str, Any],
        *,
        what: str,
        post: bool = True,
        fast_matrix: bool = False,
    ) -> Any:
        """Call ``<url><path>`` and return the envelope's ``data``; raise one-line errors."""
        connect = self._connect
        session = connect._session
        try:
            response = session.request(
                method="POST" if post else "GET",
                url=f"{self.url}{path}",
                data=params if post else None,
                params=None if post else params,
                headers=connect.headers,
                auth=connect.auth,
                timeout=self.settings.timeout,
                stream=True,  # the body is read in ``_body``
            )
        except requests.exceptions.SSLError:
            raise SourceError(
                f"TLS verification failed for {self.public_url}; pass --ca-bundle FILE "
                "(or --insecure-skip-verify)"
            ) from None
        except requests.exceptions.ConnectionError as exc:
            if not _timed_out(exc):
                raise SourceError(
                    f"cannot reach {self.public_url} (connection failed); check --prometheus and "
                    "that the server is up"
                ) from None
            raise SourceError(
                f"{self.public_url} did not answer {what} within {self.settings.timeout:g}s "
                f"({self.settings.retries} retries); raise --timeout or shorten the range"
            ) from None
        except (requests.exceptions.Timeout, requests.exceptions.RetryError) as exc:
            raise SourceError(
                f"{self.public_url} did not answer {what} within {self.settings.timeout:g}s "
                f"({self.settings.retries} retries; {type(exc).__name__}); raise --timeout or "
                "shorten the range"
            ) from None
        except requests.exceptions.RequestException as exc:
            raise SourceError(
                f"request to {self.public_url} failed: {type(exc).__name__}"
            ) from None
        content = self._body(response, what)
        if fast_matrix and response.status_code == 200:
            # One response at a time: the parse's Python part holds the GIL anyway and Arrow
            # uses every core, but two at once would hold two sets of its temporaries (≈ 2 ×
            # the response each).
            with self._parse_lock:
                parsed = parse_matrix_fast(content, self._labels.get(what))
            if parsed is not None:
                for warning in parsed[1]:
                    self._warn(f"{what}: {warning}")
                self._labels[what] = parsed[2]  # a race between two chunks only costs a miss
                return parsed[0]
        return self._envelope(response, content, path, what)

    def _body(self, response: requests.Response, what: str) -> bytes:
        """The whole response body, read at once.

        ``response.content`` reads 10 kB pieces and joins them: for a 40 MB response that is
        4,000 small blocks on the heap (left as holes) and a second copy. Prometheus writes its
        JSON in one HTTP chunk, which one ``read`` returns as one buffer.
        """
        try:
            body: bytes = response.raw.read(decode_content=True) or b""
        except (ReadTimeoutError, TimeoutError):
            response.close()
            raise SourceError(
                f"{self.public_url} did not finish sending {what} within "
                f"{self.settings.timeout:g}s; raise --timeout or shorten the range"
            ) from None
        except (HTTPError, OSError) as exc:
            response.close()
            raise SourceError(
                f"{self.public_url} broke off {what} mid-response ({type(exc).__name__}); "
                "retry, or check a proxy between here and the server"
            ) from None
        response.raw.release_conn()  # read to the end: the connection goes back to the pool
        return body

    def _envelope(self, response: requests.Response, content: bytes, path: str, what: str) -> Any:
        status = response.status_code
        if status == 401:
            raise SourceError(
                f"{self.public_url} answered 401 Unauthorized; check --token-file/--token-env "
                "or --basic-auth-user/--basic-auth-password-env"
            )
        if status == 403:
            raise SourceError(
                f"{self.public_url} answered 403 Forbidden; the credentials lack access (Mimir/"
                "Cortex need --header X-Scope-OrgID=TENANT)"
            )
        try:
            body = json.loads(content)
        except ValueError:
            body = None
        if not isinstance(body, dict) or "status" not in body:
            if status == 404:
                raise SourceError(
                    f"{self.public_url}{path} not found (404); wrong URL path? give the API root, "
                    "e.g. http://host:9090 or http://mimir/prometheus"
                )
            kind = response.headers.get("Content-Type", "unknown content").split(";")[0]
            raise SourceError(
                f"{self.public_url} is not a Prometheus API: {path} answered HTTP {status} "
                f"with {kind}, not a Prometheus JSON response"
            )
        for warning in body.get("warnings") or []:
            self._warn(f"{what}: {warning}")
        if body.get("status") != "success":
            error_type = body.get("errorType", "error")
            error = str(body.get("error", "")).splitlines()[0] if body.get("error") else ""
            raise SourceError(
                f"{self.public_url} rejected {what} (HTTP {status}, {error_type}): {error}"
            )
        return body.get("data")

    def _warn(self, text: str) -> None:
        with self._lock:
            if text not in self.warnings:
                self.warnings.append(text)

    # -- API -------------------------------------------------------------------------------------

    def query(self, expr: str, at: float, *, what: str = "query") -> list[Series]:
        """Instant query at unix time ``at``; a scalar becomes one series without labels."""
        params = {"query": expr, "time": f"{at:.3f}"}
        data = self.request("/api/v1/query", params, what=what, fast_matrix=True)
        if isinstance(data, list):  # a range vector, parsed from bytes
            return data
        kind = data.get("resultType")
        if kind == "vector":
            return parse_vector(data.get("result") or [])
        if kind == "scalar":
            ts, value = data["result"]
            return [Series({}, np.array([float(ts)]), _to_floats([value]))]
        if kind == "matrix":
            return parse_matrix(data.get("result") or [])
        raise SourceError(f"{self.public_url} returned a {kind} for {what}; expected a vector")

    def query_range(
        self, expr: str, start: float, end: float, step: float, *, what: str = "query"
    ) -> list[Series]:
        """Range query ``[start, end]`` (both inclusive) at ``step`` seconds, one request."""
        params = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        data = self.request("/api/v1/query_range", params, what=what, fast_matrix=True)
        if isinstance(data, list):
            return data
        if data.get("resultType") != "matrix":
            raise SourceError(
                f"{self.public_url} returned a {data.get('resultType')} for {what}; expected a matrix"
            )
        return parse_matrix(data.get("result") or [])

    def buildinfo(self) -> dict[str, Any]:
        """``/api/v1/status/buildinfo`` (version, revision); ``{}`` where a backend lacks it."""
        try:
            data = self.request("/api/v1/status/buildinfo", {}, what="buildinfo", post=False)
        except SourceError as exc:
            if "404" in str(exc) or "not a Prometheus API" in str(exc):
                return {}
            raise
        return dict(data) if isinstance(data, dict) else {}

    def label_names(self, matchers: list[str], start: float, end: float) -> list[str]:
        """Label names of the series matching any of ``matchers`` in ``[start, end]``."""
        params: dict[str, Any] = {"match[]": matchers, "start": f"{start:.3f}", "end": f"{end:.3f}"}
        data = self.request("/api/v1/labels", params, what="label names")
        return [str(x) for x in data or []]
