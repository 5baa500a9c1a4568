"""The SDK bridge node: Asimov Edge's UDP lane and HTTP API, so menlo-sdk and the menlo CLI talk to the twin.

* UDP :8850 in: every datagram is decoded and validated (`sdk_wire`); valid commands go to the firmware's arbiter
  on `/vasimov/command`, rejections are counted (exposed at `GET /api/sim/counters`).
* UDP out to state_host:8851: one RobotState per `state_rate_hz` of simulated time, unsolicited, from boot, in every
  mode, built from the plant's sensor state (motor space) and the firmware's latest state. Sequence and firmware
  timestamp restart on a virtual restart. `joint_current` is the sample's motor torque through the thermal model's
  assumed torque constant (`vasimov_edge.thermal.motor_current`; approximate, FIDELITY.md).
* HTTP :3000: `/api/version` for the SDK's target check, and the simulator's own endpoints under `/api/sim/`.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from vasimov_msgs.msg import FirmwareState, PlantState, SdkDatagram, SimControl
from vasimov_msgs.msg import RobotCommand as RobotCommandMsg

from vasimov import graph_status, motor_space
from vasimov.commands import RobotCommand
from vasimov.frames import projected_gravity, rotate, yaw_from_quat
from vasimov.ros import qos, topics
from vasimov.ros.command_msgs import to_msg
from vasimov.ros.convert import from_stamp
from vasimov.ros.params import COMMON, ParamSpec, declare
from vasimov.ros.spin import run_node
from vasimov_bridge import sdk_wire
from vasimov_bridge.http_api import HttpApi, HttpConfig, HttpError, Request, Response, parse_push
from vasimov_bridge.udp_lane import UdpLane, UdpLaneConfig
from vasimov_edge.thermal import motor_current, torque_constant

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
    ParamSpec("record_datagrams", True, "Publish every SDK datagram in and out on /vasimov/sdk/datagrams."),
    ParamSpec("lockstep_batch_period", 0.005, "Lockstep only: wall seconds the bridge lets state messages gather "
              "between takes (lockstep time has no wall-clock meaning, so the stream may leave in bursts; one "
              "wake-up per batch frees CPU for the loop). Real time always reacts per message.", min=0.0, max=0.1),
)


class SdkBridgeNode(Node):
    def __init__(self) -> None:
        super().__init__("sdk_bridge")
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
        self.truth: bytes | None = None  # raw CDR: deserialized only when /api/sim/truth is asked
        self.batch_period = self.p["lockstep_batch_period"] if self.p["lockstep"] else 0.0  # read by run_node
        self.last_plant: PlantState | None = None
        self.build_errors = 0
        self.torque_constant = torque_constant()  # the same assumed k_t the firmware's thermal model heats with

        self.pub_cmd = self.create_publisher(RobotCommandMsg, topics.ROBOT_COMMAND, qos.COMMANDS)
        self.pub_sim = self.create_publisher(SimControl, topics.SIM_CONTROL, qos.COMMANDS)
        self.pub_dgram = (self.create_publisher(SdkDatagram, topics.SDK_DATAGRAMS, qos.STATE_STREAM)
                          if self.p["record_datagrams"] else None)
        self.create_subscription(PlantState, topics.PLANT_STATE, self.on_plant_state, qos.STATE_STREAM)
        self.create_subscription(FirmwareState, topics.FIRMWARE_STATE, self.on_firmware, qos.LOOP)
        self.create_subscription(Odometry, topics.ODOM_TRUTH, self.on_truth, qos.TELEMETRY, raw=True)

        self.lane = UdpLane(
            self.on_command,
            UdpLaneConfig(command_bind=(self.p["bind_host"], self.p["command_port"]),
                          state_destination=(self.p["state_host"], self.p["state_port"])),
            on_datagram=self.on_datagram if self.pub_dgram is not None else None,
        )
        self.http = HttpApi(HttpConfig(host=self.p["bind_host"], port=self.p["http_port"],
                                       robot_os_version=self.p["robot_os_version"]))
        self.http.add_route("GET", "/api/sim/truth", self.http_truth)
        self.http.add_route("POST", "/api/sim/restart", self.http_restart)
        self.http.add_route("POST", "/api/sim/push", self.http_push)
        self.http.add_route("GET", "/api/sim/counters", self.http_counters)
        self.http.add_route("GET", "/api/sim/firmware", self.http_firmware)
        self.http.add_route("POST", "/api/sim/inject", self.http_inject)
        self.lane.start()
        self.http.start()
        self.get_logger().info(
            f"SDK bridge ready: commands on udp {self.lane.command_address}, state to "
            f"{self.p['state_host']}:{self.p['state_port']} at {self.p['state_rate_hz']:g} Hz, "
            f"http on {self.http.address}")

    def close(self) -> None:
        self.lane.close()
        self.http.stop()

    # -- ROS inputs ----------------------------------------------------------------------------------------------
    def on_firmware(self, msg: FirmwareState) -> None:
        with self.lock:
            if msg.epoch == self.epoch:
                self.fw = msg

    def on_truth(self, data: bytes) -> None:
        self.truth = data

    def on_plant_state(self, msg: PlantState) -> None:
        with self.lock:
            if msg.epoch != self.epoch:
                self.epoch = msg.epoch
                self.sequence = 0  # a new firmware life: a new stream
                self.fw = None
            self.last_plant = msg
            if msg.step % self.state_every != 0:
                return
            fw = self.fw
            self.sequence = (self.sequence + 1) & 0xFFFFFFFF
            seq = self.sequence
        try:
            frame = self._frame(msg, fw, seq)
        except ValueError as exc:  # a non-finite reading must not reach the SDK as a half-built frame
            self.build_errors += 1
            self.get_logger().error(f"state frame not sent: {exc}", throttle_duration_sec=1.0)
            return
        self.lane.send_state(sdk_wire.encode_state(frame))

    def _frame(self, msg: PlantState, fw: FirmwareState | None, seq: int) -> sdk_wire.StateFrame:
        quat = np.asarray(msg.imu_orientation)
        alerts = [] if fw is None else [
            sdk_wire.AlertEntry(id=a.id, severity=a.severity, value=a.value, threshold=a.threshold,
                                first_set_us=a.first_set_us, source_id=a.source_id) for a in fw.alerts]
        temps = None
        if fw is not None and fw.thermal_model_active:
            temps = [float(t) for t in fw.motor_temperature]
        return sdk_wire.StateFrame(
            timestamp_us=round(msg.step * self.dt * 1e6),
            sequence=seq,
            current_mode=0 if fw is None else int(fw.mode),
            joint_pos=motor_space.joint_to_state(msg.position),
            joint_vel=motor_space.joint_to_state_velocity(msg.velocity),
            base_ang_vel=msg.imu_angular_velocity,
            projected_gravity=projected_gravity(quat),
            base_quat=quat,
            joint_current=motor_current(motor_space.joint_to_state_torque(msg.effort), self.torque_constant),
            joint_temp=temps,
            error_flags=0 if fw is None else int(fw.error_flags),
            active_alerts=alerts,
        )

    # -- UDP lane callbacks (receive thread) -----------------------------------------------------------------------
    def on_command(self, cmd: RobotCommand, peer: Any) -> None:
        m = to_msg(cmd)
        plant = self.last_plant
        if plant is not None:
            m.stamp = plant.stamp
        self.pub_cmd.publish(m)

    def on_datagram(self, direction: str, peer: Any, data: bytes) -> None:
        m = SdkDatagram()
        plant = self.last_plant
        if plant is not None:
            m.stamp = plant.stamp
        m.direction = SdkDatagram.DIRECTION_IN if direction == "rx" else SdkDatagram.DIRECTION_OUT
        m.peer = f"{peer[0]}:{peer[1]}"
        m.data = bytes(data)
        self.pub_dgram.publish(m)

    # -- HTTP handlers (server threads) ------------------------------------------------------------------------------
    def http_truth(self, req: Request) -> Any:
        raw, plant = self.truth, self.last_plant
        if raw is None or plant is None:
            raise HttpError(503, "no ground truth yet: the plant has not published")
        odom = deserialize_message(raw, Odometry)
        p, q = odom.pose.pose.position, odom.pose.pose.orientation
        quat = [q.w, q.x, q.y, q.z]
        lin_body = odom.twist.twist.linear
        ang_body = odom.twist.twist.angular
        lin_world = rotate(quat, [lin_body.x, lin_body.y, lin_body.z])
        ang_world = rotate(quat, [ang_body.x, ang_body.y, ang_body.z])
        return {
            "sim_time": from_stamp(odom.header.stamp),
            "base_pos": [p.x, p.y, p.z],
            "base_quat": quat,
            "base_yaw": float(yaw_from_quat(quat)),
            "base_lin_vel": lin_world.tolist(),
            "base_ang_vel": ang_world.tolist(),
            "frames": {"base_pos": "world", "base_lin_vel": "world", "base_ang_vel": "world"},
            "epoch": int(plant.epoch),
            "step": int(plant.step),
        }

    def http_restart(self, req: Request) -> Any:
        self._send_sim(SimControl(action=SimControl.ACTION_RESTART))
        self.get_logger().info("virtual restart requested over HTTP")
        return Response({"restarting": True, "previous_epoch": self.epoch}, status=202)

    def http_push(self, req: Request) -> Any:
        push = parse_push(req.body)
        m = SimControl(action=SimControl.ACTION_PUSH, body=push.body, force=[float(v) for v in push.force],
                       duration=float(push.duration))
        self._send_sim(m)
        return Response({"pushing": True, "body": push.body, "force": list(push.force),
                         "duration": push.duration}, status=202)

    def http_inject(self, req: Request) -> Any:
        body = req.body if isinstance(req.body, dict) else {}
        if body.get("fault") != "non_finite":
            raise HttpError(400, 'inject needs {"fault": "non_finite"} (the only fault the plant can inject)')
        self._send_sim(SimControl(action=SimControl.ACTION_INJECT_FAULT))
        return Response({"injected": "non_finite"}, status=202)

    def _send_sim(self, m: SimControl) -> None:
        """Sim-control messages are volatile: refuse (503) rather than publish into the void before the plant's
        subscription has matched, so a client can retry instead of believing a request that never arrived."""
        if self.pub_sim.get_subscription_count() == 0:
            raise HttpError(503, "the plant is not connected yet; retry")
        if self.last_plant is not None:
            m.stamp = self.last_plant.stamp
        self.pub_sim.publish(m)

    def http_counters(self, req: Request) -> Any:
        fw = self.fw
        return {
            "udp_rejections": dict(self.lane.rejections.snapshot()),
            "udp": self.lane.counters,
            "http": self.http.counters,
            "state_frames_sent": int(self.sequence),
            "state_build_errors": self.build_errors,
            "firmware": {} if fw is None else dict(zip(fw.counter_names, [int(v) for v in fw.counter_values],
                                                       strict=True)),
            # the supervisor's view of the processes (exits, restarts of observers); None under ros2 launch
            "graph": graph_status.read(),
        }

    def http_firmware(self, req: Request) -> Any:
        fw = self.fw
        if fw is None:
            raise HttpError(503, "no firmware state yet")
        return {"mode": fw.mode_name, "move_submode": fw.move_submode, "armed": fw.armed,
                "error_flags": fw.error_flags, "control_source": fw.control_source,
                "policy_active": fw.policy_active, "gantry_engaged": fw.gantry_engaged,
                "velocity_command": list(fw.velocity_command),
                "alerts": [{"id": a.id, "name": a.name, "severity": a.severity} for a in fw.alerts]}


def main(args: list[str] | None = None) -> int:
    return run_node("sdk_bridge", SdkBridgeNode, args, config_errors=(ValueError, OSError))


if __name__ == "__main__":
    sys.exit(main())
