"""The HTTP client against loopback stubs: auth headers, retries, warnings, one-line errors."""

from __future__ import annotations

import math
import socket
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from http_stub import Recorded, Reply, matrix, serve

from analyzer.core.errors import InputError, SourceError
from analyzer.prom.client import PromClient, parse_matrix, series_key
from analyzer.prom.matrix_text import parse_matrix_text
from analyzer.prom.settings import PromSettings, parse_headers, public_url

SECRET = "s3cr3t-token-value"


def _settings(url: str, **kw: object) -> PromSettings:
    return PromSettings(url=url, backoff=0.01, timeout=5, **kw)  # type: ignore[arg-type]


def test_public_url_drops_credentials_and_query() -> None:
    assert (
        public_url("https://user:pw@prom.example:9443/prometheus?x=1#f")
        == "https://prom.example:9443/prometheus"
    )
    assert public_url("http://[::1]:9090/") == "http://[::1]:9090/"


def test_parse_matrix_reads_special_values_as_floats() -> None:
    [series] = parse_matrix(
        [{"metric": {"a": "b"}, "values": [[1, "1.5"], [2, "NaN"], [3, "+Inf"], [4, "-Inf"]]}]
    )
    assert series.labels == {"a": "b"}
    assert series.timestamps.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert series.values[0] == 1.5 and math.isnan(series.values[1])
    assert series.values[2] == np.inf and series.values[3] == -np.inf


def test_token_headers_and_basic_auth_are_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = tmp_path / "token"
    token.write_text(SECRET + "\n")
    with serve(lambda r: matrix([({"x": "1"}, [(10, "2")])])) as stub:
        settings = _settings(
            stub.url, token_file=token, headers=parse_headers(["X-Scope-OrgID=team-a"])
        )
        with PromClient(settings) as client:
            [series] = client.query_range("up", 10, 10, 1)
    assert series.values.tolist() == [2.0]
    request = stub.requests[0]
    assert request.path == "/api/v1/query_range" and request.method == "POST"
    assert request.headers["Authorization"] == f"Bearer {SECRET}"
    assert request.headers["X-Scope-OrgID"] == "team-a"
    assert request.params["query"] == ["up"]
    monkeypatch.setenv("PROM_PW", "pw")
    with (
        serve(lambda r: matrix([])) as stub,
        PromClient(
            _settings(stub.url, basic_auth_user="alice", basic_auth_password_env="PROM_PW")
        ) as client,
    ):
        client.query_range("up", 10, 10, 1)
    assert stub.requests[0].headers["Authorization"] == "Basic YWxpY2U6cHc="  # base64("alice:pw")


def test_path_prefix_is_kept() -> None:
    with (
        serve(lambda r: matrix([])) as stub,
        PromClient(_settings(stub.url + "/prometheus/")) as client,
    ):
        client.query_range("up", 10, 10, 1)
    assert stub.requests[0].path == "/prometheus/api/v1/query_range"


