"""The Foxglove bridge's parameters capability: every node's parameters, read and set from a Foxglove client.

Names are ``/node.param``. The cache (``foxglove_params``, pure) is refreshed asynchronously from each node's
parameter services every ``parameter_refresh_period`` and kept current by ``/parameter_events``; clients are answered
from it, never by waiting on a node. Read-only parameters cannot be set, the others are checked against their
descriptor before the node is asked; the new value comes back on ``/parameter_events``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import foxglove
import rclpy
from foxglove.websocket import StatusLevel
from rcl_interfaces.msg import ParameterEvent
from rcl_interfaces.srv import DescribeParameters, GetParameters, ListParameters, SetParameters
from rclpy.client import Client as RosClient
from rclpy.qos import QoSProfile, ReliabilityPolicy

from vasimov_bridge import foxglove_params as fp

SERVICE_TIMEOUT = 5.0  # s: a node that does not answer a parameter request in this time is asked again later


def _result(fut: Any) -> Any:
    """A service future's response, or None if the call failed or was cancelled (the node went away)."""
    try:
        return fut.result()
    except Exception:
        return None


@dataclass
class NodeParams:
    """Parameter service clients of one remote node and the state of the read in flight."""

    list_client: RosClient
    get_client: RosClient
    describe_client: RosClient
    set_client: RosClient
    pending_since: float | None = None
    last_read: float = -1e9


