"""The policy runner node: hosts one locomotion backend and answers every control tick with joint targets.

Inputs for tick k: the plant's tick-k sensor state and the firmware's state after tick k-1 (velocity command and
whether MOVE/POLICY is active). So a velocity command accepted by the firmware at tick k-1 reaches the policy's
observation at tick k. The backend only sees what the real robot's policy sees: IMU, joint encoders, command.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
from vasimov_msgs.msg import FirmwareState, PlantState, PolicyStep

from vasimov.frames import projected_gravity
from vasimov.ros import qos, topics
from vasimov.ros.convert import from_stamp
from vasimov.ros.lean_node import LeanNode
from vasimov.ros.lockstep import join_lockstep
from vasimov.ros.params import COMMON, ParamSpec, declare
from vasimov.ros.spin import run_node
from vasimov.tick_sync import TickSync
from vasimov_edge.policy.command_notice import CommandLimitNotice
from vasimov_edge.policy.interface import PolicyInput, PolicyOutput
from vasimov_edge.policy.registry import make_backend

PARAMS: tuple[ParamSpec, ...] = (
    *COMMON,
    ParamSpec("backend", "builtin", "Locomotion backend: 'builtin' (model-based controller, no weights), "
              "'builtin-v2' (the LIPM/DCM walker on placo), 'hold' (holds the stand pose), a local .onnx file, or "
              "hf://REPO@REVISION."),
)


class PolicyNode(LeanNode):
    def __init__(self, **node_options: Any) -> None:
        """``node_options``: rclpy Node keywords (cli_args, ...), for a composed process (vasimov_tools.compose)."""
        super().__init__("policy", **node_options)
        self.p = declare(self, PARAMS)
        self.lockstep = bool(self.p["lockstep"])
        self.backend = make_backend(self.p["backend"])
        # tick k's inputs: the plant's tick-k state and the firmware's state after tick k-1
        self.sync = TickSync(("state", "firmware"))
        self.latest_fw: FirmwareState | None = None
        self.epoch = 0
        self.was_active = False
        self.pending: list[int] = []  # ticks to answer, in order
        self.pub = self.create_publisher(PolicyStep, topics.POLICY_STEP, qos.LOOP)
        sub_fw = self.create_subscription(FirmwareState, topics.FIRMWARE_STATE, self.on_firmware, qos.LOOP)
        subscribe_tick = lambda: self.create_subscription(PlantState, topics.PLANT_TICK, self.on_tick, qos.LOOP)  # noqa: E731
        if self.lockstep:
            join_lockstep(self, [sub_fw], subscribe_tick, outputs=[self.pub])
        else:
            subscribe_tick()
        self.m = PolicyStep()
        self.m.backend = self.backend.name
        self.notice = CommandLimitNotice(self.backend.name)
        self.get_logger().info(f"policy runner ready: backend {self.backend.name}")

    def on_firmware(self, msg: FirmwareState) -> None:
        if msg.epoch != self.epoch:
            return
        self.latest_fw = msg
        self.sync.put("firmware", int(msg.epoch), int(msg.tick) + 1, msg)
        self._drain()

    def on_tick(self, msg: PlantState) -> None:
        if msg.epoch != self.epoch:
            self.epoch = msg.epoch
            self.sync.reset(int(msg.epoch))
            self.latest_fw = None
            self.pending.clear()
            self.backend.reset()
            self.notice.reset()
            self.was_active = False
        self.sync.put("state", int(msg.epoch), int(msg.tick), msg)
        self.pending.append(int(msg.tick))
        self._drain()

    def _drain(self) -> None:
        """Answer pending ticks in order; in lockstep each waits for the firmware's answer to the tick before."""
        while self.pending:
            k = self.pending[0]
            state = self.sync.get("state", k)
            fw = self.sync.get("firmware", k)
            if fw is None and k > 0:
                if self.lockstep:
                    return
                fw = self.latest_fw
            self.pending.pop(0)
            self.sync.forget_through(k)
            if state is not None:  # None only if it fell out of the sync's window: nothing left to answer
                self._answer(state, fw)

    def _answer(self, state: PlantState, fw: FirmwareState | None) -> None:
        active = bool(fw is not None and fw.policy_active)
        if active and not self.was_active:
            self.backend.reset()
        self.was_active = active
        command = np.asarray(fw.velocity_command, dtype=float) if fw is not None else np.zeros(3)
        inp = PolicyInput(
            tick=int(state.tick),
            sim_time=from_stamp(state.stamp),
            gyro=np.asarray(state.imu_angular_velocity, dtype=float),
            projected_gravity=projected_gravity(np.asarray(state.imu_orientation)),
            quat=np.asarray(state.imu_orientation, dtype=float),
            command=command,
            q=np.asarray(state.position, dtype=float),
            qd=np.asarray(state.velocity, dtype=float),
            active=active,
        )
        t0 = time.perf_counter()
        out = self.backend.step(inp)
        elapsed = time.perf_counter() - t0
        said = self.notice.update(inp.sim_time, command, out.command_used if active else None)
        if said is not None:
            self.get_logger().warning(said)
        self._publish(state, out, elapsed)

    def _publish(self, state: PlantState, out: PolicyOutput, elapsed: float) -> None:
        m = self.m
        m.stamp = state.stamp
        m.tick = state.tick
        m.epoch = state.epoch
        m.target = np.asarray(out.target, dtype=float)
        m.torque_ff = np.zeros(len(m.target)) if out.torque_ff is None else np.asarray(out.torque_ff, dtype=float)
        m.kp = [] if out.kp is None else [float(v) for v in out.kp]
        m.kd = [] if out.kd is None else [float(v) for v in out.kd]
        # unbounded float32[] fields take Python sequences (array.array 'f'), not numpy arrays
        m.observation = [] if out.observation is None else np.asarray(out.observation, dtype=np.float32).tolist()
        m.action = [] if out.action is None else np.asarray(out.action, dtype=np.float32).tolist()
        m.compute_time = elapsed
        self.pub.publish(m)


def main(args: list[str] | None = None) -> int:
    return run_node("policy", PolicyNode, args, config_errors=(ValueError,))


if __name__ == "__main__":
    sys.exit(main())
