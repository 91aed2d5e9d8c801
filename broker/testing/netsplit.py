"""Network partitions for tests: a TCP proxy per directed link between two nodes.

    links = Netsplit()
    link = links.add(source=1, target=2, upstream=("127.0.0.1", 9093))
    connect_node_1_to(link.port)                 # node 1 reaches node 2 through it
    link.cut()                                   # blackhole: bytes stop, sockets stay open
    link.cut(mode="reset")                       # every connection reset, new ones too
    link.heal()
    links.close()

A link carries the connections one node opens to another's listener, both ways: cut
it, and neither the requests nor their answers pass. Connections the other node opens
to the first go through the link the other way, so a full partition between two
nodes cuts both (``Cluster.cut`` does).

Two ways to cut:
- ``blackhole`` (the default) is what a real partition looks like: nothing is
  forwarded, but no socket is closed. Requests time out; bytes read before the cut
  wait in the proxy and, like a TCP retransmission, go through on ``heal()`` if the
  connection is still open then. A connection opened meanwhile is accepted and held
  without an upstream one (as a SYN nobody answers), and connected on ``heal()``.
- ``reset``: every connection of the link is reset (RST, both sides), and new ones
  are reset as soon as they are accepted, until ``heal()``.

All proxies run on one event loop in one daemon thread; ``cut`` and ``heal`` return
once the link is in its new state. ``Cluster(proxied=True)`` puts a link between every
pair of nodes that talk (broker/testing/cluster.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import Coroutine
from typing import Any, Literal, TypeVar

Mode = Literal["blackhole", "reset"]
CHUNK = 64 * 1024
T = TypeVar("T")


class Link:
    """One directed link: the connections `source` opens to `upstream` (a listener of
    `target`), through a proxy listening on `port`."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, source: int, target: int, upstream: tuple[str, int]
    ) -> None:
        self._loop = loop
        self.source, self.target, self.upstream = source, target, upstream
        self.port = 0
        self.mode: Mode | None = None  # None: forwarding
        self.connections = 0  # accepted so far
        self.forwarded = 0  # bytes, both ways
        self._open = asyncio.Event()
        self._open.set()
        self._server: asyncio.Server | None = None
        self._pairs: set[_Pair] = set()

    @property
    def is_cut(self) -> bool:
        return self.mode is not None

    def cut(self, mode: Mode = "blackhole") -> None:
        self._run(self._cut(mode))

    def heal(self) -> None:
        self._run(self._heal())

    def __repr__(self) -> str:
        state = f"cut ({self.mode})" if self.mode else "open"
        return f"<Link {self.source}->{self.target} :{self.port}->{self.upstream[1]} {state}>"

    def _run(self, step: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(step, self._loop).result()

    # -- on the proxies' loop --------------------------------------------------------

    async def _start(self, host: str) -> None:
        self._server = await asyncio.start_server(self._accept, host, 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _cut(self, mode: Mode) -> None:
        self.mode = mode
        self._open.clear()
        if mode == "reset":
            for pair in list(self._pairs):
                pair.reset()

    async def _heal(self) -> None:
        self.mode = None
        self._open.set()

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        pairs = list(self._pairs)
        for pair in pairs:
            pair.reset()
        await asyncio.gather(*(pair.task for pair in pairs), return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        if self.mode == "reset":
            _reset(writer)
            return
        task = asyncio.current_task()
        assert task is not None
        pair = _Pair(writer, task)
        self._pairs.add(pair)
        try:
            await self._forward(pair, reader)
        except asyncio.CancelledError:
            pass  # reset: the sockets are closed already
        finally:
            self._pairs.discard(pair)
            pair.close()

    async def _forward(self, pair: _Pair, reader: asyncio.StreamReader) -> None:
        await self._open.wait()  # blackholed: held until heal()
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            _reset(pair.downstream)  # the node itself is down: refused, as without the proxy
            return
        pair.upstream = up_writer
        pumps = [
            asyncio.ensure_future(self._pump(reader, up_writer)),
            asyncio.ensure_future(self._pump(up_reader, pair.downstream)),
        ]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while True:
                await self._open.wait()
                data = await source.read(CHUNK)
                if not data:
                    return
                await self._open.wait()  # cut after the read: held until heal()
                self.forwarded += len(data)
                sink.write(data)
                await sink.drain()


class _Pair:
    """The two sockets of one proxied connection."""

    def __init__(self, downstream: asyncio.StreamWriter, task: asyncio.Task[None]) -> None:
        self.downstream = downstream
        self.upstream: asyncio.StreamWriter | None = None
        self.task = task  # the one forwarding it

    def reset(self) -> None:
        for writer in (self.downstream, self.upstream):
            if writer is not None:
                _reset(writer)
        self.task.cancel()

    def close(self) -> None:
        for writer in (self.downstream, self.upstream):
            if writer is not None:
                writer.close()


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with an RST rather than a FIN (linger on, timeout zero)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class Netsplit:
    """The links of a test, their proxies on one event loop in a thread of its own."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.links: dict[tuple[int, int], Link] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="netsplit", daemon=True)
        self._thread.start()

    def add(self, source: int, target: int, upstream: tuple[str, int]) -> Link:
        """A proxy for `source`'s connections to `target` at `upstream`: connect to its
        ``port`` instead."""
        link = Link(self._loop, source, target, upstream)
        link._run(link._start(self.host))
        self.links[source, target] = link
        return link

    def link(self, source: int, target: int) -> Link:
        return self.links[source, target]

    def heal(self) -> None:
        for link in self.links.values():
            if link.is_cut:
                link.heal()

    def close(self) -> None:
        if self._loop.is_closed():
            return
        for link in self.links.values():
            link._run(link._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> Netsplit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
