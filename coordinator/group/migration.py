"""Turning a classic group into a consumer group and back, as pure functions of the
groups (the shard decides when: see classic_members.py).

Upgrade: each classic member becomes a member of the consumer group that keeps the
partitions of its last assignment as both its current and its target assignment, at
the classic generation as its epoch; the group and target epochs are that generation
too, so nothing moves until the arriving member bumps the epoch.

Downgrade: the remaining members, all classic, form a classic group at the consumer
group's epoch as its generation, each holding its target assignment encoded in the
version of its own subscription; the shard then starts a rebalance.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from odradek.coordinator.group import consumer_records as cr
from odradek.coordinator.group.classic import STABLE, ClassicGroup, Member
from odradek.coordinator.group.consumer import (
    GROUP_EPOCH,
    PARTITION_METADATA,
    TARGET_EPOCH,
    ConsumerGroup,
    ConsumerMember,
    current_record,
    member_record,
    target_record,
)
from odradek.coordinator.group.record_codecs import GroupKey, TopicPartitions
from odradek.coordinator.runtime import Record
from odradek.protocol import embedded_consumer as embedded

# topic name -> (topic id, partition count) of the topics that exist now
Topics = Mapping[str, tuple[uuid.UUID, int]]


def upgrade_allowed(policy: str) -> bool:
    return policy in ("upgrade", "bidirectional")


def downgrade_allowed(policy: str) -> bool:
    return policy in ("downgrade", "bidirectional")


def by_topic_id(partitions: embedded.NamedPartitions, topics: Topics) -> TopicPartitions:
    """Partitions by topic id; topics that do not exist (any more) are left out."""
    return {
        topics[name][0]: parts for name, parts in partitions.items() if name in topics and parts
    }


def upgrade_records(classic: ClassicGroup, topics: Topics) -> list[Record]:
    """The consumer group records that carry on ``classic``'s members. Raises
    RecordFormatError when a member's metadata is not the consumer's embedded protocol."""
    group_id, epoch = classic.group_id, classic.generation
    records: list[Record] = []
    subscribed: set[str] = set()
    for member in classic.members.values():
        subscription = embedded.decode_subscription(member.metadata_for(classic.protocol))
        assigned = by_topic_id(embedded.decode_assignment(member.assignment), topics)
        subscribed.update(subscription.topics)
        carried = ConsumerMember(
            member.member_id,
            instance_id=member.group_instance_id,
            rack_id=subscription.rack_id,
            client_id=member.client_id,
            client_host=member.client_host,
            subscribed_topic_names=subscription.topics,
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            member_epoch=epoch,
            previous_member_epoch=epoch,
            assigned=assigned,
            classic=cr.ClassicMetadata(member.session_timeout_ms, tuple(member.protocols)),
        )
        records.append(member_record(group_id, carried))
        records.append(target_record(group_id, carried.member_id, assigned))
        records.append(current_record(group_id, carried))
    metadata = [
        cr.TopicMetadata(topics[name][0], name, topics[name][1])
        for name in sorted(subscribed)
        if name in topics
    ]
    records.append(PARTITION_METADATA.record(GroupKey(group_id), metadata))
    records += [t.record(GroupKey(group_id), epoch) for t in (GROUP_EPOCH, TARGET_EPOCH)]
    return records


def downgraded(
    group: ConsumerGroup, leaving: str, topic_names: Mapping[uuid.UUID, str]
) -> ClassicGroup:
    """The classic group of ``group``'s members but ``leaving`` (all of them classic)."""
    classic = ClassicGroup(
        group.group_id, state=STABLE, generation=group.group_epoch, protocol_type="consumer"
    )
    for member in group.members.values():
        if member.member_id == leaving or member.classic is None:
            continue
        classic.add(
            Member(
                member.member_id,
                member.instance_id,
                member.client_id,
                member.client_host,
                member.rebalance_timeout_ms,
                member.classic.session_timeout_ms,
                "consumer",
                list(member.classic.protocols),
            )
        )
    classic.protocol = classic.select_protocol()
    for joined in classic.members.values():
        target = group.target.get(joined.member_id, {})
        version = embedded.subscription_version(joined.metadata_for(classic.protocol))
        named = {topic_names[t]: parts for t, parts in target.items() if t in topic_names}
        joined.assignment = embedded.encode_assignment(version, named)
    return classic
