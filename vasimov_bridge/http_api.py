"""The robot's small HTTP face: Edge's ``GET /api/version`` plus the simulator's own ``/api/sim/*`` endpoints.

The SDK reads ``/api/version`` before it opens any UDP socket (contract section 1.2), so this server must answer
exactly like Edge: status 200, a correct ``Content-Length``, a JSON object naming ``asimov_1`` and a 0.2.x Robot OS
version. Everything else is a route table the ROS node fills with callbacks, so the server itself knows nothing of
ROS and is tested with plain sockets and the SDK's own version check.

Robustness rules, because anything on the host can connect: bodies are bounded (413), JSON is validated (400),
unknown paths and methods get JSON errors (404/405), every socket has a timeout (slow clients cannot pin a thread
forever), concurrent connections are capped (503 past the cap), a handler that raises becomes a counted 500, and
``stop()`` closes live connections and joins every thread.

Why one file past 400 lines: the server's robustness rules (body and header limits, timeouts, the connection cap,
error replies) and the route table are one protocol surface; apart, the limits would sit away from the code they
bound.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from vasimov import sim_control
from vasimov.sim_control import MAX_PUSH_DURATION_S, MAX_PUSH_FORCE_N, PushError, PushRequest
from vasimov_bridge.sdk_wire import RejectionCounter

log = logging.getLogger("vasimov.http_api")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 3000  # Edge's local HTTP port; the SDK and CLI cannot use another
ROBOT_MODEL = "asimov_1"
#: A Robot OS version on the SDK's only supported line (0, 2); the SDK's own ``FakeVersionEndpoint`` uses the same.
ROBOT_OS_VERSION = "0.2.0"
#: The SDK refuses a version document over 4096 bytes; ours is 53.
MAX_VERSION_DOCUMENT = 4096

# MAJOR.MINOR.PATCH with no leading zeros, then an optional suffix without whitespace: a sanity check that fails a
# typo at start-up. The SDK is the real judge of the suffix (the tests run its check against this server).
_VERSION_SHAPE = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\S*")


class HttpError(Exception):
    """Raised by a route handler (or the server) to answer ``status`` with ``{"error": message}``."""

    def __init__(self, status: int, message: str, **extra: object) -> None:
        super().__init__(message)
        self.status = int(status)
        self.message = message
        self.extra = extra


@dataclass(frozen=True)
class Request:
    """What a route handler sees: the parsed JSON body (``None`` when there was none) and the query string."""

    method: str
    path: str
    query: str
    body: Any
    client: tuple[str, int]


@dataclass(frozen=True)
class Response:
    """A handler may return this to pick the status; a plain JSON-able value means 200."""

    body: Any
    status: int = 200


Handler = Callable[[Request], Any]


@dataclass(frozen=True)
class HttpConfig:
    """Endpoint and limits. Loopback by default; ``port=0`` picks a free port (read it back from ``HttpApi.port``)."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    robot_model: str = ROBOT_MODEL
    robot_os_version: str = ROBOT_OS_VERSION
    max_body_bytes: int = 64 * 1024
    socket_timeout_s: float = 5.0  # per read/write; also bounds how long an idle keep-alive connection lives
    max_connections: int = 32

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be 0..65535, got {self.port}")
        if not self.robot_model or self.robot_model.strip() != self.robot_model:
            raise ValueError(f"robot_model must be non-empty without surrounding whitespace: {self.robot_model!r}")
        if not _VERSION_SHAPE.fullmatch(self.robot_os_version):
            raise ValueError(f"robot_os_version {self.robot_os_version!r} is not MAJOR.MINOR.PATCH[suffix]")
        if self.max_body_bytes < 0:
            raise ValueError("max_body_bytes must be >= 0")
        if not (math.isfinite(self.socket_timeout_s) and self.socket_timeout_s > 0):
            raise ValueError("socket_timeout_s must be finite and positive")
        if self.max_connections < 1:
            raise ValueError("max_connections must be >= 1")


def version_document(robot_model: str = ROBOT_MODEL, robot_os_version: str = ROBOT_OS_VERSION) -> bytes:
    """The exact ``/api/version`` body: compact JSON, keys in Edge's order, UTF-8."""
    doc = json.dumps({"robot_model": robot_model, "robot_os_version": robot_os_version}, separators=(",", ":"))
    return doc.encode("utf-8")


