"""Every injectable firmware fault (issue 12 part 4), seen by the real menlo-sdk against the running graph: the alert
and its severity in ``State.alerts``, the ``error_flags`` bits, the latch to DAMP for a critical alert (a STAND is
refused with ``RobotFaultedError``) or none for a warning (a STAND is obeyed), the fault's own trace in the state
(a frozen joint or IMU, a reading past its limit, a hot motor, the battery block), and the recovery by virtual
restart. One real-time graph for the module; the inject endpoint's validation answers too."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import pytest
from harness import Graph, http_json, sim_post, sim_restart, sim_truth_or_none, wait_for
from menlo.asimov import ConnectionConfig, Mode, Robot, RobotFaultedError, UdpConfig
from menlo.asimov._state import ALERT_NAMES, BatteryProtection, State

from vasimov import motor_space
from vasimov.alerts import latched_flags
from vasimov.faults import CATALOG, FAULT_NAMES
from vasimov.joints import RANGE_HI, joint_index

pytestmark = pytest.mark.graph
API = "http://127.0.0.1:3000"


@pytest.fixture(scope="module")
def graph() -> Iterator[Graph]:
    g = Graph("--policy", "hold", "foxglove:=false", "binary_stream:=false")
    try:
        g.wait_started()
        wait_for(lambda: "SDK bridge ready" in g.output() and "plant ready" in g.output(), 60, "graph start")
        wait_for(lambda: sim_truth_or_none() is not None, 30, "ground truth")
        yield g
    finally:
        g.stop()
        assert g.leftovers() == []








def _samples(robot: Robot, n: int) -> list[State]:
    """``n`` consecutive distinct samples the SDK accepted."""
    out: list[State] = []

    def more() -> bool:
        s = robot.get_state()
        if not out or s.sequence != out[-1].sequence:
            out.append(s)
        return len(out) >= n

    wait_for(more, 10, f"{n} samples")
    return out


KNEE = joint_index("L_Knee")
ELBOW = joint_index("R_Elbow")


def _frozen_joint(states: list[State]) -> None:
    assert len({(s.joints[ELBOW].pos, s.joints[ELBOW].vel) for s in states}) == 1  # the last reply, held


def _frozen_imu(states: list[State]) -> None:
    assert len({(s.quat, s.gyro) for s in states}) == 1


def _past_limit(states: list[State]) -> None:
    limit = motor_space.joint_to_state(RANGE_HI)[KNEE]
    assert all(s.joints[KNEE].pos > limit + 0.2 for s in states)


def _hot(temp: float) -> Callable[[list[State]], None]:
    def check(states: list[State]) -> None:
        assert all(s.joints[ELBOW].temp is not None and s.joints[ELBOW].temp > temp for s in states)
    return check


def _low_battery(states: list[State]) -> None:
    for s in states:
        assert s.battery is not None and s.battery.soc_percent == pytest.approx(12.0, abs=0.1)
        assert s.battery.current_a < 0 and not s.battery.protecting


def _bms_tripped(states: list[State]) -> None:
    for s in states:
        assert s.battery is not None and s.battery.soc_percent < 0.1
        assert s.battery.protection & BatteryProtection.PACK_UNDERVOLT and s.battery.voltage_v < 39.0


def _nothing(states: list[State]) -> None:
    pass


#: (request, what the state shows of the fault itself)
CASES: dict[str, tuple[dict, Callable[[list[State]], None]]] = {
    "non_finite": ({"fault": "non_finite"}, _nothing),
    "imu_failure": ({"fault": "imu_failure"}, _frozen_imu),
    "motor_comm_loss": ({"fault": "motor_comm_loss", "joint": "R_Elbow"}, _frozen_joint),
    "joint_out_of_range": ({"fault": "joint_out_of_range", "joint": "L_Knee"}, _past_limit),
    "motor_overtemp": ({"fault": "motor_overtemp", "joint": "R_Elbow", "temperature_c": 90}, _hot(80.0)),
    "motor_temp_high": ({"fault": "motor_temp_high", "joint": "R_Elbow", "temperature_c": 70}, _hot(60.0)),
    "bms_low_soc": ({"fault": "bms_low_soc", "soc_percent": 12}, _low_battery),
    "bms_protection": ({"fault": "bms_protection"}, _bms_tripped),
}


def test_every_catalog_fault_has_a_case() -> None:
    assert set(CASES) == set(FAULT_NAMES)


@pytest.mark.parametrize("name", list(CASES))
def test_the_sdk_sees_the_fault_its_latch_and_the_recovery(graph: Graph, name: str) -> None:
    request, trace = CASES[name]
    spec = CATALOG[name]
    critical = spec.alert_id < 16
    sim_restart()
    robot = Robot(ConnectionConfig(udp=UdpConfig("127.0.0.1")))
    robot.connect(timeout=5.0)
    try:
        clean = robot.get_state()
        assert clean.error_flags == 0 and not clean.alerts and clean.battery is not None
        assert robot.has("battery") and clean.battery.soc_percent > 99.0
        status, reply = sim_post("/api/sim/inject", request)
        assert status == 202 and reply["injected"] == name, reply
        assert reply["alert"] == ALERT_NAMES[spec.alert_id] and reply["latches"] is critical

        def alerted() -> State | None:
            s = robot.get_state()
            return s if any(a.id == spec.alert_id for a in s.alerts) else None

        state = wait_for(alerted, 10, f"{ALERT_NAMES[spec.alert_id]} in the SDK's alerts")
        alert = next(a for a in state.alerts if a.id == spec.alert_id)
        assert alert.name == ALERT_NAMES[spec.alert_id] and alert.critical is critical
        if spec.needs_joint:
            assert alert.source_id == joint_index(request["joint"])
        if critical:
            flags = latched_flags(spec.alert_id)
            wait_for(lambda: robot.get_state().error_flags & flags == flags, 5, "the latch flags")
            state = robot.get_state()
            assert state.mode == Mode.DAMP and state.faulted
            with pytest.raises(RobotFaultedError):
                robot.stand(timeout=5.0)
            assert robot.get_state().mode == Mode.DAMP
        else:
            assert state.error_flags == 0 and not state.faulted
            robot.stand(wait=False)
            wait_for(lambda: robot.get_state().mode == Mode.STAND, 10, "STAND obeyed: a warning does not latch")
            assert any(a.id == spec.alert_id for a in robot.get_state().alerts)  # still warning
        trace(_samples(robot, 10))
    finally:
        robot.close()
    if name == "non_finite":  # the physics is down: the plant refuses more until the restart
        status, reply = sim_post("/api/sim/inject", {"fault": "imu_failure"})
        assert status == 409 and "faulted" in reply["error"]
    sim_restart()
    robot = Robot(ConnectionConfig(udp=UdpConfig("127.0.0.1")))
    robot.connect(timeout=5.0)
    try:
        def recovered() -> bool:
            s = robot.get_state()
            return s.error_flags == 0 and not s.alerts and not s.faulted

        wait_for(recovered, 10, "a clean state after the restart")
        for s in _samples(robot, 5):
            assert s.error_flags == 0 and not s.alerts and s.battery is not None and s.battery.soc_percent > 99.0
    finally:
        robot.close()


@pytest.mark.parametrize("body, status, words", [
    ({"fault": "meltdown"}, 400, ["unknown fault", *FAULT_NAMES]),
    ({"fault": "motor_comm_loss", "joint": "L_Tail"}, 404, ["unknown joint 'L_Tail'"]),
    ({"fault": "motor_overtemp", "joint": "L_Knee", "temperature_c": 50}, 400, ["temperature_c", "[80, 150]"]),
    ({"fault": "bms_low_soc", "soc_percent": math.inf}, 400, []),  # JSON Infinity: not a finite number
    ({"fault": "imu_failure", "joint": "L_Knee"}, 400, ["unknown keys"]),
])
def test_bad_inject_requests_are_refused_and_change_nothing(graph: Graph, body: dict, status: int,
                                                            words: list[str]) -> None:
    sim_restart()
    got, reply = sim_post("/api/sim/inject", body)
    assert got == status, reply
    for w in words:
        assert w in reply["error"]
    step = http_json(f"{API}/api/sim/truth")["step"]
    wait_for(lambda: http_json(f"{API}/api/sim/truth")["step"] > step + 40, 10, "ten control ticks")
    fw = http_json(f"{API}/api/sim/firmware")
    assert fw["error_flags"] == 0 and fw["alerts"] == []
    assert http_json(f"{API}/api/sim/counters")["firmware"]["faults_injected"] == 0
