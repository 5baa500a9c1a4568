"""A client that stops reading costs the bridge nothing: the SDK server's per-client queue is bounded, logging never
waits for the socket, and the SDK's "outbox full" reports reach the bridge's counters.

This runs the SDK server the way the bridge configures it (own context, small backlog) without a ROS graph, so the
overflow happens within a second instead of after the kernel's socket buffers fill.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections import Counter

import foxglove
from harness import wait_for
from websockets.sync.client import connect

from vasimov_bridge.foxglove_node import _SdkLogs


class _CountingNode:
    """The two things `_SdkLogs` needs from the node."""

    def __init__(self) -> None:
        self.counters: Counter[str] = Counter()
        self.warnings: list[str] = []

    def count(self, key: str, n: int = 1) -> None:
        self.counters[key] += n

    def log_limited(self, key: str, text: str) -> None:
        self.warnings.append(text)


def test_a_stalled_client_never_blocks_logging_and_its_overflow_is_counted():
    node = _CountingNode()
    handler = _SdkLogs(node)
    sdk_logger = logging.getLogger("foxglove")
    sdk_logger.addHandler(handler)
    sdk_logger.setLevel(logging.INFO)
    foxglove.set_log_level("INFO")
    ctx = foxglove.Context()
    channel = foxglove.Channel("/big", schema=foxglove.Schema(name="std_msgs/msg/String", encoding="ros2msg",
                                                              data=b"string data"),
                               message_encoding="cdr", context=ctx)
    server = foxglove.start_server(port=0, context=ctx, message_backlog_size=32)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", server.port))
    ws = connect(f"ws://127.0.0.1:{server.port}", sock=sock, subprotocols=["foxglove.sdk.v1"], compression=None,
                 max_size=None, close_timeout=0.5)
    try:
        channel_id = None
        while channel_id is None:
            msg = json.loads(ws.recv(timeout=5))
            if msg["op"] == "advertise":
                channel_id = msg["channels"][0]["id"]
        ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": 1, "channelId": channel_id}]}))
        wait_for(channel.has_sinks, 5, "the subscription to reach the server")
        payload = b"\x00\x01\x00\x00" + (60_000).to_bytes(4, "little") + b"x" * 60_000
        slowest = 0.0
        start = time.perf_counter()
        for i in range(3000):  # 180 MB at a client that reads nothing
            t = time.perf_counter()
            channel.log(payload, log_time=i)
            slowest = max(slowest, time.perf_counter() - t)
        elapsed = time.perf_counter() - start
        wait_for(lambda: node.counters["outbox_full_reports"] >= 1, 5, "the SDK's outbox-full report")
        print(f"\n3000 x 60 kB logged to a stalled client in {elapsed:.2f} s, slowest log() {slowest * 1e3:.2f} ms, "
              f"outbox-full reports {node.counters['outbox_full_reports']}")
        assert slowest < 0.25, f"log() waited {slowest:.3f} s for a client"
    finally:
        sdk_logger.removeHandler(handler)
        ws.close()
        server.stop()
