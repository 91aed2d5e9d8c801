"""One client connection: frames in, responses out, in request order.

Bytes are received straight into buffers the request is later decoded from
(asyncio's BufferedProtocol): small frames are cut out of a shared receive
buffer, a large frame (a Produce of big batches) gets a buffer of its own that
the socket fills directly, so its record batches are never copied before they
reach the log. The size prefix is checked against `socket.request.max.bytes`
(`sasl.server.max.receive.size` before a SASL login) before anything that size is
allocated.

A connection costs little until it sends something: the shared buffer is
allocated small when bytes first arrive, grows when a frame does not fit, and is
let go once the connection has been quiet for a while (`shrink_if_idle`, called
by the broker).

Requests are handled one at a time, like Kafka does per connection; reading
pauses while too many frames wait, and the handler waits while the socket's
send buffer is full. A client over its quota is answered at once, then nothing
more is read or handled from it for the throttle time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import deque
from typing import Any, Protocol

import structlog

from odradek.broker.network import memory
from odradek.broker.security.session import Session
from odradek.protocol.header import FrameError, frame_size
from odradek.protocol.messages import Chunk, FileRegion

log = structlog.get_logger("broker")

INITIAL_BUFFER = 4 * 1024  # the receive buffer of a connection that starts sending
RECEIVE_BUFFER = 256 * 1024  # what it grows to while requests arrive
SHRINK_AFTER_S = 5.0  # quiet this long: back to INITIAL_BUFFER
OWN_BUFFER_ABOVE = 64 * 1024  # frames larger than this are received into their own buffer
MAX_WAITING_FRAMES = 64
MAX_WAITING_BYTES = 16 * 1024 * 1024
JOIN_BELOW = 64 * 1024
MAX_HELD_CHUNKS = 64  # answers held for a pipelined request's (see _hold_for_next)
METADATA_KEY = 3
QUICK_KEYS = frozenset((METADATA_KEY, 10, 18))  # + FindCoordinator, ApiVersions
PIPELINE_WAIT_S = 0.001  # how long a Metadata answer waits for requests sent with it
OPENING_KEYS = frozenset((METADATA_KEY, 17, 18, 36))  # + SaslHandshake, ApiVersions, SaslAuth.
# stand-ins until a connection's first request starts its worker
NO_FRAMES: deque[bytearray] = deque(maxlen=0)


class Signal:
    """asyncio.Event for one waiter, bound to its loop when made: Event.wait looks the
    running loop up each time, and in CPython 3.11 every such lookup is a getpid()
    system call, paid twice per request here."""

    __slots__ = ("_loop", "_set", "_waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self._loop = loop
        self._set = False
        self._waiter: asyncio.Future[None] | None = None

    def set(self) -> None:
        self._set = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def clear(self) -> None:
        self._set = False

    def is_set(self) -> bool:
        return self._set

    async def wait(self) -> None:
        if self._set:
            return
        assert self._loop is not None
        waiter = self._waiter = self._loop.create_future()
        try:
            await waiter
        finally:
            self._waiter = None


NOT_STARTED = Signal(None)

Chunks = list[Chunk]


class Owner(Protocol):
    """What a connection reports to: the broker's side of one listener (one object for
    all its connections, so that a connection carries no closures of its own)."""

    async def dispatch(self, connection: Connection, frame: bytearray) -> Chunks | None: ...

    def opened(self, connection: Connection) -> None: ...

    def closed(self, connection: Connection) -> None: ...

    def take_over(self, connection: Connection, first: bytes) -> bool:
        """Serve a connection that does not speak Kafka (True), or let it be closed."""
        ...


class Connection(asyncio.BufferedProtocol):
    # An idle connection holds little: no worker task, no queue or events until its
    # first request arrives (thousands of idle connections are a common sight).
    __slots__ = (
        "_owner", "max_frame", "connection_id", "_log",
        "_buffer", "last_active", "counted_as", "_start", "_end", "_frame", "_filled",
        "_prefix_first", "_frames", "_waiting_bytes", "_reading_paused", "_arrived",
        "_writable", "_closed", "_eof", "_opening", "_socket_fd", "transport", "session", "_worker",
        "_held",
    )  # fmt: skip

    def __init__(
        self,
        owner: Owner,
        max_frame: int,
        connection_id: str,
    ) -> None:
        self._owner = owner
        # (bytes, the setting that says so): lowered on SASL listeners until the
        # client has authenticated, so that nobody unknown makes the broker allocate much
        self.max_frame = (max_frame, "socket.request.max.bytes")
        self.connection_id = connection_id
        self._log: Any = None  # bound to connection_id when first used
        self._buffer = bytearray()  # allocated when bytes first arrive
        self.last_active = time.monotonic()  # the last bytes in or out
        self.counted_as = ("", "")  # (listener, client address) in the broker's table
        self._start = 0  # unparsed bytes are self._buffer[_start:_end]
        self._end = 0
        self._frame: bytearray | None = None  # a large frame being received
        self._filled = 0
        # After a large frame the next is likely large too: read its size prefix alone,
        # so the whole frame lands in its own buffer instead of partly in the shared one.
        self._prefix_first = False
        self._frames: deque[bytearray] = NO_FRAMES
        self._waiting_bytes = 0
        self._reading_paused = False
        self._arrived = NOT_STARTED
        self._writable = NOT_STARTED
        self._closed = False
        self._eof = False
        self._opening = True  # only ApiVersions, SASL and Metadata so far
        self._socket_fd = -1  # looked up when a file is first sent; -2: none (TLS)
        self.transport: Any = None  # uvloop's TCPTransport is not an asyncio.Transport subclass
        self.session = Session("PLAINTEXT")  # replaced by the broker for its listener
        self._worker: asyncio.Task[None] | None = None
        self._held = False  # over its ip's connection rate: read nothing until closed

    # -- receiving -----------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self._owner.opened(self)

    def hold_then_close(self, seconds: float) -> None:
        """Read nothing and answer nothing, then close: a connection over its ip's
        connection_creation_rate, as Kafka holds one for the throttle time."""
        self._held = True
        self.transport.pause_reading()
        asyncio.get_running_loop().call_later(seconds, self.close)

    @property
    def log(self) -> Any:
        """The broker's logger bound to this connection (made on first use: most idle
        connections never log)."""
        if self._log is None:
            self._log = log.bind(connection=self.connection_id)
        return self._log

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._frame is not None:
            return memoryview(self._frame)[self._filled :]
        if not self._buffer:
            self._buffer = bytearray(INITIAL_BUFFER)
        if self._prefix_first and self._start == self._end:
            self._start = self._end = 0
            return memoryview(self._buffer)[:4]
        if self._start:
            pending = self._end - self._start
            self._buffer[:pending] = self._buffer[self._start : self._end]
            self._start, self._end = 0, pending
        return memoryview(self._buffer)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._held:  # (the transport reads once before a pause made at its opening)
            self._start = self._end = 0
            self.transport.pause_reading()
            return
        self.last_active = time.monotonic()
        try:
            if self._frame is not None:
                self._filled += nbytes
                if self._filled == len(self._frame):
                    self._deliver(self._frame)
                    self._frame = None
                return
            self._end += nbytes
            self._cut_frames()
        except FrameError as exc:
            if self._worker is None and self._owner.take_over(self, self._unparsed()):
                return  # an HTTP request (the faults' control endpoint), not Kafka
            self.log.warning("closing connection", reason=str(exc))
            self.close()

    def _unparsed(self) -> bytes:
        return bytes(self._buffer[self._start : self._end])

    def _cut_frames(self) -> None:
        buffer = self._buffer
        while self._end - self._start >= 4:
            size = frame_size(bytes(buffer[self._start : self._start + 4]), *self.max_frame)
            begin = self._start + 4
            available = self._end - begin
            if available >= size:
                self._deliver(buffer[begin : begin + size])
                self._start = begin + size
                self._prefix_first = False
                continue
            if size > OWN_BUFFER_ABOVE or (
                begin + size > len(buffer) and len(buffer) >= RECEIVE_BUFFER
            ):
                frame = memory.receive_buffer(size)
                frame[:available] = buffer[begin : self._end]
                self._frame, self._filled = frame, available
                self._start = self._end = 0
                self._prefix_first = True
            elif begin + size > len(buffer):
                self._resize(RECEIVE_BUFFER)
            return
        if self._start == self._end:
            self._start = self._end = 0

    def _resize(self, size: int) -> None:
        """A shared buffer of ``size`` bytes holding the unparsed bytes at its start."""
        pending = self._end - self._start
        buffer = memory.receive_buffer(size)
        buffer[:pending] = self._buffer[self._start : self._end]
        self._buffer, self._start, self._end = buffer, 0, pending

    def shrink_if_idle(self, now: float) -> None:
        """Give back the receive buffer once nothing has moved for a while."""
        if (
            self._buffer
            and self._frame is None
            and self._start == self._end
            and now - self.last_active >= SHRINK_AFTER_S
        ):
            self._buffer = bytearray()
            self._start = self._end = 0

    def _deliver(self, frame: bytearray) -> None:
        if self._worker is None:
            self._start_worker()
        self._frames.append(frame)
        self._waiting_bytes += len(frame)
        self._arrived.set()
        too_much = (
            len(self._frames) >= MAX_WAITING_FRAMES or self._waiting_bytes >= MAX_WAITING_BYTES
        )
        if too_much and not self._reading_paused and self.transport is not None:
            self._reading_paused = True
            self.transport.pause_reading()

    def _start_worker(self) -> None:
        self._frames = deque()
        loop = asyncio.get_running_loop()
        self._arrived = Signal(loop)
        self._writable = Signal(loop)
        self._writable.set()
        self._worker = loop.create_task(self._serve())

    def eof_received(self) -> bool | None:
        # Answer what was already sent, then close (see _serve).
        self._eof = True
        self._arrived.set()
        if self._worker is None:
            self.close()
        # TLS has no half-close: its transport closes whatever this returns (and warns
        # when it is True)
        return self.transport.get_extra_info("ssl_object") is None

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._arrived.set()
        self._writable.set()
        if self._worker is not None and not self._frames:
            self._worker.cancel()
        self._owner.closed(self)
        # the transport and this protocol refer to each other: let go at once instead
        # of waiting for the cycle collector (thousands of closed connections add up)
        self.transport = None
        self._buffer = bytearray()
        self._frame = None

    # -- sending -------------------------------------------------------------------

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def close(self) -> None:
        self._closed = True
        if self.transport is not None:
            self.transport.close()

    def abort_requests(self) -> asyncio.Task[None] | None:
        """Stop handling requests at once, even one waiting (a long poll) or with more
        queued behind it: the broker is shutting down. Returns the task to await."""
        self.close()
        worker = self._worker
        if worker is not None:
            worker.cancel()
        return worker

    # -- handling ------------------------------------------------------------------

    def _send(self, chunks: Chunks) -> None:
        self.last_active = time.monotonic()
        pending: list[bytes | bytearray | memoryview] = []
        for chunk in chunks:
            if isinstance(chunk, bytes | bytearray | memoryview):
                pending.append(chunk)
                continue
            self._write_bytes(pending)
            pending = []
            self._send_file(chunk)
        self._write_bytes(pending)

    def _write_bytes(self, chunks: list[bytes | bytearray | memoryview]) -> None:
        if not chunks:
            return
        if len(chunks) == 1:
            self.transport.write(chunks[0])
        elif sum(len(chunk) for chunk in chunks) < JOIN_BELOW:
            self.transport.write(b"".join(chunks))  # one send for small answers
        else:
            self.transport.writelines(chunks)

    def _send_file(self, region: FileRegion) -> None:
        """sendfile what the socket takes now; the rest is read and queued.

        Writing to the socket past the transport is safe only while the
        transport has nothing queued, or bytes would go out of order.
        """
        sent = 0
        size = len(region)
        if self._socket_fd == -1:
            sock = self.transport.get_extra_info("socket")
            # On a TLS connection that socket is the raw one: sendfile would skip
            # encryption.
            encrypted = self.transport.get_extra_info("ssl_object") is not None
            self._socket_fd = sock.fileno() if sock is not None and not encrypted else -2
        if self.transport.get_write_buffer_size() == 0 and self._socket_fd >= 0:
            with contextlib.suppress(OSError):  # would block, or the peer is gone
                sent = os.sendfile(self._socket_fd, region.fileno(), region.position, size)
        if sent < size:
            self.transport.write(region.read(sent))

    def _hold_for_next(self, held: Chunks) -> bool:
        """Keep answers to send them with the next one's, when that request is already
        here and quick to answer. A new librdkafka client sends Metadata and
        FindCoordinator together; once a Metadata answer has told it the broker's id
        it drops the bootstrap connection, and with it any answer still on its way
        (then waits 50 ms before asking again). So on a connection that has sent
        nothing but Metadata yet (after ApiVersions and SASL), a Metadata answer waits
        up to PIPELINE_WAIT_S for requests sent with it, and their answers go out
        together.
        Answers are held only behind requests answered at once (Metadata,
        FindCoordinator, ApiVersions), never behind one that may wait (Fetch,
        ShareFetch, JoinGroup, SyncGroup) or a Produce, whose producer keeps its
        records until they are acknowledged."""
        if not self._frames or len(held) > MAX_HELD_CHUNKS:
            return False
        return int.from_bytes(self._frames[0][:2], "big") in QUICK_KEYS

    async def _next_frame_within(self, seconds: float) -> None:
        self._arrived.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._arrived.wait(), seconds)

    async def _mute(self) -> None:
        """A client over its quota: its answer is out, and nothing more is read from
        it until the throttle time ends (as Kafka mutes the channel)."""
        seconds = self.session.throttle_ms / 1000
        self.session.throttle_ms = 0
        if not self._reading_paused and self.transport is not None:
            self.transport.pause_reading()
        await asyncio.sleep(seconds)
        if not self._reading_paused and self.transport is not None and not self._closed:
            self.transport.resume_reading()

    async def _serve(self) -> None:
        held: Chunks = []
        try:
            while True:
                while not self._frames:
                    if self._closed or self._eof:
                        return
                    self._arrived.clear()
                    await self._arrived.wait()
                frame = self._frames.popleft()
                self._waiting_bytes -= len(frame)
                if self._reading_paused and len(self._frames) < MAX_WAITING_FRAMES // 2:
                    self._reading_paused = False
                    if self.transport is not None and not self._closed:
                        self.transport.resume_reading()
                api_key = int.from_bytes(frame[:2], "big")
                response = await self._owner.dispatch(self, frame)
                if self._closed or self.transport is None:
                    continue
                if api_key not in OPENING_KEYS:
                    self._opening = False
                elif api_key == METADATA_KEY and self._opening and not self._frames:
                    await self._next_frame_within(PIPELINE_WAIT_S)
                if response is not None:
                    held.extend(response)
                if self.session.throttle_ms:
                    if held:
                        self._send(held)
                        held = []
                    await self._mute()
                    continue
                if not held or self._hold_for_next(held):
                    continue
                self._send(held)
                held = []
                await self._writable.wait()
        except FrameError as exc:
            self.log.warning("closing connection", reason=str(exc))
        except asyncio.CancelledError:
            pass
        except Exception:
            self.log.exception("closing connection after an unexpected error")
        finally:
            self.close()
            self._worker = None  # the task and this protocol refer to each other
