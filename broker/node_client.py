"""A node's requests to another node (its controller, the leader it replicates from):
one connection, one request at a time (concurrent callers take turns).

Requests are described as dicts and answers decoded into named tuples, by the same
codecs the broker serves clients with."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Mapping
from typing import Any

from protocol import decoder, encoder, messages
from protocol.header import skip_tagged_fields

CLIENT_ID = "odradek-node"
MAX_ANSWER = 64 * 1024 * 1024
_HEAD = struct.Struct(">hhih")


class NodeUnreachable(ConnectionError):
    """No answer from the node: not listening, gone, or too slow."""


class NodeClient:
    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        self.host, self.port, self.timeout_s = host, port, timeout_s
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._correlation = 0
        self._turn = asyncio.Lock()

    @property
    def connected(self) -> bool:
        return self._streams is not None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def call(self, api_key: int, version: int, request: Mapping[str, Any]) -> Any:
        async with self._turn:
            try:
                call = self._call(api_key, version, request)
                return await asyncio.wait_for(call, self.timeout_s)
            except (OSError, TimeoutError, asyncio.IncompleteReadError, decoder.DecodeError) as exc:
                self.close()
                raise NodeUnreachable(f"node {self.address}: {exc or 'timed out'}") from exc
            except asyncio.CancelledError:
                self.close()  # its answer may still come: the connection is spent
                raise

    async def _call(self, api_key: int, version: int, request: Mapping[str, Any]) -> Any:
        if self._streams is None:
            self._streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self._streams
        self._correlation += 1
        flexible = messages.is_flexible(api_key, version)
        client = CLIENT_ID.encode()
        head = _HEAD.pack(api_key, version, self._correlation, len(client)) + client
        if flexible:
            head += b"\x00"
        chunks, size = encoder.encode_dict(messages.request_class(api_key, version), request)
        writer.write(struct.pack(">i", len(head) + size) + head + b"".join(chunks))
        await writer.drain()
        (length,) = struct.unpack(">i", await reader.readexactly(4))
        if not 4 <= length <= MAX_ANSWER:
            raise decoder.DecodeError(f"answer of {length} bytes")
        answer = await reader.readexactly(length)
        (correlation,) = struct.unpack_from(">i", answer)
        if correlation != self._correlation:
            raise decoder.DecodeError("answer to another request")
        body_at = skip_tagged_fields(answer, 4) if flexible else 4
        return decoder.decode(messages.response_class(api_key, version), answer, body_at)

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None
