"""The binary stream against the running graph, with a real WebSocket client (websockets), as a light client uses it."""

from __future__ import annotations

import itertools
import re
import struct
import time

import pytest
from harness import Graph, wait_for
from websockets.sync.client import connect

from vasimov_bridge import binary_stream as bs
from vasimov_bridge.binary_stream import CommandKind, CommandPacket, StateFlags

pytestmark = pytest.mark.graph

READY = re.compile(r"binary stream ready: ws://([0-9.]+):(\d+)")


def _packets(ws, n: int, timeout: float = 10.0) -> list[bs.StateFrame]:
    out, deadline = [], time.monotonic() + timeout
    while len(out) < n:
        left = deadline - time.monotonic()
        assert left > 0, f"only {len(out)} of {n} state packets within {timeout} s"
        data = ws.recv(timeout=left)
        frame = bs.decode_state(data)
        assert isinstance(frame, bs.StateFrame), frame
        out.append(frame)
    return out


def _until(ws, cond, timeout: float, what: str) -> bs.StateFrame:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = _packets(ws, 1, timeout=max(0.1, deadline - time.monotonic()))[0]
        if cond(frame):
            return frame
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def test_state_stream_stand_command_and_refused_packets(graph_factory):
    g: Graph = graph_factory("--policy", "hold", "binary_port:=0", "foxglove:=false")
    m = wait_for(lambda: READY.search(g.output()), 30, "the binary stream server")
    url = f"ws://{m.group(1)}:{m.group(2)}"
    assert m.group(2) != "0" and m.group(2) != "8766"  # port 0 picked a free port and logged it
    with connect(url, max_size=2**16) as ws:
        # state: fixed size, versioned, 50 Hz, sim time advancing, firmware known and in DAMP at boot
        first = _until(ws, lambda f: f.flags & StateFlags.FIRMWARE_KNOWN and f.flags & StateFlags.TRUTH_KNOWN,
                       20, "a packet with firmware state and ground truth")
        t0 = time.monotonic()
        burst = _packets(ws, 100)
        elapsed = time.monotonic() - t0
        rate = len(burst) / elapsed
        # the cap (rate_hz 50) is the rule; the floor depends on how much of the machine the graph gets (a packet
        # goes out only when the plant published something new), so it only proves a stream (the rate is a bench)
        assert 5.0 <= rate <= 55.0, f"state rate {rate:.1f} Hz"
        seqs = [f.sequence for f in [first, *burst]]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "per-connection sequence must count by one"
        times = [f.sim_time for f in burst]
        assert all(b > a for a, b in itertools.pairwise(times)), "sim time must advance, no repeats"
        assert burst[-1].mode == 0 and burst[-1].flags & StateFlags.GANTRY
        assert abs(burst[-1].base_pos[2] - 0.639) < 0.05, burst[-1].base_pos  # on the gantry at boot height
        assert burst[-1].ack_sequence == 0 and burst[-1].rejected == 0

        # a malformed packet (one byte short) and a text frame are refused, counted, and the connection stays up
        ws.send(bs.encode_command(CommandPacket(CommandKind.STAND, 9))[:-1])
        ws.send("stand please")
        ws.send(bs.encode_command(CommandPacket(CommandKind.STAND, 10, vx=0.5)))  # STAND carries no velocity
        refused = _until(ws, lambda f: f.rejected == 3, 10, "rejected == 3 in the state packets")
        assert refused.mode == 0 and refused.ack_sequence == 0, "a refused packet must change nothing"

        # a valid STAND: acknowledged, and the firmware's mode changes to STAND in the next packets
        ws.send(bs.encode_command(CommandPacket(CommandKind.STAND, 42)))
        acked = _until(ws, lambda f: f.ack_sequence == 42, 10, "ack_sequence == 42")
        standing = _until(ws, lambda f: f.mode == 1, 10, "mode STAND (1)")
        assert standing.rejected == 3 and acked.sequence <= standing.sequence
        _until(ws, lambda f: f.mode == 1 and f.flags & StateFlags.ARMED, 10, "STAND and armed after the arming hold")

    wait_for(lambda: "binary command refused: BAD_LENGTH" in g.output(), 10, "the refusal in the node's log")
    assert "binary command refused: TEXT_FRAME" in g.output()
    assert g.stop() == 0
    summary = re.search(r"binary stream closed: .* (\d+) commands accepted, (\d+) refused", g.output())
    assert summary is not None, g.output()[-3000:]
    assert summary.groups() == ("1", "3")


def test_a_second_client_gets_its_own_counters(graph_factory):
    g: Graph = graph_factory("--policy", "hold", "binary_port:=0", "foxglove:=false")
    m = wait_for(lambda: READY.search(g.output()), 30, "the binary stream server")
    url = f"ws://{m.group(1)}:{m.group(2)}"
    with connect(url) as a, connect(url) as b:
        a.send(b"\x00" * bs.COMMAND_SIZE)  # right length, wrong magic
        _until(a, lambda f: f.rejected == 1, 15, "client a sees its refusal")
        fb = _packets(b, 3)[-1]
        assert fb.rejected == 0
        # raw bytes at the documented offsets agree with the decoder
        raw = b.recv(timeout=5)
        assert len(raw) == bs.STATE_SIZE and raw[:4] == b"VAS1" and raw[4] == 1
        assert struct.unpack_from("<I", raw, 32)[0] == 0
        assert struct.unpack_from("<d", raw, 16)[0] == bs.decode_state(raw).sim_time