def _json_default(value: Any) -> Any:
    """Let handlers return any mapping (a ``RejectionCounter``, a ``MappingProxyType``) or set as it is; anything
    else that JSON cannot carry is a handler bug and becomes a counted 500."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _json_bytes(value: Any) -> bytes:
    # allow_nan=False: NaN/Infinity are not JSON and would break strict clients; a handler returning them is a bug.
    return json.dumps(value, separators=(",", ":"), allow_nan=False, default=_json_default).encode("utf-8")


class _Server(ThreadingHTTPServer):
    """Non-daemon handler threads joined on close, a connection cap, and a registry of live sockets so ``stop()``
    can wake a handler blocked on a slow client."""

    daemon_threads = False
    block_on_close = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], api: HttpApi) -> None:
        self.api = api
        self._slots = threading.BoundedSemaphore(api.config.max_connections)
        self._live: set[socket.socket] = set()
        self._live_lock = threading.Lock()
        super().__init__(address, _RequestHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.api.counters.add("rejected_busy")
            try:
                request.settimeout(0.5)
                body = _json_bytes({"error": "too many connections"})
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode("ascii")
                    + body
                )
                # Lingering close: closing with the client's request still unread would send a RST that can
                # destroy the 503 before the client reads it, so half-close and drain briefly first.
                request.shutdown(socket.SHUT_WR)
                request.settimeout(0.1)
                give_up = time.monotonic() + 0.3  # bounded: a trickling client cannot hold the accept loop
                while time.monotonic() < give_up and request.recv(4096):
                    pass
            except OSError:
                pass
            self.shutdown_request(request)
            return
        with self._live_lock:
            self._live.add(request)
        try:
            super().process_request(request, client_address)
        except Exception:
            self._release(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(request)

    def _release(self, request: socket.socket) -> None:
        with self._live_lock:
            if request in self._live:
                self._live.discard(request)
                self._slots.release()

    def interrupt_live(self) -> None:
        with self._live_lock:
            live = list(self._live)
        for sock in live:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # An exception escaping a handler thread (e.g. a reset mid-write): count it, keep serving.
        self.api.counters.add("connection_error")
        log.debug("connection from %s failed", client_address, exc_info=True)


_MAX_REQUEST_LINE = 65536  # bytes, as the stdlib reads it; a longer line is answered 414
_MAX_BLANK_LINES = 4  # empty lines tolerated before a request line (some clients send CRLF after a body)


class _RequestHandler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive like Edge; every reply carries Content-Length
    server_version = "vasimov"
    sys_version = ""
    error_content_type = "application/json"
    # An error found before the request line's version is read must still get a status line (the stdlib's default,
    # HTTP/0.9, answers with a bare body), so the reply to a garbled line is a real 400.
    default_request_version = "HTTP/1.0"

    def setup(self) -> None:
        self.timeout = self.server.api.config.socket_timeout_s
        super().setup()

    # Every method goes through one dispatcher so unknown methods get a JSON 405/404 instead of the stdlib's 501 HTML.
    def __getattr__(self, name: str) -> Any:
        if name.startswith("do_") and name[3:].isalpha() and name[3:].isupper():
            return self._dispatch
        raise AttributeError(name)

    def _dispatch(self) -> None:
        self.server.api._handle(self)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The stdlib calls this for unparseable request lines, oversized headers and the like: answer in JSON."""
        self.server.api.counters.add(f"http_{int(code)}")
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = ""
        self.close_connection = True
        body = _json_bytes({"error": message or phrase})
        try:
            self.send_response(code, message)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD" and code >= 200 and code not in (204, 304):
                self.wfile.write(body)
        except OSError:
            pass

    def parse_request(self) -> bool:
        """The stdlib's parser plus the cases it leaves without an answer or answers without a status line.

        Up to ``_MAX_BLANK_LINES`` empty lines before a request line are skipped (RFC 9112 section 2.2); a line of
        two words is an HTTP/0.9 request, whose reply would have no status line: refused with 505 instead; a
        line of whitespace only is a 400. Every refusal goes through ``send_error`` (JSON, counted)."""
        for _ in range(_MAX_BLANK_LINES):
            if self.raw_requestline not in (b"\r\n", b"\n"):
                break
            self.raw_requestline = self.rfile.readline(_MAX_REQUEST_LINE + 1)
        self.command, self.request_version, self.close_connection = None, self.default_request_version, True
        self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        if not self.raw_requestline:
            return False  # the client closed after blank lines: no request, nothing to answer
        if len(self.raw_requestline) > _MAX_REQUEST_LINE:
            self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG, f"request line longer than {_MAX_REQUEST_LINE} bytes")
            return False
        words = self.requestline.split()
        if not words:
            self.send_error(HTTPStatus.BAD_REQUEST, "empty request line")
            return False
        if len(words) == 2:
            self.send_error(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, "HTTP/0.9 requests (no version) are not supported")
            return False
        return super().parse_request()

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        # Also called for errors found before the request line was parsed, when there is no path yet.
        log.debug("%s %s -> %s", self.command, getattr(self, "path", "-"), code)

    def log_error(self, format: str, *args: Any) -> None:
        if format.startswith("Request timed out"):
            self.server.api.counters.add("timeout")
        log.debug("http: " + format, *args)


