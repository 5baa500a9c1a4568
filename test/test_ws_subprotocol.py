"""The handshake rewriting that lets clients offering either name of Foxglove protocol v1 in (pure, no sockets)."""

from __future__ import annotations

import pytest

from vasimov_bridge import ws_subprotocol as wsp

SDK, LEGACY = wsp.SDK_NAME, wsp.LEGACY_NAME


def _request(*protocol_lines: str) -> bytes:
    lines = ["GET / HTTP/1.1", "Host: 127.0.0.1:8765", "Upgrade: websocket", "Connection: Upgrade",
             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
             *[f"Sec-WebSocket-Protocol: {p}" for p in protocol_lines]]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _response(name: str | None, status: str = "101 Switching Protocols") -> bytes:
    lines = [f"HTTP/1.1 {status}", "connection: Upgrade", "upgrade: websocket",
             "sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="]
    if name is not None:
        lines.append(f"sec-websocket-protocol: {name}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.mark.parametrize(("lines", "offered", "aliased"), [
    ((LEGACY,), (LEGACY,), True),  # Lichtblick before it learned the new name, @foxglove/ws-protocol
    ((SDK,), (SDK,), False),
    ((f"{SDK}, {LEGACY}",), (SDK, LEGACY), False),  # current Foxglove: the SDK chooses, untouched
    ((LEGACY, SDK), (LEGACY, SDK), False),  # two header lines
    ((f"  {LEGACY} ,foxglove.sdk.v1.1",), (LEGACY, "foxglove.sdk.v1.1"), True),
    (("foxglove.websocket.v2",), ("foxglove.websocket.v2",), False),  # not ours: the SDK's own 400
    ((), (), False),
])
def test_only_a_client_offering_the_old_name_without_the_new_one_gets_the_new_one_appended(lines, offered,
                                                                                           aliased):
    head = _request(*lines)
    req = wsp.rewrite_request(head)
    assert req.offered == offered and req.aliased is aliased
    if aliased:
        assert wsp.offered_names(req.head) == (*offered, SDK)
        assert req.head.startswith(head[:-2]) and req.head.endswith(b"\r\n\r\n")
    else:
        assert req.head == head


def test_header_names_are_case_insensitive():
    head = _request().replace(b"\r\n\r\n", f"\r\nsec-websocket-PROTOCOL: {LEGACY}\r\n\r\n".encode())
    assert wsp.rewrite_request(head).aliased


@pytest.mark.parametrize(("offer", "server_chose", "client_sees"), [
    ((LEGACY,), SDK, LEGACY),  # the appended name, chosen: the client gets back the one it offered
    ((LEGACY, "foxglove.sdk.v1.1"), "foxglove.sdk.v1.1", "foxglove.sdk.v1.1"),  # a name the client offered
    ((SDK,), SDK, SDK),
    ((f"{LEGACY}, {SDK}",), SDK, SDK),
])
def test_the_client_gets_back_exactly_one_name_it_offered(offer, server_chose, client_sees):
    req = wsp.rewrite_request(_request(*offer))
    out = wsp.rewrite_response(_response(server_chose), req)
    assert wsp.chosen_name(out) == client_sees
    assert client_sees in req.offered
    assert wsp.status_code(out) == 101
    assert b"sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" in out  # depends on the key only: untouched


def test_a_refusal_passes_untouched():
    req = wsp.rewrite_request(_request("foxglove.websocket.v2"))
    refusal = b"HTTP/1.1 400 Bad Request\r\n\r\n"
    assert wsp.rewrite_response(refusal, req) == refusal
    assert wsp.status_code(refusal) == 400 and wsp.chosen_name(refusal) is None


def test_split_head_waits_for_the_blank_line_and_keeps_what_follows():
    head = _request(SDK)
    assert wsp.split_head(head[:-1]) is None
    assert wsp.split_head(head + b"\x81\x00") == (head, b"\x81\x00")


@pytest.mark.parametrize("buffer", [
    b"GET / HTTP/1.1\r\n" + b"X-Pad: " + b"a" * wsp.MAX_HEAD_BYTES,  # never ends
    b"GET / HTTP/1.1\r\nX-Pad: " + b"a" * wsp.MAX_HEAD_BYTES + b"\r\n\r\n",  # ends too late
])
def test_an_endless_head_is_refused_with_431(buffer):
    with pytest.raises(wsp.HandshakeError) as err:
        wsp.split_head(buffer)
    assert err.value.status == 431


def test_status_code_of_something_that_is_not_http_is_none():
    assert wsp.status_code(b"garbage\r\n\r\n") is None
