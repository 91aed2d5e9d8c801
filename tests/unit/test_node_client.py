"""A node's client of another node reads answers from the wire whole, however the
bytes arrive, and gives up with NodeUnreachable (closing the connection) on an
answer it cannot trust: too large, cut short, unasked for, or too slow.

The other node here is a socket that sends scripted bytes."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable

import pytest

from odradek.broker.cluster.node_client import MAX_ANSWER, NodeClient, NodeUnreachable
from odradek.protocol import encoder, messages

FETCH = 1
Script = Callable[[asyncio.StreamWriter, int], Awaitable[None]]


def fetch_answer(correlation: int, records: bytes) -> bytes:
    """A whole Fetch v12 answer frame with one partition holding `records`."""
    body = {
        "throttle_time": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": [
            {
                "topic": "orders",
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "high_watermark": 5,
                        "last_stable_offset": 5,
                        "log_start_offset": 0,
                        "aborted_transactions": None,
                        "preferred_read_replica": -1,
                        "records": records,
                    }
                ],
            }
        ],
    }
    chunks, _ = encoder.encode_dict(messages.response_class(FETCH, 12), body)
    payload = struct.pack(">i", correlation) + b"\x00" + b"".join(bytes(c) for c in chunks)
    return struct.pack(">i", len(payload)) + payload


FETCH_REQUEST = {
    "replica_id": 2,
    "max_wait": 500,
    "min_bytes": 1,
    "max_bytes": 1 << 20,
    "isolation_level": 0,
    "session_id": 0,
    "session_epoch": -1,
    "topics": [
        {
            "topic": "orders",
            "partitions": [
                {
                    "partition": 0,
                    "current_leader_epoch": 0,
                    "fetch_offset": 0,
                    "log_start_offset": -1,
                    "partition_max_bytes": 1 << 20,
                }
            ],
        }
    ],
}


async def serve(script: Script) -> tuple[asyncio.Server, int]:
    """A socket that reads each request and answers with `script(writer, correlation)`."""

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                request = await reader.readexactly(size)
                await script(writer, struct.unpack_from(">i", request, 4)[0])
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client left, or the test is over
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def ask(script: Script, calls: int = 1, timeout_s: float = 5.0) -> list[object]:
    server, port = await serve(script)
    client = NodeClient("127.0.0.1", port, timeout_s)
    try:
        return [await client.call(FETCH, 12, FETCH_REQUEST) for _ in range(calls)]
    finally:
        client.close()
        server.close()


def records_of(answer: object) -> bytes:
    return bytes(answer.responses[0].partitions[0].records)  # type: ignore[attr-defined]


async def test_an_answer_in_pieces_of_any_size_is_read_whole() -> None:
    records = bytes(range(256)) * 4096  # 1 MiB: longer than any one read

    async def dribble(writer: asyncio.StreamWriter, correlation: int) -> None:
        frame = fetch_answer(correlation, records)
        for cut in (1, 2, 3, 5, 70, 4096):  # the length prefix itself arrives split
            writer.write(frame[:cut])
            frame = frame[cut:]
            await writer.drain()
            await asyncio.sleep(0.001)
        writer.write(frame)

    answers = await ask(dribble, calls=3)
    assert [records_of(answer) for answer in answers] == [records] * 3


async def test_an_answer_longer_than_the_limit_is_refused() -> None:
    async def huge(writer: asyncio.StreamWriter, correlation: int) -> None:
        writer.write(struct.pack(">ii", MAX_ANSWER + 1, correlation))

    with pytest.raises(NodeUnreachable, match="answer of"):
        await ask(huge)


async def test_an_answer_cut_short_by_the_peer_closing_is_refused() -> None:
    async def cut(writer: asyncio.StreamWriter, correlation: int) -> None:
        writer.write(fetch_answer(correlation, b"x" * 1000)[:500])
        await writer.drain()
        writer.close()

    with pytest.raises(NodeUnreachable):
        await ask(cut)


async def test_an_answer_nobody_asked_for_is_refused() -> None:
    async def twice(writer: asyncio.StreamWriter, correlation: int) -> None:
        writer.write(fetch_answer(correlation, b"") * 2)

    with pytest.raises(NodeUnreachable, match="nobody asked for"):
        await ask(twice)


async def test_an_answer_to_another_request_is_refused() -> None:
    async def other(writer: asyncio.StreamWriter, correlation: int) -> None:
        writer.write(fetch_answer(correlation + 7, b""))

    with pytest.raises(NodeUnreachable, match="another request"):
        await ask(other)


async def test_no_answer_within_the_timeout_gives_up_and_a_new_call_reconnects() -> None:
    calls: list[int] = []

    async def late_once(writer: asyncio.StreamWriter, correlation: int) -> None:
        calls.append(correlation)
        if len(calls) > 1:
            writer.write(fetch_answer(correlation, b"abc"))

    server, port = await serve(late_once)
    client = NodeClient("127.0.0.1", port, 0.3)
    try:
        with pytest.raises(NodeUnreachable, match="timed out"):
            await client.call(FETCH, 12, FETCH_REQUEST)
        assert not client.connected
        assert records_of(await client.call(FETCH, 12, FETCH_REQUEST)) == b"abc"
    finally:
        client.close()
        server.close()
