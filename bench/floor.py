"""What one request costs: Odradek beside the mock and beside a Python server that does nothing.

Run from the repository root:

    .venv/bin/python -m bench.floor [--quick]

Ten connections, each from its own thread of this process, send one Heartbeat (v4, a
group nobody has joined) and wait for its answer before sending the next, for a fixed
time. The same load goes to four servers, one after the other:

- a bare uvloop server (a child process running this file with `--serve`) that answers
  every frame with a fixed Heartbeat answer from its protocol callback: what the event
  loop, the system calls and the interpreter cost before any Kafka work is done;
- the same server answering from one task per connection, as Odradek's connections do;
- Odradek;
- librdkafka's mock cluster.

For each: requests/s, and the server process's CPU time per request (user and system,
from /proc), which holds from machine to machine where rates do not. The floor rows put
the broker's own per-request figures (here and in bench.groups' commit loop) in
proportion: whatever Odradek spends above them is its own code.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.peers import (
    REPO,
    MockPeer,
    OdradekPeer,
    Peer,
    free_port,
    process_cpu_times,
    wait_until_accepting,
)
from bench.report import (
    Run,
    arg_parser,
    remove_workdir,
    report,
    run_steps,
    start_run,
    value_row,
)

HEARTBEAT_KEY = 12
HEARTBEAT_VERSION = 4  # flexible: request header v2, response header v1
CONNECTIONS = 10
_HEADER = struct.Struct(">ihhi")  # size, api key, version, correlation id


@dataclass(frozen=True)
class Settings:
    quick: bool
    seconds: float
    connections: int

    @classmethod
    def make(cls, quick: bool) -> Settings:
        return cls(quick=quick, seconds=2.0 if quick else 6.0, connections=CONNECTIONS)


# --------------------------------------------------------------------------- the wire


def _compact(text: str) -> bytes:
    raw = text.encode()
    return bytes([len(raw) + 1]) + raw  # names here are shorter than 127 bytes


def heartbeat_request(correlation_id: int, client_id: str = "floor") -> bytes:
    """A Heartbeat v4 frame for a group nobody has joined."""
    client = client_id.encode()
    body = (
        _compact("floor-bench-group")
        + struct.pack(">i", 1)  # generation
        + _compact("floor-member")
        + b"\x00"  # group_instance_id: null
        + b"\x00"  # no tagged fields
    )
    head = struct.pack(">hhih", HEARTBEAT_KEY, HEARTBEAT_VERSION, correlation_id, len(client))
    payload = head + client + b"\x00" + body
    return struct.pack(">i", len(payload)) + payload


def heartbeat_answer(correlation_id: int) -> bytes:
    """The floor servers' answer: no error, no throttle."""
    payload = struct.pack(">i", correlation_id) + b"\x00" + struct.pack(">ih", 0, 0) + b"\x00"
    return struct.pack(">i", len(payload)) + payload


def receive_frame(sock: socket.socket) -> bytes:
    size = struct.unpack(">i", _receive_exactly(sock, 4))[0]
    return _receive_exactly(sock, size)


def _receive_exactly(sock: socket.socket, size: int) -> bytes:
    parts = []
    while size:
        part = sock.recv(size)
        if not part:
            raise ConnectionError("server closed the connection")
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


# --------------------------------------------------------------------------- floor servers


class _CallbackServer(asyncio.Protocol):
    """Answers each complete frame from data_received."""

    def __init__(self) -> None:
        self.pending = bytearray()
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.pending += data
        for correlation_id in self.cut():
            self.transport.write(heartbeat_answer(correlation_id))

    def cut(self) -> list[int]:
        ids = []
        while len(self.pending) >= 12:
            size = int.from_bytes(self.pending[:4], "big")
            if len(self.pending) < 4 + size:
                break
            ids.append(_HEADER.unpack_from(self.pending)[3])
            del self.pending[: 4 + size]
        return ids


class _TaskServer(_CallbackServer):
    """Hands each frame to a task per connection, which answers it."""

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self.frames: asyncio.Queue[int] = asyncio.Queue()
        self.worker = asyncio.get_running_loop().create_task(self.serve())

    def data_received(self, data: bytes) -> None:
        self.pending += data
        for correlation_id in self.cut():
            self.frames.put_nowait(correlation_id)

    async def serve(self) -> None:
        while True:
            correlation_id = await self.frames.get()
            self.transport.write(heartbeat_answer(correlation_id))

    def connection_lost(self, exc: Exception | None) -> None:
        self.worker.cancel()


def serve_main(port: int, style: str) -> int:
    """Child process: a floor server on 127.0.0.1:`port` until killed."""
    import uvloop

    async def serve() -> None:
        protocol = _TaskServer if style == "task" else _CallbackServer
        server = await asyncio.get_running_loop().create_server(protocol, "127.0.0.1", port)
        async with server:
            await server.serve_forever()

    uvloop.run(serve())
    return 0


class FloorPeer(Peer):
    def __init__(self, python: str, workdir: Path, style: str) -> None:
        self.name = f"floor-{style}"
        self.log_path = workdir / f"{self.name}.log"
        port = free_port()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [python, "-m", "bench.floor", "--serve", str(port), style],
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_until_accepting(self.proc, port)
        self.bootstrap = f"127.0.0.1:{port}"


