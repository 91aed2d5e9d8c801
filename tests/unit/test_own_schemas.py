"""protocol/schemas/: the message versions Odradek carries classes for itself (those
kio 0.6.5 lacks), read from the bytes Kafka 4.4's own message classes write (KafkaTool
schema-bytes, on the Java client 4.4) and written back to the same bytes."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from functools import cache
from typing import Any

from helpers import java
from kio.serial import entity_reader

from odradek.protocol import messages

TOPIC_ID = uuid.UUID(int=1)  # Kafka's Uuid "AAAAAAAAAAAAAAAAAAAAAQ"


def plain(value: Any) -> Any:
    """A decoded message as dicts and lists, error codes as numbers."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return [plain(item) for item in value]
    if isinstance(value, enum.Enum):
        return value.value
    return value


@cache
def kafka_bytes() -> dict[tuple[int, int, str], bytes]:
    result = java.run(["schema-bytes"])
    return {
        (line["api_key"], line["version"], line["kind"]): bytes.fromhex(line["hex"])
        for line in result.lines
        if line.get("event") == "bytes"
    }


def read(api_key: int, version: int, kind: str) -> Any:
    raw = kafka_bytes()[(api_key, version, kind)]
    of = messages.response_class if kind == "response" else messages.request_class
    cls = of(api_key, version)
    assert cls.__module__.startswith("odradek.protocol.schemas."), cls
    value, end = entity_reader(cls)(raw, 0)
    assert end == len(raw)
    assert messages.encode(value) == raw  # and written back byte for byte
    return plain(value)


def test_api_versions_request_v5() -> None:
    assert read(18, 5, "request") == {
        "client_software_name": "odradek-test",
        "client_software_version": "1.0",
        "cluster_id": "cluster-a",
        "node_id": 7,
    }


def test_delete_groups_response_v3() -> None:
    answer = read(42, 3, "response")
    assert answer["results"] == [
        {"group_id": "g-1", "error_code": 69, "error_message": "not empty"},
        {"group_id": "g-2", "error_code": 0, "error_message": None},
    ]


def test_txn_offset_commit_v6() -> None:
    asked = read(28, 6, "request")
    assert asked["topics"] == [
        {
            "topic_id": TOPIC_ID,
            "partitions": [
                {
                    "partition_index": 2,
                    "committed_offset": 100,
                    "committed_leader_epoch": 4,
                    "committed_metadata": "meta",
                }
            ],
        }
    ]
    assert (asked["transactional_id"], asked["producer_epoch"]) == ("txn-1", 3)
    answer = read(28, 6, "response")
    assert answer["topics"] == [
        {"topic_id": TOPIC_ID, "partitions": [{"partition_index": 2, "error_code": 100}]}
    ]


def test_unregister_controller_v0() -> None:
    assert read(94, 0, "request") == {"controller_id": 3001}
    assert read(94, 0, "response") == {
        "throttle_time": datetime.timedelta(milliseconds=5),
        "error_code": 136,  # CONTROLLER_ID_NOT_REGISTERED, newer than kio's ErrorCode
        "error_message": "Controller ID 3001 is not currently registered.",
    }
