"""Scenarios of share groups (KIP-932): ShareGroupHeartbeat (76) until assigned,
ShareFetch (78) and ShareAcknowledge (79) flows and errors, ShareGroupDescribe (77) of
groups that are not share groups.

As with consumer groups, Kafka 4.4 assigns off the request path and initialises a
share-partition's state asynchronously: members heartbeat and fetch until they have
what they wait for (set-up), and what is the same on any broker is compared.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_data import batch
from conformance.scenarios_fetch import topic_id, write
from conformance.scenarios_groups import join, ready
from conformance.scenarios_topics import incremental_body, quietly_create

HEARTBEAT, DESCRIBE, SHARE_FETCH, SHARE_ACKNOWLEDGE = 76, 77, 78, 79
CONSUMER_HEARTBEAT, INCREMENTAL_ALTER_CONFIGS, DESCRIBE_OFFSETS = 68, 44, 90
GROUP_RESOURCE = 32
ACCEPT, RELEASE, REJECT = 1, 2, 3


def share_group(run: Run, name: str = "g") -> str:
    """A share group that starts at the beginning of its partitions (the default is
    the latest offset), with its coordinator ready."""
    group = run.name(name)
    ready(run, 0, group)
    earliest: list[tuple[str, int, str | None]] = [("share.auto.offset.reset", 0, "earliest")]
    body = incremental_body([(GROUP_RESOURCE, group, earliest)])
    answer = run.quiet(INCREMENTAL_ALTER_CONFIGS, 1, body)
    assert answer.responses[0].error_code == 0, answer
    return group


@dataclass
class ShareMember:
    run: Run
    group: str
    topics: list[str]
    member_id: str = ""
    epoch: int = 0
    session_epoch: int = 0
    last: Any = None

    def __post_init__(self) -> None:
        self.member_id = self.member_id or str(uuid.uuid4())

    def heartbeat_body(self, epoch: int | None = None) -> dict[str, Any]:
        return {
            "group_id": self.group,
            "member_id": self.member_id,
            "member_epoch": self.epoch if epoch is None else epoch,
            "rack_id": None,
            "subscribed_topic_names": self.topics if self.epoch == 0 else None,
        }

    def join(self, partitions: int) -> None:
        """Heartbeat until `partitions` partitions are assigned."""
        deadline = time.monotonic() + 20
        owned = 0
        while time.monotonic() < deadline:
            answer = self.run.quiet(HEARTBEAT, 1, self.heartbeat_body())
            assert answer.error_code == 0, answer
            self.epoch = int(answer.member_epoch)
            if answer.assignment is not None:
                owned = sum(len(t.partitions) for t in answer.assignment.topic_partitions)
            if owned == partitions:
                return
            time.sleep(0.1)
        raise AssertionError(f"not assigned {partitions} partitions: {answer}")

    def fetch_body(
        self,
        topics: dict[uuid.UUID, list[int]],
        acks: dict[tuple[uuid.UUID, int], list[tuple[int, int, int]]] | None = None,
        epoch: int | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        acks = acks or {}
        return {
            "group_id": self.group,
            "member_id": self.member_id,
            "share_session_epoch": self.session_epoch if epoch is None else epoch,
            "max_wait": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "max_records": 500,
            "batch_size": 500,
            "topics": [
                {
                    "topic_id": tid,
                    "partitions": [
                        {"partition_index": p, "acknowledgement_batches": batches(acks, tid, p)}
                        for p in partitions
                    ],
                }
                for tid, partitions in topics.items()
            ],
            "forgotten_topics_data": [],
            **fields,
        }

    def fetch(self, topics: dict[uuid.UUID, list[int]], *, call: bool = True, **fields: Any) -> Any:
        body = self.fetch_body(topics, **fields)
        send = self.run.call if call else self.run.quiet
        answer = send(SHARE_FETCH, 1, body)
        self.last = answer
        if answer.error_code == 0 and "epoch" not in fields:
            self.session_epoch += 1
        return answer

    def acquire(self, tid: uuid.UUID, count: int) -> list[tuple[int, int, int]]:
        """Fetch (set-up) until `count` records are acquired; their ranges."""
        got: list[tuple[int, int, int]] = []
        deadline = time.monotonic() + 20
        while len_of(got) < count and time.monotonic() < deadline:
            answer = self.fetch({tid: [0]}, call=False, max_wait=200)
            assert answer.error_code == 0, answer
            got += acquired(answer)
        assert len_of(got) == count, (got, self.last)
        return got

    def acknowledge(
        self,
        acks: dict[tuple[uuid.UUID, int], list[tuple[int, int, int]]],
        quiet: bool = False,
        **fields: Any,
    ) -> Any:
        topics: dict[uuid.UUID, list[int]] = {}
        for tid, partition in acks:
            topics.setdefault(tid, []).append(partition)
        body = {
            "group_id": self.group,
            "member_id": self.member_id,
            "share_session_epoch": self.session_epoch,
            "topics": [
                {
                    "topic_id": tid,
                    "partitions": [
                        {"partition_index": p, "acknowledgement_batches": batches(acks, tid, p)}
                        for p in partitions
                    ],
                }
                for tid, partitions in topics.items()
            ],
            **fields,
        }
        answer = (self.run.quiet if quiet else self.run.call)(SHARE_ACKNOWLEDGE, 1, body)
        if answer.error_code == 0 and "share_session_epoch" not in fields:
            self.session_epoch += 1
        return answer


def batches(
    acks: dict[tuple[uuid.UUID, int], list[tuple[int, int, int]]], tid: uuid.UUID, partition: int
) -> list[dict[str, Any]]:
    return [
        {"first_offset": first, "last_offset": last, "acknowledge_types": [kind]}
        for first, last, kind in acks.get((tid, partition), [])
    ]


def acquired(answer: Any) -> list[tuple[int, int, int]]:
    return [
        (a.first_offset, a.last_offset, a.delivery_count)
        for t in answer.responses
        for p in t.partitions
        for a in p.acquired_records
    ]


def len_of(ranges: list[tuple[int, int, int]]) -> int:
    return sum(last - first + 1 for first, last, _ in ranges)


def started(run: Run, records: int = 5, partitions: int = 1) -> tuple[ShareMember, uuid.UUID]:
    """A topic with `records` records in partition 0, a share group, and a member
    assigned every partition of the topic, with its share session open."""
    name = run.name("t")
    quietly_create(run, name, partitions)
    write(run, name, batch(records))
    group = share_group(run)
    member = ShareMember(run, group, [name])
    member.join(partitions)
    return member, topic_id(run, name)


@scenario("share-fetch.acquire-and-acknowledge", "acquire, accept, release, reject, fetch again")
def _flow(run: Run) -> None:
    member, tid = started(run)
    run.record("acquired", member.acquire(tid, 5))
    member.acknowledge({(tid, 0): [(0, 1, ACCEPT), (2, 2, RELEASE), (3, 3, REJECT)]})
    again = member.fetch({tid: [0]}, max_wait=200)  # the released record, a second time
    run.record("acquired again", acquired(again))
    member.fetch({tid: [0]}, acks={(tid, 0): [(2, 2, ACCEPT), (4, 4, ACCEPT)]})
    member.fetch({}, epoch=-1)  # the session closed


@scenario("share-fetch.session-errors", "unknown sessions, wrong epochs, acknowledging on opening")
def _fetch_errors(run: Run) -> None:
    member, tid = started(run)
    stranger = ShareMember(run, member.group, member.topics)
    stranger.fetch({tid: [0]}, epoch=3)  # no session of this member
    member.acquire(tid, 5)
    member.fetch({tid: [0]}, epoch=member.session_epoch + 4)
    member.fetch({tid: [0]}, epoch=0, acks={(tid, 0): [(0, 0, ACCEPT)]})
    member.fetch({tid: [0]}, epoch=-1, acks={(tid, 0): [(0, 0, ACCEPT)]})
    member.fetch({tid: [0]}, epoch=-1)


@scenario("share-fetch.bad-input", "unknown topics and partitions, no member id, a bad group")
def _fetch_bad_input(run: Run) -> None:
    member, tid = started(run)
    stranger = uuid.UUID("8f4e1a52-1cf5-4d2b-9f8c-0123456789ab")
    member.fetch({stranger: [0]}, epoch=0)
    member.fetch({tid: [0, 5]}, epoch=-1)
    member.fetch({tid: [0]}, epoch=0, member_id="")
    member.fetch({tid: [0]}, epoch=0, group_id="")
    member.fetch({tid: [0]}, epoch=1, group_id="")
    member.fetch({tid: [0]}, epoch=2, group_id="", acks={(tid, 0): [(0, 0, ACCEPT)]})
    body = {"group_id": "", "member_id": member.member_id, "share_session_epoch": 1}
    run.call(SHARE_ACKNOWLEDGE, 1, {**body, "topics": []})
    member.fetch({tid: [0]}, epoch=0, group_id=None)  # a null group id
    run.call(SHARE_ACKNOWLEDGE, 1, {**body, "group_id": None, "topics": []})


@scenario("share-acknowledge.errors", "records not acquired, bad types, bad sessions")
def _acknowledge_errors(run: Run) -> None:
    member, tid = started(run)
    member.acquire(tid, 5)
    member.acknowledge({(tid, 0): [(7, 9, ACCEPT)]})  # never acquired
    member.acknowledge({(tid, 0): [(0, 0, 9)]})  # no such acknowledge type
    member.acknowledge({(tid, 0): [(3, 1, ACCEPT)]})  # a range backwards
    member.acknowledge({(tid, 0): [(0, 4, ACCEPT)]}, share_session_epoch=0)
    member.acknowledge({(tid, 0): [(0, 4, ACCEPT)]}, share_session_epoch=99)
    member.acknowledge({(tid, 0): [(0, 4, ACCEPT)]})
    member.acknowledge({(tid, 0): [(0, 4, ACCEPT)]})  # accepted already
    body = {"group_id": member.group, "member_id": str(uuid.uuid4()), "share_session_epoch": 1}
    run.call(SHARE_ACKNOWLEDGE, 1, {**body, "topics": []})


@scenario("share-group-heartbeat.assigned", "two members share four partitions, one leaves")
def _heartbeat(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name, 4)
    group = share_group(run)
    first, second = ShareMember(run, group, [name]), ShareMember(run, group, [name])
    first.join(4)
    second.join(2)
    first.join(2)
    run.call(HEARTBEAT, 1, second.heartbeat_body(epoch=-1))  # answered with epoch -1
    first.join(4)
    answer = run.quiet(DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False})
    g = answer.groups[0]
    run.record(
        "described",
        (
            g.group_state,
            g.assignor_name,
            [
                sorted(p for t in m.assignment.topic_partitions for p in t.partitions)
                for m in g.members
            ],
        ),
    )


@scenario("share-group-describe.not-share-groups", "unknown, consumer, classic and empty ids")
def _describe(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    consumer, classic = run.name("consumer"), run.name("classic")
    ready(run, 0, consumer)
    ready(run, 0, classic)
    body = {
        "group_id": consumer,
        "member_id": str(uuid.uuid4()),
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 30000,
        "subscribed_topic_names": [name],
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [],
    }
    assert run.quiet(CONSUMER_HEARTBEAT, 1, body).error_code == 0
    first = join(run, classic)
    join(run, classic, first.member_id)
    for group in (run.name("none"), consumer, classic, ""):
        run.call(DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False})
    # a share group's member heartbeating to a consumer group, and the other way round
    member = ShareMember(run, consumer, [name])
    run.call(HEARTBEAT, 1, member.heartbeat_body())
