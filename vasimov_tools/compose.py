"""Composed mode (`vasimov up --compose`): every node of the launch file in ONE process.

Why: in the separate-process graph (the default, `vasimov_tools.supervisor`) most of the CPU goes into moving
messages between processes and waking each process's executor for them (issue 11: ~1,300 hops per simulated
second), not into physics, firmware or policy. Composed, the same node objects share one rclpy context (one DDS
participant: Fast DDS delivers intra-process, no shared-memory transport, no socket wake-ups). The control nodes
(launch's `on_exit: shutdown`) share one executor, ``vasimov.ros.wait_loop.WaitLoopExecutor`` by default (one wait
set kept across wake-ups; the choice and its measurements: docs/architecture.md, "Composed mode"); the observers
(and, with ``VASIMOV_EXECUTOR=events``, any node with guard conditions, which that executor lacks) share a classic
executor on a second thread, drained in batches as in their own processes. This is ROS 2's component-container
idea for a pure-Python graph.

What stays the same: the node classes, their parameters and remaps (built from the same `NodeSpec`s the supervisor
reads from the launch file: the same `--ros-args` tail, given to each node as its own `cli_args`), the lockstep
protocol (the plant's own driver spins the control executor, so the start gate, stall checks and the real-time
physics thread work unchanged) and exit codes: the plant's code at the end of a bounded run or on a fault; 0 after
Ctrl-C/SIGTERM; 2 when a node refuses its configuration; 1 when any other node's callback raises (named in the
message; the plant's own error is its internal fault, as in its own process).

What is lost: isolation. One crash ends every node; observers (Foxglove bridge, binary stream, recorder) are not
restarted on their own; and they no longer run at a lower CPU priority (``cpu_nice`` is per process, so it is forced
to 0 here: renicing would slow the plant too).
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any

from vasimov_tools.launch_file import LaunchDescription, NodeSpec

#: launch `exec` -> (module, class): the node class each console script (setup.py) builds in its own process
NODE_CLASSES: dict[str, tuple[str, str]] = {
    "plant_node": ("vasimov_plant.node", "PlantNode"),
    "edge_node": ("vasimov_edge.node", "EdgeNode"),
    "policy_node": ("vasimov_edge.policy_node", "PolicyNode"),
    "sdk_bridge_node": ("vasimov_bridge.sdk_node", "SdkBridgeNode"),
    "foxglove_bridge_node": ("vasimov_bridge.foxglove_node", "FoxgloveBridgeNode"),
    "binary_stream_node": ("vasimov_bridge.binary_node", "BinaryStreamNode"),
    "recorder_node": ("vasimov_tools.record", "RecorderNode"),
    "camera_node": ("vasimov_bridge.camera_node", "CameraNode"),
}
PLANT_EXEC = "plant_node"
EXIT_CONFIG = 2  # vasimov.ros.spin.EXIT_CONFIG (not imported at module level: it pulls in rclpy)
EXIT_NODE_FAILED = 1
CONFIG_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError)
#: parameters a composed process overrides for every node (undeclared ones are ignored by rclpy)
COMPOSED_OVERRIDES: dict[str, object] = {"cpu_nice": 0}


class ComposeError(ValueError):
    """The launch description cannot be composed (an executable with no node class here, no plant)."""


class NodeFailure(BaseException):
    """A node's callback raised in the shared executor. A BaseException, so that the plant's own guard (which turns
    an Exception in *its* executor thread into a plant fault) lets another node's failure through unblamed."""

    def __init__(self, node: str, error: BaseException) -> None:
        super().__init__(f"node '{node}' failed: {type(error).__name__}: {error}")
        self.node = node
        self.error = error


def node_class(spec: NodeSpec) -> type:
    try:
        module, cls = NODE_CLASSES[spec.executable]
    except KeyError:
        raise ComposeError(f"node '{spec.name}': executable {spec.executable!r} has no node class to compose; "
                           f"composable: {sorted(NODE_CLASSES)}") from None
    return getattr(importlib.import_module(module), cls)


def node_options(spec: NodeSpec) -> dict[str, Any]:
    """The rclpy Node keywords that give a node in this process what its own process's command line would: the
    spec's `--ros-args` tail as the node's *local* arguments (name, namespace, params files, `-p`, remaps), the
    process's global arguments ignored (they would apply to every node alike), plus COMPOSED_OVERRIDES."""
    params = dict(spec.params, **COMPOSED_OVERRIDES)
    local = NodeSpec(name=spec.name, package=spec.package, executable=spec.executable, namespace=spec.namespace,
                     param_files=spec.param_files, params=params, remaps=spec.remaps)
    return {"cli_args": [*spec.extra_args, *local.ros_args()], "use_global_arguments": False}


