"""Checks `vasimov up` makes before it starts a node: are the ports the graph will listen on free?

Why: a port already taken used to surface as one node's start-up error in the middle of the graph's output (the SDK
bridge's `OSError`, or the Foxglove bridge's), after every other node had started; the commonest cause is a second
`make run` / `vasimov up` beside a running one. Checked here first, the user gets one message that names the port,
the launch argument that moves it, and whether the holder is another twin, and nothing starts.

The rules are pure (`planned_ports`, `conflict_message`); `port_taken` and `twin_answering` are the only two that
touch sockets. A check like this is advisory: a port can still be taken between the check and the node's bind, in
which case the node's own error (exit code 2) still says so.
"""

from __future__ import annotations

import errno
import http.client
import json
import socket
from dataclasses import dataclass

SECOND_TWIN_ARGS = ("namespace:=robot1 sdk_command_port:=9850 sdk_state_port:=9851 sdk_http_port:=4000 "
                    "foxglove_port:=9765 binary_port:=9766")
BINARY_HOST = "127.0.0.1"  # the binary stream's bind_host lives in config/binary_stream.yaml, not in a launch argument


@dataclass(frozen=True)
class Port:
    """A socket the graph will listen on."""

    proto: str  # "tcp" or "udp"
    host: str
    port: int
    what: str  # who listens there
    arg: str  # the launch argument that moves it


def _on(value: str) -> bool:
    return value.strip().lower() in ("true", "1", "yes", "on")


def planned_ports(args: dict[str, str]) -> list[Port]:
    """The fixed ports a launch with these (resolved) arguments will listen on; port 0 (any free one) is left out."""
    bind = args.get("sdk_bind_host", "127.0.0.1")
    ports = [
        Port("udp", bind, int(args.get("sdk_command_port", "8850")), "the SDK command socket, where menlo-sdk sends",
             "sdk_command_port"),
        Port("tcp", bind, int(args.get("sdk_http_port", "3000")), "the robot's HTTP API", "sdk_http_port"),
    ]
    if _on(args.get("foxglove", "true")):
        ports.append(Port("tcp", args.get("foxglove_host", "127.0.0.1"), int(args.get("foxglove_port", "8765")),
                          "the Foxglove WebSocket server", "foxglove_port"))
    if _on(args.get("binary_stream", "true")):
        ports.append(Port("tcp", BINARY_HOST, int(args.get("binary_port", "8766")), "the binary stream WebSocket",
                          "binary_port"))
    return [p for p in ports if p.port != 0]


def port_taken(p: Port) -> bool:
    """Whether binding `p` fails because the address is in use (a TCP socket in TIME_WAIT does not count: the nodes
    bind with SO_REUSEADDR too)."""
    kind = socket.SOCK_STREAM if p.proto == "tcp" else socket.SOCK_DGRAM
    family = socket.AF_INET6 if ":" in p.host else socket.AF_INET
    with socket.socket(family, kind) as s:
        if p.proto == "tcp":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((p.host, p.port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def twin_answering(host: str, port: int, timeout: float = 1.0) -> str | None:
    """The robot model a server on host:port gives for the SDK's version check (a twin or a robot), else None."""
    try:
        conn = http.client.HTTPConnection("127.0.0.1" if host in ("0.0.0.0", "") else host, port, timeout=timeout)
        try:
            conn.request("GET", "/api/version")
            body = conn.getresponse().read()
        finally:
            conn.close()
        model = json.loads(body).get("robot_model")
    except (OSError, http.client.HTTPException, ValueError, AttributeError):
        return None
    return str(model) if model else None


def conflict_message(taken: list[Port], twin_model: str | None) -> str:
    """What happened and what to do, for the ports found in use (non-empty); `twin_model` is what answered the
    version check on the HTTP port, if anything did."""
    lines = ["vasimov up: cannot start: " + ", ".join(f"{p.port}/{p.proto} ({p.what})" for p in taken)
             + (" is" if len(taken) == 1 else " are") + " already in use."]
    if twin_model is not None:
        lines.append(f"A twin is already running on this machine (it answers the SDK's version check as "
                     f"{twin_model!r}): a second `make run` or `vasimov up` is not needed. Use the running one, "
                     "or stop it (Ctrl-C in its terminal) and start again.")
        lines.append(f"To run a second twin beside it, give it its own ports: vasimov up {SECOND_TWIN_ARGS}")
    else:
        lines.append("Another program holds " + ("it" if len(taken) == 1 else "them") + ". Find it with: "
                     + "; ".join(f"ss -{'t' if p.proto == 'tcp' else 'u'}lnp 'sport = :{p.port}'" for p in taken))
        lines.append("Stop it, or move the twin: vasimov up " + " ".join(f"{p.arg}:=PORT" for p in taken)
                     + " (a client must then use that port too)")
    return "\n".join(lines)


def check_ports(args: dict[str, str]) -> str | None:
    """The message to print when a port the graph needs is taken, else None."""
    ports = planned_ports(args)
    taken = [p for p in ports if port_taken(p)]
    if not taken:
        return None
    http_port = next(p for p in ports if p.arg == "sdk_http_port")
    return conflict_message(taken, twin_answering(http_port.host, http_port.port))
