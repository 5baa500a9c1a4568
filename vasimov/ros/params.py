"""Declared parameters: every node lists its parameters as data (type, default, description, bounds) and declares
them through one helper, so the parameter table (docs/ros2.md), the config files and the nodes cannot drift apart
(a test checks)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType
from rclpy.exceptions import ParameterException

from vasimov.control_rate import CONTROL_DECIMATION, PHYSICS_DT


@dataclass(frozen=True)
class ParamSpec:
    name: str
    default: Any
    description: str
    min: float | None = None
    max: float | None = None
    read_only: bool = True  # most parameters shape processes/sockets and need a restart
    choices: tuple[str, ...] = ()

    @property
    def ros_type(self) -> int:
        if isinstance(self.default, bool):
            return ParameterType.PARAMETER_BOOL
        if isinstance(self.default, int):
            return ParameterType.PARAMETER_INTEGER
        if isinstance(self.default, float):
            return ParameterType.PARAMETER_DOUBLE
        if isinstance(self.default, str):
            return ParameterType.PARAMETER_STRING
        raise TypeError(f"parameter {self.name}: unsupported default {self.default!r}")

    def descriptor(self) -> ParameterDescriptor:
        desc = self.description
        if self.choices:
            desc += f" (one of: {', '.join(self.choices)})"
        d = ParameterDescriptor(name=self.name, type=self.ros_type, description=desc, read_only=self.read_only)
        if self.min is not None and self.max is not None:
            if self.ros_type == ParameterType.PARAMETER_INTEGER:
                d.integer_range = [IntegerRange(from_value=int(self.min), to_value=int(self.max), step=0)]
            elif self.ros_type == ParameterType.PARAMETER_DOUBLE:
                d.floating_point_range = [FloatingPointRange(from_value=float(self.min), to_value=float(self.max),
                                                             step=0.0)]
        return d

    def rule(self) -> str:
        """What a valid value looks like, for messages that reject one."""
        kind = {ParameterType.PARAMETER_BOOL: "true or false", ParameterType.PARAMETER_INTEGER: "an integer",
                ParameterType.PARAMETER_DOUBLE: "a number", ParameterType.PARAMETER_STRING: "a string"}[self.ros_type]
        if self.choices:
            return f"one of {self.choices}"
        if self.min is not None and self.max is not None:
            return f"{kind} in [{self.min}, {self.max}]"
        return kind

    def validate(self, value: Any) -> str | None:
        """None if acceptable, else a message saying what would have been valid."""
        if self.choices and value not in self.choices:
            return f"{self.name}={value!r} is not one of {self.choices}"
        if self.min is not None and value < self.min:
            return f"{self.name}={value!r} is below the minimum {self.min}"
        if self.max is not None and value > self.max:
            return f"{self.name}={value!r} is above the maximum {self.max}"
        return None


# Parameters every node of the graph shares (passed by the launch file).
COMMON: tuple[ParamSpec, ...] = (
    ParamSpec("lockstep", False, "Run the closed loop in lockstep: every participant answers each control tick "
              "before the plant steps on; as fast as the machine allows."),
    ParamSpec("control_decimation", CONTROL_DECIMATION, "Physics steps per control tick (200 Hz physics / 4 = 50 Hz "
              "control; vasimov.control_rate).",
              min=1, max=100),
    ParamSpec("physics_dt", PHYSICS_DT, "Physics time step in seconds (the model's timestep).", min=0.0005, max=0.02),
)


def declare(node: Any, specs: tuple[ParamSpec, ...]) -> dict[str, Any]:
    """Declare all specs on an rclpy node, validate the values it was given, and return them as a dict.

    A value outside its bounds or choices is a configuration error: raise with the rule that was broken, so the
    node exits at start-up with a clear message instead of running with something nobody asked for. rclpy checks
    a given value against the descriptor (type, range) itself and raises its own exceptions; those become the same
    ValueError, or a node would die with a traceback and exit code 1 on `-p seed:=-1`.
    """
    values: dict[str, Any] = {}
    for spec in specs:
        try:
            param = node.declare_parameter(spec.name, spec.default, spec.descriptor())
        except ParameterException as exc:
            raise ValueError(f"invalid parameter: {spec.name} must be {spec.rule()} ({exc})") from exc
        value = param.value
        problem = spec.validate(value)
        if problem:
            raise ValueError(f"invalid parameter: {problem}")
        values[spec.name] = value
    return values


# Observers (recorder, Foxglove bridge) run at the lowest priority: measured on 2 cores, lockstep RTF with a Foxglove
# client on every channel and recording was 76-89 % of the bare run (median 86 %) at 19, 69-72 % at 0 and ~75 % at
# 10; batched takes and deep DDS histories let a starved observer catch up (0 drops or losses measured).
OBSERVER_CPU_NICE = ParamSpec(
    "cpu_nice", 19, "Scheduling niceness added to every thread of this process (DDS receive threads included): an "
    "observer yields the CPU to the simulation's closed loop whenever both want it. 0 = same priority as the graph.",
    min=0, max=19)
