"""The HTTP client: ``prometheus_api_client.PrometheusConnect`` underneath, raw JSON on top.

``PrometheusConnect`` owns the session (auth, headers, TLS). Its query helpers drop the response
``warnings`` (Thanos partial responses) and its DataFrame helpers build one Python dict per sample,
so we send the requests through its session ourselves and parse the JSON envelope into numpy
arrays (``analyzer.prom.envelope``). Retries are ours, not urllib3's, so that they end with the run (``analyzer.prom.faults``:
tries, backoff, the deadline). Every failure becomes one line: ``SourceError`` (exit 1) for the
server side (``ServerFault`` when the server itself failed), ``InputError`` (exit 2) for settings
the user must fix. Credentials never appear in messages.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import requests
from prometheus_api_client import PrometheusConnect
from requests.adapters import HTTPAdapter
from urllib3.exceptions import HTTPError, ReadTimeoutError

from analyzer.core.errors import SourceError
from analyzer.prom.envelope import error_fields, is_series, json_or_none, size_hint, to_floats
from analyzer.prom.envelope import parse_matrix as parse_matrix
from analyzer.prom.envelope import parse_vector as parse_vector
from analyzer.prom.faults import (
    RunClock,
    ServerFault,
    Stopped,
    Transient,
    backoff_seconds,
    count_tries,
    describe_seconds,
)
from analyzer.prom.matrix_text import scan_matrix
from analyzer.prom.selectors import check_label, with_matcher
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

# Statuses worth retrying: 429 and every 5xx (proxies and overloaded servers recover); other 4xx
# (and 422, a query the server refuses) never do.
RETRY_STATUSES = (429, *range(500, 600))


class AnswerError(SourceError):
    """An answer that is not a success: ``status`` its HTTP status, ``envelope`` whether it was
    a Prometheus JSON envelope (an error one) at all. Callers that take some answers as "not
    offered here" decide on these fields, never on the message (it holds the URL: a port such
    as 40441 reads as a 404)."""

    def __init__(self, message: str, status: int, *, envelope: bool) -> None:
        super().__init__(message)
        self.status = status
        self.envelope = envelope


def _timed_out(exc: requests.exceptions.RequestException) -> bool:
    """A timeout, also when requests reports it as a ConnectionError around urllib3's
    ReadTimeoutError."""
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
        self._connect = PrometheusConnect(
            url=self.url,
            headers=headers,
            disable_ssl=settings.insecure_skip_verify,
            auth=basic_auth(settings),
            timeout=int(settings.timeout),
        )
        session = self._connect._session
        if settings.ca_bundle is not None and not settings.insecure_skip_verify:
            session.verify = str(settings.ca_bundle)
        # One pooled connection per worker thread.
        pool = max(10, settings.parallelism)
        # Retries are ``request``'s own (bounded by the deadline, stopped with the run): none here.
        session.mount(self.url, HTTPAdapter(max_retries=0, pool_maxsize=pool))
        self._lock = threading.Lock()
        self._parse_lock = threading.Lock()
        self.warnings: list[str] = []
        self._labels: dict[str, LabelCache] = {}  # per query (``what``): its last response's
        self.clock = RunClock(settings.deadline, self.public_url)

    def close(self) -> None:
        """Close the HTTP session."""
        self._labels.clear()
        self.clock.close()
        self._connect.close()

    def forget_labels(self, whats: list[str]) -> None:
        """Drop the label caches of these queries (``what``): kept for the next chunk of the same
        query, they would otherwise live as long as the client — a whole-range query's last
        response's labels through every day of a streamed collect."""
        for what in whats:
            self._labels.pop(what, None)

    def __enter__(self) -> PromClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- low level -------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the run: nothing is retried any more and the bodies being read are cut off."""
        self.clock.stop()

    def request(
        self,
        path: str,
        params: dict[str, Any],
        *,
        what: str,
        post: bool = True,
        fast_matrix: bool = False,
    ) -> Any:
        """Call ``<url><path>`` and return the envelope's ``data``; raise one-line errors.

        A try that failed in a way that can heal is tried again after a doubling backoff (see
        ``Transient``), never past the run's deadline nor once the run is stopping.
        """
        tries = 0
        while True:
            tries += 1
            if self.clock.expired:
                raise self.clock.deadline_error(what)
            if self.clock.stopped:
                raise Stopped(f"{what} not sent: another request to {self.public_url} failed")
            try:
                return self._try(path, params, what, fast_matrix, post=post)
            except Transient as fault:
                if self.clock.expired:
                    raise self.clock.deadline_error(what) from None
                if tries > fault.retries or self.clock.stopped:
                    # The server is down, hung or failing: every other request would meet the
                    # same, so the run stops here (retries end, nothing new is sent).
                    self.clock.stop()
                    raise fault.final(tries) from None
                self.clock.sleep(backoff_seconds(self.settings.backoff, tries, fault.retry_after))

    def _try(
        self, path: str, params: dict[str, Any], what: str, fast_matrix: bool, *, post: bool
    ) -> Any:
        """One try of ``request``."""
        # Never wait past the deadline: the last try gets only the time that is left.
        timeout = max(0.001, min(self.settings.timeout, self.clock.left()))
        with self.clock.flight(what) as ident:
            response = self._send(path, params, what, timeout, post=post)
            self.clock.reading(ident, response.raw)
            content = self._body(response, what)
        status = response.status_code
        if status in RETRY_STATUSES:
            raise self._server_error(response, content, path, what)
        if fast_matrix and status == 200:
            # One response at a time: the parse's Python part holds the GIL anyway and Arrow
            # uses every core, but two at once would hold two sets of its temporaries (≈ 2 ×
            # the response each).
            with self._parse_lock:
                try:
                    scanned = scan_matrix(content, self._labels.get(what))
                except ValueError:
                    scanned = None  # not the compact shape (or cut off): json says which
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

    def _send(
        self, path: str, params: dict[str, Any], what: str, timeout: float, *, post: bool
    ) -> requests.Response:
        """Send the request and wait for the response headers (the body is read by ``_body``)."""
        connect = self._connect
        url = self.public_url
        if self.settings.thanos is not None:
            params = self.settings.thanos.params_for(path, params)
        try:
            response: requests.Response = connect._session.request(
                method="POST" if post else "GET",
                url=f"{self.url}{path}",
                data=params if post else None,
                params=None if post else params,
                headers=connect.headers,
                auth=connect.auth,
                timeout=timeout,
                stream=True,
            )
        except requests.exceptions.SSLError:
            raise SourceError(
                f"TLS verification failed for {url}; pass --ca-bundle FILE (or --insecure-skip-verify)"
            ) from None
        except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
            if self.clock.expired:
                raise self.clock.deadline_error(what) from None
            if not _timed_out(exc):
                raise Transient(
                    lambda tries: (
                        f"cannot reach {url} (connection failed, {count_tries(tries)}); "
                        "check --prometheus and that the server is up"
                    ),
                    retries=min(1, self.settings.retries),  # a refused port rarely heals at once
                ) from None
            seconds = describe_seconds(self.settings.timeout)
            raise Transient(
                lambda tries: (
                    f"{url} did not answer {what} within {seconds} ({count_tries(tries)}); "
                    "raise --timeout or check the server's load"
                ),
                retries=min(1, self.settings.retries),  # a hung server: one more try at most
            ) from None
        except requests.exceptions.RequestException as exc:
            raise ServerFault(f"request to {url} failed: {type(exc).__name__}") from None
        return response

    def _body(self, response: requests.Response, what: str) -> bytes:
        """The whole response body, read at once.

        ``response.content`` reads 10 kB pieces and joins them: for a 40 MB response that is
        4,000 small blocks on the heap (left as holes) and a second copy. Prometheus writes its
        JSON in one HTTP chunk, which one ``read`` returns as one buffer.
        """
        url = self.public_url
        try:
            body: bytes = response.raw.read(decode_content=True) or b""
        except (ReadTimeoutError, TimeoutError):
            response.close()
            if self.clock.expired:
                raise self.clock.deadline_error(what) from None
            seconds = describe_seconds(self.settings.timeout)
            raise Transient(
                lambda tries: (
                    f"{url} did not finish sending {what} within {seconds} "
                    f"({count_tries(tries)}); raise --timeout or check the server's load"
                ),
                retries=min(1, self.settings.retries),
            ) from None
        except (HTTPError, OSError) as exc:
            response.close()
            if self.clock.expired:
                raise self.clock.deadline_error(what) from None
            if self.clock.stopped:
                raise Stopped(f"{what} stopped: another request to {url} failed") from None
            name = type(exc).__name__
            raise Transient(
                lambda tries: (
                    f"{url} broke off {what} mid-response ({name}, {count_tries(tries)}); "
                    "retry, or check a proxy between here and the server"
                ),
                retries=self.settings.retries,
            ) from None
        response.raw.release_conn()  # read to the end: the connection goes back to the pool
        return body

    def _server_error(
        self, response: requests.Response, content: bytes, path: str, what: str
    ) -> Transient:
        """A 5xx or 429 answer: tried again; its final message says what the server said."""
        url, status = self.public_url, response.status_code
        body = json_or_none(content)
        if status == 429:
            return Transient(
                lambda tries: (
                    f"{url} answered {what} with HTTP 429 Too Many Requests "
                    f"({count_tries(tries)}); lower --max-in-flight (--parallelism) or retry later"
                ),
                retries=self.settings.retries,
                retry_after=response.headers.get("Retry-After"),
            )
        if isinstance(body, dict) and body.get("status") == "error":
            error_type, error = error_fields(body, status)
            return Transient(
                lambda tries: (
                    f"{url} failed {what} (HTTP {status}{error_type}, {count_tries(tries)}): {error}"
                ),
                retries=self.settings.retries,
                retry_after=response.headers.get("Retry-After"),
            )
        return Transient(
            lambda tries: (
                f"server error HTTP {status} from {url}{path} ({what}) after "
                f"{count_tries(tries)}; check the server (or a proxy in front of it) and retry later"
            ),
            retries=self.settings.retries,
            retry_after=response.headers.get("Retry-After"),
        )

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
        body = json_or_none(content)
        kind = response.headers.get("Content-Type", "unknown content").split(";")[0].strip()
        if body is None and (kind == "application/json" or content.lstrip()[:1] in (b"{", b"[")):
            raise SourceError(
                f"{self.public_url} sent a cut-off or malformed response to {what} ({path}, "
                f"HTTP {status}, {len(content):,} bytes of invalid JSON); retry, or check a proxy "
                "between here and the server"
            )
        if not isinstance(body, dict) or "status" not in body:
            if status == 404:
                raise AnswerError(
                    f"{self.public_url}{path} not found (404); wrong URL path? give the API root, "
                    "e.g. http://host:9090 or http://mimir/prometheus",
                    status,
                    envelope=False,
                )
            raise AnswerError(
                f"{self.public_url} is not a Prometheus API: {path} answered HTTP {status} "
                f"with {kind}, not a Prometheus JSON response",
                status,
                envelope=False,
            )
        for warning in body.get("warnings") or []:
            self._warn(f"{what}: {warning}")
        if body.get("status") != "success":
            error_type, error = error_fields(body, status)
            raise AnswerError(
                f"{self.public_url} rejected {what} (HTTP {status}{error_type}): {error}"
                + size_hint(error),
                status,
                envelope=True,
            )
        data = body.get("data")
        if data is None:
            raise SourceError(
                f'{self.public_url} sent no data for {what} ({path} answered "data": null); '
                "is it a Prometheus-compatible API?"
            )
        return data

    def _warn(self, text: str) -> None:
        with self._lock:
            if text not in self.warnings:
                self.warnings.append(text)

    # -- API -------------------------------------------------------------------------------------

    def scoped(self, expr: str) -> str:
        """``expr`` limited to the selected cluster (``--cluster-label``/``--cluster``,
        ``prom/selectors.py``); unchanged when no cluster is selected."""
        if self.settings.select is None:
            return expr
        return with_matcher(expr, *self.settings.select)

    def query(self, expr: str, at: float, *, what: str = "query") -> list[Series]:
        """Instant query at unix time ``at``; a scalar becomes one series without labels."""
        params = {"query": self.scoped(expr), "time": f"{at:.3f}"}
        data = self.request("/api/v1/query", params, what=what, fast_matrix=True)
        if is_series(data):  # a range vector, parsed from bytes
            return data  # type: ignore[no-any-return]
        with self._shape(what):
            kind = data.get("resultType")
            if kind == "vector":
                return parse_vector(data.get("result") or [])
            if kind == "scalar":
                ts, value = data["result"]
                return [Series({}, np.array([float(ts)]), to_floats([value]))]
            if kind == "matrix":
                return parse_matrix(data.get("result") or [])
        raise SourceError(f"{self.public_url} returned a {kind} for {what}; expected a vector")

    def query_range(
        self, expr: str, start: float, end: float, step: float, *, what: str = "query"
    ) -> list[Series]:
        """Range query ``[start, end]`` (both inclusive) at ``step`` seconds, one request."""
        params = {
            "query": self.scoped(expr), "start": f"{start:.3f}", "end": f"{end:.3f}",
            "step": f"{step:g}",
        }  # fmt: skip
        data = self.request("/api/v1/query_range", params, what=what, fast_matrix=True)
        if is_series(data):
            return data  # type: ignore[no-any-return]
        with self._shape(what):
            kind = data.get("resultType")
            if kind == "matrix":
                return parse_matrix(data.get("result") or [])
        raise SourceError(f"{self.public_url} returned a {kind} for {what}; expected a matrix")

    @contextmanager
    def _shape(self, what: str) -> Iterator[None]:
        """Turn a response of an unexpected shape (a vector value that is not a pair, a result
        that is not a list, ...) into one line naming the query."""
        try:
            yield
        except (AttributeError, KeyError, TypeError, ValueError, IndexError) as exc:
            text = str(exc).splitlines()[0][:120] if str(exc) else ""
            detail = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
            raise SourceError(
                f"{self.public_url} sent {what} in a shape analyzer cannot read ({detail}); "
                "is it a Prometheus-compatible API?"
            ) from None

    def buildinfo(self) -> dict[str, Any]:
        """``/api/v1/status/buildinfo`` (version, revision); ``{}`` where a backend lacks it."""
        try:
            data = self.request("/api/v1/status/buildinfo", {}, what="buildinfo", post=False)
        except AnswerError as exc:  # no build info here: an endpoint not found or not the API's
            if exc.status == 404 or not exc.envelope:
                return {}
            raise
        return dict(data) if isinstance(data, dict) else {}

    def get_text(self, path: str, *, what: str, limit: int = 1 << 20) -> str | None:
        """``GET <url><path>`` once, its first ``limit`` bytes as text; ``None`` unless HTTP 200.

        For probes of non-API endpoints (``/-/healthy``, ``/metrics``) whose absence is an
        answer, not a fault: no retries, and a failure to connect or read is ``None`` too.
        """
        timeout = max(0.001, min(self.settings.timeout, self.clock.left()))
        try:
            response = self._send(path, {}, what, timeout, post=False)
        except (Transient, SourceError):
            return None
        try:
            if response.status_code != 200:
                return None
            body: bytes = response.raw.read(limit, decode_content=True) or b""
        except (HTTPError, OSError):
            return None
        finally:
            response.close()
        return body.decode("utf-8", errors="replace")

    def label_values(self, label: str, matchers: list[str], start: float, end: float) -> list[str]:
        """Values of ``label`` on the series matching any of ``matchers`` in ``[start, end]``
        (``/api/v1/label/<label>/values``; the label is checked as a name first)."""
        params: dict[str, Any] = {
            "match[]": [self.scoped(m) for m in matchers],
            "start": f"{start:.3f}",
            "end": f"{end:.3f}",
        }
        data = self.request(
            f"/api/v1/label/{check_label(label)}/values", params, what=f"values of {label}",
            post=False,
        )  # fmt: skip
        return sorted(str(x) for x in data or [])

    def label_names(self, matchers: list[str], start: float, end: float) -> list[str]:
        """Label names of the series matching any of ``matchers`` in ``[start, end]``."""
        params: dict[str, Any] = {
            "match[]": [self.scoped(m) for m in matchers],
            "start": f"{start:.3f}",
            "end": f"{end:.3f}",
        }
        data = self.request("/api/v1/labels", params, what="label names")
        return [str(x) for x in data or []]
