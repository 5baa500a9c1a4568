"""The Foxglove bridge's server: the foxglove-sdk WebSocket server, the front that lets every v1 client in, and the
glue between the SDK's threads and the node.

Every Foxglove client connects, whichever name of protocol v1 it offers: the SDK's server accepts only
``foxglove.sdk.v1``, so it listens on a private loopback port behind a front (``foxglove_front``) that accepts
``foxglove.websocket.v1`` too (older Foxglove and Lichtblick builds, ``@foxglove/ws-protocol``) and relays bytes
untouched (``legacy_subprotocol``). Nothing waits on a client: the SDK keeps a bounded queue per client and drops
that client's oldest data when it falls behind; ``SdkLogs`` counts the SDK's "outbox full" reports.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import foxglove
from foxglove.websocket import Capability, ChannelView, Client, ClientChannel

from vasimov_bridge import foxglove_teleop
from vasimov_bridge.foxglove_front import SubprotocolFront

_DROP_REPORT = re.compile(r"outbox for client .* full")
_DROPPED_N = re.compile(r"(\d+) dropped since last warning")


class SdkLogs(logging.Handler):
    """Receives the SDK's log records: counts its per-client "outbox full" (data dropped) reports and passes
    warnings and errors on to the node's logger."""

    def __init__(self, node: Any) -> None:
        super().__init__(level=logging.INFO)
        self.node = node  # count, log_limited

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if _DROP_REPORT.search(text):
                self.node.count("outbox_full_reports")
                m = _DROPPED_N.search(text)
                if m:
                    self.node.count("reported_dropped_messages", int(m.group(1)))
            if record.levelno >= logging.WARNING:
                self.node.log_limited(f"sdk:{record.name}", f"foxglove sdk: {text}")
        except Exception:  # a logging handler must never raise into the SDK's thread
            self.handleError(record)

    def install(self) -> None:
        sdk_logger = logging.getLogger("foxglove")
        sdk_logger.addHandler(self)
        sdk_logger.setLevel(logging.INFO)
        sdk_logger.propagate = False
        foxglove.set_log_level("INFO")

    def uninstall(self) -> None:
        logging.getLogger("foxglove").removeHandler(self)


class Listener:
    """The SDK's callbacks (its threads), routed to the part of the bridge each concerns. Each returns quickly: no
    ROS calls that wait, no locks held long."""

    def __init__(self, topics: Any, inlet: Any, params: Any) -> None:
        self.topics = topics  # foxglove_channels.TopicBridge
        self.inlet = inlet  # foxglove_inlet.TeleopInlet
        self.params = params  # foxglove_param_proxy.ParameterProxy

    def on_subscribe(self, client: Client, channel: ChannelView) -> None:
        self.topics.client_subscribed(client.id, channel.id, True)

    def on_unsubscribe(self, client: Client, channel: ChannelView) -> None:
        self.topics.client_subscribed(client.id, channel.id, False)

    def on_client_advertise(self, client: Client, channel: ClientChannel) -> None:
        self.inlet.client_advertised(client.id, channel)

    def on_client_unadvertise(self, client: Client, client_channel_id: int) -> None:
        self.inlet.client_unadvertised(client.id, client_channel_id)

    def on_message_data(self, client: Client, client_channel_id: int, data: bytes) -> None:
        self.inlet.client_message(client.id, client_channel_id, data)

    def on_get_parameters(self, client: Client, param_names: list[str],
                          request_id: str | None = None) -> list[foxglove.Parameter]:
        return self.params.get(param_names)

    def on_set_parameters(self, client: Client, parameters: list[foxglove.Parameter],
                          request_id: str | None = None) -> list[foxglove.Parameter]:
        return self.params.set(parameters)

    def on_parameters_subscribe(self, param_names: list[str]) -> None:
        return None

    def on_parameters_unsubscribe(self, param_names: list[str]) -> None:
        return None


def start_server(p: dict[str, Any], listener: Listener, context: foxglove.Context, *, info: Any, warn: Any,
                 count: Any) -> tuple[Any, SubprotocolFront | None]:
    """The SDK's server on host:port, or (legacy_subprotocol) on a free loopback port behind the front.
    Raises RuntimeError/OSError when the address is taken or unresolvable."""
    legacy = bool(p["legacy_subprotocol"])
    server = foxglove.start_server(
        name="vasimov",
        host="127.0.0.1" if legacy else p["host"],
        port=0 if legacy else p["port"],
        capabilities=[Capability.ClientPublish, Capability.Parameters, Capability.Time],
        server_listener=listener,
        supported_encodings=list(foxglove_teleop.CLIENT_ENCODINGS),
        context=context,
        message_backlog_size=p["message_backlog_size"],
    )
    if not legacy:
        return server, None
    try:
        front = SubprotocolFront(p["host"], p["port"], int(server.port), info=info, warn=warn, count=count)
    except OSError:
        server.stop()
        raise
    return server, front
