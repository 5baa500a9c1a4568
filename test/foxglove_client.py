"""A minimal client of the Foxglove WebSocket protocol (v1), written from the protocol spec on `websockets`:
independent of the foxglove-sdk that serves it. Shared by the Foxglove graph tests and bench/observe_overhead.py."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from typing import Any

from harness import wait_for
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

# Both names of protocol v1, as the current Foxglove app offers them. The bridge lets in a client offering either
# one alone too (its front before the SDK's server; test_foxglove_front, and Foxglove's JavaScript client in
# test_foxglove_graph).
SUBPROTOCOLS = ["foxglove.sdk.v1", "foxglove.websocket.v1"]
OP_MESSAGE_DATA = 1  # server -> client binary: u8 op, u32 subscription id, u64 log time (ns), payload
OP_TIME = 2  # server -> client binary: u8 op, u64 time (ns)
OP_CLIENT_MESSAGE = 1  # client -> server binary: u8 op, u32 client channel id, payload


class FoxgloveWsClient:
    """A minimal Foxglove WebSocket protocol client: subscribe, receive, advertise, publish, parameters."""

    def __init__(self, url: str, receive_buffer: int | None = None) -> None:
        sock = None
        if receive_buffer is not None:  # a small socket buffer makes a client that stops reading stall at once
            host, port = url.removeprefix("ws://").rsplit(":", 1)
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
            sock.connect((host, int(port)))
        self.ws = connect(url, sock=sock, subprotocols=SUBPROTOCOLS, compression=None, max_size=None,
                          open_timeout=10, close_timeout=1)
        self.lock = threading.Lock()
        self.server_info: dict[str, Any] | None = None
        self.channels: dict[int, dict[str, Any]] = {}
        self.messages: dict[int, list[tuple[int, bytes, float]]] = {}  # sub id -> (log time, payload, arrival)
        self.times: list[int] = []
        self.statuses: list[dict[str, Any]] = []
        self.parameter_replies: list[dict[str, Any]] = []
        self._sub_ids = iter(range(1, 1 << 30))
        self._subscribed: dict[str, int] = {}
        self._chan_ids = iter(range(100, 1 << 30))
        self._stop = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while not self._stop:
            try:
                frame = self.ws.recv(timeout=0.2)
            except TimeoutError:
                continue
            except ConnectionClosed:
                return
            now = time.monotonic()
            with self.lock:
                if isinstance(frame, str):
                    self._on_json(json.loads(frame))
                elif frame[0] == OP_MESSAGE_DATA:
                    sub_id, log_time = struct.unpack_from("<IQ", frame, 1)
                    self.messages.setdefault(sub_id, []).append((log_time, bytes(frame[13:]), now))
                elif frame[0] == OP_TIME:
                    self.times.append(struct.unpack_from("<Q", frame, 1)[0])

    def _on_json(self, msg: dict[str, Any]) -> None:
        op = msg.get("op")
        if op == "serverInfo":
            self.server_info = msg
        elif op == "advertise":
            for ch in msg["channels"]:
                self.channels[ch["id"]] = ch
        elif op == "unadvertise":
            for cid in msg["channelIds"]:
                self.channels.pop(cid, None)
        elif op == "status":
            self.statuses.append(msg)
        elif op == "parameterValues":
            self.parameter_replies.append(msg)

    # -- queries -------------------------------------------------------------------------------------------
    def channel(self, topic: str) -> dict[str, Any] | None:
        with self.lock:
            return next((c for c in self.channels.values() if c["topic"] == topic), None)

    def received(self, sub_id: int) -> list[tuple[int, bytes, float]]:
        with self.lock:
            return list(self.messages.get(sub_id, []))

    def status_texts(self) -> list[str]:
        with self.lock:
            return [s["message"] for s in self.statuses]

    def reply(self, request_id: str) -> dict[str, Any] | None:
        with self.lock:
            return next((r for r in self.parameter_replies if r.get("id") == request_id), None)

    # -- requests ------------------------------------------------------------------------------------------
    def subscribe(self, topic: str, timeout: float = 20.0) -> int:
        ch = wait_for(lambda: self.channel(topic), timeout, f"channel {topic} advertised")
        sub_id = next(self._sub_ids)
        self.ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": sub_id, "channelId": ch["id"]}]}))
        return sub_id

    def subscribe_once(self, topic: str) -> int:
        """The subscription id for ``topic``, subscribing on first use."""
        if topic not in self._subscribed:
            self._subscribed[topic] = self.subscribe(topic)
        return self._subscribed[topic]

    def advertise(self, topic: str, encoding: str, schema_name: str) -> int:
        cid = next(self._chan_ids)
        self.ws.send(json.dumps({"op": "advertise", "channels": [
            {"id": cid, "topic": topic, "encoding": encoding, "schemaName": schema_name}]}))
        return cid

    def publish(self, channel_id: int, payload: bytes) -> None:
        self.ws.send(struct.pack("<BI", OP_CLIENT_MESSAGE, channel_id) + payload)

    def get_parameters(self, names: list[str], request_id: str) -> None:
        self.ws.send(json.dumps({"op": "getParameters", "parameterNames": names, "id": request_id}))

    def set_parameters(self, params: list[dict[str, Any]], request_id: str) -> None:
        self.ws.send(json.dumps({"op": "setParameters", "parameters": params, "id": request_id}))

    def close(self) -> None:
        self._stop = True
        with contextlib.suppress(Exception):
            self.ws.close()
        self.reader.join(timeout=5)


