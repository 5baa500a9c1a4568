"""The SDK bridge node: Asimov Edge's UDP lane and HTTP API, so menlo-sdk and the menlo CLI talk to the twin.

* UDP :8850 in: every datagram is decoded and validated (`sdk_wire`); valid commands go to the firmware's arbiter
  on `/vasimov/command`, rejections are counted (exposed at `GET /api/sim/counters`).
* UDP out to state_host:8851: one RobotState per `state_rate_hz` of simulated time, unsolicited, from boot, in every
  mode, built from the plant's sensor state (motor space; one `PlantSamples` message per control period carries its
  steps, `vasimov.ros.plant_samples`) and the firmware state that drove it, never an older one
  (`state_pairing`: a sample waits briefly for its firmware part; when the firmware falls more than
  `max_firmware_lag` behind, as with a stalled edge, frames report DAMP with the critical alert 4, "a firmware
  thread stopped responding", until it answers again). Sequence and firmware
  timestamp restart on a virtual restart. `joint_current` is the sample's motor torque through the thermal model's
  assumed torque constant (`vasimov.motor_current`; approximate, FIDELITY.md).
* HTTP :3000: `/api/version` for the SDK's target check, and the simulator's own endpoints under `/api/sim/`.
  Push and inject answer 409 while the plant is faulted (a physics divergence holds until a restart). Inject takes
  every fault of `vasimov.faults` (400: unknown fault or bad parameter, 404: unknown joint).
* Disturbances: `POST /api/sim/restart {"boot": NAME}` boots a named state (`vasimov.boot_states`); sustained forces
  at `/api/sim/force` (`sim_disturb`); the plant's event lines (`/vasimov/sim/events`) feed `disturbances` in
  `GET /api/sim/counters`.
* `/vasimov/sdk/datagrams` carries copies of the datagrams only while someone subscribes (a recorder).
* Link impairment (off by default): `link_*` parameters at start, `GET`/`POST /api/sim/link` at run time
  (`sim_link`); changes are logged and published latched on `/vasimov/sim/link`.

Why one file past 400 lines: the SDK bridge's wiring: topics in, state frames out, and the HTTP handlers that answer
from the same state; the codec, pairing, lane, link and HTTP server are their own modules.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
import time
from functools import cache
from typing import Any

from rclpy.clock import Clock, ClockType
from std_msgs.msg import String
from vasimov_msgs.msg import FirmwareState, PlantFault, PlantSamples, SdkDatagram, SimControl
from vasimov_msgs.msg import RobotCommand as RobotCommandMsg

from vasimov import graph_status, joints
from vasimov.alerts import ALERT_FIRMWARE_STALL, SEVERITY_CRITICAL, alert_name, alert_severity, latched_flags
from vasimov.boot_states import BootError, parse_boot
from vasimov.commands import RobotCommand
from vasimov.faults import FaultError, UnknownJointError, parse_fault
from vasimov.frames import yaw_from_quat
from vasimov.graph_status import SUMMARY_TAG
from vasimov.model.urdf import link_names
from vasimov.motor_current import torque_constant
from vasimov.ros import node_names, qos, topics
from vasimov.ros.command_msgs import to_msg
from vasimov.ros.command_outbox import CommandOutbox
from vasimov.ros.convert import to_stamp
from vasimov.ros.lean_node import LeanNode
from vasimov.ros.params import COMMON, ParamSpec, declare
from vasimov.ros.plant_samples import PlantSample, Truth, unpack
from vasimov.ros.ratelog import RateLimitedLog
from vasimov.ros.readers import unmatched_readers
from vasimov.ros.spin import run_node
from vasimov_bridge import sdk_wire
from vasimov_bridge.http_api import HttpApi, HttpConfig, HttpError, Request, Response, parse_push
from vasimov_bridge.sim_disturb import DisturbanceView, ForceControl
from vasimov_bridge.sim_link import LinkControl, link_params, settings_from_params
from vasimov_bridge.state_pairing import FRESH, Paired, StatePairing
from vasimov_bridge.state_rows import StateRows, period_rows, sample_rows
from vasimov_bridge.stream_rate import StreamRate
from vasimov_bridge.udp_lane import UdpLane, UdpLaneConfig

#: What a frame reports while its firmware part is stale: DAMP, latched, "a firmware thread stopped responding".
STALE_ERROR_FLAGS = latched_flags(ALERT_FIRMWARE_STALL)


@cache
def robot_bodies() -> frozenset[str]:
    """The bodies a push may name: the robot's links (= the plant's MuJoCo bodies)."""
    return frozenset(link_names())

PARAMS: tuple[ParamSpec, ...] = (
    *COMMON,
    ParamSpec("bind_host", "127.0.0.1", "Address the UDP command socket and the HTTP server bind."),
    ParamSpec("command_port", 8850, "UDP port RobotCommand datagrams arrive on (Edge --udp-control-port).",
              min=0, max=65535),
    ParamSpec("state_host", "127.0.0.1", "Where RobotState datagrams are sent (Edge udp-state-host)."),
    ParamSpec("state_port", 8851, "UDP port RobotState datagrams are sent to.", min=1, max=65535),
    ParamSpec("http_port", 3000, "HTTP port of /api/version and /api/sim/*.", min=0, max=65535),
    ParamSpec("state_rate_hz", 200.0, "RobotState datagrams per simulated second (the hardware's UDP rate is "
              "200 Hz); must divide the physics rate.", min=1.0, max=1000.0),
    ParamSpec("robot_os_version", "0.2.0", "robot_os_version reported by /api/version (the SDK needs 0.2.x)."),
    ParamSpec("record_datagrams", True, "Publish every SDK datagram in and out on /vasimov/sdk/datagrams while "
              "someone subscribes (a recorder); nothing is copied while nobody listens."),
    ParamSpec("max_firmware_lag", 0.1, "Simulated seconds the firmware part of a state frame may lag the plant "
              "sample it goes with (the frame waits for it meanwhile); beyond, frames report DAMP with the critical "
              "alert 'a firmware thread stopped responding'.", min=0.02, max=2.0),
    ParamSpec("lockstep_batch_period", 0.005, "Lockstep only: wall seconds the bridge lets state messages gather "
              "between takes (lockstep time has no wall-clock meaning, so the stream may leave in bursts; one "
              "wake-up per batch frees CPU for the loop). Real time always reacts per message.", min=0.0, max=0.1),
    *link_params(),
)


class SdkBridgeNode(LeanNode):
    def __init__(self, **node_options: Any) -> None:
        """``node_options``: rclpy Node keywords (cli_args, ...), for a composed process (vasimov_tools.compose)."""
        super().__init__("sdk_bridge", **node_options)
        self.p = declare(self, PARAMS)
        dt = self.p["physics_dt"]
        steps = 1.0 / (dt * self.p["state_rate_hz"])
        if abs(steps - round(steps)) > 1e-6 or round(steps) < 1:
            raise ValueError(f"state_rate_hz={self.p['state_rate_hz']} must divide the physics rate {1 / dt:g} Hz")
        self.state_every = round(steps)
        self.dt = dt
        self.lock = threading.Lock()
        self.epoch = 0
        self.sequence = 0
        self.fw: FirmwareState | None = None
        self.truth: Truth | None = None  # the newest period's ground truth, for /api/sim/truth
        self.batch_period = self.p["lockstep_batch_period"] if self.p["lockstep"] else 0.0  # read by run_node
        self.last_plant: PlantSample | None = None
        self.build_errors = 0
        decimation = int(self.p["control_decimation"])
        if self.p["lockstep"]:
            # The plant cannot step past a tick the edge has not answered (the lockstep gate proves the firmware
            # alive, and a dead edge ends the run), so a firmware part that is behind is only late on the wire --
            # by many ticks when the graph runs several times faster than real time on a loaded machine. Hold it;
            # never report it as a stalled firmware (that latched WATCHDOG_TIMEOUT in lockstep SDK runs).
            self.pairing: StatePairing[PlantSample, FirmwareState] = StatePairing(
                decimation, max_lag_ticks=10**9, max_held=100_000)
        else:
            self.pairing = StatePairing(
                decimation, max_lag_ticks=max(1, round(self.p["max_firmware_lag"] / (dt * decimation))))
        self.stale_since_us: int | None = None  # firmware time the current stale stretch began
        self.plant_fault: PlantFault | None = None  # the newest physics fault (valid for its epoch only)
        self.tap_active = False  # someone subscribes to the datagram copies
        self.rows: dict[int, StateRows] = {}  # step -> frame arrays built for the sample's whole period
        self.torque_constant = torque_constant()  # the same assumed k_t the firmware's thermal model heats with

        self.log_limited = RateLimitedLog(self.get_logger().warning)
        self.commands = CommandOutbox(
            self, self.create_publisher(RobotCommandMsg, topics.ROBOT_COMMAND, qos.COMMANDS), self.log_limited)
        self.pub_sim = self.create_publisher(SimControl, topics.SIM_CONTROL, qos.COMMANDS)
        self.pub_dgram = (self.create_publisher(SdkDatagram, topics.SDK_DATAGRAMS, qos.STATE_STREAM)
                          if self.p["record_datagrams"] else None)
        # the firmware state first: with both ready, the executor takes it before the samples it drove
        self.create_subscription(FirmwareState, topics.FIRMWARE_STATE, self.on_firmware, qos.LOOP)
        # one message per control period with its per-step samples and ground truth (vasimov.ros.plant_samples)
        self.create_subscription(PlantSamples, topics.PLANT_SAMPLES, self.on_samples, qos.STATE_STREAM)
        self.create_subscription(PlantFault, topics.PLANT_FAULT, self.on_plant_fault, qos.LATCHED)
        if self.pub_dgram is not None:
            self.create_timer(0.1, self._check_tap, clock=Clock(clock_type=ClockType.STEADY_TIME))
        # real time: the state stream's rate on the wall clock, what an SDK program timed on it hears (lockstep
        # time has no wall-clock meaning)
        self.rate = StreamRate(time.monotonic())
        self.pub_rate = None
        if not self.p["lockstep"]:
            self.pub_rate = self.create_publisher(String, topics.SDK_RATE, qos.EVENTS)
            self.create_timer(1.0, self._publish_rate, clock=Clock(clock_type=ClockType.STEADY_TIME))

        self.lane = UdpLane(
            self.on_command,
            UdpLaneConfig(command_bind=(self.p["bind_host"], self.p["command_port"]),
                          state_destination=(self.p["state_host"], self.p["state_port"]),
                          link_seed=self.p["seed"]),
            on_datagram=self.on_datagram if self.pub_dgram is not None else None,
        )
        pub_link = self.create_publisher(String, topics.SIM_LINK, qos.LATCHED)
        self.link = LinkControl(self.lane, self.p["seed"], self.get_logger().info,
                                lambda text: pub_link.publish(String(data=text)))
        self.link.apply(settings_from_params(self.p), "start-up parameters")
        self.disturbances = DisturbanceView()
        self.create_subscription(String, topics.SIM_EVENTS, lambda m: self.disturbances.update(m.data), qos.EVENTS)
        force = ForceControl(self.disturbances, robot_bodies, self._send_sim, self._refuse_while_faulted,
                             self.get_logger().info)
        self.http = HttpApi(HttpConfig(host=self.p["bind_host"], port=self.p["http_port"],
                                       robot_os_version=self.p["robot_os_version"]))
        self.http.add_route("GET", "/api/sim/truth", self.http_truth)
        self.http.add_route("POST", "/api/sim/restart", self.http_restart)
        self.http.add_route("POST", "/api/sim/push", self.http_push)
        self.http.add_route("GET", "/api/sim/force", force.http_get)
        self.http.add_route("POST", "/api/sim/force", force.http_post)
        self.http.add_route("DELETE", "/api/sim/force", force.http_delete)
        self.http.add_route("GET", "/api/sim/counters", self.http_counters)
        self.http.add_route("GET", "/api/sim/firmware", self.http_firmware)
        self.http.add_route("POST", "/api/sim/inject", self.http_inject)
        self.http.add_route("GET", "/api/sim/link", self.link.http_get)
        self.http.add_route("POST", "/api/sim/link", self.link.http_post)
        self.lane.start()
        self.http.start()
        self.get_logger().info(
            f"SDK bridge ready: commands on udp {self.lane.command_address}, state to "
            f"{self.p['state_host']}:{self.p['state_port']} at {self.p['state_rate_hz']:g} Hz, "
            f"http on {self.http.address}")

    def close(self) -> None:
        self.lane.close()
        self.http.stop()
        if self.pub_rate is not None:
            total = self.rate.total(time.monotonic())
            print(f"{SUMMARY_TAG}SDK state stream: {total['state_hz']:.1f} frames per wall second over "
                  f"{total['window_s']:.1f} s ({total['frames']} frames; target {self.p['state_rate_hz']:g} Hz)",
                  flush=True)

    def _publish_rate(self) -> None:
        assert self.pub_rate is not None
        self.pub_rate.publish(String(data=json.dumps(self.rate.take(time.monotonic()))))

    # -- ROS inputs ----------------------------------------------------------------------------------------------
    def _check_tap(self) -> None:
        self.tap_active = self.pub_dgram is not None and self.pub_dgram.get_subscription_count() > 0

    def on_plant_fault(self, msg: PlantFault) -> None:
        if msg.kind != "internal_error":
            self.plant_fault = msg
            self.get_logger().error(f"plant fault in life {msg.epoch}: {msg.kind}: {msg.message}")

    def faulted(self) -> PlantFault | None:
        """This life's physics fault, if any (a restart starts a new life)."""
        fault = self.plant_fault
        return fault if fault is not None and fault.epoch == self.epoch else None

    def on_firmware(self, msg: FirmwareState) -> None:
        with self.lock:
            if msg.epoch != self.epoch:
                return
            self.fw = msg
        for paired in self.pairing.firmware(int(msg.tick), msg):
            self._send(paired)

    def on_samples(self, msg: PlantSamples) -> None:
        try:
            samples, truth = unpack(msg)
        except ValueError as exc:  # anyone on the graph may publish there: counted and logged, never raised
            self.build_errors += 1
            self.log_limited("samples", f"plant samples rejected: {exc}")
            return
        if samples and samples[0].epoch == self.epoch:
            # the period's frame arrays in one go (vasimov_bridge.state_rows); the first period of a new epoch is
            # built sample by sample (on_plant_state clears the old epoch's rows when it sees the new one)
            self.rows.update(period_rows([s for s in samples if s.step % self.state_every == 0],
                                         self.torque_constant))
        for sample in samples:
            self.on_plant_state(sample)
        if truth is not None:
            self.truth = truth

    def on_plant_state(self, msg: PlantSample) -> None:
        with self.lock:
            if msg.epoch != self.epoch:
                self.epoch = msg.epoch
                self.sequence = 0  # a new firmware life: a new stream
                self.fw = None
                self.pairing.reset()
                self.rows.clear()
                self.stale_since_us = None
            self.last_plant = msg
        if msg.step % self.state_every != 0:
            return
        for paired in self.pairing.plant(int(msg.step), msg, int(msg.command_tick)):
            self._send(paired)

    def _send(self, paired: Paired[PlantSample, FirmwareState]) -> None:
        with self.lock:
            self.sequence = (self.sequence + 1) & 0xFFFFFFFF
            seq = self.sequence
        msg = paired.sample
        try:
            if paired.verdict == FRESH:
                if self.stale_since_us is not None:
                    self.stale_since_us = None
                    self.get_logger().info("firmware state fresh again")
                frame = self._frame(msg, paired.firmware, seq)
            else:
                frame = self._stale_frame(msg, seq)
        except ValueError as exc:  # a non-finite reading must not reach the SDK as a half-built frame
            self.build_errors += 1
            self.get_logger().error(f"state frame not sent: {exc}", throttle_duration_sec=1.0)
            return
        self.lane.send_state(sdk_wire.encode_state(frame))
        self.rate.count()

    def _stale_frame(self, msg: PlantSample, seq: int) -> sdk_wire.StateFrame:
        """A sample whose firmware part is too old: what the robot reports when a firmware thread stops
        responding (DAMP, latched, critical alert 4), never the last "MOVE" the firmware said."""
        now_us = round(msg.step * self.dt * 1e6)
        if self.stale_since_us is None:
            self.stale_since_us = now_us
            self.get_logger().error(
                f"firmware state more than {self.p['max_firmware_lag']:g} s behind the plant at step {msg.step}: "
                "reporting DAMP with FIRMWARE_STALL until it answers again")
        frame = self._frame(msg, None, seq)
        alert = sdk_wire.AlertEntry(id=ALERT_FIRMWARE_STALL, severity=alert_severity(ALERT_FIRMWARE_STALL),
                                    value=0, threshold=0, first_set_us=self.stale_since_us, source_id=0)
        return dataclasses.replace(frame, current_mode=0, error_flags=STALE_ERROR_FLAGS, active_alerts=[alert],
                                   joint_temp=None)

    def _rows(self, msg: PlantSample) -> StateRows:
        """The sample's arrays from its period's batch, or built alone (a sample that came by itself, or a period
        with a bad sample); steps before it are dropped (frames go out in step order; a skipped one never will)."""
        rows = self.rows.pop(msg.step, None)
        if self.rows and next(iter(self.rows)) < msg.step:
            for step in [k for k in self.rows if k < msg.step]:
                del self.rows[step]
        return rows if rows is not None else sample_rows(msg, self.torque_constant)

    def _frame(self, msg: PlantSample, fw: FirmwareState | None, seq: int) -> sdk_wire.StateFrame:
        quat = msg.imu_orientation
        rows = self._rows(msg)
        alerts = [] if fw is None else [
            sdk_wire.AlertEntry(id=a.id, severity=a.severity, value=a.value, threshold=a.threshold,
                                first_set_us=a.first_set_us, source_id=a.source_id) for a in fw.alerts]
        temps = None
        if fw is not None and fw.thermal_model_active:
            temps = [float(t) for t in fw.motor_temperature]
        battery = None
        if fw is not None and fw.battery_active:
            battery = sdk_wire.BatteryReading(
                voltage_v=fw.battery_voltage_v, current_a=fw.battery_current_a, soc_percent=fw.battery_soc_percent,
                max_cell_temp_c=fw.battery_max_cell_temp_c, protection_flags=int(fw.battery_protection_flags))
        return sdk_wire.StateFrame(
            timestamp_us=round(msg.step * self.dt * 1e6),
            sequence=seq,
            current_mode=0 if fw is None else int(fw.mode),
            joint_pos=rows.joint_pos,
            joint_vel=rows.joint_vel,
            base_ang_vel=msg.imu_angular_velocity,
            projected_gravity=rows.projected_gravity,
            base_quat=quat,
            joint_current=rows.joint_current,
            joint_temp=temps,
            error_flags=0 if fw is None else int(fw.error_flags),
            active_alerts=alerts,
            battery=battery,
        )

    # -- UDP lane callbacks (receive thread) -----------------------------------------------------------------------
    def on_command(self, cmd: RobotCommand, peer: Any) -> None:
        m = to_msg(cmd)
        plant = self.last_plant
        if plant is not None:
            to_stamp(plant.time, m.stamp)
        self.commands.publish(m)

    def on_datagram(self, direction: str, peer: Any, data: bytes) -> None:
        if not self.tap_active:
            return  # nobody records: copying every datagram would only cost CPU (under a flood, a lot)
        m = SdkDatagram()
        plant = self.last_plant
        if plant is not None:
            to_stamp(plant.time, m.stamp)
        m.direction = SdkDatagram.DIRECTION_IN if direction == "rx" else SdkDatagram.DIRECTION_OUT
        m.peer = f"{peer[0]}:{peer[1]}"
        m.data = bytes(data)
        self.pub_dgram.publish(m)

    # -- HTTP handlers (server threads) ------------------------------------------------------------------------------
    def http_truth(self, req: Request) -> Any:
        truth, plant = self.truth, self.last_plant
        if truth is None or plant is None:
            raise HttpError(503, "no ground truth yet: the plant has not published")
        quat = [float(v) for v in truth.base_quat]
        return {
            "sim_time": truth.time,
            "base_pos": [float(v) for v in truth.base_pos],
            "base_quat": quat,
            "base_yaw": float(yaw_from_quat(quat)),
            "base_lin_vel": [float(v) for v in truth.base_lin_vel],
            "base_ang_vel": [float(v) for v in truth.base_ang_vel],
            "frames": {"base_pos": "world", "base_lin_vel": "world", "base_ang_vel": "world"},
            "epoch": int(plant.epoch),
            "step": int(plant.step),
        }

    def http_restart(self, req: Request) -> Any:
        body = req.body if isinstance(req.body, dict) else {}
        unknown = set(body) - {"boot"}
        if unknown:
            raise HttpError(400, f"unknown keys {sorted(unknown)}; valid: boot")
        try:
            boot = parse_boot(body.get("boot"))
        except BootError as exc:
            raise HttpError(400, str(exc)) from None
        self._send_sim(SimControl(action=SimControl.ACTION_RESTART, boot=boot.label))
        self.get_logger().info(f"virtual restart requested over HTTP: boot {boot.label}")
        return Response({"restarting": True, "previous_epoch": self.epoch, "boot": boot.label}, status=202)

    def _refuse_while_faulted(self, what: str) -> None:
        fault = self.faulted()
        if fault is not None:
            raise HttpError(409, f"{what} refused: the plant is faulted ({fault.kind}: {fault.message}); "
                                 "POST /api/sim/restart recovers", fault=fault.kind)

    def http_push(self, req: Request) -> Any:
        push = parse_push(req.body)
        if push.body not in robot_bodies():
            raise HttpError(404, f"no body {push.body!r}; valid: {', '.join(sorted(robot_bodies()))}")
        self._refuse_while_faulted("push")
        m = SimControl(action=SimControl.ACTION_PUSH, body=push.body, force=[float(v) for v in push.force],
                       duration=float(push.duration))
        self._send_sim(m)
        return Response({"pushing": True, "body": push.body, "force": list(push.force),
                         "duration": push.duration}, status=202)

    def http_inject(self, req: Request) -> Any:
        try:
            fault = parse_fault(req.body)
        except UnknownJointError as exc:
            raise HttpError(404, str(exc)) from None
        except FaultError as exc:
            raise HttpError(400, str(exc)) from None
        self._refuse_while_faulted("inject")
        joint = "" if fault.joint is None else joints.JOINTS[fault.joint].firmware_name
        listeners = tuple(name for name, acts in ((node_names.PLANT, fault.spec.plant),
                                                  (node_names.EDGE, fault.spec.edge)) if acts)
        self._send_sim(SimControl(action=SimControl.ACTION_INJECT_FAULT, fault=fault.name, joint=joint,
                                  value=float(fault.value)), listeners)
        self.get_logger().warning(f"fault injected over HTTP: {fault.name}{' on ' + joint if joint else ''}")
        alert_id = fault.spec.alert_id
        critical = alert_severity(alert_id) == SEVERITY_CRITICAL
        reply = {"injected": fault.name, "alert": alert_name(alert_id), "alert_id": alert_id,
                 "severity": "critical" if critical else "warning", "latches": critical,
                 "recovery": "POST /api/sim/restart"}
        if joint:
            reply["joint"] = joint
        if fault.spec.param is not None:
            reply[fault.spec.param] = fault.value
        return Response(reply, status=202)

    def _send_sim(self, m: SimControl, listeners: tuple[str, ...] = (node_names.PLANT,)) -> None:
        """Sim-control messages are volatile: refuse (503) rather than publish into the void before the subscriptions
        of the nodes that act on it (`listeners`) have matched, so a client can retry instead of believing a request
        that never arrived. A count alone is not enough: the edge subscribes too, and matched first it once let an
        inject through that the plant never heard (CI, a graph a moment after start)."""
        missing = unmatched_readers(self, self.pub_sim, listeners)
        if missing:
            raise HttpError(503, f"the {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not connected "
                                 "yet; retry")
        if self.last_plant is not None:
            to_stamp(self.last_plant.time, m.stamp)
        self.pub_sim.publish(m)

    def http_counters(self, req: Request) -> Any:
        fw = self.fw
        return {
            "udp_rejections": dict(self.lane.rejections.snapshot()),
            "udp": self.lane.counters,
            "link": self.lane.link_counters,  # per direction: offered, lost, duplicated, delayed, reordered, ...
            "http": self.http.counters,
            "state_frames_sent": int(self.sequence),
            "state_build_errors": self.build_errors,
            "state_frames_stale_firmware": self.pairing.stale_frames,
            "commands_held_until_firmware_matched": self.commands.held,
            "commands_dropped_before_firmware_matched": self.commands.dropped,
            "state_frames_held_for_firmware": self.pairing.held_frames,
            "state_frames_late_firmware": self.pairing.late_frames,
            "datagram_tap_active": self.tap_active,
            "plant_fault": self._fault_json(),
            "disturbances": self.disturbances.snapshot(),  # boot state, sustained forces, event counts (plant's)
            "firmware": {} if fw is None else dict(zip(fw.counter_names, [int(v) for v in fw.counter_values],
                                                       strict=True)),
            # the supervisor's view of the processes (exits, restarts of observers); None under ros2 launch
            "graph": graph_status.read(),
        }

    def _fault_json(self) -> dict[str, Any] | None:
        fault = self.faulted()
        return None if fault is None else {"kind": fault.kind, "message": fault.message, "step": int(fault.step)}

    def http_firmware(self, req: Request) -> Any:
        fw = self.fw
        if fw is None:
            raise HttpError(503, "no firmware state yet")
        return {"epoch": int(fw.epoch), "tick": int(fw.tick), "mode": fw.mode_name, "plant_fault": self._fault_json(),
                "firmware_stale": self.stale_since_us is not None, "move_submode": fw.move_submode, "armed": fw.armed,
                "error_flags": fw.error_flags, "control_source": fw.control_source,
                "policy_active": fw.policy_active, "gantry_engaged": fw.gantry_engaged,
                "velocity_command": list(fw.velocity_command), "recovery_phase": fw.recovery_phase,
                "alerts": [{"id": a.id, "name": a.name, "severity": a.severity} for a in fw.alerts]}


def main(args: list[str] | None = None) -> int:
    return run_node("sdk_bridge", SdkBridgeNode, args, config_errors=(ValueError, OSError))


if __name__ == "__main__":
    sys.exit(main())
