"""Round trips, metadata and offset queries through the kcat command-line client."""

from __future__ import annotations

import json
import random
import re
import string
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.broker import Broker
from helpers.env import require_executable
from helpers.topics import create_topic

pytestmark = pytest.mark.timeout(120)

ONE_MIB = 1024 * 1024
TIMEOUT = 30.0


@pytest.fixture(scope="module")
def kcat() -> str:
    return require_executable("kcat", "apt-get install -y kcat (make install-test does this)")


def run_kcat(
    kcat: str, *args: str, stdin: str | bytes | None = None, timeout: float = TIMEOUT
) -> subprocess.CompletedProcess[bytes]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    proc = subprocess.run([kcat, *args], input=data, capture_output=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(
            f"kcat {' '.join(args)} exited {proc.returncode}\n"
            f"stdout: {proc.stdout[-4000:]!r}\nstderr: {proc.stderr.decode(errors='replace')}"
        )
    return proc


def produce(kcat: str, b: Broker, topic: str, lines: list[str], *extra: str) -> None:
    run_kcat(
        kcat,
        "-P",
        "-b",
        b.bootstrap,
        "-t",
        topic,
        "-p",
        "0",
        "-m",
        "15",
        *extra,
        stdin="".join(line + "\n" for line in lines),
    )


def consume_all(
    kcat: str, b: Broker, topic: str, *extra: str, offset: str = "beginning"
) -> list[dict[str, Any]]:
    proc = run_kcat(
        kcat,
        "-C",
        "-b",
        b.bootstrap,
        "-t",
        topic,
        "-p",
        "0",
        "-o",
        offset,
        "-e",
        "-J",
        "-q",
        "-m",
        "15",
        *extra,
    )
    return [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]


def headers_of(msg: dict[str, Any]) -> list[tuple[str, str | None]]:
    flat = msg.get("headers") or []
    return list(zip(flat[0::2], flat[1::2], strict=True))


def test_round_trip_keys_null_values_headers(
    kcat: str, shared_broker: Broker, unique_topic: str
) -> None:
    create_topic(shared_broker.bootstrap, unique_topic)
    produce(
        kcat,
        shared_broker,
        unique_topic,
        ["k1|v1", "k2|", "|no-key", "k4|välue ✓"],
        "-K",
        "|",
        "-Z",
        "-H",
        "h=x",
        "-H",
        "h=y",
    )
    got = consume_all(kcat, shared_broker, unique_topic)
    assert [m["offset"] for m in got] == [0, 1, 2, 3]
    assert [(m["key"], m["payload"]) for m in got] == [
        ("k1", "v1"),
        ("k2", None),
        (None, "no-key"),
        ("k4", "välue ✓"),
    ]
    for m in got:
        assert headers_of(m) == [("h", "x"), ("h", "y")]
        assert m["tstype"] == "create"


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compression_round_trip(
    kcat: str, shared_broker: Broker, unique_topic: str, codec: str
) -> None:
    create_topic(shared_broker.bootstrap, unique_topic)
    lines = [f"k{i}|value-{i}-" + "q" * (i % 60) for i in range(300)]
    produce(kcat, shared_broker, unique_topic, lines, "-K", "|", "-z", codec, "-X", "linger.ms=50")
    got = consume_all(kcat, shared_broker, unique_topic)
    assert [f"{m['key']}|{m['payload']}" for m in got] == lines
    assert [m["offset"] for m in got] == list(range(300))


def test_one_mib_record(
    kcat: str, shared_broker: Broker, unique_topic: str, tmp_path: Path
) -> None:
    create_topic(shared_broker.bootstrap, unique_topic, configs={"max.message.bytes": 2 * ONE_MIB})
    value = "".join(random.choices(string.ascii_letters, k=ONE_MIB))
    big = tmp_path / "big.txt"
    big.write_text(value)
    # a file argument is sent as one message
    run_kcat(
        kcat,
        "-P",
        "-b",
        shared_broker.bootstrap,
        "-t",
        unique_topic,
        "-p",
        "0",
        "-X",
        f"message.max.bytes={2 * ONE_MIB}",
        str(big),
    )
    got = consume_all(kcat, shared_broker, unique_topic)
    assert len(got) == 1
    assert len(got[0]["payload"]) == ONE_MIB
    assert got[0]["payload"] == value


def test_metadata_list(kcat: str, shared_broker: Broker, unique_topic: str) -> None:
    create_topic(shared_broker.bootstrap, unique_topic, partitions=3)
    proc = run_kcat(kcat, "-L", "-J", "-b", shared_broker.bootstrap, "-t", unique_topic, "-m", "15")
    md = json.loads(proc.stdout)
    assert [b["name"] for b in md["brokers"]] == [shared_broker.bootstrap]
    (topic,) = md["topics"]
    assert topic["topic"] == unique_topic
    assert "error" not in topic
    assert sorted(p["partition"] for p in topic["partitions"]) == [0, 1, 2]
    for p in topic["partitions"]:
        assert p["leader"] == md["brokers"][0]["id"]


def test_offsets_by_time(kcat: str, shared_broker: Broker, unique_topic: str) -> None:
    create_topic(shared_broker.bootstrap, unique_topic)
    produce(kcat, shared_broker, unique_topic, [f"a{i}" for i in range(4)])
    time.sleep(0.05)
    middle = int(time.time() * 1000)
    time.sleep(0.05)
    produce(kcat, shared_broker, unique_topic, [f"b{i}" for i in range(3)])

    # query mode: offset of the first record at or after the timestamp
    proc = run_kcat(
        kcat, "-Q", "-b", shared_broker.bootstrap, "-t", f"{unique_topic}:0:{middle}", "-m", "15"
    )
    found = re.search(r"\[0\]\s+offset\s+(-?\d+)", proc.stdout.decode())
    assert found, proc.stdout
    assert int(found.group(1)) == 4

    got = consume_all(kcat, shared_broker, unique_topic, offset=f"s@{middle}")
    assert [m["payload"] for m in got] == ["b0", "b1", "b2"]
    got = consume_all(kcat, shared_broker, unique_topic, offset="-2")
    assert [m["payload"] for m in got] == ["b1", "b2"]


def test_group_earliest(
    kcat: str, shared_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    create_topic(shared_broker.bootstrap, unique_topic)
    produce(kcat, shared_broker, unique_topic, [f"m{i}" for i in range(5)])
    proc = run_kcat(
        kcat,
        "-b",
        shared_broker.bootstrap,
        "-G",
        unique_group,
        "-J",
        "-q",
        "-c",
        "5",
        "-X",
        "auto.offset.reset=earliest",
        unique_topic,
        timeout=40,
    )
    got = [json.loads(x) for x in proc.stdout.decode().splitlines() if x.strip()]
    assert [m["payload"] for m in got] == [f"m{i}" for i in range(5)]


def test_group_latest(
    kcat: str, shared_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    create_topic(shared_broker.bootstrap, unique_topic)
    produce(kcat, shared_broker, unique_topic, [f"old{i}" for i in range(5)])
    consumer = subprocess.Popen(
        [
            kcat,
            "-b",
            shared_broker.bootstrap,
            "-G",
            unique_group,
            "-J",
            "-q",
            "-c",
            "1",
            "-X",
            "auto.offset.reset=latest",
            unique_topic,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # kcat cannot say when "latest" is resolved: keep producing new records until
        # one arrives, then check it is a new one.
        deadline = time.monotonic() + 40
        i = 0
        while consumer.poll() is None:
            assert time.monotonic() < deadline, "kcat consumed nothing within 40 s"
            produce(kcat, shared_broker, unique_topic, [f"new{i}"])
            i += 1
            time.sleep(0.3)
        out, err = consumer.communicate(timeout=10)
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait()
    assert consumer.returncode == 0, err.decode(errors="replace")
    (msg,) = [json.loads(x) for x in out.decode().splitlines() if x.strip()]
    assert msg["payload"].startswith("new"), msg
    assert msg["offset"] >= 5
