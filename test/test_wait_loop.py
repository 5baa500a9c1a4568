"""`vasimov.ros.wait_loop.WaitLoopExecutor` on real rclpy entities in one process: every kind of entity it serves
runs its callback, entities made or destroyed while it spins are picked up, a timer reset from another thread wakes
it, it answers parameter services (what `ros2 param` and the Foxglove bridge's proxy use), and a context shutdown ends
it as rclpy's executors do. Ordering against the classic executor is checked where it matters, in test_graph's
lockstep bit-identity with the single-process loop."""

from __future__ import annotations

import linecache
import sys
import threading
import time

import pytest
import rclpy
from harness import next_domain_id, wait_for
from rcl_interfaces.srv import GetParameters
from rclpy.context import Context
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.timer import TimerInfo
from std_msgs.msg import String

from vasimov.ros import qos
from vasimov.ros.lean_node import LeanNode
from vasimov.ros.spin import make_executor
from vasimov.ros.wait_loop import WaitLoopExecutor


class Spinner:
    """A context, one node and an executor spun on a thread until ``close``."""

    def __init__(self, executor_cls: type, name: str = "wait_loop_test", domain: int | None = None) -> None:
        self.context = Context()
        rclpy.init(context=self.context, domain_id=next_domain_id() if domain is None else domain)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = executor_cls(context=self.context)
        self.executor.add_node(self.node)
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        self.ended = threading.Event()
        self.thread = threading.Thread(target=self._spin, daemon=True)

    def start(self) -> Spinner:
        self.thread.start()
        return self

    def _spin(self) -> None:
        try:
            while not self.stop.is_set():
                self.executor.spin_once(timeout_sec=0.05)
        except ExternalShutdownException:
            pass
        except BaseException as exc:  # surfaced by the test
            self.errors.append(exc)
        finally:
            self.ended.set()

    def close(self) -> None:
        self.stop.set()
        if self.thread.ident is not None:
            self.thread.join(timeout=5)
        self.executor.shutdown()
        self.node.destroy_node()
        if self.context.ok():
            rclpy.shutdown(context=self.context)
        assert not self.errors, self.errors


@pytest.fixture
def spinner():
    made: list[Spinner] = []

    def make(executor_cls: type = WaitLoopExecutor, **kw) -> Spinner:
        made.append(Spinner(executor_cls, **kw))
        return made[-1]

    yield make
    for s in made:
        s.close()


def test_subscriptions_timers_guards_and_late_entities(spinner):
    s = spinner().start()
    node = s.node
    got: list[str] = []
    infos: list[TimerInfo] = []
    ticks = [0]
    pub = node.create_publisher(String, "/wl/a", qos.COMMANDS)
    # made while the executor spins: the executor must see the new subscription without a restart
    node.create_subscription(String, "/wl/a", lambda m: got.append(m.data), qos.COMMANDS)
    wait_for(lambda: pub.get_subscription_count() == 1, 20, "the subscription to match")
    for i in range(5):
        pub.publish(String(data=str(i)))
    wait_for(lambda: len(got) == 5, 10, "five messages")
    assert got == ["0", "1", "2", "3", "4"]

    def with_info(info: TimerInfo) -> None:
        infos.append(info)

    node.create_timer(0.01, lambda: ticks.__setitem__(0, ticks[0] + 1))
    node.create_timer(0.01, with_info)
    wait_for(lambda: ticks[0] >= 3 and len(infos) >= 3, 10, "both timers to fire")
    assert infos[-1].actual_call_time.nanoseconds >= infos[-1].expected_call_time.nanoseconds > 0
    fired = threading.Event()
    gc = node.create_guard_condition(fired.set)
    gc.trigger()
    wait_for(fired.is_set, 10, "the guard condition's callback")


def test_a_destroyed_subscription_is_dropped_and_a_new_one_served(spinner):
    s = spinner().start()
    node = s.node
    first: list[str] = []
    second: list[str] = []
    pub = node.create_publisher(String, "/wl/b", qos.COMMANDS)
    sub = node.create_subscription(String, "/wl/b", lambda m: first.append(m.data), qos.COMMANDS)
    wait_for(lambda: pub.get_subscription_count() == 1, 20, "the first subscription to match")
    pub.publish(String(data="x"))
    wait_for(lambda: first == ["x"], 10, "the first message")
    node.destroy_subscription(sub)
    node.create_subscription(String, "/wl/b", lambda m: second.append(m.data), qos.COMMANDS)
    wait_for(lambda: pub.get_subscription_count() == 1, 20, "the second subscription to match")
    pub.publish(String(data="y"))
    wait_for(lambda: second == ["y"], 10, "the message at the new subscription")
    assert first == ["x"]


