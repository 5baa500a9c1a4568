"""The Foxglove bridge's listening socket: a loopback front that lets every Foxglove client in.

foxglove-sdk's server accepts the protocol v1 only under its new name ``foxglove.sdk.v1`` and has no option to
accept the old one (``foxglove.websocket.v1``, the same messages), so the SDK listens on a private loopback port
and this front listens on the bridge's host:port. For each connection it reads the client's handshake, lets
``ws_subprotocol`` add the new name where the client offered only the old one, hands it to the SDK, gives the
SDK's answer back with the name the client offered, and from then on copies bytes both ways untouched: every
message, capability and callback is still the SDK's own.

Costs: nothing while no client is connected (one thread blocked in accept()). Per connected client two threads
blocked in recv() that wake once per burst the SDK or the client writes; the per-connection socket buffers are
bounded (``RELAY_SOCKET_BUFFER``) so a client that stops reading still fills the SDK's per-client queue soon and
the SDK drops that client's oldest data, as it does without the front.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable

from vasimov_bridge import ws_subprotocol as wsp

HANDSHAKE_TIMEOUT = 10.0  # s a client (or the SDK) may take to send its handshake head
MAX_CLIENTS = 64  # concurrent connections; more are answered 503 (each costs two threads)
RELAY_CHUNK = 65536  # bytes per recv
RELAY_SOCKET_BUFFER = 262144  # bytes: the front's buffers towards a client and from the SDK, per connection
REFUSAL_LINGER = 2.0  # s a refused client has to read the answer and close

_REFUSALS = {
    431: b"HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
    400: b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
    503: b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
}


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    """(head, bytes after it) from a socket with a timeout set; raises HandshakeError, TimeoutError, OSError."""
    buf = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            raise wsp.HandshakeError("connection closed before the end of the handshake head")
        buf += chunk
        parts = wsp.split_head(buf)
        if parts is not None:
            return parts


def _pump(src: socket.socket, dst: socket.socket, *, last_word: bool = False) -> None:
    """Copy src to dst until src ends (then pass the end on) or either side fails (then end both). With
    ``last_word`` (the server's direction) the end of src also ends dst's reading: once the server has closed,
    nothing a client still sends can reach it, and a client that never closes must not hold a thread."""
    buf = bytearray(RELAY_CHUNK)
    view = memoryview(buf)
    try:
        while True:
            n = src.recv_into(buf)
            if n == 0:
                break
            dst.sendall(view[:n])
        dst.shutdown(socket.SHUT_RDWR if last_word else socket.SHUT_WR)
    except OSError:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


class SubprotocolFront:
    """Listens on (host, port); relays each client to the SDK's server on 127.0.0.1:upstream_port."""

    def __init__(self, host: str, port: int, upstream_port: int, *, info: Callable[[str], None],
                 warn: Callable[[str, str], None], count: Callable[[str], None]) -> None:
        """``info(text)`` logs, ``warn(key, text)`` logs rate-limited per key, ``count(key)`` counts. Binds at once
        (raises OSError when the address is taken)."""
        self.upstream = ("127.0.0.1", upstream_port)
        self.info, self.warn, self.count = info, warn, count
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                          flags=socket.AI_PASSIVE)[0]
        self.listener = socket.socket(family, kind, proto)
        try:
            self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.listener.bind(addr)
            self.listener.listen(16)
        except OSError:
            self.listener.close()
            raise
        self.port = int(self.listener.getsockname()[1])
        self.lock = threading.Lock()
        self.live: set[socket.socket] = set()  # both sockets of every open connection
        self.stopping = False
        self.acceptor = threading.Thread(target=self._accept, name="foxglove-front", daemon=True)
        self.acceptor.start()

    def stop(self) -> None:
        """Stop listening and end every relayed connection."""
        with self.lock:
            self.stopping = True
            live = list(self.live)
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes accept()
        self.listener.close()
        for s in live:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        self.acceptor.join(timeout=5)

    def clients(self) -> int:
        with self.lock:
            return len(self.live) // 2

    def _accept(self) -> None:
        while True:
            try:
                conn, peer = self.listener.accept()
            except OSError:
                if self.stopping:
                    return
                continue  # e.g. ECONNABORTED: that client gave up before we took it
            threading.Thread(target=self._serve, args=(conn, peer), name="foxglove-front-client",
                             daemon=True).start()

    def _serve(self, client: socket.socket, peer: tuple) -> None:
        who = f"{peer[0]}:{peer[1]}"
        upstream: socket.socket | None = None
        try:
            upstream = self._handshake(client, who)
            if upstream is None:
                return
            down = threading.Thread(target=_pump, args=(upstream, client), kwargs={"last_word": True},
                                    name="foxglove-front-down", daemon=True)
            down.start()
            _pump(client, upstream)
            down.join()
        finally:
            with self.lock:
                self.live.discard(client)
                if upstream is not None:
                    self.live.discard(upstream)
            client.close()
            if upstream is not None:
                upstream.close()

    def _refuse(self, client: socket.socket, code: int, key: str, text: str) -> None:
        """Answer ``code`` and close gracefully: a socket closed with unread input resets the connection, and the
        client would see the reset instead of the answer."""
        self.count(f"front_refused.{code}")
        self.warn(f"front:{key}", text)
        with contextlib.suppress(OSError):
            client.settimeout(REFUSAL_LINGER)
            client.sendall(_REFUSALS[code])
            client.shutdown(socket.SHUT_WR)
            for _ in range(wsp.MAX_HEAD_BYTES // 4096 + 2):  # read what it still sends until it closes
                if not client.recv(4096):
                    break

    def _handshake(self, client: socket.socket, who: str) -> socket.socket | None:
        """Pass one handshake through; the connected upstream socket once the SDK accepted, else None."""
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, RELAY_SOCKET_BUFFER)
        client.settimeout(HANDSHAKE_TIMEOUT)
        try:
            head, rest = _read_head(client)
            request = wsp.rewrite_request(head)
        except wsp.HandshakeError as exc:
            self._refuse(client, exc.status, "head", f"foxglove client {who} refused: {exc}")
            return None
        except (TimeoutError, OSError) as exc:
            self.count("front_dropped_handshakes")
            self.warn("front:io", f"foxglove client {who} dropped during its handshake: {exc!r}")
            return None
        with self.lock:
            full = self.stopping or len(self.live) >= 2 * MAX_CLIENTS
            if not full:
                self.live.add(client)
        if full:
            self._refuse(client, 503, "full", f"foxglove client {who} refused: {MAX_CLIENTS} clients connected")
            return None
        upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            upstream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RELAY_SOCKET_BUFFER)  # before connect
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            upstream.settimeout(HANDSHAKE_TIMEOUT)
            upstream.connect(self.upstream)
            with self.lock:
                self.live.add(upstream)
            upstream.sendall(request.head + rest)
            answer, more = _read_head(upstream)
            response = wsp.rewrite_response(answer, request)
            client.sendall(response + more)
        except (wsp.HandshakeError, TimeoutError, OSError) as exc:
            with self.lock:
                self.live.discard(upstream)
            upstream.close()
            self._refuse(client, 503, "upstream", f"foxglove client {who} refused: the SDK server did not answer "
                                                  f"its handshake ({exc!r})")
            return None
        name = wsp.chosen_name(response) if wsp.status_code(response) == 101 else None
        if name is None:  # the SDK's own refusal (400) reaches the client as it wrote it, then the SDK closes
            first_line = response.split(b"\r\n", 1)[0].decode("latin-1")
            self.count("front_handshakes_refused_by_sdk")
            self.warn("front:sdk", f"foxglove client {who} offering {list(request.offered)} refused by the "
                                   f"server: {first_line}")
        else:
            self.count(f"clients.{name}")
            self.info(f"foxglove client {who} connected ({name})")
        client.settimeout(None)
        upstream.settimeout(None)
        return upstream