# --------------------------------------------------------------------------- the load


@dataclass
class LoadResult:
    requests: int = 0
    seconds: float = 0.0
    user_s: float = 0.0
    system_s: float = 0.0
    error_codes: dict[int, int] | None = None

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def per_request_us(self, seconds: float) -> float:
        return seconds / self.requests * 1e6 if self.requests else 0.0


def heartbeat_load(peer: Peer, connections: int, seconds: float) -> LoadResult:
    host, port = peer.bootstrap.rsplit(":", 1)
    sockets = [socket.create_connection((host, int(port))) for _ in range(connections)]
    for sock in sockets:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    counts = [0] * connections
    codes: list[dict[int, int]] = [{} for _ in range(connections)]
    barrier = threading.Barrier(connections + 1)
    deadline = 0.0

    def work(index: int) -> None:
        sock = sockets[index]
        own = codes[index]
        barrier.wait()
        correlation_id = 0
        while time.perf_counter() < deadline:
            correlation_id += 1
            sock.sendall(heartbeat_request(correlation_id))
            answer = receive_frame(sock)
            if struct.unpack_from(">i", answer)[0] != correlation_id:
                raise RuntimeError(f"{peer.name}: answer to another request")
            # header v1: correlation id, tagged fields; then throttle_time_ms, error_code
            code = struct.unpack_from(">h", answer, 9)[0]
            own[code] = own.get(code, 0) + 1
            counts[index] += 1

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(connections)]
    for thread in threads:
        thread.start()
    user, system = process_cpu_times(peer.pid)
    began = time.perf_counter()
    deadline = began + seconds
    barrier.wait()
    for thread in threads:
        thread.join(seconds + 30)
    result = LoadResult(seconds=time.perf_counter() - began)
    user_after, system_after = process_cpu_times(peer.pid)
    result.user_s, result.system_s = user_after - user, system_after - system
    result.requests = sum(counts)
    result.error_codes = {}
    for own in codes:
        for code, count in own.items():
            result.error_codes[code] = result.error_codes.get(code, 0) + count
    for sock in sockets:
        sock.close()
    return result


# --------------------------------------------------------------------------- cases


def run_cases(run: Run, peers: list[Peer]) -> None:
    s = run.settings
    results: dict[str, LoadResult] = {}
    for peer in peers:
        heartbeat_load(peer, s.connections, 0.5)  # warm-up
        results[peer.name] = result = heartbeat_load(peer, s.connections, s.seconds)
        print(
            f"    {peer.name}: {result.per_second:.0f}/s, "
            f"{result.per_request_us(result.user_s):.1f} + "
            f"{result.per_request_us(result.system_s):.1f} µs CPU per request",
            flush=True,
        )
    run.extra["results"] = {name: asdict(r) for name, r in results.items()}
    mock = results.get("mock")

    def rows(name: str, what: str) -> None:
        result = results.get(name)
        if result is None:
            return
        for label, unit, better, odradek, theirs, fmt in (
            ("requests/s", "requests/s", "higher", result.per_second,
             mock.per_second if mock else None, "{:.0f}/s"),
            ("CPU per request, user", "µs", "lower", result.per_request_us(result.user_s),
             mock.per_request_us(mock.user_s) if mock else None, "{:.1f} µs"),
            ("CPU per request, system", "µs", "lower", result.per_request_us(result.system_s),
             mock.per_request_us(mock.system_s) if mock else None, "{:.1f} µs"),
        ):  # fmt: skip
            values = {"odradek": odradek} | ({} if theirs is None else {"mock": theirs})
            run.rows.append(value_row(f"{what}: {label}", unit, better, values, fmt))

    rows("floor-callback", "bare uvloop server, answers in its protocol callback")
    rows("floor-task", "bare uvloop server, answers from a task per connection")
    rows("odradek", "Odradek, Heartbeat of an unknown group")


def start(run: Run, peers: list[Peer]) -> None:
    peers.append(FloorPeer(run.python, run.workdir, "callback"))
    peers.append(FloorPeer(run.python, run.workdir, "task"))
    peers.append(OdradekPeer(run.python, run.workdir))
    peers.append(MockPeer(run.python, run.workdir))


def main(argv: list[str] | None = None) -> int:
    args = arg_parser(__doc__).parse_args(argv)
    run = start_run(Settings.make(args.quick), "per-request floor", "odradek-bench-floor-")
    findings = run_steps(run, start, [("heartbeats", run_cases)])
    notes = [
        "The first column is the server the row names, the second librdkafka's mock under the "
        "same load; ratio > 1 means the named server is better.",
        f"Load: {run.settings.connections} connections, one thread each, one Heartbeat v4 "
        "in flight per connection. Odradek and the mock answer with an error (no such "
        "group), the floor servers with a fixed answer.",
    ]
    report(
        run,
        name="floor",
        notes=notes,
        findings=findings,
        extra=run.extra,
        columns=("server named", "mock"),
    )
    remove_workdir(run, args.keep)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        sys.exit(serve_main(int(sys.argv[2]), sys.argv[3]))
    sys.exit(main())
