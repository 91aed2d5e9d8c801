"""kcat reads `__consumer_offsets`: the commits are there in Kafka's key/value schemas."""

from __future__ import annotations

import struct
import subprocess

import pytest
from helpers.broker import Broker
from helpers.env import require_executable
from helpers.topics import create_topic
from helpers.wire import WireClient

from groups import wiregroup as wg

pytestmark = pytest.mark.timeout(60)


def test_kcat_reads_commits(shared_broker: Broker, unique_topic: str, unique_group: str) -> None:
    kcat = require_executable("kcat")
    create_topic(shared_broker.bootstrap, unique_topic, 1)
    tp = (unique_topic, 0)
    with WireClient(shared_broker.bootstrap) as w:
        member, gen = wg.join_and_sync(w, unique_group, unique_topic)
        assert wg.commit(w, unique_group, {tp: (42, "hello")}, gen, member) == {tp: 0}
    proc = subprocess.run(
        [
            kcat,
            "-b",
            shared_broker.bootstrap,
            "-C",
            "-t",
            "__consumer_offsets",
            "-e",
            "-q",
            "-f",
            "%k %s\\n",
        ],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    out = proc.stdout
    group, topic = unique_group.encode(), unique_topic.encode()
    # offset commit key v1: int16 1, group, topic, int32 partition
    key = (
        struct.pack(">hh", 1, len(group))
        + group
        + struct.pack(">h", len(topic))
        + topic
        + struct.pack(">i", 0)
    )
    assert key in out, out[-2000:]
    # offset commit value v3: int16 3, int64 offset, int32 leader epoch, string metadata
    value = struct.pack(">hqih", 3, 42, -1, 5) + b"hello"
    assert key + b" " + value in out
    # group metadata key v2 with the group's generation record
    group_key = struct.pack(">hh", 2, len(group)) + group
    assert group_key + b" " in out
    assert member.encode() in out
