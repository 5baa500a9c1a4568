"""Process boilerplate shared by the nodes: init, executor choice, spin, clean shutdown, exit codes."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

from vasimov.ros.batch_take import spin_once_batched

EXIT_CONFIG = 2


def make_executor() -> Any:
    """The classic executor. rclpy's experimental EventsExecutor halves callback latency in shared/reference's
    measurements, but in this graph it never delivered the first lockstep tick and ignored SIGINT (measured
    2026-11-30, rclpy 9.1.2), so it stays opt-in (VASIMOV_EXECUTOR=events) for experiments."""
    if os.environ.get("VASIMOV_EXECUTOR", "single") != "events":
        return SingleThreadedExecutor()
    from rclpy.experimental import EventsExecutor

    return EventsExecutor()


def spin_batched(executor: Any, node: Any, period: float) -> None:
    """For observer nodes: wake at most once per ``period``, then take every message that gathered meanwhile
    (``vasimov.ros.batch_take``); per-message wake-ups were most of an observer's CPU at lockstep rates."""
    while rclpy.ok():
        spin_once_batched(executor, node, 0.1)
        time.sleep(period)


def run_node(name: str, factory: Callable[[], Any], args: list[str] | None = None,
             config_errors: tuple[type[BaseException], ...] = (ValueError,)) -> int:
    """Build the node, spin until Ctrl-C/SIGTERM, and always release the node and the context."""
    rclpy.init(args=args)
    node = None
    code = 0
    try:
        node = factory()
        executor = make_executor()
        executor.add_node(node)
        batch_period = float(getattr(node, "batch_period", 0.0))
        if batch_period > 0.0:
            spin_batched(executor, node, batch_period)
        else:
            executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        code = 0
    except config_errors as exc:
        print(f"{name}: cannot start: {exc}", file=sys.stderr)
        code = EXIT_CONFIG
    finally:
        if node is not None:
            close = getattr(node, "close", None)
            if close is not None:
                close()
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return code
