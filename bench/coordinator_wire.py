"""A raw Kafka connection for bench/coordinator_load.py, requests written and answers
read with kio's message classes (OffsetCommit v8 and OffsetFetch v8 built here),
several requests in flight where asked; and the ApiVersions probe, a child process
(`python -m bench.coordinator_wire PORT`) that connects as soon as the port accepts
and times one ApiVersions v0 request after the other until told to stop.
"""

from __future__ import annotations

import io
import json
import socket
import struct
import subprocess
import sys
import threading
import time
from typing import Any

from kio.schema.offset_commit.v8.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_fetch.v8.request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.types import GroupId, TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32, i64

from bench.peers import REPO

PROBE_GAP_S = 0.005  # between one probe's answer and the next request


class Connection:
    """One raw connection: requests written and answers read with kio's classes."""

    def __init__(self, bootstrap: str, timeout: float = 60.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def frame(self, request: Any) -> bytes:
        self.correlation += 1
        header = RequestHeader(
            request_api_key=request.__api_key__,
            request_api_version=request.__version__,
            correlation_id=i32(self.correlation),
            client_id="odradek-bench",
        )
        out = io.BytesIO()
        entity_writer(RequestHeader)(out, header)
        entity_writer(type(request))(out, request)
        body = out.getvalue()
        return struct.pack(">i", len(body)) + body

    def send(self, requests: list[Any]) -> None:
        self.sock.sendall(b"".join(self.frame(request) for request in requests))

    def receive(self, cls: type) -> Any:
        size = struct.unpack(">i", self._exactly(4))[0]
        frame = self._exactly(size)
        _header, position = entity_reader(ResponseHeader)(frame, 0)
        value: Any = entity_reader(cls)(frame, position)[0]
        return value

    def receive_frame(self) -> bytes:
        """The next answer's frame (header and body), not decoded."""
        size = struct.unpack(">i", self._exactly(4))[0]
        return self._exactly(size)

    def call(self, request: Any, cls: type) -> Any:
        self.send([request])
        return self.receive(cls)

    def _exactly(self, count: int) -> bytes:
        chunks = []
        while count:
            chunk = self.sock.recv(min(count, 1 << 20))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks.append(chunk)
            count -= len(chunk)
        return b"".join(chunks)


def commit_request(group: str, topic: str, offsets: list[int]) -> Any:
    """A simple group's commit (no generation, no member): offsets[p] for partition p."""
    partitions = tuple(
        OffsetCommitRequestPartition(
            partition_index=i32(p),
            committed_offset=i64(offset),
            committed_leader_epoch=i32(-1),
            committed_metadata="",
        )
        for p, offset in enumerate(offsets)
    )
    return OffsetCommitRequest(
        group_id=GroupId(group),
        generation_id_or_member_epoch=i32(-1),
        member_id="",
        group_instance_id=None,
        topics=(OffsetCommitRequestTopic(name=TopicName(topic), partitions=partitions),),
    )


def fetch_request(groups: list[str], topic: str, partitions: tuple[int, ...] | None) -> Any:
    """OffsetFetch of several groups: the given partitions of `topic`, or (None) all."""
    topics = None
    if partitions is not None:
        indexes = tuple(i32(p) for p in partitions)
        topics = (OffsetFetchRequestTopics(name=TopicName(topic), partition_indexes=indexes),)
    return OffsetFetchRequest(
        groups=tuple(OffsetFetchRequestGroup(group_id=GroupId(g), topics=topics) for g in groups),
        require_stable=False,
    )


def group_error(group: Any) -> int:
    """The group's error code, or its first partition's (Kafka may put it either way)."""
    if group.error_code:
        return int(group.error_code)
    for topic in group.topics:
        for partition in topic.partitions:
            if partition.error_code:
                return int(partition.error_code)
    return 0


# --------------------------------------------------------------------------- the probe


def api_versions_frame(correlation: int) -> bytes:
    client = b"probe"
    body = struct.pack(">hhih", 18, 0, correlation, len(client)) + client
    return struct.pack(">i", len(body)) + body


def probe_main(port: int) -> int:
    """Child process: once the port accepts, ApiVersions one at a time until a line on
    stdin; then one JSON line: when it connected and (sent, seconds) per answer, both
    on the machine's monotonic clock, which the parent shares."""
    stop = threading.Event()

    def wait_for_stop() -> None:
        sys.stdin.readline()
        stop.set()

    threading.Thread(target=wait_for_stop, daemon=True).start()
    print("waiting", flush=True)
    accepted = None
    samples: list[tuple[float, float]] = []
    failures: list[str] = []
    sock: socket.socket | None = None
    correlation = 0
    while not stop.is_set():
        if sock is None:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=60)
            except OSError:
                time.sleep(0.002)
                continue
            accepted = accepted or time.monotonic()
        correlation += 1
        sent = time.monotonic()
        try:
            sock.sendall(api_versions_frame(correlation))
            head = sock.recv(8, socket.MSG_WAITALL)
            if len(head) < 8:
                raise ConnectionError("closed")
            size, answered = struct.unpack(">ii", head)
            if answered != correlation:
                raise ConnectionError(f"correlation {answered} != {correlation}")
            if len(sock.recv(size - 4, socket.MSG_WAITALL)) < size - 4:
                raise ConnectionError("closed")
        except OSError as exc:
            if len(failures) < 100:
                failures.append(f"{time.monotonic() - (accepted or sent):.3f}s: {exc!r}")
            sock.close()
            sock = None
            stop.wait(PROBE_GAP_S)
            continue
        samples.append((sent, time.monotonic() - sent))
        stop.wait(PROBE_GAP_S)
    print(json.dumps({"accepted": accepted, "samples": samples, "failures": failures}))
    return 0


class Probe:
    """The probe process, started before the broker so that it sees the port open."""

    def __init__(self, python: str, port: int) -> None:
        self.proc = subprocess.Popen(
            [python, "-m", "bench.coordinator_wire", str(port)],
            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "waiting":
            raise RuntimeError(f"the probe did not start ({self.proc.poll()})")

    def finish(self) -> dict[str, Any]:
        out, _ = self.proc.communicate("stop\n", timeout=120)
        result: dict[str, Any] = json.loads(out.splitlines()[-1])
        return result


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m bench.coordinator_wire PORT")
    sys.exit(probe_main(int(sys.argv[1])))
