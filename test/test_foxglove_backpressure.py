"""A client that stops reading costs the bridge nothing: the SDK server's per-client queue is bounded, logging never
waits for the socket, the SDK drops that client's oldest data (and the newest still reaches it once it reads
again), and the SDK's "outbox full" reports reach the bridge's counters. The same holds with the bridge's front
(``foxglove_front``) between the client and the SDK: its bounded buffers fill, then the SDK's queue.

This runs the SDK server the way the bridge configures it (own context, small backlog) without a ROS graph, so the
overflow happens within a second instead of after the kernel's socket buffers fill. Deterministic: 3000 log()
calls to a client that never reads can only complete if logging does not wait for that client (the wall time is
printed, not asserted: the machine running the suite may be shared).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections import Counter

import foxglove
import pytest
from harness import wait_for
from websockets.sync.client import connect

from vasimov_bridge import ws_subprotocol as wsp
from vasimov_bridge.foxglove_front import SubprotocolFront
from vasimov_bridge.foxglove_server import SdkLogs

SENTINEL = 10**12  # log time of the message sent after the flood


class _CountingNode:
    """The things `SdkLogs` and the front need from the node."""

    def __init__(self) -> None:
        self.counters: Counter[str] = Counter()
        self.warnings: list[str] = []

    def count(self, key: str, n: int = 1) -> None:
        self.counters[key] += n

    def log_limited(self, key: str, text: str) -> None:
        self.warnings.append(text)

    def info(self, text: str) -> None:
        self.warnings.append(text)


@pytest.mark.parametrize("via_front", [False, True], ids=["sdk", "front"])
def test_a_stalled_client_never_blocks_logging_and_its_overflow_is_counted(via_front):
    node = _CountingNode()
    handler = SdkLogs(node)
    sdk_logger = logging.getLogger("foxglove")
    sdk_logger.addHandler(handler)
    sdk_logger.setLevel(logging.INFO)
    foxglove.set_log_level("INFO")
    ctx = foxglove.Context()
    channel = foxglove.Channel("/big", schema=foxglove.Schema(name="std_msgs/msg/String", encoding="ros2msg",
                                                              data=b"string data"),
                               message_encoding="cdr", context=ctx)
    server = foxglove.start_server(port=0, context=ctx, message_backlog_size=32)
    front = SubprotocolFront("127.0.0.1", 0, server.port, info=node.info, warn=node.log_limited,
                             count=node.count) if via_front else None
    port = front.port if front is not None else server.port
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    ws = connect(f"ws://127.0.0.1:{port}", sock=sock, subprotocols=[wsp.LEGACY_NAME if via_front else wsp.SDK_NAME],
                 compression=None, max_size=None, close_timeout=0.5)
    try:
        channel_id = None
        while channel_id is None:
            msg = json.loads(ws.recv(timeout=5))
            if msg["op"] == "advertise":
                channel_id = msg["channels"][0]["id"]
        ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": 1, "channelId": channel_id}]}))
        wait_for(channel.has_sinks, 5, "the subscription to reach the server")
        payload = b"\x00\x01\x00\x00" + (60_000).to_bytes(4, "little") + b"x" * 60_000
        timing = {"slowest": 0.0}
        done = threading.Event()

        def log_all() -> None:
            start = time.perf_counter()
            for i in range(3000):  # 180 MB at a client that reads nothing
                t = time.perf_counter()
                channel.log(payload, log_time=i)
                timing["slowest"] = max(timing["slowest"], time.perf_counter() - t)
            timing["elapsed"] = time.perf_counter() - start
            done.set()

        threading.Thread(target=log_all, daemon=True).start()
        # a log() that waited for this client would wait forever: it never reads
        wait_for(done.is_set, 120, "3000 log() calls to a stalled client")
        if not via_front:
            # the SDK throttles this warning process-wide (a second overflow in the same process within a while
            # is not reported), so only the first case of this test can count on it
            wait_for(lambda: node.counters["outbox_full_reports"] >= 1, 10, "the SDK's outbox-full report")
        # the client reads again: the newest message still comes, most of the others were dropped for it
        channel.log(b"last", log_time=SENTINEL)
        received = 0
        while True:
            frame = ws.recv(timeout=30)
            if isinstance(frame, bytes) and frame[0] == 1:
                if int.from_bytes(frame[5:13], "little") == SENTINEL:
                    break
                received += 1
        print(f"\n3000 x 60 kB logged to a stalled client ({'through the front' if via_front else 'direct'}) in "
              f"{timing['elapsed']:.2f} s, slowest log() {timing['slowest'] * 1e3:.2f} ms; it then read "
              f"{received} of them; outbox-full reports {node.counters['outbox_full_reports']}")
        assert received < 3000 // 2, f"{received} of 3000 reached a client that did not read: nothing dropped?"
    finally:
        sdk_logger.removeHandler(handler)
        ws.close()
        if front is not None:
            front.stop()
        server.stop()