def check(desc: LaunchDescription) -> None:
    """Refuse before anything starts: an unknown executable, no plant (whose driver runs the executor), an unknown
    VASIMOV_EXECUTOR."""
    for spec in desc.nodes:
        node_class(spec)
    if sum(spec.executable == PLANT_EXEC for spec in desc.nodes) != 1:
        raise ComposeError("a composed graph needs exactly one plant node (its driver spins the executor)")
    executor_choice()


EXECUTORS = ("loop", "events", "single", "multi")


def executor_choice() -> str:
    """The control executor: ``VASIMOV_EXECUTOR`` (loop, the default, as in the separate processes; events;
    single; multi), for comparison runs."""
    choice = os.environ.get("VASIMOV_EXECUTOR", "loop") or "loop"
    if choice not in EXECUTORS:
        raise ComposeError(f"VASIMOV_EXECUTOR={choice!r}: expected one of {', '.join(EXECUTORS)}")
    return choice


def make_executor(choice: str) -> Any:
    """An executor for the composed nodes. ``loop`` (the default): ``vasimov.ros.wait_loop.WaitLoopExecutor``, as in
    the separate node processes (measured a little cheaper and faster than the EventsExecutor here,
    docs/architecture.md "Composed mode"). ``events``: rclpy's EventsExecutor (C++); it has no guard conditions,
    so nodes that use them run on the observer executor. ``single``: rclpy's SingleThreadedExecutor. ``multi``: its
    MultiThreadedExecutor with two threads."""
    from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor

    if choice == "events":
        from rclpy.experimental import EventsExecutor

        return EventsExecutor()
    if choice == "multi":
        return MultiThreadedExecutor(num_threads=2)
    if choice == "loop":
        from vasimov.ros.wait_loop import WaitLoopExecutor

        return WaitLoopExecutor()
    return SingleThreadedExecutor()


class _Attributing:
    """An executor whose callback errors become NodeFailure naming the node whose code raised (found from the
    traceback: the outermost frame whose ``self`` is one of the nodes, or holds one as ``self.node``)."""

    def __init__(self, inner: Any, nodes: list[Any]) -> None:
        self.inner = inner
        self.nodes = nodes

    def spin_once(self, timeout_sec: float | None = None) -> None:
        from rclpy.executors import ExternalShutdownException

        try:
            self.inner.spin_once(timeout_sec=timeout_sec)
        except (ExternalShutdownException, NodeFailure):
            raise
        except Exception as exc:
            raise NodeFailure(owner(exc, self.nodes), exc) from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def owner(exc: BaseException, nodes: list[Any]) -> str:
    tb = exc.__traceback__
    while tb is not None:
        obj = tb.tb_frame.f_locals.get("self")
        for node in nodes:
            if obj is not None and (obj is node or getattr(obj, "node", None) is node):
                return str(node.get_name())
        tb = tb.tb_next
    return "(unknown)"


@dataclass
class _Composed:
    spec: NodeSpec
    node: Any


def _build(desc: LaunchDescription, built: list[_Composed]) -> None:
    """Build every node in launch order into ``built`` (so that the ones built are closed even if a later one
    refuses its configuration)."""
    for spec in desc.nodes:
        built.append(_Composed(spec, node_class(spec)(**node_options(spec))))


def _close(built: list[_Composed]) -> bool:
    """Close and destroy every node, last built first; False when a recorder's bag writer failed (its own
    process would exit 1)."""
    ok = True
    for c in reversed(built):
        close = getattr(c.node, "close", None)
        try:
            result = close() if close is not None else None
            if getattr(result, "writer_error", None):
                ok = False
        except Exception as exc:  # one node's teardown error must not keep the others' resources alive
            _say(f"node '{c.spec.name}': error while closing: {type(exc).__name__}: {exc}")
            ok = False
        finally:
            c.node.destroy_node()
    return ok


def _say(text: str) -> None:
    print(f"vasimov: {text}", file=sys.stderr, flush=True)


def _config_errors() -> tuple[type[BaseException], ...]:
    """What the nodes' own main()s report as "cannot start" (exit 2) rather than a crash."""
    import re

    from vasimov_tools.bag import BagError

    return (*CONFIG_ERRORS, BagError, re.error)


def run(desc: LaunchDescription) -> int:
    """Run the composed graph until the plant's run ends (bounded run, fault) or Ctrl-C/SIGTERM; the exit code."""
    check(desc)
    from vasimov.graph_status import ENV_VAR
    from vasimov.ros.spin import arm_exit_guard, ros_session
    from vasimov_tools.supervisor import graph_environment

    os.environ.update(graph_environment())  # the same DDS discovery settings the supervisor gives its children
    os.environ.pop(ENV_VAR, None)  # no supervisor status file: nothing is restarted here
    code = 0
    built: list[_Composed] = []
    with ros_session(["vasimov-compose"]) as stop:
        try:
            _build(desc, built)
            _say(f"composed {len(built)} nodes in one process (pid {os.getpid()}): "
                 f"{', '.join(c.spec.name for c in built)}")
            code = _spin(built, stop)
        except _config_errors() as exc:
            _say(f"composed graph cannot start: {exc}")
            code = EXIT_CONFIG
        finally:
            arm_exit_guard("vasimov (composed)", code)  # from here teardown is bounded (TEARDOWN_LIMIT_S)
            if not _close(built) and code == 0:
                code = EXIT_NODE_FAILED
    return code


