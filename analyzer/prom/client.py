"""The HTTP client: ``prometheus_api_client.PrometheusConnect`` underneath, raw JSON on top.

``PrometheusConnect`` owns the session (auth, headers, TLS, retry adapter). Its query helpers drop
the response ``warnings`` (Thanos partial responses) and its DataFrame helpers build one Python dict
per sample, so we send the requests through its session ourselves and parse the JSON envelope into
numpy arrays. Every failure becomes one line: ``SourceError`` (exit 1) for the server side,
``InputError`` (exit 2) for settings the user must fix. Credentials never appear in messages.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import numpy as np
import requests
from prometheus_api_client import PrometheusConnect
from requests.adapters import HTTPAdapter
from urllib3.exceptions import HTTPError, ReadTimeoutError
from urllib3.util.retry import Retry

from analyzer.core.errors import SourceError
from analyzer.prom.matrix_text import scan_matrix
from analyzer.prom.series import LabelCache as LabelCache
from analyzer.prom.series import LabelKey as LabelKey
from analyzer.prom.series import Series as Series
from analyzer.prom.series import series_key as series_key
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
                scanned = scan_matrix(content, self._labels.get(what))
                if scanned is not None:
                    del content  # the scanned text holds the samples: free the body first
                    for warning in scanned.warnings:
                        self._warn(f"{what}: {warning}")
                    self._labels[what] = scanned.seen  # a race between chunks costs a miss
                    try:
                        return scanned.series()
                    except ValueError as exc:
                        raise SourceError(
                            f"{self.public_url} sent {what} in a shape analyzer cannot read ({exc})"
                        ) from None
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