def _in_rcl_wait(thread: threading.Thread) -> bool:
    """Whether ``thread`` is blocked in ``WaitLoopExecutor.spin_once``'s wait (its innermost Python frame is there,
    on the ``ws.wait(`` line: the wait itself is C code)."""
    frame = sys._current_frames().get(thread.ident or -1)
    if frame is None or frame.f_code.co_name != "spin_once":
        return False
    return linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip().startswith("ws.wait(")


def test_a_timer_reset_from_another_thread_wakes_the_wait(spinner):
    """The command outbox's pattern: a cancelled timer, restarted from a receive thread, must fire promptly even
    while the executor sits in a long wait."""
    s = spinner()
    fired = threading.Event()
    tmr = s.node.create_timer(0.02, fired.set)
    tmr.cancel()
    s.stop.set()  # one long wait instead of the fixture's 50 ms turns
    s.executor.spin_once(timeout_sec=0.0)  # takes the wake-up that creating the timer left pending
    done = threading.Event()

    def long_wait() -> None:  # a spurious wake-up may return early; the reset must not need the 5 s timeout
        deadline = time.monotonic() + 4.0
        while not fired.is_set() and time.monotonic() < deadline:
            s.executor.spin_once(timeout_sec=5.0)
        done.set()

    t = threading.Thread(target=long_wait, daemon=True)
    t.start()
    wait_for(lambda: _in_rcl_wait(t), 10, "the spinning thread to block in the wait set's wait")
    started = time.monotonic()
    tmr.reset()
    assert done.wait(3.0), "the reset timer never woke the executor"
    assert fired.is_set() and time.monotonic() - started < 2.0
    t.join(timeout=5)


def test_parameter_services_answer(spinner):
    s = spinner(name="wl_params").start()
    s.node.declare_parameter("answer", 42)
    client_ctx = Context()
    rclpy.init(context=client_ctx, domain_id=s.context.get_domain_id())
    try:
        cnode = rclpy.create_node("wl_client", context=client_ctx)
        cli = cnode.create_client(GetParameters, "/wl_params/get_parameters")
        assert cli.wait_for_service(timeout_sec=20), "the parameter service never appeared"
        future = cli.call_async(GetParameters.Request(names=["answer"]))
        ex = SingleThreadedExecutor(context=client_ctx)
        ex.add_node(cnode)
        ex.spin_until_future_complete(future, timeout_sec=20)
        assert future.done(), "no answer from the wait loop's parameter service"
        assert future.result().values[0].integer_value == 42
        ex.shutdown()
        cnode.destroy_node()
    finally:
        rclpy.shutdown(context=client_ctx)


def test_context_shutdown_ends_the_spin_like_rclpys_executors(spinner):
    s = spinner().start()
    rclpy.shutdown(context=s.context)
    assert s.ended.wait(5.0), "spin_once kept waiting after the context was shut down"
    assert not s.errors


def test_a_service_client_on_the_wait_loop_gets_its_answer(spinner):
    """A client's future is completed, and its done-callback (an rclpy task) runs, on this executor too."""
    server = spinner(name="wl_server").start()
    server.node.declare_parameter("answer", 7)
    client = spinner(name="wl_caller", domain=server.context.get_domain_id()).start()
    cli = client.node.create_client(GetParameters, "/wl_server/get_parameters")
    assert cli.wait_for_service(timeout_sec=20), "the parameter service never appeared"
    called: list[int] = []
    future = cli.call_async(GetParameters.Request(names=["answer"]))
    future.add_done_callback(lambda f: called.append(f.result().values[0].integer_value))
    wait_for(lambda: called == [7], 20, "the answer and its done-callback")


def test_make_executor_default_and_the_nodes_it_serves(monkeypatch, spinner):
    s = spinner()
    monkeypatch.delenv("VASIMOV_EXECUTOR", raising=False)
    assert isinstance(make_executor(s.node), SingleThreadedExecutor), "an observer node gets the classic executor"
    lean = LeanNode("wl_lean", context=s.context)
    try:
        assert isinstance(make_executor(lean), WaitLoopExecutor)
        monkeypatch.setenv("VASIMOV_EXECUTOR", "single")
        assert isinstance(make_executor(lean), SingleThreadedExecutor)
        monkeypatch.setenv("VASIMOV_EXECUTOR", "bogus")
        with pytest.raises(ValueError, match="VASIMOV_EXECUTOR"):
            make_executor(lean)
    finally:
        lean.destroy_node()
