"""A single-threaded rclpy executor that keeps one wait set and calls callbacks directly.

Why: rclpy's ``SingleThreadedExecutor`` pays, on every wake-up, for work that only changes when an entity is created
or destroyed: it filters every entity list through its callback groups, enters an ``ExitStack`` per entity,
allocates a new ``rcl`` wait set (and a Fast DDS wait set behind it), creates an ``rcl`` timer for the timeout,
wraps each callback in a coroutine ``Task``, and reads the timer callback's signature with ``inspect``. py-spy put
that at 40-60 % of the edge's and the policy runner's CPU (docs/performance.md). rclpy's C++ ``EventsExecutor``
avoids it but stalled a lockstep graph in CI (``vasimov.ros.spin``).

This executor does the same waiting through the same ``rcl`` calls, and only what changes per wake-up:

* the entity lists, the pointer-to-entity maps and the wait set are built once, and again only after the executor
  is woken for a change (rclpy's ``Node`` calls ``executor.wake()`` on every create and destroy, and
  ``add_node``/``remove_node`` do the same);
* each wake-up clears the wait set, re-adds the handles (``rcl_wait`` nulls the ones that were not ready), waits
  with the caller's timeout (``rcl_wait`` itself shortens it to the next timer), and runs every ready callback in
  the order rclpy's executor would yield them: waitables, then timers, subscriptions (one message each), guard
  conditions, service clients and services (with several nodes, rclpy goes node by node; here each kind goes across
  the nodes in turn: the node processes run one node each).

Ordering, fairness and what a callback sees are those of the classic executor, so lockstep stays bit-identical (a
test compares). Single-threaded by design: callback groups are not consulted (with one thread there is nothing to
exclude), and a callback that returns a coroutine is run to completion in place (it may not await a future);
tasks queued with ``create_task`` (a service client's future callbacks) are stepped after each wake-up.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from rclpy.exceptions import InvalidHandle
from rclpy.executors import Executor, ExternalShutdownException
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.subscription import Subscription
from rclpy.timer import TimerInfo


def _run(result: Any) -> Any:
    """A callback's result: a coroutine (an ``async def`` callback) is driven to its end here; returns its value."""
    if not inspect.iscoroutine(result):
        return result
    try:
        while True:
            result.send(None)
    except StopIteration as done:
        return done.value


def _timer_info_arg(callback: Callable[..., Any] | None) -> str | None:
    """The name of the parameter annotated ``TimerInfo`` (rclpy passes call times there), or None."""
    if callback is None:
        return None
    try:
        params = inspect.signature(callback).parameters.values()
    except (TypeError, ValueError):
        return None
    return next((p.name for p in params if p.annotation in (TimerInfo, "TimerInfo")), None)