class ParameterProxy:
    """The graph's parameters for Foxglove clients: cache, refresh, and checked sets."""

    def __init__(self, node: Any) -> None:
        self.node = node  # service clients, own parameters, p, count, log_limited, server
        self.fqn = node.get_fully_qualified_name()
        self.params = fp.ParameterCache()
        self.node_params: dict[str, NodeParams] = {}
        node.create_subscription(ParameterEvent, "/parameter_events", self.on_parameter_event,
                                 QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))

    def _status(self, text: str) -> None:
        if self.node.server is not None:
            self.node.server.publish_status(text, StatusLevel.Warning)

    def _own_entries(self) -> list[fp.Entry]:
        n = self.node
        names = sorted(n._parameters)
        descriptors = n.describe_parameters(names)
        return [fp.Entry(self.fqn, name, n._parameters[name].value, d)
                for name, d in zip(names, descriptors, strict=True)]

    def refresh(self) -> None:
        """Executor: re-read every node's parameters (asynchronously; answers arrive as callbacks)."""
        n = self.node
        changed = self.params.replace_node(self.fqn, self._own_entries())
        nodes = {f"{ns.rstrip('/')}/{name}" for name, ns in n.get_node_names_and_namespaces()} - {self.fqn}
        for gone in [g for g in self.node_params if g not in nodes]:
            for c in (self.node_params[gone].list_client, self.node_params[gone].get_client,
                      self.node_params[gone].describe_client, self.node_params[gone].set_client):
                n.destroy_client(c)
            del self.node_params[gone]
            self.params.drop_node(gone)
        now = time.monotonic()
        for node in nodes:
            np_ = self.node_params.get(node)
            if np_ is None:
                np_ = self.node_params[node] = NodeParams(
                    n.create_client(ListParameters, f"{node}/list_parameters"),
                    n.create_client(GetParameters, f"{node}/get_parameters"),
                    n.create_client(DescribeParameters, f"{node}/describe_parameters"),
                    n.create_client(SetParameters, f"{node}/set_parameters"))
            if np_.pending_since is not None and now - np_.pending_since < SERVICE_TIMEOUT:
                continue
            if now - np_.last_read < n.p["parameter_refresh_period"] or not np_.list_client.service_is_ready():
                continue
            np_.pending_since = now
            fut = np_.list_client.call_async(ListParameters.Request())
            fut.add_done_callback(lambda f, node=node: self._on_listed(node, f))
        self._publish_values(changed)

    def _on_listed(self, node: str, fut: Any) -> None:
        np_ = self.node_params.get(node)
        listed = _result(fut)
        if np_ is None or listed is None:
            return
        names = list(listed.result.names)
        got: dict[str, Any] = {}

        def done(kind: str, f: Any) -> None:
            got[kind] = _result(f)
            if len(got) == 2:
                self._on_read(node, names, got["values"], got["descriptors"])

        fv = np_.get_client.call_async(GetParameters.Request(names=names))
        fv.add_done_callback(lambda f: done("values", f))
        fd = np_.describe_client.call_async(DescribeParameters.Request(names=names))
        fd.add_done_callback(lambda f: done("descriptors", f))

    def _on_read(self, node: str, names: list[str], values: Any, descriptors: Any) -> None:
        np_ = self.node_params.get(node)
        if np_ is None:
            return
        np_.pending_since = None
        np_.last_read = time.monotonic()
        if values is None or descriptors is None or len(values.values) != len(names) \
                or len(descriptors.descriptors) != len(names):
            self.node.count("parameter_read_failures")
            return
        entries = [fp.Entry(node, n, fp.from_ros(v), d)
                   for n, v, d in zip(names, values.values, descriptors.descriptors, strict=True)]
        self._publish_values(self.params.replace_node(node, entries))

    def on_parameter_event(self, ev: ParameterEvent) -> None:
        node = ev.node if ev.node.startswith("/") else f"/{ev.node}"
        changed = []
        for prm in [*ev.new_parameters, *ev.changed_parameters]:
            e = self.params.update_value(node, prm.name, fp.from_ros(prm.value))
            if e is not None:
                changed.append(e)
        if ev.new_parameters or ev.deleted_parameters:
            np_ = self.node_params.get(node)
            if np_ is not None:
                np_.last_read = -1e9  # re-read the node's list at the next scan
        self._publish_values(changed)

    def _publish_values(self, entries: list[fp.Entry]) -> None:
        if entries and self.node.server is not None:
            self.node.server.publish_parameter_values([e.to_foxglove() for e in entries])

    def _refuse_oversized(self, n_names: int) -> bool:
        """True (counted, logged once per period, one status) if a request names too many parameters."""
        problem = fp.request_too_large(n_names)
        if problem is None:
            return False
        self.node.count("parameter_request_too_large")
        self.node.log_limited("param:too_many", f"parameter request refused: {problem}")
        self._status(problem)
        return True

    def get(self, names: list[str]) -> list[foxglove.Parameter]:
        """SDK thread: answered from the cache, never by waiting on a node."""
        if self._refuse_oversized(len(names)):
            return []
        return [e.to_foxglove() for e in self.params.select(names)]

    def set(self, requested: list[foxglove.Parameter]) -> list[foxglove.Parameter]:
        """SDK thread: check each request; apply our own at once, send others' to their node (the new value
        comes back on /parameter_events). Answers with the values as they stand now. Refusals are counted one by
        one but reported once per request (one status, one rate-limited log line), so a request naming thousands
        of bad names cannot flood the log or the clients."""
        if self._refuse_oversized(len(requested)):
            return []
        out: list[foxglove.Parameter] = []
        problems: list[str] = []
        for prm in requested:
            entry = self.params.get(prm.name)
            value, problem = fp.validate_set(entry, prm.name, prm.get_value())
            if problem is None and entry is not None:
                problem = self._apply_set(entry, value)
            if problem is not None:
                self.node.count("parameter_set_refused")
                problems.append(problem)
            current = self.params.get(prm.name)
            out.append(current.to_foxglove() if current is not None else foxglove.Parameter(prm.name))
        if problems:
            text = problems[0] + (f" (and {len(problems) - 1} more refused in this request)" if len(problems) > 1
                                  else "")
            self.node.log_limited("param:refused", f"parameter set refused: {text}")
            self._status(text)
        return out

    def _apply_set(self, entry: fp.Entry, value: Any) -> str | None:
        if entry.node == self.fqn:
            result = self.node.set_parameters([rclpy.Parameter(entry.name, value=value)])[0]
            if not result.successful:
                return f"{entry.qname}: {result.reason}"
            self.params.update_value(entry.node, entry.name, value)
            self.node.count("parameter_set_accepted")
            return None
        np_ = self.node_params.get(entry.node)
        if np_ is None or not np_.set_client.service_is_ready():
            return f"{entry.qname}: {entry.node} does not answer parameter requests"
        req = SetParameters.Request(parameters=[
            rclpy.Parameter(entry.name, value=value).to_parameter_msg()])
        fut = np_.set_client.call_async(req)
        fut.add_done_callback(lambda f, q=entry.qname: self._on_remote_set(q, f))
        self.node.count("parameter_set_forwarded")
        return None

    def _on_remote_set(self, qname: str, fut: Any) -> None:
        res = _result(fut)
        if res is None or not res.results or not res.results[0].successful:
            reason = "no answer" if res is None or not res.results else res.results[0].reason
            text = f"{qname}: the node refused the new value: {reason}"
            self.node.count("parameter_set_refused")
            self.node.get_logger().warning(text)
            self._status(text)
