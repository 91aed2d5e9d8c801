"""The control endpoint's HTTP, sans-IO: what is a request, what is not, and the
bounds on what the broker reads."""

from __future__ import annotations

import pytest

from odradek.broker.network.http_exchange import (
    MAX_REQUEST,
    BadRequest,
    looks_like_http,
    parse_request,
    response,
)


def test_a_request_with_its_body() -> None:
    raw = b"POST /faults/ HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
    request = parse_request(raw)
    assert request is not None
    assert (request.method, request.path, request.body) == ("POST", "/faults", b"{}")
    assert parse_request(raw[:-1]) is None  # the body not all there yet
    assert parse_request(b"GET /faults HTTP/1.1\r\nHost: x") is None


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"GET /faults\r\n\r\n", "not an HTTP/1.x request line"),
        (b"POST /faults HTTP/1.1\r\nContent-Length: x\r\n\r\n", "bad Content-Length"),
        (b"POST /f HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n", "too large"),
        (b"POST /f HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "Content-Length"),
        (b"GET /" + b"a" * MAX_REQUEST, "too large"),
    ],
)
def test_what_is_refused(raw: bytes, reason: str) -> None:
    with pytest.raises(BadRequest, match=reason):
        parse_request(raw)


def test_only_a_request_line_is_taken_for_http() -> None:
    assert looks_like_http(b"GET ") and looks_like_http(b"POST") and looks_like_http(b"DELETE /")
    assert not looks_like_http(b"\x00\x00\x00\x10")  # a Kafka frame's size
    assert not looks_like_http(b"GETX")


def test_an_answer() -> None:
    raw = response(403, {"error": "off"})
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 403 Forbidden\r\n")
    assert f"Content-Length: {len(body)}".encode() in head
