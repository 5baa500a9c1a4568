"""The binary stream node alone, with the test as the plant and firmware and as a WebSocket client (websockets).

Plant, firmware and ground-truth states in, VAS1 packets out (decoded with the documented layout,
docs/binary_protocol.md): joint positions, mode and flags, firmware of another epoch left out, ground truth in the
world frame. VAC1 commands in, /vasimov/command out with source BINARY; a malformed packet refused and counted back
to the client.
"""

from __future__ import annotations

import itertools
import re
import time

import numpy as np
import pytest
from harness import wait_for
from node_harness import FakeRobot, Repeater, publishers_matched, run_to_exit
from rosprobe import RosProbe
from vasimov_msgs.msg import RobotCommand as RobotCommandMsg
from websockets.sync.client import connect

from vasimov.ros import node_names, qos, topics
from vasimov_bridge import binary_stream as bs
from vasimov_bridge.binary_stream import CommandKind, CommandPacket, StateFlags

pytestmark = pytest.mark.node

READY = r"binary stream ready: ws://([0-9.]+):(\d+)"
DT = 0.005


def _next_frame(ws, cond, timeout: float, what: str) -> bs.StateFrame:
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            frame = bs.decode_state(ws.recv(timeout=left))
        except TimeoutError:
            break
        assert isinstance(frame, bs.StateFrame), frame
        if cond(frame):
            return frame
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def test_states_in_packets_out_commands_back(node_factory):
    node = node_factory("binary_stream_node", {"lockstep": False, "port": 0, "cpu_nice": 0},
                        config="binary_stream")
    probe = RosProbe(node.domain, name=node_names.EDGE)  # the test reads commands as the firmware does
    try:
        url = "ws://{}:{}".format(*node.wait_log(READY).groups())
        sub = probe.subscribe(topics.ROBOT_COMMAND, RobotCommandMsg, qos.COMMANDS)
        fake = FakeRobot(probe)
        wait_for(lambda: publishers_matched(sub), 40, "the stream's command topic to match")
        inputs = (fake.states, fake.firmware, fake.odom)
        # with no client connected the node reads nothing (its command writer matched: the probe sees the node)
        assert [p.get_subscription_count() for p in inputs] == [0, 0, 0]
        with Repeater(fake.publish_once), connect(url, max_size=2**16, open_timeout=20) as ws:
            wait_for(lambda: publishers_matched(*inputs), 40, "the stream's inputs to match once a client is in")
            full = StateFlags.FIRMWARE_KNOWN | StateFlags.TRUTH_KNOWN
            first = _next_frame(ws, lambda f: f.flags & full == full, 20, "a packet with firmware and truth")
            frames = [first] + [_next_frame(ws, lambda f: True, 10, "packets") for _ in range(10)]
            for f in frames:
                step = round(f.sim_time / DT)
                assert abs(f.sim_time - step * DT) < 1e-9 and f.epoch == 0
                np.testing.assert_allclose(f.joint_pos, fake.sent[(0, step)].position, atol=1e-6,
                                           err_msg="joint positions of the sample at sim_time (float32)")
            assert [f.sequence for f in frames] == list(range(first.sequence, first.sequence + len(frames)))
            assert all(b.sim_time > a.sim_time for a, b in itertools.pairwise(frames)), "no repeats"
            f = frames[-1]
            assert f.mode == 1 and f.error_flags == 2
            assert f.flags == full | StateFlags.ARMED | StateFlags.GANTRY, f.flags
            np.testing.assert_allclose(f.velocity_command, fake.velocity_command, atol=1e-6)
            np.testing.assert_allclose(f.base_pos, (1.0, 2.0, 0.7), atol=1e-6)
            np.testing.assert_allclose(f.base_lin_vel, (0.0, 0.5, 0.0), atol=1e-6,
                                       err_msg="pelvis-frame twist -> world frame")

            # commands: refused ones counted back to this client; a STAND forwarded with source BINARY and acked
            ws.send(bs.encode_command(CommandPacket(CommandKind.STAND, 9))[:-1])
            _next_frame(ws, lambda f: f.rejected == 1, 10, "rejected == 1")
            sequence = iter(range(10, 1000))

            def forwarded() -> bool:  # sent until one arrives: the bridge's writer may match the probe late
                if probe.count(topics.ROBOT_COMMAND):
                    return True
                ws.send(bs.encode_command(CommandPacket(CommandKind.STAND, next(sequence))))
                return False

            wait_for(forwarded, 20, "a STAND on /vasimov/command", poll=0.2)
            cmd = probe.last(topics.ROBOT_COMMAND)
            assert (cmd.source, cmd.kind) == (RobotCommandMsg.SOURCE_BINARY, RobotCommandMsg.KIND_STAND)
            acked = _next_frame(ws, lambda f: f.ack_sequence >= cmd.sequence, 10, "the STAND acknowledged")
            assert acked.rejected == 1

            # the plant restarts before the firmware does: its firmware state is of another life, left out
            fake.restart(firmware_too=False)
            f = _next_frame(ws, lambda f: f.epoch == 1, 10, "the new life's packets")
            assert not f.flags & StateFlags.FIRMWARE_KNOWN and f.mode == bs.MODE_UNKNOWN
        # the last client gone: the node stops reading again
        wait_for(lambda: [p.get_subscription_count() for p in inputs] == [0, 0, 0], 20,
                 "the stream's inputs unsubscribed after the last client left")
    finally:
        probe.close()
    assert re.search(r"binary command refused: BAD_LENGTH", node.output())


def test_bad_parameter_is_refused_at_start():
    code, out = run_to_exit("binary_stream_node", {"port": 0, "rate_hz": 0.0})
    assert code == 2, out[-2000:]
    assert "binary_stream: cannot start: invalid parameter: rate_hz must be a number in [1.0, 200.0]" in out, out
    assert "Traceback" not in out