def test_5xx_is_retried_and_warnings_are_kept() -> None:
    def handler(request: Recorded) -> Reply:
        if len(stub.requests) < 3:
            return Reply.json({"status": "error", "errorType": "unavailable", "error": "busy"}, 503)
        return matrix([({}, [(1, "1")])], warnings=["partial response: store 2 down"])

    with serve(handler) as stub, PromClient(_settings(stub.url)) as client:
        client.query_range("up", 1, 1, 1, what="query q")
        warnings = list(client.warnings)
    assert len(stub.requests) == 3  # two 503s, then success
    assert warnings == ["query q: partial response: store 2 down"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply(401, b"no"), "401 Unauthorized"),
        (Reply(403, b"no"), "403 Forbidden"),
        (Reply(404, b"404 page not found", "text/plain"), "not found (404); wrong URL path"),
        (Reply(200, b"<html>Grafana</html>", "text/html"), "is not a Prometheus API"),
        (
            Reply.json(
                {"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}, 400
            ),
            "rejected query q (HTTP 400, bad_data): parse error at char 3",
        ),
        (
            Reply.json(
                {"status": "error", "errorType": "timeout", "error": "query timed out"}, 503
            ),
            "HTTP 503, timeout",
        ),
    ],
)
def test_errors_are_one_line_without_secrets(reply: Reply, expected: str, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(SECRET)
    with serve(lambda r: reply) as stub:
        url = stub.url  # a URL with user info is refused up front (test_faults_files.py)
        with (
            PromClient(_settings(url, token_file=token, retries=1)) as client,
            pytest.raises(SourceError) as info,
        ):
            client.query_range("up", 1, 1, 1, what="query q")
    message = str(info.value)
    assert expected in message
    assert "\n" not in message
    assert SECRET not in message


def test_unreachable_server() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with (
        PromClient(_settings(f"http://127.0.0.1:{port}")) as client,
        pytest.raises(SourceError) as info,
    ):
        client.query_range("up", 1, 1, 1)
    assert f"cannot reach http://127.0.0.1:{port}" in str(info.value)


def test_bad_settings_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not an http"):
        PromClient(_settings("ftp://x"))
    with pytest.raises(
        InputError, match="--token-env: the environment variable it names is not set"
    ):
        PromClient(_settings("http://x", token_env="NOPE_X"))
    with pytest.raises(InputError, match="--ca-bundle"):
        PromClient(_settings("https://x", ca_bundle=tmp_path / "missing.pem"))
    with pytest.raises(InputError, match="--header"):
        parse_headers(["novalue"])


def test_timeouts_are_retried_then_reported() -> None:
    import time

    def slow(request: Recorded) -> Reply:
        time.sleep(0.6)
        return matrix([])

    with serve(slow) as stub:
        settings = PromSettings(url=stub.url, timeout=0.2, retries=1, backoff=0.01)
        with PromClient(settings) as client, pytest.raises(SourceError) as info:
            client.query_range("up", 1, 1, 1, what="query q")
    assert "did not answer query q within 0.2s" in str(info.value)
    assert len(stub.requests) == 2  # the first attempt and one retry


def test_fast_matrix_parser_agrees_with_json() -> None:
    import json

    body = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {
                    "metric": {"a": 'quo"te ]] ,"values":[', "b": "ü"},
                    "values": [[1.5, "1"], [2, "NaN"], [3, "+Inf"]],
                },
                {"metric": {}, "values": [[4, "-Inf"], [5, "1e-3"], [6, "123456789.125"]]},
                {"metric": {"empty": "yes"}, "values": []},
            ],
        },
        "warnings": ["partial ]] response"],
    }
    content = json.dumps(body, separators=(",", ":")).encode()
    parsed = parse_matrix_text(content)
    assert parsed is not None
    series, warnings, labels_seen = parsed
    reference = parse_matrix(body["data"]["result"])  # type: ignore[index]
    assert warnings == ["partial ]] response"]
    assert len(series) == len(reference) == 3
    for got, want in zip(series, reference, strict=True):
        assert got.labels == want.labels
        np.testing.assert_array_equal(got.timestamps, want.timestamps)
        np.testing.assert_array_equal(got.values, want.values)  # NaN == NaN here
        assert series_key(got) == tuple(sorted(want.labels.items())) == series_key(want)
    # A second response with the same series reuses the first one's parsed labels (and keys);
    # a label set it has not seen is parsed anew.
    body["data"]["result"][1]["metric"] = {"new": "series"}  # type: ignore[index]
    again = parse_matrix_text(json.dumps(body, separators=(",", ":")).encode(), labels_seen)
    assert again is not None
    assert again[0][0].labels is series[0].labels and again[0][2].labels is series[2].labels
    assert again[0][1].labels == {"new": "series"} and again[0][1].key == (("new", "series"),)
    assert len(again[2]) == 3  # the map handed on holds this response's label sets only
    # Any other shape (pretty-printed, a vector, an error) is left to json.
    assert parse_matrix_text(json.dumps(body, indent=1).encode()) is None


def test_fast_matrix_parser_reads_responses_larger_than_one_csv_block() -> None:
    # Arrow parses the text in 4 MB blocks; series must not be cut or shifted at a block edge.
    import json

    rng = np.random.default_rng(7)
    result = [
        {
            "metric": {"pod": f"p{i}"},
            "values": [[1_700_000_000 + 60 * k, repr(float(v))] for k, v in enumerate(row)],
        }
        for i, row in enumerate(rng.random((150, 2000)) * 10.0 ** rng.integers(-3, 9, (150, 1)))
    ]
    content = json.dumps(
        {"status": "success", "data": {"resultType": "matrix", "result": result}},
        separators=(",", ":"),
    ).encode()
    assert len(content) > 2 * (1 << 22)  # three blocks at least
    parsed = parse_matrix_text(content)
    assert parsed is not None
    reference = parse_matrix(result)
    assert len(parsed[0]) == len(reference) == 150
    for got, want in zip(parsed[0], reference, strict=True):
        assert got.labels == want.labels
        np.testing.assert_array_equal(got.timestamps, want.timestamps)
        np.testing.assert_array_equal(got.values, want.values)  # repr round-trips exactly