class HttpApi:
    """A threaded HTTP/1.1 server: ``GET /api/version`` built in, other routes registered by the caller.

    ``add_route(method, path, handler)`` before or after ``start()``; a handler takes a ``Request`` and returns a
    JSON-able value (200), a ``Response``, or raises ``HttpError``. Handlers run on the connection's thread, so
    they must be thread-safe and quick (the node copies its latest snapshot rather than computing on demand).
    """

    def __init__(self, config: HttpConfig | None = None) -> None:
        self.config = config or HttpConfig()
        self.counters = RejectionCounter()  # requests, statuses and failure classes
        self._routes: dict[tuple[str, str], Handler] = {}
        self._routes_lock = threading.Lock()
        self._version = version_document(self.config.robot_model, self.config.robot_os_version)
        if len(self._version) > MAX_VERSION_DOCUMENT:
            raise ValueError("the version document would exceed the SDK's 4096-byte limit")
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.add_route("GET", "/api/version", lambda _req: Response(self._version))
        self.add_route("GET", "/api", lambda _req: {"routes": self.routes()})

    # ── routes ────────────────────────────────────────────────────────────────────────────────────────────────
    def add_route(self, method: str, path: str, handler: Handler) -> None:
        if not path.startswith("/"):
            raise ValueError(f"route path must start with '/': {path!r}")
        with self._routes_lock:
            self._routes[(method.upper(), path)] = handler

    def routes(self) -> list[str]:
        with self._routes_lock:
            return sorted(f"{m} {p}" for m, p in self._routes)

    # ── lifecycle ─────────────────────────────────────────────────────────────────────────────────────────────
    def start(self) -> tuple[str, int]:
        """Bind and serve on a background thread; returns the bound (host, port). ``OSError`` if the port is taken."""
        if self._server is not None:
            raise RuntimeError("HttpApi already started")
        server = _Server((self.config.host, self.config.port), self)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="vasimov-http", daemon=True
        )
        self._thread.start()
        return self.address

    @property
    def address(self) -> tuple[str, int]:
        if self._server is None:
            raise RuntimeError("HttpApi not started")
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def port(self) -> int:
        return self.address[1]

    def stop(self) -> None:
        """Stop accepting, cut live connections (a slow client must not hold shutdown), join every thread."""
        server, thread = self._server, self._thread
        if server is None:
            return
        server.shutdown()
        if thread is not None:
            thread.join()
        server.interrupt_live()
        server.server_close()  # joins handler threads (block_on_close)
        self._server, self._thread = None, None

    def __enter__(self) -> HttpApi:
        if self._server is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ── request handling ──────────────────────────────────────────────────────────────────────────────────────
    def _handle(self, h: _RequestHandler) -> None:
        self.counters.add("requests")
        method = h.command.upper()
        path, _, query = h.path.partition("?")
        head = method == "HEAD"
        lookup = "GET" if head else method
        try:
            with self._routes_lock:
                handler = self._routes.get((lookup, path))
                allowed = sorted({m for (m, p) in self._routes if p == path})
            if handler is None:
                # Drain nothing: an unread body would be parsed as the next request, so close after answering.
                h.close_connection = True
                if allowed:
                    raise HttpError(405, f"{method} not allowed on {path}; allowed: {', '.join(allowed)}")
                raise HttpError(404, f"no such endpoint {path}; see GET /api")
            body = self._read_body(h)
            result = handler(Request(method=method, path=path, query=query, body=body, client=h.client_address))
            if isinstance(result, Response):
                status, payload = result.status, result.body
            else:
                status, payload = 200, result
            data = payload if isinstance(payload, bytes) else _json_bytes(payload)
        except HttpError as exc:
            status = exc.status
            data = _json_bytes({"error": exc.message, **exc.extra})
            self.counters.add(f"http_{status}")
        except Exception:  # a handler bug must not take the server down: count it, answer 500
            log.exception("handler for %s %s raised", method, path)
            self.counters.add("handler_error")
            status = 500
            data = _json_bytes({"error": "internal error in the simulator endpoint"})
        try:
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            if h.close_connection:
                h.send_header("Connection", "close")
            h.end_headers()
            if not head:
                h.wfile.write(data)
        except OSError:
            self.counters.add("write_error")
            h.close_connection = True

    def _read_body(self, h: _RequestHandler) -> Any:
        """Bounded body read. ``None`` when there is no body; JSON otherwise."""
        if "chunked" in (h.headers.get("Transfer-Encoding") or "").lower():
            h.close_connection = True
            raise HttpError(411, "chunked bodies are not accepted; send Content-Length")
        raw_length = h.headers.get("Content-Length")
        if raw_length is None:
            return None
        try:
            length = int(raw_length)
            if length < 0:
                raise ValueError
        except ValueError:
            h.close_connection = True
            raise HttpError(400, f"bad Content-Length {raw_length!r}") from None
        if length > self.config.max_body_bytes:
            h.close_connection = True  # the body stays unread: never parse it as a next request
            raise HttpError(413, f"body of {length} bytes exceeds {self.config.max_body_bytes}")
        if length == 0:
            return None
        try:
            raw = h.rfile.read(length)  # the socket timeout bounds a client that promises more than it sends
        except (TimeoutError, OSError):
            h.close_connection = True
            self.counters.add("timeout")
            raise HttpError(408, "the request body did not arrive in time") from None
        if len(raw) != length:
            h.close_connection = True
            raise HttpError(400, f"body ended after {len(raw)} of {length} bytes")
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise HttpError(400, f"body is not valid JSON: {exc}") from None


