"""Plain HTTP on the broker's own listeners, for the faults' control endpoint
(broker/faults/injector.py), so that a test in any language reaches it where its
clients reach the broker (`curl -X POST localhost:9092/faults -d '{...}'`). A
connection whose first bytes are an HTTP request line is handed here; it is answered
once and closed.

Parsing is sans-IO (`parse_request`, `response`); `HttpExchange` is the asyncio side."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

METHODS = (b"GET ", b"POST ", b"PUT ", b"DELETE ", b"HEAD ", b"PATCH ", b"OPTIONS ")
MAX_REQUEST = 64 * 1024  # a fault is a small JSON object


class BadRequest(ValueError):
    pass


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    body: bytes


def looks_like_http(first: bytes) -> bool:
    """Could these first bytes of a connection be an HTTP request line? (A Kafka frame
    starts with its size: these would be sizes of a gigabyte and more.)"""
    return any(first.startswith(m) or m.startswith(first) for m in METHODS) and len(first) >= 4


def parse_request(data: bytes) -> HttpRequest | None:
    """The request, once `data` holds all of it (None: more to come)."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        if len(data) > MAX_REQUEST:
            raise BadRequest("request head too large")
        return None
    head = data[:end].decode("latin-1").split("\r\n")
    parts = head[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest("not an HTTP/1.x request line")
    length = 0
    for line in head[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise BadRequest("bad Content-Length") from None
        elif name.strip().lower() == "transfer-encoding":
            raise BadRequest("send the body with a Content-Length")
    if not 0 <= length <= MAX_REQUEST:
        raise BadRequest("request body too large")
    body = data[end + 4 : end + 4 + length]
    if len(body) < length:
        return None
    return HttpRequest(parts[0], parts[1].split("?")[0].rstrip("/") or "/", body)


REASONS = {200: "OK", 201: "Created", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
           405: "Method Not Allowed", 413: "Payload Too Large"}  # fmt: skip


def response(status: int, document: Any) -> bytes:
    body = (json.dumps(document, indent=1) + "\n").encode()
    head = (
        f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


# answers one request: (status, JSON document), at once or when awaited
Answer = tuple[int, Any]
Route = Callable[[HttpRequest], Answer | Awaitable[Answer]]


class HttpExchange:
    """One HTTP request and its answer on a connection the broker took over."""

    def __init__(self, route: Route, on_closed: Callable[[], None]) -> None:
        self._route = route
        self._on_closed = on_closed
        self._data = bytearray()
        self._transport: Any = None
        self._answered = False
        self._pending: asyncio.Future[Answer] | None = None

    def start(self, transport: Any, first: bytes) -> None:
        self._transport = transport
        transport.set_protocol(self)
        self.data_received(first)

    def connection_made(self, transport: Any) -> None:  # (set_protocol does not call it)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        if self._answered:
            return
        self._data += data
        try:
            request = parse_request(bytes(self._data))
        except BadRequest as exc:
            self._answer(400, {"error": str(exc)})
            return
        if request is None:
            return
        try:
            answer = self._route(request)
        except Exception as exc:  # a broken route answers, never kills the broker
            self._answer(500, {"error": f"{type(exc).__name__}: {exc}"})
            return
        if isinstance(answer, tuple):
            self._answer(*answer)
            return
        self._answered = True  # (anything more the client sends is not read)
        self._pending = asyncio.ensure_future(answer)
        self._pending.add_done_callback(self._answer_when_done)

    def _answer_when_done(self, done: asyncio.Future[tuple[int, Any]]) -> None:
        if done.cancelled():
            return
        error = done.exception()
        if error is not None:
            self._write(500, {"error": f"{type(error).__name__}: {error}"})
        else:
            self._write(*done.result())

    def _answer(self, status: int, document: Any) -> None:
        self._answered = True
        self._write(status, document)

    def _write(self, status: int, document: Any) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(response(status, document))
            self._transport.close()

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_closed()

    def pause_writing(self) -> None:
        pass

    def resume_writing(self) -> None:
        pass
