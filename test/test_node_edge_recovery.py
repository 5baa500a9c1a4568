"""The edge node with ``recovery:=true``, in real time, the test as its plant: a face-down boot is limp with
FALL_DETECTED raised but not latched, STAND starts the get-up, the phase is published on the firmware state, and a
velocity during the chain is refused and counted. Without the parameter the same boot latches (test_node_edge and
test_disturb_graph cover the default)."""

from __future__ import annotations

import pytest
from geometry_msgs.msg import Twist, Vector3
from harness import wait_for
from node_harness import Repeater, plant_state, publishers_matched
from rosprobe import RosProbe
from vasimov_msgs.msg import FirmwareState, PlantState, RobotCommand

from vasimov.alerts import ALERT_FALL_DETECTED
from vasimov.boot_states import BootState
from vasimov.ros import qos, topics
from vasimov_plant.boot_pose import LYING_QUAT

pytestmark = pytest.mark.node


def _counter(fw: FirmwareState, name: str) -> int:
    return dict(zip(fw.counter_names, fw.counter_values, strict=True)).get(name, 0)


def test_face_down_boot_stand_starts_the_get_up_and_publishes_its_phase(node_factory):
    node = node_factory("edge_node", {"lockstep": False, "recovery": True}, config="edge")
    probe = RosProbe(node.domain)
    try:
        sub = probe.subscribe(topics.FIRMWARE_STATE, FirmwareState, qos.LOOP)
        ticks = probe.publisher(topics.PLANT_TICK, PlantState, qos.LOOP)
        commands = probe.publisher(topics.ROBOT_COMMAND, RobotCommand)
        cmd_vel = probe.publisher(topics.CMD_VEL, Twist)
        wait_for(lambda: publishers_matched(ticks, commands, cmd_vel, sub), 40, "the edge's topics to match")
        state = {"step": 0}

        def publish_once() -> None:
            m = plant_state(state["step"], quat=LYING_QUAT[BootState.LYING_FRONT], gantry=False)
            m.boot_state = int(BootState.LYING_FRONT)
            state["step"] += 4
            ticks.publish(m)

        with Repeater(publish_once):
            fw = wait_for(lambda: (m := probe.last(topics.FIRMWARE_STATE)) and m.tick > 3 and m, 30, "states")
            assert fw.mode == FirmwareState.MODE_DAMP and fw.error_flags == 0 and fw.recovery_phase == ""
            assert any(a.id == ALERT_FALL_DETECTED for a in fw.alerts), "raised while down, not latched"
            stand = RobotCommand(source=RobotCommand.SOURCE_UDP, kind=RobotCommand.KIND_STAND, sequence=1)
            commands.publish(stand)
            fw = wait_for(lambda: (m := probe.last(topics.FIRMWARE_STATE)) and m.recovery_phase == "GETUP_FRONT"
                          and m, 30, "the front get-up")
            assert fw.mode == FirmwareState.MODE_STAND and not fw.armed and fw.error_flags == 0
            assert _counter(fw, "recovery_getups") == 1
            cmd_vel.publish(Twist(linear=Vector3(x=0.2)))
            wait_for(lambda: _counter(probe.last(topics.FIRMWARE_STATE), "velocity_during_recovery") == 1, 20,
                     "the refused velocity counted")
            node.wait_log(r"VelocityCommand from FOXGLOVE rejected: GATE the recovery chain holds the joints", 10)
    finally:
        probe.close()