# ── simulator endpoints ──────────────────────────────────────────────────────────────────────────────────────────


def parse_push(payload: Any, *, max_force_n: float = MAX_PUSH_FORCE_N,
               max_duration_s: float = MAX_PUSH_DURATION_S) -> PushRequest:
    """The core's push rules (``vasimov.sim_control.parse_push``) answered the HTTP way: ``HttpError(400)`` with
    the rule's message."""
    try:
        return sim_control.parse_push(payload, max_force_n=max_force_n, max_duration_s=max_duration_s)
    except PushError as exc:
        raise HttpError(400, str(exc)) from None


def register_sim_endpoints(
    api: HttpApi,
    *,
    truth: Callable[[], Mapping[str, Any]] | None = None,
    restart: Callable[[], Any] | None = None,
    counters: Callable[[], Mapping[str, Any]] | None = None,
    push: Callable[[PushRequest], Any] | None = None,
    max_force_n: float = MAX_PUSH_FORCE_N,
    max_duration_s: float = MAX_PUSH_DURATION_S,
) -> None:
    """Wire the node's callbacks to ``/api/sim/*``; a callback left ``None`` leaves its route out (404).

    * ``GET /api/sim/truth`` -> ``truth()`` (ground-truth pose etc.; the SDK deliberately has none);
    * ``POST /api/sim/restart`` -> ``restart()`` (a firmware restart: new stream, boot in DAMP);
    * ``GET /api/sim/counters`` -> ``{"http": server counters, **counters()}``;
    * ``POST /api/sim/push`` -> ``push(PushRequest)`` after ``parse_push``; answers 202 (applied over time).
    """
    if truth is not None:
        api.add_route("GET", "/api/sim/truth", lambda _req: dict(truth()))
    if restart is not None:

        def _restart(_req: Request) -> Any:
            result = restart()
            return result if result is not None else {"restarted": True}

        api.add_route("POST", "/api/sim/restart", _restart)

    def _counters(_req: Request) -> Any:
        out: dict[str, Any] = {"http": api.counters.snapshot()}
        if counters is not None:
            out.update(counters())
        return out

    api.add_route("GET", "/api/sim/counters", _counters)
    if push is not None:

        def _push(req: Request) -> Any:
            request = parse_push(req.body, max_force_n=max_force_n, max_duration_s=max_duration_s)
            result = push(request)
            body = result if result is not None else {
                "accepted": True,
                "body": request.body,
                "force": list(request.force),
                "duration": request.duration,
            }
            return Response(body, status=202)

        api.add_route("POST", "/api/sim/push", _push)