class _Plan:
    """What one wake-up needs, computed once per change of the node set or of any node's entities."""

    def __init__(self, nodes: list[Any], guard: Any, sigint_guard: Any, context: Any) -> None:
        self.nodes = nodes
        self.subs: list[Any] = []
        self.timers: list[Any] = []
        self.guards: list[Any] = []
        self.services: list[Any] = []
        self.clients: list[Any] = []
        self.waitables: list[Any] = []
        for node in nodes:
            self.timers.extend(node.timers)
            self.subs.extend(node.subscriptions)
            self.guards.extend(node.guards)
            self.services.extend(node.services)
            self.clients.extend(node.clients)
            self.waitables.extend(node.waitables)
        self.by_timer = {t.handle.pointer: t for t in self.timers}
        self.by_sub = {s.handle.pointer: s for s in self.subs}
        self.by_guard = {g.handle.pointer: g for g in self.guards}
        self.by_service = {s.handle.pointer: s for s in self.services}
        self.by_client = {c.handle.pointer: c for c in self.clients}
        self.timer_arg = {t.handle.pointer: _timer_info_arg(t.callback) for t in self.timers}
        self.own_guards = [g for g in (guard, sigint_guard) if g is not None]
        extra: list[int] = [0] * 6
        for w in self.waitables:
            counts = w.get_num_entities()
            extra = [a + b for a, b in zip(extra, (counts.num_subscriptions, counts.num_guard_conditions,
                                                    counts.num_timers, counts.num_clients, counts.num_services,
                                                    counts.num_events), strict=True)]
        self.wait_set = _rclpy.WaitSet(
            len(self.subs) + extra[0], len(self.guards) + len(self.own_guards) + extra[1], len(self.timers) + extra[2],
            len(self.clients) + extra[3], len(self.services) + extra[4], extra[5], context.handle)
        ws = self.wait_set
        # (what is held in use during the wait, the call that adds it to the wait set): built once per plan
        self.entries: list[tuple[Any, Callable[[], Any]]] = [
            *((x.handle, partial(ws.add_subscription, x.handle)) for x in self.subs),
            *((x.handle, partial(ws.add_timer, x.handle)) for x in self.timers),
            *((x.handle, partial(ws.add_guard_condition, x.handle)) for x in self.guards),
            *((x.handle, partial(ws.add_service, x.handle)) for x in self.services),
            *((x.handle, partial(ws.add_client, x.handle)) for x in self.clients),
            *((x, partial(x.add_to_wait_set, ws)) for x in self.waitables)]
        self.own = [partial(ws.add_guard_condition, g.handle) for g in self.own_guards]

    def fill(self) -> list[Any]:
        """Put every handle into the (cleared) wait set, each held in use (entered) so that another thread's
        destroy waits until the wait is over, as rclpy's executor does; returns the held ones for ``release``.
        Raises ``InvalidHandle`` (nothing held) if one was destroyed since the plan was made."""
        self.wait_set.clear_entities()
        held: list[Any] = []
        try:
            for holder, add in self.entries:
                holder.__enter__()
                held.append(holder)
                add()
            for add in self.own:
                add()
        except InvalidHandle:
            release(held)
            raise
        return held


def release(held: list[Any]) -> None:
    """Let go of the handles ``fill`` held (in reverse, like an ExitStack)."""
    for h in reversed(held):
        h.__exit__(None, None, None)