def _spin(nodes: list[_Composed], stop: threading.Event) -> int:
    """The control nodes (launch's `on_exit: shutdown`) on the control executor, which the plant's own driver spins
    in this thread (start gate, stall checks, real-time physics thread: unchanged); the observers (and any node
    with guard conditions, which the EventsExecutor lacks) on one classic executor in a second thread, drained in
    batches as in their own processes (``batch_period``). Both end when the plant's run ends or on a stop."""
    from rclpy.executors import ExternalShutdownException

    choice = executor_choice()
    control = _Attributing(make_executor(choice), [c.node for c in nodes])
    observers = _Observers(_Attributing(make_executor("single"), [c.node for c in nodes]), stop)
    for c in nodes:
        side_line = not c.spec.shutdown_on_exit or (choice == "events" and list(c.node.guards))
        if side_line and c.spec.executable != PLANT_EXEC:
            observers.add(c)
        else:
            control.inner.add_node(c.node)
    _say(f"executor: {choice} for {', '.join(c.spec.name for c in nodes if c not in observers.members)}; "
         f"observers on their own thread: {', '.join(c.spec.name for c in observers.members) or 'none'}")
    plant = next(c.node for c in nodes if c.spec.executable == PLANT_EXEC)
    code = 0
    observers.start()
    try:
        code = plant.drive(control, stop, flush_timeout=3.0)
    except ExternalShutdownException:
        code = 0
    except NodeFailure as exc:
        if exc.node == plant.get_name() and isinstance(exc.error, Exception):
            plant.internal_fault("executor thread", exc.error)  # the plant's own rule, as in its own process
            code = plant.exit_code or EXIT_NODE_FAILED
        else:
            _say(f"{exc}; stopping the graph")
            code = EXIT_NODE_FAILED
    finally:
        stop.set()
        observers.join()
    if observers.failure is not None:
        _say(f"{observers.failure}; stopping the graph")
        code = code or EXIT_NODE_FAILED
    return code


class _Observers:
    """The observer nodes' executor and thread: one wake-up, then every observer's pending messages taken directly
    (``vasimov.ros.batch_take``), then a pause of the shortest ``batch_period`` so messages gather; a recorder is
    started first and drained last, as its own process does. An exception here ends the whole process
    (``failure``), as one crash takes every composed node down."""

    def __init__(self, executor: Any, stop: threading.Event) -> None:
        self.executor = executor
        self.stop = stop
        self.members: list[_Composed] = []
        self.failure: NodeFailure | None = None
        self.thread = threading.Thread(target=self._run, name="observers", daemon=True)

    def add(self, c: _Composed) -> None:
        self.members.append(c)
        self.executor.inner.add_node(c.node)

    def start(self) -> None:
        if self.members:
            self.thread.start()

    def join(self) -> None:
        if self.thread.is_alive():
            self.thread.join()

    def _run(self) -> None:
        from vasimov.ros.batch_take import take_pending
        from vasimov.ros.spin import STOP_POLL_S

        recorders = [c.node for c in self.members if hasattr(c.node, "drain")]
        periods = {c.spec.name: _batch_period(c.node) for c in self.members}
        batched = [c.node for c in self.members if periods[c.spec.name] > 0.0]
        pause = min((p for p in periods.values() if p > 0.0), default=0.0)
        try:
            for rec in recorders:
                rec.start(self.executor)
            while not self.stop.is_set():
                self.executor.spin_once(timeout_sec=STOP_POLL_S)
                for node in batched:
                    try:
                        take_pending(node)
                    except Exception as exc:  # a callback run by the direct take, outside the executor
                        raise NodeFailure(node.get_name(), exc) from exc
                if pause > 0.0:
                    self.stop.wait(pause)
            for rec in recorders:
                rec.drain(self.executor)
        except NodeFailure as exc:
            self.failure = exc
        except Exception as exc:  # a recorder's start or drain
            self.failure = NodeFailure("observers", exc)
        finally:
            self.stop.set()


def _batch_period(node: Any) -> float:
    """An observer's pause between takes: its ``batch_period`` attribute (Foxglove bridge) or parameter (recorder)."""
    value = getattr(node, "batch_period", None)
    if value is None:
        value = getattr(node, "p", {}).get("batch_period", 0.0)
    return float(value)
