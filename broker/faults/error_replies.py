"""The answer a request gets when a fault refuses it: the response of its API and
version, every entry the request named answered with the fault's error, and what it
names (topics and partitions, groups, transactional ids) read from the request by
the same table. Sans-IO: decoded requests in, response dicts out (the encoder gives
the fields left out their defaults)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from odradek.protocol.errors import ErrorCode


@dataclass(frozen=True)
class Mirror:
    """A response array with one entry per entry of a request array. `copy` pairs a
    response field with the request field it repeats ("" for an entry that is a
    plain value, as a partition index in a list of them)."""

    response: str
    request: str
    copy: tuple[tuple[str, str], ...]
    inner: tuple[Mirror, ...] = ()


def _partitions(response: str, request: str, index: str) -> Mirror:
    return Mirror(response, request, (("partition_index", index), ("index", index)))


def _topics(response: str, request: str, name: str, partitions: Mirror) -> Mirror:
    return Mirror(
        response,
        request,
        (("name", name), ("topic", name), ("topic_id", "topic_id")),
        (partitions,),
    )


# API key -> the arrays its response repeats from its request. An API not here is
# answered with its error at the top of the response.
# (Produce is decoded by protocol/produce_request.py: its partitions have `partition`)
_PRODUCE = _topics(
    "responses",
    "topic_data",
    "name",
    _partitions("partition_responses", "partition_data", "partition"),
)
_FETCH = _topics(
    "responses", "topics", "topic", _partitions("partitions", "partitions", "partition")
)
_BY_INDEX = _topics(
    "topics", "topics", "name", _partitions("partitions", "partitions", "partition_index")
)
_FETCHED = _topics("topics", "topics", "name", _partitions("partitions", "partition_indexes", ""))
# (AddPartitionsToTxn v0-3 names its fields v3_and_below_*)
_TXN_TOPICS = _topics(
    "results_by_topic_v3_and_below",
    "v3_and_below_topics",
    "name",
    _partitions("results_by_partition", "partitions", ""),
)
_TXN_BATCH = Mirror(
    "results_by_transaction",
    "transactions",
    (("transactional_id", "transactional_id"),),
    (
        _topics(
            "topic_results", "topics", "name", _partitions("results_by_partition", "partitions", "")
        ),
    ),
)
MIRRORS: dict[int, tuple[Mirror, ...]] = {
    0: (_PRODUCE,),
    1: (_FETCH,),
    2: (_BY_INDEX,),  # ListOffsets
    8: (_BY_INDEX,),  # OffsetCommit
    9: (_FETCHED, Mirror("groups", "groups", (("group_id", "group_id"),), (_FETCHED,))),
    10: (Mirror("coordinators", "coordinator_keys", (("key", ""),)),),
    13: (Mirror("members", "members",
                (("member_id", "member_id"), ("group_instance_id", "group_instance_id"))),),
    15: (Mirror("groups", "groups", (("group_id", ""),)),),
    19: (Mirror("topics", "topics", (("name", "name"),)),),
    20: (Mirror("responses", "topic_names", (("name", ""),)),
         Mirror("responses", "topics", (("name", "name"), ("topic_id", "topic_id")))),
    24: (_TXN_TOPICS, _TXN_BATCH),
    28: (_BY_INDEX,),  # TxnOffsetCommit
    42: (Mirror("results", "groups_names", (("group_id", ""),)),),
}  # fmt: skip

# Fields that answer "nothing" with -1 rather than 0 (a node, an id, an offset)
_MINUS_ONE = ("node_id", "producer_id", "producer_epoch", "base_offset", "offset", "high_watermark",
              "last_stable_offset", "log_start_offset", "leader_id", "leader_epoch", "member_epoch",
              "generation_id", "port", "timestamp")  # fmt: skip


def error_reply(api_key: int, request: Any, code: ErrorCode, message: str | None) -> dict[str, Any]:
    """The response that answers every entry of `request` with `code`."""
    mirrors = [m for m in MIRRORS.get(api_key, ()) if _array(request, m.request) is not None]
    reply = _blank(code if not mirrors else ErrorCode.none, message if not mirrors else None)
    for mirror in mirrors:
        reply[mirror.response] = _mirrored(mirror, _array(request, mirror.request), code, message)
    return reply


def _blank(code: ErrorCode, message: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {name: -1 for name in _MINUS_ONE}
    out["error_code"] = out["partition_error_code"] = code  # (AddPartitionsToTxn's name)
    out["error_message"] = message
    out["throttle_time"] = 0
    return out


def _mirrored(
    mirror: Mirror, entries: Any, code: ErrorCode, message: str | None
) -> list[dict[str, Any]]:
    answered = []
    leaf = not mirror.inner
    for entry in entries:
        out = _blank(code if leaf else ErrorCode.none, message if leaf else None)
        for response_field, request_field in mirror.copy:
            value = _field(entry, request_field)
            if value is not None:
                out[response_field] = value
        for inner in mirror.inner:
            inner_entries = _array(entry, inner.request)
            if inner_entries is not None:
                out[inner.response] = _mirrored(inner, inner_entries, code, message)
                if not inner_entries:  # nothing below to carry the error
                    out["error_code"] = code
        answered.append(out)
    return answered


def _array(entry: Any, name: str) -> Any:
    value = getattr(entry, name, None)
    return value if isinstance(value, tuple | list) else None


# -- what a request names ----------------------------------------------------------


def named_partitions(
    api_key: int, request: Any, topic_of: Callable[[uuid.UUID], str | None]
) -> Iterator[tuple[str, int | None]]:
    """(topic, partition) for every partition the request names; (topic, None) for a
    topic named without partitions. Topic ids are named through `topic_of`."""
    for mirror in MIRRORS.get(api_key, ()):
        yield from _walk(mirror, request, topic_of, None)


def _walk(
    mirror: Mirror, parent: Any, topic_of: Callable[[uuid.UUID], str | None], topic: str | None
) -> Iterator[tuple[str, int | None]]:
    fields = dict(mirror.copy)
    for entry in _array(parent, mirror.request) or ():
        if "partition_index" in fields:
            index = _field(entry, fields["partition_index"])
            if topic is not None and isinstance(index, int):
                yield topic, index
            continue
        name = None
        for key in ("name", "topic"):
            value = _field(entry, fields[key]) if key in fields else None
            if isinstance(value, str) and value:  # (empty where the topic goes by id)
                name = value
        topic_id = _field(entry, "topic_id") if "topic_id" in fields else None
        if name is None and isinstance(topic_id, uuid.UUID):
            name = topic_of(topic_id)
        below = [pair for inner in mirror.inner for pair in _walk(inner, entry, topic_of, name)]
        if below:
            yield from below
        elif name is not None:
            yield name, None


def _field(entry: Any, name: str) -> Any:
    if name == "":
        return entry
    value = getattr(entry, name, None)
    return None if callable(value) else value  # (a named tuple's index and count)


def named_groups(api_key: int, request: Any) -> set[str]:
    """The group ids a request names."""
    found: set[str] = set()
    group_id = getattr(request, "group_id", None)
    if isinstance(group_id, str):
        found.add(group_id)
    for name in ("groups", "groups_names"):
        for entry in getattr(request, name, None) or ():
            value = entry if isinstance(entry, str) else getattr(entry, "group_id", None)
            if isinstance(value, str):
                found.add(value)
    if api_key == 10 and getattr(request, "key_type", 0) == 0:
        found.update(_coordinator_keys(request))
    return found


def named_transactional_ids(api_key: int, request: Any) -> set[str]:
    """The transactional ids a request names."""
    found: set[str] = set()
    for name in ("transactional_id", "v3_and_below_transactional_id"):
        value = getattr(request, name, None)
        if isinstance(value, str):
            found.add(value)
    for entry in getattr(request, "transactions", None) or ():
        value = getattr(entry, "transactional_id", None)
        if isinstance(value, str):
            found.add(value)
    if api_key == 10 and getattr(request, "key_type", 0) == 1:
        found.update(_coordinator_keys(request))
    return found


def _coordinator_keys(request: Any) -> set[str]:
    keys = {k for k in getattr(request, "coordinator_keys", None) or () if isinstance(k, str)}
    key = getattr(request, "key", None)
    if isinstance(key, str):
        keys.add(key)
    return keys
