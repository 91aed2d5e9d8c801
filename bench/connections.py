"""Connections benchmark: what idle connections cost, Odradek side by side with
librdkafka's mock cluster.

Run from the repository root:

    .venv/bin/python -m bench.connections [--quick]

- memory: broker RSS before, while N idle TCP connections are held (plain sockets
  that send nothing), and after they close (at once, and a minute later);
  per-connection cost is (held - before) / N.
- work under load: produce MB/s (1 KB records, acks=1, 1 partition, confluent-kafka),
  then consume MB/s of the same topic (assign() from the start, repeated passes), with
  no idle connections and with N held open.

N is 10,000 (2,000 with --quick). Both brokers run in child processes; the sockets
are held by this process, which raises its open-file limit to the hard limit.
"""

from __future__ import annotations

import contextlib
import resource
import socket
import struct
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from bench.clients import (
    consume,
    produce,
)
from bench.peers import (
    Peer,
    rss_mib,
)
from bench.report import (
    Run,
    Step,
    arg_parser,
    check_peer,
    peer_row,
    remove_workdir,
    report,
    run_steps,
    start_peers,
    start_run,
    value_row,
)


@dataclass
class Settings:
    quick: bool
    connections: int
    produce_seconds: float
    settle_after_close_s: float

    @classmethod
    def make(cls, quick: bool) -> Settings:
        if quick:
            return cls(True, 2000, 3.0, 10.0)
        return cls(False, 10000, 8.0, 60.0)


def rss_kib(pid: int) -> float:
    return rss_mib(pid)["VmRSS"] * 1024


HOLD_FOR_S = 60.0


def hold(port: int, count: int) -> list[socket.socket]:
    """Up to ``count`` connections, fewer if the peer stops taking them: when connects
    take over a second (the peer has stopped accepting, and only the kernel's backlog,
    retrying SYNs, lets the odd one through) five times, or after HOLD_FOR_S."""
    held: list[socket.socket] = []
    slow = 0
    deadline = time.perf_counter() + HOLD_FOR_S
    for _ in range(count):
        started = time.perf_counter()
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=2)
        except OSError:
            break
        held.append(sock)
        slow += time.perf_counter() - started > 1.0
        if slow == 5 or started > deadline:
            break
    return held


def answers_api_versions(sock: socket.socket) -> bool:
    """Is the connection served? (ApiVersions v0, the answer read whole)."""
    body = struct.pack(">hhih", 18, 0, 1, -1)
    try:
        sock.settimeout(5)
        sock.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", read_exactly(sock, 4))[0]
        read_exactly(sock, size)
    except (OSError, EOFError, struct.error):
        return False
    return True


def read_exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def run_cases(run: Run, peers: list[Peer]) -> None:
    settings: Settings = run.settings
    memory: dict[str, dict[str, float]] = {}
    rates: dict[str, dict[str, float]] = {}
    for peer in peers:
        peer.create_topic("load", 1)
        peer.wait_for_topic("load", 1)
        port = int(peer.bootstrap.rsplit(":", 1)[1])
        quiet = produce(peer.bootstrap, "load", 1, 1024, "1", linger_ms=5,
                        seconds=settings.produce_seconds)  # fmt: skip
        quiet_read = consume(peer.bootstrap, "load", 1, settings.produce_seconds)
        time.sleep(1)
        before = rss_kib(peer.pid)
        held = hold(port, settings.connections)
        time.sleep(2)
        holding = rss_kib(peer.pid)
        alive = sum(1 for sock in held[-50:] if answers_api_versions(sock))
        loaded = produce(peer.bootstrap, "load", 1, 1024, "1", linger_ms=5,
                         seconds=settings.produce_seconds)  # fmt: skip
        loaded_read = consume(peer.bootstrap, "load", 1, settings.produce_seconds)
        check_peer(run, peer, "with idle connections held")
        for sock in held:
            sock.close()
        time.sleep(3)
        after = rss_kib(peer.pid)
        time.sleep(settings.settle_after_close_s)
        later = rss_kib(peer.pid)
        memory[peer.name] = {
            "held": len(held),
            "last_50_answering": alive,
            "before": before,
            "per_connection": (holding - before) / max(len(held), 1),
            "after_close": after,
            "later": later,
            "later_vs_before": later / before,
        }
        rates[peer.name] = {
            "quiet": quiet.mb_per_s,
            "loaded": loaded.mb_per_s,
            "quiet_read": quiet_read.mb_per_s,
            "loaded_read": loaded_read.mb_per_s,
        }
        print(f"    {peer.name}: {memory[peer.name]} {rates[peer.name]}", flush=True)
    n = settings.connections
    settle = f"{settings.settle_after_close_s:.0f}"

    def row(case: str, unit: str, better: str, values: dict[str, float], fmt: str) -> None:
        run.rows.append(value_row(case, unit, better, values, fmt))

    row("RSS before", "MiB", "lower", {k: v["before"] / 1024 for k, v in memory.items()}, "{:.1f}")
    run.rows.append(
        peer_row(
            f"RSS per idle connection (asked for {n})",
            "KiB",
            "lower",
            lambda name: memory[name]["per_connection"] if name in memory else None,
            lambda name: (
                f"{memory[name]['per_connection']:.1f} ({memory[name]['held']:.0f} held, "
                f"{memory[name]['last_50_answering']:.0f} of the last 50 answering)"
                if name in memory
                else "failed"
            ),
        )
    )
    row("RSS 3 s after they close", "MiB", "lower",
        {k: v["after_close"] / 1024 for k, v in memory.items()}, "{:.1f}")  # fmt: skip
    row(f"RSS {settle} s after they close / RSS before", "x", "lower",
        {k: v["later_vs_before"] for k, v in memory.items()}, "{:.2f}")  # fmt: skip
    row("produce 1 KB acks=1, no idle connections", "MB/s", "higher",
        {k: v["quiet"] for k, v in rates.items()}, "{:.1f}")  # fmt: skip
    row(f"produce 1 KB acks=1, {n} idle connections held", "MB/s", "higher",
        {k: v["loaded"] for k, v in rates.items()}, "{:.1f}")  # fmt: skip
    row("consume 1 KB, no idle connections", "MB/s", "higher",
        {k: v["quiet_read"] for k, v in rates.items()}, "{:.1f}")  # fmt: skip
    row(f"consume 1 KB, {n} idle connections held", "MB/s", "higher",
        {k: v["loaded_read"] for k, v in rates.items()}, "{:.1f}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = arg_parser(__doc__).parse_args(argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    settings = Settings.make(args.quick)
    run = start_run(settings, "connections", "odradek-bench-connections-")
    steps: list[tuple[str, Step]] = [("idle connections", run_cases)]
    findings = run_steps(run, start_peers, steps)
    notes = [
        "ratio > 1 means Odradek is better. Idle connections are plain TCP sockets from "
        "this process that never send; RSS is VmRSS of the broker process.",
    ]
    extra: dict[str, Any] = {"open_file_limit": [soft, hard]}
    report(run, name="connections", notes=notes, findings=findings,
           settings=asdict(settings), extra=extra)  # fmt: skip
    remove_workdir(run, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
