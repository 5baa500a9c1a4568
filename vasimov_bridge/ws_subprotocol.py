"""The WebSocket opening handshake, read and rewritten so one Foxglove server answers both names of protocol v1.

The Foxglove WebSocket protocol v1 was negotiated as ``foxglove.websocket.v1`` until foxglove-sdk renamed it
``foxglove.sdk.v1``; the messages are the same. The SDK's server (0.30) answers HTTP 400 to a client that offers
only the old name: every Lichtblick release before it learned the new one, the ``@foxglove/ws-protocol``
JavaScript client, roslibjs-foxglove and older Foxglove Studio builds. The SDK has no option for it, so the
bridge's front (``foxglove_front``) passes each handshake through these functions on its way to the SDK:

* request: a client that offers ``foxglove.websocket.v1`` but not ``foxglove.sdk.v1`` gets ``foxglove.sdk.v1``
  appended to its offer (an extra ``Sec-WebSocket-Protocol`` line); every other request passes untouched, so the
  SDK keeps choosing among the names it knows (today also ``foxglove.sdk.v1.1``) and keeps its own 400 for
  clients it cannot serve.
* response: where the name was appended and the SDK chose it, the answer names ``foxglove.websocket.v1`` instead,
  because a client must get back exactly one of the names it offered (RFC 6455 4.1) or it drops the connection.

Pure: bytes in, bytes out, no sockets. ``Sec-WebSocket-Accept`` depends only on the client's key, so nothing else
in the handshake changes.
"""

from __future__ import annotations

from dataclasses import dataclass

SDK_NAME = "foxglove.sdk.v1"  # what foxglove-sdk's server accepts
LEGACY_NAME = "foxglove.websocket.v1"  # the same protocol under the name older clients offer
HEADER = "sec-websocket-protocol"
HEAD_END = b"\r\n\r\n"
MAX_HEAD_BYTES = 16384  # a handshake head longer than this is refused (431), not buffered without end


class HandshakeError(ValueError):
    """A handshake head that cannot be read; ``status`` is the HTTP status to refuse it with."""

    def __init__(self, text: str, status: int = 400) -> None:
        super().__init__(text)
        self.status = status


@dataclass(frozen=True)
class Request:
    """A client's handshake head as it goes to the SDK, and what the front did to it."""

    head: bytes  # to send upstream, ending in HEAD_END
    offered: tuple[str, ...]  # the subprotocol names the client offered, in its order
    aliased: bool  # SDK_NAME was appended on the client's behalf


def split_head(buffer: bytes) -> tuple[bytes, bytes] | None:
    """(head including its blank line, bytes after it) once the head is complete, else None (read more).
    Raises HandshakeError when the head grows past MAX_HEAD_BYTES."""
    end = buffer.find(HEAD_END)
    if end < 0:
        if len(buffer) > MAX_HEAD_BYTES:
            raise HandshakeError(f"no end of the handshake head within {MAX_HEAD_BYTES} bytes", 431)
        return None
    if end + len(HEAD_END) > MAX_HEAD_BYTES:
        raise HandshakeError(f"handshake head of {end + len(HEAD_END)} bytes (limit {MAX_HEAD_BYTES})", 431)
    return buffer[:end + len(HEAD_END)], buffer[end + len(HEAD_END):]


def _lines(head: bytes) -> list[str]:
    text = head.decode("latin-1")
    if not text.endswith("\r\n\r\n"):
        raise HandshakeError("a handshake head ends with an empty line")
    return text[:-4].split("\r\n")


def _header_values(lines: list[str], name: str) -> list[str]:
    """Every comma-separated value of every header ``name`` (case-insensitive), trimmed, in order."""
    out: list[str] = []
    for line in lines[1:]:
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == name:
            out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


def offered_names(head: bytes) -> tuple[str, ...]:
    """The subprotocol names a client's handshake head offers, in its order."""
    return tuple(_header_values(_lines(head), HEADER))


def rewrite_request(head: bytes) -> Request:
    """The head to send to the SDK: SDK_NAME appended when the client offers only the legacy name of v1."""
    lines = _lines(head)
    offered = tuple(_header_values(lines, HEADER))
    if LEGACY_NAME not in offered or SDK_NAME in offered:
        return Request(head, offered, aliased=False)
    text = "\r\n".join([*lines, f"Sec-WebSocket-Protocol: {SDK_NAME}"]) + "\r\n\r\n"
    return Request(text.encode("latin-1"), offered, aliased=True)


def chosen_name(head: bytes) -> str | None:
    """The subprotocol a server's response head names (None if it names none)."""
    values = _header_values(_lines(head), HEADER)
    return values[0] if len(values) == 1 else None


def rewrite_response(head: bytes, request: Request) -> bytes:
    """The SDK's response head as the client must see it: where the front appended SDK_NAME and the SDK chose
    it, the legacy name the client offered. Anything else (other names, a 400) passes untouched."""
    if not request.aliased:
        return head
    lines = _lines(head)
    out = []
    for line in lines:
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == HEADER and value.strip() == SDK_NAME:
            line = f"{key}: {LEGACY_NAME}"
        out.append(line)
    return ("\r\n".join(out) + "\r\n\r\n").encode("latin-1")


def status_code(head: bytes) -> int | None:
    """The status of an HTTP response head (``HTTP/1.1 101 ...`` -> 101), None if it is not one."""
    parts = _lines(head)[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        return None
    return int(parts[1])
