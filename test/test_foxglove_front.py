"""The bridge's front before the SDK's server, without a ROS graph: clients offering either name of protocol v1
(or both) get in and get back a name they offered; the protocol then runs through it both ways untouched; what
the SDK refuses stays refused; bad heads get a clear refusal; stop() ends everything.

A client that stops reading behind the front: test_foxglove_backpressure. The graph-level proof with Foxglove's own
JavaScript client: test_foxglove_graph (test_foxglove_javascript_client_...).
"""

from __future__ import annotations

import json
import socket
import threading
from collections import Counter
from collections.abc import Iterator

import foxglove
import pytest
from harness import wait_for
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from vasimov_bridge import ws_subprotocol as wsp
from vasimov_bridge.foxglove_front import MAX_CLIENTS, SubprotocolFront

SDK, LEGACY = wsp.SDK_NAME, wsp.LEGACY_NAME
SCHEMA = foxglove.Schema(name="std_msgs/msg/String", encoding="ros2msg", data=b"string data")


class _Events:
    """The front's callbacks, recorded."""

    def __init__(self) -> None:
        self.counters: Counter[str] = Counter()
        self.lines: list[str] = []
        self.lock = threading.Lock()

    def count(self, key: str) -> None:
        with self.lock:
            self.counters[key] += 1

    def info(self, text: str) -> None:
        with self.lock:
            self.lines.append(text)

    def warn(self, key: str, text: str) -> None:
        self.info(text)


class _Served:
    def __init__(self) -> None:
        self.events = _Events()
        self.ctx = foxglove.Context()
        self.channel = foxglove.Channel("/chatter", schema=SCHEMA, message_encoding="cdr", context=self.ctx)
        self.server = foxglove.start_server(port=0, context=self.ctx, message_backlog_size=1024)
        self.front = SubprotocolFront("127.0.0.1", 0, int(self.server.port), info=self.events.info,
                                      warn=self.events.warn, count=self.events.count)
        self.url = f"ws://127.0.0.1:{self.front.port}"

    def close(self) -> None:
        self.front.stop()
        self.server.stop()


@pytest.fixture
def served() -> Iterator[_Served]:
    s = _Served()
    yield s
    s.close()


def _advertised_channel(ws) -> int:
    while True:
        msg = json.loads(ws.recv(timeout=5))
        if msg["op"] == "advertise":
            return msg["channels"][0]["id"]


@pytest.mark.parametrize(("offer", "chosen"), [
    ([LEGACY], LEGACY),
    ([SDK], SDK),
    ([LEGACY, SDK], SDK),
    ([SDK, LEGACY], SDK),
])
def test_either_name_connects_and_the_protocol_runs_both_ways(served, offer, chosen):
    with connect(served.url, subprotocols=offer, compression=None, open_timeout=5) as ws:
        assert ws.subprotocol == chosen  # exactly one name, one the client offered
        info = json.loads(ws.recv(timeout=5))
        assert info["op"] == "serverInfo"
        ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": 7, "channelId": _advertised_channel(ws)}]}))
        wait_for(served.channel.has_sinks, 5, "the subscription through the front")
        payload = b"\x00\x01\x00\x00\x06\x00\x00\x00hello\x00"
        served.channel.log(payload, log_time=42)
        frame = ws.recv(timeout=5)
        assert frame[0] == 1 and int.from_bytes(frame[1:5], "little") == 7
        assert int.from_bytes(frame[5:13], "little") == 42 and frame[13:] == payload
    assert served.events.counters[f"clients.{chosen}"] == 1
    assert any(f"connected ({chosen})" in line for line in served.events.lines)
    wait_for(lambda: served.front.clients() == 0, 5, "the relayed connection to end with the client")


def test_a_name_neither_knows_gets_the_sdks_own_refusal(served):
    with pytest.raises(InvalidStatus) as err:
        connect(served.url, subprotocols=["foxglove.websocket.v2"], open_timeout=5)
    assert err.value.response.status_code == 400
    assert b"sec-websocket-protocol" in err.value.response.body
    wait_for(lambda: served.events.counters["front_handshakes_refused_by_sdk"] == 1, 5, "the refusal counted")
    assert any("foxglove.websocket.v2" in line for line in served.events.lines)


def _raw(url_port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", url_port), timeout=10) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(4096):
            out += chunk
        return out


def test_a_head_without_end_is_refused_with_431_and_logged(served):
    out = _raw(served.front.port, b"GET / HTTP/1.1\r\nX-Pad: " + b"a" * (wsp.MAX_HEAD_BYTES + 10))
    assert out.startswith(b"HTTP/1.1 431 ")
    assert served.events.counters["front_refused.431"] == 1
    assert any("refused" in line and "handshake head" in line for line in served.events.lines)


def test_a_plain_http_request_gets_the_sdks_answer(served):
    out = _raw(served.front.port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 ")  # whatever the SDK says to a non-WebSocket request, passed on


def test_clients_beyond_the_limit_are_refused_with_503(monkeypatch, served):
    monkeypatch.setattr("vasimov_bridge.foxglove_front.MAX_CLIENTS", 1)
    with connect(served.url, subprotocols=[LEGACY], open_timeout=5):
        wait_for(lambda: served.front.clients() == 1, 5, "one relayed client")
        with pytest.raises(InvalidStatus) as err:
            connect(served.url, subprotocols=[LEGACY], open_timeout=5)
        assert err.value.response.status_code == 503
    assert served.events.counters["front_refused.503"] == 1
    assert MAX_CLIENTS > 1  # the real limit


def test_a_taken_address_is_an_oserror_at_once():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ev = _Events()
        with pytest.raises(OSError, match="Address already in use"):
            SubprotocolFront("127.0.0.1", taken.getsockname()[1], 1, info=ev.info, warn=ev.warn, count=ev.count)


def test_stop_ends_the_listener_and_every_connection():
    s = _Served()
    try:
        ws = connect(s.url, subprotocols=[LEGACY], open_timeout=5)
        wait_for(lambda: s.front.clients() == 1, 5, "one relayed client")
        wanted = {"foxglove-front", "foxglove-front-client", "foxglove-front-down"}
        wait_for(lambda: wanted <= {t.name for t in threading.enumerate()}, 5, f"the front's threads {wanted}")
        s.front.stop()
        wait_for(lambda: s.front.clients() == 0, 5, "the connection ended by stop()")
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", s.front.port), timeout=2).close()
        wait_for(lambda: not any(t.name.startswith("foxglove-front") for t in threading.enumerate()), 5,
                 "the front's threads to end")
        ws.close()
    finally:
        s.server.stop()
