"""A node's requests to another node (its controller, the leader it replicates from):
one connection, one request at a time (concurrent callers take turns).

Requests are described as dicts and answers decoded into named tuples, by the same
codecs the broker serves clients with."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Mapping
from typing import Any, cast

from odradek.broker.cluster import addresses
from odradek.protocol import decoder, encoder, messages
from odradek.protocol.header import skip_tagged_fields

CLIENT_ID = "odradek-node"
API_VERSIONS = 18
MAX_ANSWER = 64 * 1024 * 1024
_HEAD = struct.Struct(">hhih")
SCRATCH = 64 * 1024


class NodeUnreachable(ConnectionError):
    """No answer from the node: not listening, gone, or too slow (`timed_out`: the
    node may still act on the request)."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class _Answers(asyncio.BufferedProtocol):
    """Reads each length-prefixed answer straight into a buffer of its own size: a
    follower's fetch answers are large, and are appended to its log from there
    without a copy in between."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._scratch = bytearray(SCRATCH)  # heads, and what comes along with them
        self._scratched = 0
        self._frame: bytearray | None = None
        self._filled = 0
        self._waiter: asyncio.Future[bytearray] | None = None
        self._failure: Exception | None = None
        self._writable = asyncio.Event()
        self._writable.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._frame is not None:
            return memoryview(self._frame)[self._filled :]
        return memoryview(self._scratch)[self._scratched :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._frame is not None:
            self._filled += nbytes
            if self._filled == len(self._frame):
                frame, self._frame = self._frame, None
                self._deliver(frame)
            return
        self._scratched += nbytes
        if self._scratched < 4:
            return
        (length,) = struct.unpack_from(">i", self._scratch)
        if not 4 <= length <= MAX_ANSWER:
            self._fail(decoder.DecodeError(f"answer of {length} bytes"))
            return
        frame = bytearray(length)
        came = min(self._scratched - 4, length)
        frame[:came] = memoryview(self._scratch)[4 : 4 + came]
        if self._scratched > 4 + came:
            self._fail(decoder.DecodeError("an answer nobody asked for"))
            return
        self._scratched = 0
        if came == length:
            self._deliver(frame)
        else:
            self._frame, self._filled = frame, came

    def _deliver(self, frame: bytearray) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is None or waiter.done():
            self._fail(decoder.DecodeError("an answer nobody asked for"))
        else:
            waiter.set_result(frame)

    def _fail(self, exc: Exception) -> None:
        self._failure = exc
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)
        self._waiter = None
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._writable.set()
        if self._failure is None:
            self._fail(exc or ConnectionResetError("the node closed the connection"))

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    async def ask(self, request: bytes) -> bytearray:
        if self._failure is not None:
            raise self._failure
        assert self.transport is not None
        self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        await self._writable.wait()
        return await self._waiter


class NodeClient:
    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        self.host, self.port, self.timeout_s = host, port, timeout_s
        self._answers: _Answers | None = None
        self._correlation = 0
        self._turn = asyncio.Lock()

    @property
    def connected(self) -> bool:
        return self._answers is not None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def call(
        self,
        api_key: int,
        version: int,
        request: Mapping[str, Any],
        client_id: str = CLIENT_ID,
    ) -> Any:
        async with self._turn:
            try:
                call = self._call(api_key, version, request, client_id)
                return await asyncio.wait_for(call, self.timeout_s)
            except (OSError, TimeoutError, decoder.DecodeError) as exc:
                self.close()
                raise NodeUnreachable(
                    f"node {self.address}: {str(exc) or 'timed out'}",
                    timed_out=isinstance(exc, TimeoutError),
                ) from exc
            except asyncio.CancelledError:
                self.close()  # its answer may still come: the connection is spent
                raise

    async def _call(
        self, api_key: int, version: int, request: Mapping[str, Any], client_id: str
    ) -> Any:
        if self._answers is None:
            loop = asyncio.get_running_loop()
            address = await addresses.peers.resolve(self.host)
            _, self._answers = await loop.create_connection(_Answers, address, self.port)
        self._correlation += 1
        flexible = messages.is_flexible(api_key, version)
        client = client_id.encode()
        head = _HEAD.pack(api_key, version, self._correlation, len(client)) + client
        if flexible:
            head += b"\x00"
        chunks, size = encoder.encode_dict(messages.request_class(api_key, version), request)
        answer = await self._answers.ask(
            struct.pack(">i", len(head) + size) + head + b"".join(chunks)
        )
        (correlation,) = struct.unpack_from(">i", answer)
        if correlation != self._correlation:
            raise decoder.DecodeError("answer to another request")
        # ApiVersions answers with header v0 at every version (a client must read it
        # before it knows what the node speaks)
        flexible_header = flexible and api_key != API_VERSIONS
        body_at = skip_tagged_fields(answer, 4) if flexible_header else 4
        return decoder.decode(messages.response_class(api_key, version), answer, body_at)

    def close(self) -> None:
        if self._answers is not None:
            if self._answers.transport is not None:
                self._answers.transport.close()
            self._answers = None
