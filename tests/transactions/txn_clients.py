"""The real clients of the transaction tests: an interactive Java transactional
producer, and readers (Java, librdkafka) that return what a topic or a group holds."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterable, Mapping
from typing import Any

from helpers import java

# --------------------------------------------------------------------------- Java


class JavaTxn:
    """``KafkaTool txn-producer``: a Java transactional producer that runs one JSON command
    per line of stdin and answers each with a result line."""

    def __init__(
        self, bootstrap: str, transactional_id: str, props: Mapping[str, object] | None = None
    ) -> None:
        args = [
            "txn-producer",
            "--bootstrap",
            bootstrap,
            *java.props_args({"transactional.id": transactional_id, **(props or {})}),
        ]
        self.process = java.JavaProcess(args, interactive=True)
        self.proc = self.process.proc
        self._next(60)  # "ready"

    def _next(self, timeout: float) -> dict[str, Any]:
        """The next answer; JavaToolError on a timeout, an error line or an exit."""
        item = self.process.next_line(timeout)
        if item is None:
            raise java.JavaToolError(
                f"Java producer exited ({self.proc.poll()})\n{self.process.stderr[-5000:]}"
            )
        return item

    def cmd(self, cmd: str, timeout: float = 60.0, **fields: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"cmd": cmd, **fields}) + "\n")
        self.proc.stdin.flush()
        return self._next(timeout)

    def ok(self, cmd: str, timeout: float = 60.0, **fields: Any) -> dict[str, Any]:
        res = self.cmd(cmd, timeout, **fields)
        assert res["ok"], f"{cmd} failed: {res}\n{self.process.stderr[-3000:]}"
        return res

    def send(
        self, topic: str, values: Iterable[str], partition: int | None = 0, **kw: Any
    ) -> list[int]:
        records = [{"topic": topic, "key": v, "value": v, "partition": partition} for v in values]
        return [o["offset"] for o in self.ok("send", records=records, **kw)["offsets"]]

    def send_offsets(self, group: str, offsets: Mapping[tuple[str, int], int]) -> dict[str, Any]:
        return self.cmd(
            "send-offsets",
            group=group,
            offsets=[{"topic": t, "partition": p, "offset": o} for (t, p), o in offsets.items()],
        )

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> JavaTxn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def java_group_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    res = java.admin(bootstrap, "group-offsets", "--group", group)
    return {
        (r["topic"], r["partition"]): r["offset"]
        for r in res.records
        if r.get("offset") is not None
    }


def java_values(bootstrap: str, topic: str, isolation: str, timeout_ms: int = 8000) -> list[str]:
    """Values of every record the Java consumer returns, up to the end (LSO for
    read_committed), in offset order per partition."""
    res = java.consume(
        bootstrap, topic, until_end=True, isolation_level=isolation, timeout_ms=timeout_ms
    )
    return [r["value"] for r in res.records]


# --------------------------------------------------------------------------- librdkafka


def rdk_read(
    bootstrap: str, topic: str, isolation: str, partitions: int = 1, timeout: float = 20.0
) -> list[Any]:
    """Messages librdkafka returns from the beginning to the end of each partition (the
    last stable offset for read_committed)."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "reader",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out = []
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(at_end) < partitions and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                    continue
                raise AssertionError(f"consumer error: {msg.error()}")
            at_end.discard(msg.partition())
            out.append(msg)
        assert len(at_end) == partitions, f"did not reach the end of {topic} in {timeout}s"
        return out
    finally:
        consumer.close()


def ctp_args(
    bootstrap: str,
    source: str,
    sink: str,
    group: str,
    *,
    commit_every: int,
    idle_ms: int,
    sleep_ms: int,
    consumer_props: Mapping[str, object],
    producer_props: Mapping[str, object],
) -> list[str]:
    """KafkaTool's consume-transform-produce loop (Java client, read_committed)."""
    args = ["ctp", "--bootstrap", bootstrap, "--input", source, "--output", sink]
    args += ["--group", group, "--commit-every", str(commit_every), "--idle-ms", str(idle_ms)]
    args += ["--sleep-ms", str(sleep_ms), "--timeout-ms", "600000"]
    for key, value in consumer_props.items():
        args += ["--consumer-prop", f"{key}={value}"]
    return args + java.props_args(producer_props)