def test_a_response_cut_off_mid_body_is_one_line() -> None:
    # The server promises 1,000 bytes, sends 12 and hangs up (a proxy or server crash).
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)

    def serve_cut() -> None:
        for _ in range(4):  # the client may retry on a fresh connection
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b'Content-Length: 1000\r\n\r\n{"status":"s'
                )

    thread = threading.Thread(target=serve_cut, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        with PromClient(_settings(url, retries=0)) as client, pytest.raises(SourceError) as info:
            client.query_range("up", 1, 1, 1, what="query q")
    finally:
        listener.close()
    message = str(info.value)
    assert f"{url} broke off query q mid-response" in message and "\n" not in message


def test_fast_matrix_parser_keeps_series_without_samples() -> None:
    # "values":[] first, between two series and last: each still gets its own (empty) series.
    import json

    result = [
        {"metric": {"pod": "a"}, "values": []},
        {"metric": {"pod": "b"}, "values": [[1, "2"], [3, "4"]]},
        {"metric": {"pod": "c"}, "values": []},
        {"metric": {"pod": "d"}, "values": [[5, "NaN"]]},
        {"metric": {"pod": "e"}, "values": []},
    ]
    content = json.dumps(
        {"status": "success", "data": {"resultType": "matrix", "result": result}},
        separators=(",", ":"),
    ).encode()
    parsed = parse_matrix_text(content)
    assert parsed is not None
    assert [s.labels["pod"] for s in parsed[0]] == ["a", "b", "c", "d", "e"]
    assert [s.timestamps.tolist() for s in parsed[0]] == [[], [1.0, 3.0], [], [5.0], []]
    assert parsed[0][1].values.tolist() == [2.0, 4.0]
    assert np.isnan(parsed[0][3].values[0])


def test_429_honours_retry_after_then_reports_parallelism() -> None:
    # Retry-After: 0 is honoured (no backoff wait); a server that keeps answering 429 ends in one
    # line that names the fix.
    def handler(request: Recorded) -> Reply:
        if len(stub.requests) < 2:
            return Reply(429, b"slow down", "text/plain", (("Retry-After", "0"),))
        return matrix([({}, [(1, "1")])])

    settings = PromSettings(url="", timeout=5, backoff=60)
    with serve(handler) as stub, PromClient(replace(settings, url=stub.url)) as client:
        [series] = client.query_range("up", 1, 1, 1, what="query q")
    assert series.values.tolist() == [1.0] and len(stub.requests) == 2
    with (
        serve(lambda r: Reply(429, b"slow down", "text/plain")) as stub,
        PromClient(_settings(stub.url, retries=2)) as client,
        pytest.raises(SourceError) as info,
    ):
        client.query_range("up", 1, 1, 1, what="query q")
    assert "HTTP 429 Too Many Requests (3 tries); lower --max-in-flight (--parallelism)" in str(
        info.value
    )
    assert len(stub.requests) == 3


def test_the_deadline_cuts_a_backoff_short() -> None:
    # A 60 s backoff after the first 503, but a 1 s deadline: the wait ends at the deadline and
    # the error says so (no second try is sent).
    from analyzer.prom.faults import DeadlineExceeded

    with (
        serve(lambda r: Reply(503, b"busy", "text/plain")) as stub,
        PromClient(PromSettings(url=stub.url, timeout=5, backoff=60, deadline=1)) as client,
        pytest.raises(DeadlineExceeded) as info,
    ):
        client.query_range("up", 1, 1, 1, what="query q")
    assert "--deadline of 1s passed while waiting for query q" in str(info.value)
    assert len(stub.requests) == 1


def test_a_token_file_that_is_not_text_is_one_line_for_every_token_option(tmp_path: Path) -> None:
    # One reader for the Prometheus and the Pushgateway tokens: bytes that are not UTF-8 were a
    # UnicodeDecodeError traceback; now a refusal naming the option the user typed.
    from analyzer.core.errors import InputError
    from analyzer.prom.settings import read_token

    token = tmp_path / "token"
    token.write_bytes(b"\xff\xfe\x00secret")
    for option in ("--token-file", "--pushgateway-token-file"):
        with pytest.raises(InputError, match=rf"^{option}: cannot read .* \(not UTF-8 text\)"):
            read_token((option, token), ("--token-env", None))
