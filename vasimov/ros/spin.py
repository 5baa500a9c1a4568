"""Process boilerplate shared by the nodes: init, executor choice, spin, clean shutdown, exit codes."""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from vasimov.graph_status import announce_started
from vasimov.ros import native_exit
from vasimov.ros.batch_take import spin_once_batched
from vasimov.ros.shm import own_segments, remove_own_segments
from vasimov.stop_signals import stop_on_signals

EXIT_CONFIG = 2


def make_executor(node: Any = None) -> Any:
    """The executor a node process spins on, by ``VASIMOV_EXECUTOR``:

    * ``loop`` (the default): ``vasimov.ros.wait_loop.WaitLoopExecutor``, one wait set kept across wake-ups and
      callbacks called directly (measured in docs/performance.md), for the nodes built on ``LeanNode`` (the plant,
      the edge, the policy runner, the SDK bridge, the Foxglove bridge, the binary stream, the camera); other nodes
      (the recorder) keep rclpy's classic executor;
    * ``single``: rclpy's classic SingleThreadedExecutor everywhere;
    * ``auto``: rclpy's C++ EventsExecutor for nodes without guard conditions or batched takes, else the classic one;
      ``events`` forces it (for comparison runs; bench/executor_cost.py).

    Why the EventsExecutor is not the default: with it a clean-clone CI run of 2026-12-04 stalled a lockstep graph's
    first ticks, and an edge process stopped for 3 s with SIGSTOP never published again after SIGCONT
    (test_truth_under_faults). The stall turned out not to be the executor's (the wait loop met it too: a firmware
    state sent before the edge's writer had matched the policy runner's reader; the edge now re-sends it), the
    SIGSTOP one is not understood. The wait loop runs on the same ``rcl_wait`` as the classic executor."""
    choice = os.environ.get("VASIMOV_EXECUTOR", "loop") or "loop"
    if choice not in ("loop", "auto", "single", "events"):
        raise ValueError(f"VASIMOV_EXECUTOR={choice!r}: expected loop, auto, single or events")
    context = None if node is None else node.context
    if choice == "loop":
        from vasimov.ros.lean_node import LeanNode
        from vasimov.ros.wait_loop import WaitLoopExecutor

        if node is None or isinstance(node, LeanNode):
            return WaitLoopExecutor(context=context)
        return SingleThreadedExecutor(context=context)
    if choice == "single" or (choice == "auto" and node is not None and not events_capable(node)):
        return SingleThreadedExecutor(context=context)
    from rclpy.experimental import EventsExecutor

    return EventsExecutor(context=context)


def events_capable(node: Any) -> bool:
    """Whether ``node`` runs unchanged on the EventsExecutor: no guard conditions, no batched takes."""
    return not list(node.guards) and float(getattr(node, "batch_period", 0.0)) <= 0.0


# Longest a spinning node takes to notice a stop request (its executor waits at most this long per turn).
STOP_POLL_S = 0.1
# Longest a node's teardown may take before the process exits regardless: under ros2 launch's 5 s between SIGINT
# and SIGTERM. Seen under load: the Foxglove bridge logged its clean stop, then its process hung in DDS/SDK thread
# teardown for 15 s until launch killed it ("process has died").
TEARDOWN_LIMIT_S = 4.0
# The native backstop's margin after that: a teardown blocked in C++ while holding the GIL (or in interpreter
# finalisation) starves the Python guard; the binary stream hung so in CI (stop 30) with the Python guard armed.
NATIVE_MARGIN_S = 0.4
_exit_guard: threading.Timer | None = None


def arm_exit_guard(name: str, code: int = 0) -> None:
    """From here on the process has ``TEARDOWN_LIMIT_S`` to end by itself; then it exits with ``code`` anyway, saying
    so on stderr. Idempotent: the first arming counts. A daemon timer, so a prompt exit is never delayed by it; behind
    it, ``NATIVE_MARGIN_S`` later, the same exit by native timers that need no GIL (``vasimov.ros.native_exit``)."""
    global _exit_guard
    if _exit_guard is not None:
        return

    def expire() -> None:
        print(f"{name}: teardown did not finish within {TEARDOWN_LIMIT_S:g} s; exiting anyway (threads below)",
              file=sys.stderr, flush=True)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)  # what hung: for the bug report
        remove_own_segments()  # os._exit skips DDS teardown: leave no shared-memory segment behind
        os._exit(code)

    _exit_guard = threading.Timer(TEARDOWN_LIMIT_S, expire)
    _exit_guard.daemon = True
    _exit_guard.start()
    native_exit.arm(TEARDOWN_LIMIT_S + NATIVE_MARGIN_S, code, own_segments())


@contextmanager
def ros_session(args: list[str] | None) -> Iterator[threading.Event]:
    """rclpy's context for a node process, with the process's stop signals in our hands rather than rclpy's.

    rclpy's own handler shuts the context down and then raises KeyboardInterrupt wherever the main thread is; under
    ``ros2 launch`` every node gets two SIGINTs (the terminal's process group, then launch's) and perhaps a third
    (a second Ctrl-C), so that exception lands in cleanup (``thread.join()``, ``destroy_node()``) and launch reports
    a traceback and "process has died". Here SIGINT/SIGTERM only set the yielded event, any number of times; the
    node's loop sees it within ``STOP_POLL_S``, cleans up and exits 0."""
    # a native crash (SIGSEGV, SIGABRT in rclpy or Fast DDS) prints every thread's Python stack before the process
    # dies, so a node that "exited unexpectedly with code -11" leaves the line it was on in the graph's output
    faulthandler.enable(file=sys.stderr, all_threads=True)
    with stop_on_signals(absorb_after_stop=True) as stop:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        try:
            yield stop
        finally:
            arm_exit_guard(os.path.basename(sys.argv[0]) or "node")
            if rclpy.ok():
                rclpy.shutdown()


def spin_until(executor: Any, node: Any, stop: threading.Event) -> None:
    """Spin until ``stop`` is set or the context ends. Observer nodes (``node.batch_period`` > 0) wake at most once
    per period and take every message that gathered meanwhile (``vasimov.ros.batch_take``); per-message wake-ups
    were most of an observer's CPU at lockstep rates."""
    batch_period = float(getattr(node, "batch_period", 0.0))
    while not stop.is_set() and rclpy.ok():
        if batch_period > 0.0:
            spin_once_batched(executor, node, STOP_POLL_S, stop)
            stop.wait(batch_period)
        else:
            executor.spin_once(timeout_sec=STOP_POLL_S)


def run_node(name: str, factory: Callable[[], Any], args: list[str] | None = None,
             config_errors: tuple[type[BaseException], ...] = (ValueError,)) -> int:
    """Build the node, spin until Ctrl-C/SIGTERM (any number of them, see ``ros_session``), and always release the
    node and the context; 0 after a stop request, ``EXIT_CONFIG`` when the node refused its configuration."""
    with ros_session(args) as stop:
        node = None
        code = 0
        try:
            node = factory()
            announce_started()
            executor = make_executor(node)
            executor.add_node(node)
            spin_until(executor, node, stop)
        except ExternalShutdownException:
            code = 0
        except config_errors as exc:
            print(f"{name}: cannot start: {exc}", file=sys.stderr)
            code = EXIT_CONFIG
        finally:
            arm_exit_guard(name, code)
            if node is not None:
                close = getattr(node, "close", None)
                if close is not None:
                    close()
                node.destroy_node()
    return code