class WaitLoopExecutor(Executor):
    """rclpy ``Executor`` whose ``spin_once`` waits once and runs every callback that wait made ready (see the module
    docstring). Everything else (``add_node``, ``remove_node``, ``wake``, ``shutdown``, ``spin``) is rclpy's."""

    def __init__(self, *, context: Any = None) -> None:
        super().__init__(context=context)
        self._plan: _Plan | None = None
        self._dirty = threading.Event()
        self._dirty.set()

    # rclpy's Node calls wake() on every entity create/destroy; add/remove_node trigger the guard themselves.
    def wake(self) -> None:
        self._dirty.set()
        super().wake()

    def add_node(self, node: Any) -> bool:
        self._dirty.set()
        return super().add_node(node)

    def remove_node(self, node: Any) -> None:
        self._dirty.set()
        super().remove_node(node)

    def _current_plan(self) -> _Plan:
        if self._dirty.is_set() or self._plan is None:
            self._dirty.clear()  # before reading the lists: a change made while we read marks it dirty again
            self._plan = _Plan(self.get_nodes(), self._guard, self._sigint_gc, self._context)
        return self._plan

    def spin_once(self, timeout_sec: float | None = None) -> None:
        """Wait up to ``timeout_sec`` (None: for ever) for work, then run all of it. Raises
        ``ExternalShutdownException`` once the context is shut down, like rclpy's executors."""
        if self._is_shutdown:
            return
        if not self._context.ok():
            raise ExternalShutdownException()
        plan = self._current_plan()
        try:
            held = plan.fill()
        except InvalidHandle:  # destroyed by another thread before its wake() reached us: plan again
            self._dirty.set()
            plan = self._current_plan()
            held = plan.fill()
        timeout_ns = -1 if timeout_sec is None or timeout_sec < 0 else int(timeout_sec * 1e9)
        ws = plan.wait_set
        try:
            ws.wait(timeout_ns)
            waitables_ready = [w for w in plan.waitables if w.is_ready(ws)] if plan.waitables else []
        finally:
            release(held)
        if self._is_shutdown:
            return
        if not self._context.ok():
            raise ExternalShutdownException()
        timers_ready = ws.get_ready_entities("timer")
        subs_ready = ws.get_ready_entities("subscription")
        guards_ready = ws.get_ready_entities("guard_condition")
        clients_ready = ws.get_ready_entities("client")
        services_ready = ws.get_ready_entities("service")
        for w in waitables_ready:  # rclpy's executor yields these first, still inside its wait set's scope
            with w:
                data = w.take_data()
            _run(w.execute(data))
        for ptr in timers_ready:
            tmr = plan.by_timer.get(ptr)
            if tmr is not None:
                self._call_timer(tmr, plan.timer_arg.get(ptr))
        for ptr in subs_ready:
            sub = plan.by_sub.get(ptr)
            if sub is not None:
                self._call_subscription(sub)
        for ptr in guards_ready:
            gc = plan.by_guard.get(ptr)
            if gc is not None and gc.callback is not None:
                _run(gc.callback())
        for ptr in clients_ready:
            cli = plan.by_client.get(ptr)
            if cli is not None:
                self._take_response(cli)
        for ptr in services_ready:
            srv = plan.by_service.get(ptr)
            if srv is not None:
                self._call_service(srv)
        self._run_tasks()

    def _run_tasks(self) -> None:
        """Step the tasks rclpy queued on this executor (``create_task``; a future's done-callbacks), as its
        executors do before each wait."""
        with self._tasks_lock:
            if not self._tasks:
                return
            tasks = [t for t, _entity, _node in self._tasks]
        for task in tasks:
            if not task.executing() and not task.done():
                task()
        with self._tasks_lock:
            self._tasks = [entry for entry in self._tasks if not entry[0].done() and not entry[0].cancelled()]

    def _take_response(self, cli: Any) -> None:
        """A service client's response: completes the future its ``call_async`` returned."""
        try:
            with cli.handle:
                header, response = cli.handle.take_response(cli.srv_type.Response)
        except InvalidHandle:
            return
        if header is None:
            return
        try:
            future = cli.get_pending_request(header.request_id.sequence_number)
        except KeyError:
            return  # the request was cancelled
        future._set_executor(self)
        future.set_result(response)

    def spin_once_until_future_complete(self, future: Any, timeout_sec: float | None = None) -> None:
        """One wake-up (rclpy's ``spin_until_future_complete`` loops on this until ``future`` is done)."""
        self.spin_once(timeout_sec)

    @staticmethod
    def _call_timer(tmr: Any, arg: str | None) -> None:
        try:
            with tmr.handle:
                if not tmr.handle.is_timer_ready():  # rclpy's workaround: rcl reports cancelled timers ready
                    return
                info = tmr.handle.call_timer_with_info()
        except InvalidHandle:
            return  # destroyed by an earlier callback of this wake-up
        if tmr.callback is None:
            return
        if arg is None:
            _run(tmr.callback())
        else:
            _run(tmr.callback(**{arg: TimerInfo(expected_call_time=info["expected_call_time"],
                                                actual_call_time=info["actual_call_time"],
                                                clock_type=tmr.clock.clock_type)}))

    @staticmethod
    def _call_subscription(sub: Any) -> None:
        try:
            with sub.handle:
                got = sub.handle.take_message(sub.msg_type, sub.raw)
        except InvalidHandle:
            return
        if got is None:
            return
        if sub._callback_type is Subscription.CallbackType.MessageOnly:
            _run(sub.callback(got[0]))
        else:
            _run(sub.callback(*got))

    @staticmethod
    def _call_service(srv: Any) -> None:
        try:
            with srv.handle:
                request, header = srv.handle.service_take_request(srv.srv_type.Request)
        except InvalidHandle:
            return
        if header is None:
            return
        srv.send_response(_run(srv.callback(request, srv.srv_type.Response())), header)
