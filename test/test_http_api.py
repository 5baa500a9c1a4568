"""The HTTP face: the SDK's own version check against it, the simulator routes, and hostile clients."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from menlo.asimov import CompatibilityError
from menlo.asimov._version import _fetch_version_document, check_target, check_target_document

from vasimov_bridge.http_api import (
    HttpApi,
    HttpConfig,
    HttpError,
    PushRequest,
    Response,
    parse_push,
    register_sim_endpoints,
    version_document,
)

HOST = "127.0.0.1"


@pytest.fixture
def api() -> Iterator[HttpApi]:
    server = HttpApi(HttpConfig(host=HOST, port=0, socket_timeout_s=0.5, max_connections=4))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def request(
    api: HttpApi, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(HOST, api.port, timeout=5)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def raw_exchange(api: HttpApi, data: bytes, *, read_timeout: float = 5.0) -> bytes:
    """Send bytes, half-close, read until the server closes."""
    with socket.create_connection((HOST, api.port), timeout=read_timeout) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := s.recv(4096):
            chunks.append(chunk)
        return b"".join(chunks)


def assert_alive(api: HttpApi) -> None:
    status, _, body = request(api, "GET", "/api/version")
    assert status == 200 and body == version_document()


# ── /api/version, judged by the SDK ───────────────────────────────────────────────────────────────────────────


def test_sdk_version_check_accepts_the_server(api: HttpApi) -> None:
    check_target(HOST, api.port, 2.0, allow_unsupported_target=False)  # raises on any failure
    doc = _fetch_version_document(HOST, api.port, 2.0, f"http://{HOST}:{api.port}/api/version")
    assert doc == b'{"robot_model":"asimov_1","robot_os_version":"0.2.0"}'


def test_version_reply_headers_are_exact(api: HttpApi) -> None:
    status, headers, body = request(api, "GET", "/api/version", headers={"Accept": "application/json"})
    assert status == 200
    assert headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body) == 53
    assert json.loads(body) == {"robot_model": "asimov_1", "robot_os_version": "0.2.0"}


def test_head_gives_headers_without_body(api: HttpApi) -> None:
    status, headers, body = request(api, "HEAD", "/api/version")
    assert status == 200 and headers["content-length"] == "53" and body == b""


@pytest.mark.parametrize("version", ["0.2.0", "0.2.3", "0.2.91", "0.2.0rc1", "0.2.0-dev.1"])
def test_version_is_a_parameter_the_sdk_accepts(version: str) -> None:
    with HttpApi(HttpConfig(port=0, robot_os_version=version)) as server:
        check_target(HOST, server.port, 2.0, allow_unsupported_target=False)


def test_an_unsupported_line_is_refused_by_the_sdk() -> None:
    with HttpApi(HttpConfig(port=0, robot_os_version="0.3.0")) as server, pytest.raises(CompatibilityError):
        check_target(HOST, server.port, 2.0, allow_unsupported_target=False)


@pytest.mark.parametrize("version", ["v0.2.0", "0.2", "0.02.0", "0.2.0 ", ""])
def test_a_malformed_version_fails_at_configuration(version: str) -> None:
    with pytest.raises(ValueError, match="robot_os_version"):
        HttpConfig(robot_os_version=version)


def test_version_document_is_what_the_sdk_parses() -> None:
    check_target_document(version_document(), "test", allow_unsupported_target=False)


# ── simulator routes ──────────────────────────────────────────────────────────────────────────────────────────


def test_sim_endpoints_call_the_injected_callbacks(api: HttpApi) -> None:
    calls: list[object] = []
    register_sim_endpoints(
        api,
        truth=lambda: {"base_pos": [0.0, 0.0, 0.9]},
        restart=lambda: calls.append("restart"),
        counters=lambda: {"udp": {"rx_datagrams": 3}},
        push=calls.append,
    )
    assert request(api, "GET", "/api/sim/truth")[2] == b'{"base_pos":[0.0,0.0,0.9]}'
    status, _, body = request(api, "POST", "/api/sim/restart")
    assert status == 200 and json.loads(body) == {"restarted": True} and calls == ["restart"]
    push = json.dumps({"body": "torso_link", "force": [30, 0, 0], "duration": 0.2}).encode()
    status, _, body = request(api, "POST", "/api/sim/push", push, {"Content-Type": "application/json"})
    assert status == 202 and json.loads(body)["accepted"] is True
    assert calls[-1] == PushRequest(body="torso_link", force=(30.0, 0.0, 0.0), duration=0.2)
    counters = json.loads(request(api, "GET", "/api/sim/counters")[2])
    assert counters["udp"] == {"rx_datagrams": 3} and counters["http"]["requests"] >= 4
    routes = json.loads(request(api, "GET", "/api")[2])["routes"]
    assert "POST /api/sim/push" in routes and "GET /api/version" in routes


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ([], "JSON object"),
        ({"force": [1, 2, 3], "duration": 1}, "body"),
        ({"body": "", "force": [1, 2, 3], "duration": 1}, "body"),
        ({"body": "torso", "force": [1, 2], "duration": 1}, "force"),
        ({"body": "torso", "force": [1, "2", 3], "duration": 1}, "force"),
        ({"body": "torso", "force": [True, 0, 0], "duration": 1}, "force"),
        ({"body": "torso", "force": [1e9, 0, 0], "duration": 1}, "exceeds"),
        ({"body": "torso", "force": [1, 2, 3], "duration": 0}, "duration"),
        ({"body": "torso", "force": [1, 2, 3], "duration": 60}, "duration"),
        ({"body": "torso", "force": [1, 2, 3]}, "duration"),
        ({"body": "torso", "force": [1, 2, 3], "duration": 1, "torque": [0, 0, 0]}, "unknown keys"),
        ({"body": "torso", "force": [0, 0, 2000], "duration": 5}, "impulse"),  # threw the robot to z = 383 m
        ({"body": "torso", "force": [0, 300, 0], "duration": 2.5}, "impulse"),
    ],
)
def test_push_validation(payload: object, fragment: str) -> None:
    with pytest.raises(HttpError, match=fragment) as err:
        parse_push(payload)
    assert err.value.status == 400


def test_push_rejects_non_finite_json(api: HttpApi) -> None:
    pushed: list[PushRequest] = []
    register_sim_endpoints(api, push=pushed.append)
    body = b'{"body": "torso", "force": [NaN, 0, 0], "duration": 1}'  # Python's json accepts NaN; we must not
    status, _, reply = request(api, "POST", "/api/sim/push", body)
    assert status == 400 and b"finite" in reply and not pushed


def test_callback_http_error_and_crash(api: HttpApi) -> None:
    def unknown_body(req: PushRequest) -> None:
        raise HttpError(404, f"no body named {req.body!r}")

    register_sim_endpoints(api, push=unknown_body, truth=lambda: 1 / 0)  # type: ignore[arg-type, return-value]
    push = json.dumps({"body": "nope", "force": [1, 0, 0], "duration": 1}).encode()
    status, headers, body = request(api, "POST", "/api/sim/push", push)
    assert status == 404 and headers["content-type"] == "application/json" and b"nope" in body
    status, _, body = request(api, "GET", "/api/sim/truth")
    assert status == 500 and json.loads(body)["error"]
    assert api.counters["handler_error"] == 1
    assert_alive(api)


def test_mappings_serialise_and_nan_is_a_500(api: HttpApi) -> None:
    api.add_route("GET", "/api/sim/c", lambda _req: {"http": api.counters, "set": {2, 1}})
    status, _, body = request(api, "GET", "/api/sim/c")
    assert status == 200 and json.loads(body)["set"] == [1, 2] and json.loads(body)["http"]["requests"] >= 1
    api.add_route("GET", "/api/sim/nan", lambda _req: {"x": float("nan")})
    api.add_route("GET", "/api/sim/obj", lambda _req: {"x": object()})
    assert request(api, "GET", "/api/sim/nan")[0] == 500 and request(api, "GET", "/api/sim/obj")[0] == 500
    assert_alive(api)


def test_handler_may_choose_status(api: HttpApi) -> None:
    api.add_route("POST", "/api/sim/echo", lambda req: Response({"got": req.body, "q": req.query}, status=201))
    status, _, body = request(api, "POST", "/api/sim/echo?x=1", b'{"a": [1, 2]}')
    assert status == 201 and json.loads(body) == {"got": {"a": [1, 2]}, "q": "x=1"}


# ── malformed requests ────────────────────────────────────────────────────────────────────────────────────────


def test_unknown_path_is_json_404(api: HttpApi) -> None:
    status, headers, body = request(api, "GET", "/api/nope")
    assert status == 404 and headers["content-type"] == "application/json" and "no such endpoint" in body.decode()
    assert api.counters["http_404"] == 1


@pytest.mark.parametrize("method", ["POST", "DELETE", "PUT", "FOO"])
def test_wrong_method_is_json_405(api: HttpApi, method: str) -> None:
    status, _, body = request(api, method, "/api/version", b"{}")
    assert status == 405 and "GET" in json.loads(body)["error"]


def test_lowercase_method_is_a_json_error(api: HttpApi) -> None:
    reply = raw_exchange(api, b"get /api/version HTTP/1.1\r\nHost: x\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 501") and b"application/json" in reply
    assert_alive(api)


def test_bad_json_is_400(api: HttpApi) -> None:
    register_sim_endpoints(api, push=lambda _r: None)
    for body in (b"{not json", b"\xff\xfe\x00", b'{"body": '):
        status, _, reply = request(api, "POST", "/api/sim/push", body)
        assert status == 400 and "JSON" in json.loads(reply)["error"]


def test_oversized_body_is_413_without_reading_it(api: HttpApi) -> None:
    register_sim_endpoints(api, push=lambda _r: None)
    head = f"POST /api/sim/push HTTP/1.1\r\nHost: x\r\nContent-Length: {10**9}\r\n\r\n".encode()
    reply = raw_exchange(api, head)
    assert reply.startswith(b"HTTP/1.1 413") and b"exceeds" in reply
    assert_alive(api)


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"POST /api/sim/push HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", b"411"),
        (b"POST /api/sim/push HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", b"400"),
        (b"POST /api/sim/push HTTP/1.1\r\nHost: x\r\nContent-Length: lots\r\n\r\n", b"400"),
        (b"POST /api/sim/push HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{}", b"400"),  # body cut short
    ],
)
def test_bad_framing(api: HttpApi, head: bytes, status: bytes) -> None:
    register_sim_endpoints(api, push=lambda _r: None)
    assert raw_exchange(api, head).startswith(b"HTTP/1.1 " + status)
    assert_alive(api)


@pytest.mark.parametrize(
    "junk",
    [
        b"\x00\x01\x02\x03garbage\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(64)),  # a TLS ClientHello
        b"GET /api/version HTTP/9.9\r\n\r\n",
        b"GET " + b"a" * 70000 + b" HTTP/1.1\r\n\r\n",
        b"GET /api/version HTTP/1.1\r\n" + b"X-A: b\r\n" * 200 + b"\r\n",
        b"\r\n\r\n\r\n",
    ],
)
def test_garbage_bytes_get_an_error_and_the_server_lives(api: HttpApi, junk: bytes) -> None:
    try:
        reply = raw_exchange(api, junk)
    except ConnectionResetError:
        reply = b""  # the server may close while a huge line is still being sent; that is an answer too
    assert reply == b"" or reply.startswith(b"HTTP/1.")
    assert_alive(api)


def test_slow_client_is_timed_out(api: HttpApi) -> None:
    with socket.create_connection((HOST, api.port), timeout=5) as s:
        s.sendall(b"GET /api/ver")  # ...and never finish
        started = time.monotonic()
        assert s.recv(1024) == b""  # the server hangs up after its socket timeout (0.5 s)
        assert time.monotonic() - started < 3.0
    assert_alive(api)
    assert api.counters.get("timeout", 0) >= 1


def test_slow_body_is_408(api: HttpApi) -> None:
    register_sim_endpoints(api, push=lambda _r: None)
    with socket.create_connection((HOST, api.port), timeout=5) as s:
        s.sendall(b"POST /api/sim/push HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n{")
        assert s.recv(1024).startswith(b"HTTP/1.1 408")


def test_connection_cap_answers_503_and_recovers(api: HttpApi) -> None:
    idle = [socket.create_connection((HOST, api.port), timeout=5) for _ in range(4)]  # max_connections=4
    try:
        deadline = time.monotonic() + 2.0
        reply = b""
        while time.monotonic() < deadline and not reply.startswith(b"HTTP/1.1 503"):
            reply = raw_exchange(api, b"GET /api/version HTTP/1.1\r\nHost: x\r\n\r\n")
        assert reply.startswith(b"HTTP/1.1 503")
        assert api.counters["rejected_busy"] >= 1
    finally:
        for s in idle:
            s.close()
    deadline = time.monotonic() + 3.0
    while True:  # slots come back as the server notices the closed sockets
        try:
            assert_alive(api)
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise


def test_keep_alive_serves_several_requests_on_one_connection(api: HttpApi) -> None:
    conn = http.client.HTTPConnection(HOST, api.port, timeout=5)
    try:
        for _ in range(3):
            conn.request("GET", "/api/version")
            r = conn.getresponse()
            assert r.status == 200 and r.read() == version_document()
    finally:
        conn.close()


def test_concurrent_clients(api: HttpApi) -> None:
    results: list[int] = []
    lock = threading.Lock()

    def client() -> None:
        for _ in range(10):
            for _attempt in range(100):  # a 503 past the connection cap says "busy": retry, as a client does
                status = request(api, "GET", "/api/version")[0]
                if status != 503:
                    break
                time.sleep(0.01)
            with lock:
                results.append(status)

    threads = [threading.Thread(target=client) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Four clients against four slots: a 503 is possible while a slot drains its lingering close, a failure is not;
    # every request is served once retried.
    assert results == [200] * 40


# ── lifecycle ─────────────────────────────────────────────────────────────────────────────────────────────────


def test_stop_cuts_idle_connections_and_joins_threads() -> None:
    server = HttpApi(HttpConfig(port=0, socket_timeout_s=30.0))
    port = server.start()[1]
    idle = socket.create_connection((HOST, port), timeout=5)
    idle.sendall(b"GET /api/ver")  # a handler thread now blocks on this client for up to 30 s
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and not any(t.name.startswith("Thread-") for t in threading.enumerate()):
        time.sleep(0.01)
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 2.0
    assert not any(t.name == "vasimov-http" for t in threading.enumerate())
    idle.close()
    with pytest.raises(OSError):
        socket.create_connection((HOST, port), timeout=1).close()
    server.stop()  # idempotent


def test_default_endpoint_is_loopback_3000() -> None:
    cfg = HttpConfig()
    assert (cfg.host, cfg.port) == ("127.0.0.1", 3000)
    with pytest.raises(RuntimeError):
        _ = HttpApi(cfg).port  # not started: no port to report


@pytest.mark.parametrize(
    ("line", "status"),
    [
        (b"\x00\x01\x02\x03garbage\r\n\r\n", b"400"),
        (b"GET /api/version HTTP/1.x\r\n\r\n", b"400"),
        (b"GET /api/version HTTP/1.1 extra\r\n\r\n", b"400"),
        (b"   \r\n\r\n", b"400"),
        (b"GET " + b"a" * 70000 + b" HTTP/1.1\r\n\r\n", b"414"),
        (b"GET /api/version HTTP/2.0\r\n\r\n", b"505"),
        (b"GET /api/version HTTP/9.9\r\n\r\n", b"505"),
        (b"GET /api/version\r\n\r\n", b"505"),  # HTTP/0.9: its reply would have no status line
        (b"\r\n" * 5 + b"GET /api/version HTTP/1.1\r\n\r\n", b"400"),  # more blank lines than tolerated
    ],
)
def test_every_malformed_request_line_gets_a_json_status(api: HttpApi, line: bytes, status: bytes) -> None:
    """Issue 10: these got no reply at all (the request logger read self.path before it existed)."""
    reply = raw_exchange(api, line)
    assert reply.startswith(b"HTTP/1.") and reply.split(b" ", 2)[1] == status, reply[:200]
    head, _, body = reply.partition(b"\r\n\r\n")
    assert b"application/json" in head and "error" in json.loads(body)
    assert api.counters.snapshot().get(f"http_{status.decode()}", 0) >= 1
    assert_alive(api)


def test_a_blank_line_before_a_request_is_tolerated(api: HttpApi) -> None:
    reply = raw_exchange(api, b"\r\nGET /api/version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(version_document())
