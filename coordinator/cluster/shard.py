"""The cluster's metadata as a state machine: brokers, topics, partition leaders.

The controller runs it over `__cluster_metadata` (operations return records and an
answer; the runtime appends the records and replays them); every broker replays the
same records into a shard of its own, which is its view of the cluster.

- A broker registers (node id, incarnation, endpoints) and starts fenced; it is
  unfenced by a heartbeat once it has replayed the metadata up to its own
  registration. A second node registering a node id whose broker is alive is refused
  (DUPLICATE_BROKER_REGISTRATION); the same node coming back (a new incarnation after
  its session ended, or the same incarnation) takes its id again.
- A broker that misses `broker.session.timeout.ms` of heartbeats is fenced: it leaves
  the ISR of every partition (unless it is the last member) and the partitions it led
  get the next live in-sync replica as leader, in replica order, with a new leader
  epoch. No live in-sync replica: no leader (-1) until one comes back; an out-of-sync
  replica is never elected.
- Topics get their replicas round-robin over the unfenced brokers; the first replica
  leads and every replica starts in the ISR.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import structlog

from odradek.coordinator.cluster import directories, placement
from odradek.coordinator.cluster import kafka_format as kf
from odradek.coordinator.cluster import legacy_records as legacy
from odradek.coordinator.cluster import records as rec
from odradek.coordinator.cluster.assignments import (
    new_partitions_problem,
    topic_assignments_problem,
)
from odradek.coordinator.cluster.kafka_format import MetadataRecord
from odradek.coordinator.cluster.reassignment import change_partition
from odradek.coordinator.cluster.records import MetadataDocuments
from odradek.coordinator.cluster.replay import REPLAY
from odradek.coordinator.runtime import Record, Result
from odradek.protocol.errors import ErrorCode, default_message

NO_LEADER = rec.NO_LEADER
PRODUCER_ID_BLOCK = 1000

log = structlog.get_logger("controller")


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class ClusterSettings:
    cluster_id: str = "odradek-cluster"
    broker_session_timeout_ms: int = 9000
    unclean_leader_election: bool = False  # unclean.leader.election.enable, per topic too


@dataclass
class Registration:
    value: rec.BrokerValue
    offset: int  # of the record that registered it: caught up once replayed this far


@dataclass
class TopicState:
    topic_id: uuid.UUID
    configs: dict[str, str]
    partitions: dict[int, rec.PartitionValue] = field(default_factory=dict)


class ClusterShard:
    def __init__(
        self,
        runtime: Any,
        settings: ClusterSettings | None = None,
        documents: MetadataDocuments | None = None,
    ) -> None:
        self.runtime = runtime
        self.settings = settings or ClusterSettings()
        self.brokers: dict[int, Registration] = {}
        self.controllers: dict[int, rec.ControllerValue] = {}
        self.topics: dict[str, TopicState] = {}
        self.offline_dirs: dict[int, set[uuid.UUID]] = {}  # per broker, as it last said
        self.topic_names: dict[uuid.UUID, str] = {}
        self.last_offset = -1
        self.last_broker_epoch = 0
        self.heartbeats: dict[int, int] = {}  # node id -> last heartbeat (ms); not in records
        self.placement_start = 0  # where the next topic's first replica goes (placement.py)
        self.next_producer_id = 0
        self._documents = documents
        self.documents: dict[str, bytes] = {} if documents is None else documents.documents
        self._changed_topics: set[str] | None = None  # since take_changes (None: any)

    @property
    def metadata_documents(self) -> MetadataDocuments | None:
        return self._documents

    # -- replay --------------------------------------------------------------------

    def replay(self, offset: int, key: bytes | None, value: bytes | None, producer_id: int) -> None:
        self.last_offset = max(self.last_offset, offset)
        if key is not None:
            legacy.replay(self, offset, key, value)  # a log written before Kafka's format
            self._changed_topics = None
            return
        if value is None:
            return
        record = kf.decode(value)
        replay = REPLAY.get(record.api_key)
        if replay is not None:
            replay(self, record, offset)
        else:
            self.replay_document(record, offset)

    def replay_document(self, record: MetadataRecord, offset: int) -> None:
        if self._documents is not None:
            self._documents.replay(record, offset)

    def registered(self, node_id: int, broker: rec.BrokerValue, offset: int) -> None:
        self.brokers[node_id] = Registration(broker, offset)
        self.last_broker_epoch = max(self.last_broker_epoch, broker.epoch)

    def touched(self, name: str) -> None:
        """Topic `name` (its configs or partitions) changed, or came or went."""
        if self._changed_topics is not None:
            self._changed_topics.add(name)

    def take_changes(self) -> set[str] | None:
        """The topics touched since the last call (None: any may have been)."""
        changes, self._changed_topics = self._changed_topics, set()
        return changes

    def give_back_changes(self, changes: set[str] | None) -> None:
        """Changes taken and not acted on: the next take_changes has them again."""
        if changes is None or self._changed_topics is None:
            self._changed_topics = None
        else:
            self._changed_topics |= changes

    def add_topic(self, name: str, topic_id: uuid.UUID, configs: dict[str, str]) -> None:
        self.touched(name)
        old = self.topics.get(name)
        kept = old.partitions if old is not None and old.topic_id == topic_id else {}
        if old is not None and old.topic_id != topic_id:
            self.topic_names.pop(old.topic_id, None)
        self.topics[name] = TopicState(topic_id, configs, kept)
        self.topic_names[topic_id] = name

    def remove_topic(self, name: str) -> None:
        self.touched(name)
        state = self.topics.pop(name, None)
        if state is not None:
            self.topic_names.pop(state.topic_id, None)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicState | None:
        name = self.topic_names.get(topic_id)
        return None if name is None else self.topics.get(name)

    def replay_control(self, producer_id: int, commit: bool) -> None:
        pass  # nothing transactional is written here

    def begin_load(self) -> None:
        pass

    def on_loaded(self) -> None:
        # After a restart every registered broker gets a full session to heartbeat.
        now = now_ms()
        for node_id in self.brokers:
            self.heartbeats[node_id] = now
            self._arm_session(node_id)

    # -- what the cluster looks like ------------------------------------------------

    def live_brokers(self) -> list[int]:
        return sorted(n for n, r in self.brokers.items() if not r.value.fenced)

    def partition(self, topic: str, index: int) -> rec.PartitionValue | None:
        state = self.topics.get(topic)
        return None if state is None else state.partitions.get(index)

    # -- brokers -------------------------------------------------------------------

    def register_broker(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        """request: node_id, cluster_id, incarnation_id, endpoints, rack, now_ms, and
        `local` when the broker runs in the controller's own process (its old
        incarnation cannot be alive)."""
        node_id = request["node_id"]
        now = request.get("now_ms", now_ms())
        if request["cluster_id"] != self.settings.cluster_id:
            return _refused(ErrorCode.inconsistent_cluster_id)
        known = self.brokers.get(node_id)
        if (
            known is not None
            and not request.get("local")
            and known.value.incarnation_id != request["incarnation_id"]
            and not known.value.fenced
            and now - self.heartbeats.get(node_id, 0) < self.settings.broker_session_timeout_ms
        ):
            return _refused(ErrorCode.duplicate_broker_registration)
        epoch = self.last_broker_epoch + 1
        value = rec.BrokerValue(
            epoch,
            request["incarnation_id"],
            True,
            request.get("rack"),
            request["endpoints"],
            tuple(request.get("log_dirs", ())),
        )
        records = [rec.register_broker(node_id, value)]
        if known is not None and not known.value.fenced:
            records += self.leave(node_id)  # its old incarnation is gone: fence it first
        self.heartbeats[node_id] = now
        self._arm_session(node_id)
        log.info("broker registered", node_id=node_id, broker_epoch=epoch)
        return Result(records, {"error_code": ErrorCode.none, "broker_epoch": epoch})

    def unregister_broker(self, node_id: int) -> Result[dict[str, Any]]:
        """UnregisterBroker: the broker leaves the cluster for good (fenced first, then
        its registration removed); it registers anew if it comes back."""
        known = self.brokers.get(node_id)
        if known is None:
            return _refused(ErrorCode.broker_id_not_registered)
        records = [] if known.value.fenced else self._fence(node_id)
        records.append(rec.unregister_broker(node_id, known.value.epoch))
        self.heartbeats.pop(node_id, None)
        if self.runtime is not None:
            self.runtime.cancel(f"broker-session-{node_id}")
        log.info("broker unregistered", node_id=node_id)
        return Result(records, {"error_code": ErrorCode.none})

    def broker_heartbeat(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        """request: node_id, broker_epoch, current_metadata_offset, want_fence,
        want_shutdown, now_ms."""
        node_id = request["node_id"]
        known = self.brokers.get(node_id)
        if known is None:
            return _refused(ErrorCode.broker_id_not_registered)
        if known.value.epoch != request["broker_epoch"]:
            return _refused(ErrorCode.stale_broker_epoch)
        self.heartbeats[node_id] = request.get("now_ms", now_ms())
        self._arm_session(node_id)
        caught_up = request["current_metadata_offset"] >= known.offset
        records: list[Record] = []
        fenced = known.value.fenced
        if request.get("want_shutdown"):
            if not fenced:
                records = self._fence(node_id)
            fenced = True
        elif fenced and caught_up and not request.get("want_fence"):
            records = self._unfence(node_id)
            fenced = False
        elif not fenced and request.get("want_fence"):
            records = self._fence(node_id)
            fenced = True
        if not fenced:  # its replicas in failed directories stop serving
            offline = self.offline_dirs[node_id] = set(request.get("offline_log_dirs") or ())
            records += directories.take_offline(self, node_id, offline)
        answer = {
            "error_code": ErrorCode.none,
            "is_caught_up": caught_up,
            "is_fenced": fenced,
            "should_shutdown": bool(request.get("want_shutdown")),
        }
        return Result(records, answer)

    def fence_if_expired(self, node_id: int, now: int | None = None) -> Result[None]:
        """The session timer: fence a broker whose heartbeats stopped."""
        known = self.brokers.get(node_id)
        if known is None or known.value.fenced:
            return Result()
        now = now_ms() if now is None else now
        left = self.heartbeats.get(node_id, 0) + self.settings.broker_session_timeout_ms - now
        if left > 0:
            self._arm_session(node_id, left)
            return Result()
        log.warning(
            "broker fenced: no heartbeat within broker.session.timeout.ms",
            node_id=node_id,
            timeout_ms=self.settings.broker_session_timeout_ms,
        )
        return Result(self._fence(node_id))

    def _arm_session(self, node_id: int, delay_ms: int | None = None) -> None:
        if self.runtime is None:
            return
        delay = self.settings.broker_session_timeout_ms if delay_ms is None else delay_ms
        self.runtime.schedule(
            f"broker-session-{node_id}", delay, lambda s: s.fence_if_expired(node_id)
        )

    def _fence(self, node_id: int) -> list[Record]:
        epoch = self.brokers[node_id].value.epoch
        moved = self.leave(node_id)
        log.info("broker fenced", node_id=node_id, partitions_changed=len(moved))
        return [rec.broker_fenced(node_id, epoch, True), *moved]

    def _unfence(self, node_id: int) -> list[Record]:
        epoch = self.brokers[node_id].value.epoch
        log.info("broker unfenced", node_id=node_id)
        records = [rec.broker_fenced(node_id, epoch, False)]
        for topic, state in self.topics.items():
            for index, p in state.partitions.items():
                if p.leader == NO_LEADER and node_id in p.isr:
                    changed = _new_leader(p, node_id)
                    records.append(self.partition_changed(topic, index, changed))
        return records

    def leave(
        self, node_id: int, only: Callable[[rec.PartitionValue], bool] | None = None
    ) -> list[Record]:
        """Partition changes for a broker that stops serving (`only`: those of its
        replicas): out of every ISR it is not the last member of, and a new leader
        where it led."""
        live = set(self.live_brokers()) - {node_id}
        records: list[Record] = []
        for topic, state in self.topics.items():
            for index, p in state.partitions.items():
                if node_id not in p.isr and p.leader != node_id:
                    continue
                if only is not None and not only(p):
                    continue
                isr = tuple(r for r in p.isr if r != node_id) or p.isr
                leader = p.leader
                if leader == node_id:
                    leader = next((r for r in p.replicas if r in isr and r in live), NO_LEADER)
                if leader == NO_LEADER and self.unclean(topic):
                    # the topic accepts losing what only the ISR had: any live replica
                    leader = next((r for r in p.replicas if r in live), NO_LEADER)
                    if leader != NO_LEADER:
                        isr = (leader,)
                if isr == p.isr and leader == p.leader:
                    continue
                changed = replace(
                    p,
                    isr=isr,
                    leader=leader,
                    leader_epoch=p.leader_epoch + (leader != p.leader),
                    partition_epoch=p.partition_epoch + 1,
                )
                records.append(self.partition_changed(topic, index, changed))
        return records

    def partition_changed(self, topic: str, index: int, changed: rec.PartitionValue) -> Record:
        """The record of a change to a partition the shard holds."""
        state = self.topics[topic]
        return rec.partition_change(state.topic_id, index, state.partitions[index], changed)

    def allocate_producer_ids(self, node_id: int, broker_epoch: int) -> Result[dict[str, Any]]:
        """A block of producer ids for one broker (AllocateProducerIds): ids are unique
        across the cluster, whichever broker hands them out."""
        known = self.brokers.get(node_id)
        if known is None:
            return _refused(ErrorCode.broker_id_not_registered)
        if known.value.epoch != broker_epoch:
            return _refused(ErrorCode.stale_broker_epoch)
        start = self.next_producer_id
        record = rec.producer_ids(node_id, broker_epoch, start + PRODUCER_ID_BLOCK)
        answer = {"error_code": ErrorCode.none, "start": start, "length": PRODUCER_ID_BLOCK}
        return Result([record], answer)

    def put_document(self, name: str, document: bytes, answer: Any) -> Result[Any]:
        """Replace a whole document (the caller built it from `documents` in the same
        operation, so changes from several brokers never overwrite each other)."""
        before = self.documents.get(name)
        if before == document:
            return Result([], answer)
        if self._documents is None:
            raise RuntimeError("this shard keeps no documents")
        changes = self._documents.records(name, before, document)
        return Result([rec.written(change) for change in changes], answer)

    # -- topics --------------------------------------------------------------------

    def create_topic(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        """request: name, partitions, replication_factor, configs, and assignments (the
        replicas of each partition, by index) when the client placed them itself."""
        name = request["name"]
        if name in self.topics:
            return _refused(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
        assignments: dict[int, list[int]] | None = request.get("assignments")
        if assignments:
            return self._create_assigned(name, assignments, request.get("configs") or {})
        count, factor = request["partitions"], request["replication_factor"]
        if factor <= 0:
            return _refused(
                ErrorCode.invalid_replication_factor,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if count <= 0:
            return _refused(
                ErrorCode.invalid_partitions,
                "Number of partitions was set to an invalid non-positive value.",
            )
        live = self.live_brokers()
        if factor > len(live):
            return _refused(
                ErrorCode.invalid_replication_factor,
                f"Unable to replicate the partition {factor} time(s): The target replication "
                f"factor of {factor} cannot be reached because only {len(live)} broker(s) "
                "are registered or some brokers have all their log directories cordoned.",
            )
        configs = request.get("configs") or {}
        topic_id = uuid.uuid4()
        placed = placement.round_robin(self, topic_id, range(count), factor, live)
        return Result(rec.new_topic(name, topic_id, configs, placed), _created(topic_id))

    def _create_assigned(
        self, name: str, assignments: dict[int, list[int]], configs: dict[str, str]
    ) -> Result[dict[str, Any]]:
        problem = topic_assignments_problem(
            -1, -1, sorted(assignments.items()), self.brokers, self.live_brokers()
        )
        if problem is not None:
            return _refused(*problem)
        ordered = [assignments[index] for index in range(len(assignments))]
        topic_id = uuid.uuid4()
        placed = placement.as_assigned(self, topic_id, 0, ordered)
        return Result(rec.new_topic(name, topic_id, configs, placed), _created(topic_id))

    def create_partitions(
        self, name: str, count: int, assignments: list[list[int]] | None = None
    ) -> Result[dict[str, Any]]:
        """Grow a topic to `count` partitions, the new ones placed as at creation or as
        `assignments` (one replica list per new partition) say."""
        state = self.topics.get(name)
        if state is None:
            return _refused(ErrorCode.unknown_topic_or_partition)
        have = len(state.partitions)
        factor = len(next(iter(state.partitions.values())).replicas) if have else 1
        problem = new_partitions_problem(
            name, have, count, factor, assignments, self.brokers, self.live_brokers()
        )
        if problem is not None:
            return _refused(*problem)
        if assignments is not None:
            records = placement.as_assigned(self, state.topic_id, have, assignments)
            return Result(records, {"error_code": ErrorCode.none})
        live = self.live_brokers()
        if factor > len(live):
            return _refused(ErrorCode.invalid_replication_factor)
        records = placement.round_robin(self, state.topic_id, range(have, count), factor, live)
        return Result(records, {"error_code": ErrorCode.none})

    def alter_topic_configs(self, name: str, configs: dict[str, str]) -> Result[dict[str, Any]]:
        """Replace a topic's configs (the whole set, as IncrementalAlterConfigs leaves it)."""
        state = self.topics.get(name)
        if state is None:
            return _refused(ErrorCode.unknown_topic_or_partition)
        changes = rec.config_changes(rec.TOPIC_RESOURCE, name, state.configs, dict(configs))
        return Result(changes, {"error_code": ErrorCode.none})

    def alter_partition(self, request: dict[str, Any]) -> Result[dict[str, Any]]:
        """A leader's ISR change (AlterPartition). request: node_id, broker_epoch, topic,
        partition, leader_epoch, partition_epoch, isr. Kafka's checks, in its order."""
        node_id = request["node_id"]
        known = self.brokers.get(node_id)
        if known is None or known.value.epoch != request["broker_epoch"]:
            return _refused(ErrorCode.stale_broker_epoch)
        current = self.partition(request["topic"], request["partition"])
        if current is None:
            return _refused(ErrorCode.unknown_topic_or_partition)
        if current.leader != node_id:
            return _refused(ErrorCode.not_leader_or_follower)
        if request["leader_epoch"] != current.leader_epoch:
            return _refused(ErrorCode.fenced_leader_epoch)
        if request["partition_epoch"] != current.partition_epoch:
            return _refused(ErrorCode.invalid_update_version)
        isr = tuple(request["isr"])
        if node_id not in isr or not set(isr) <= set(current.replicas) or len(set(isr)) != len(isr):
            return _refused(ErrorCode.invalid_request)
        live = set(self.live_brokers())
        if any(
            r not in current.isr and (r not in live or directories.offline_at(self, r, current))
            for r in isr
        ):
            return _refused(ErrorCode.ineligible_replica)
        changed = change_partition(current, live, isr=isr) or current
        records = []
        if changed != current:
            records.append(self.partition_changed(request["topic"], request["partition"], changed))
        if changed.leader != node_id:
            # the ISR completed a reassignment that moved the leader away: written, and
            # the leader told to learn the news from the metadata (as Kafka answers)
            return Result(records, {"error_code": ErrorCode.new_leader_elected})
        answer = {
            "error_code": ErrorCode.none,
            "leader": changed.leader,
            "leader_epoch": changed.leader_epoch,
            "isr": changed.isr,
            "partition_epoch": changed.partition_epoch,
        }
        return Result(records, answer)

    def elect_leader(self, topic: str, index: int, unclean: bool) -> Result[dict[str, Any]]:
        """ElectLeaders: preferred (the first replica, if live and in sync), or unclean
        (a partition without a leader takes any live replica, its ISR that one)."""
        if not unclean:
            return self.elect_preferred_leader(topic, index)
        current = self.partition(topic, index)
        if current is None:
            return self._no_partition(topic, index)
        if current.leader != NO_LEADER:
            return _not_needed()
        live = set(self.live_brokers())
        leader = next((r for r in current.replicas if r in live), NO_LEADER)
        if leader == NO_LEADER:
            return _refused(ErrorCode.eligible_leaders_not_available)
        changed = replace(_new_leader(current, leader), isr=(leader,))
        return Result(
            [self.partition_changed(topic, index, changed)], {"error_code": ErrorCode.none}
        )

    def elect_preferred_leader(self, topic: str, index: int) -> Result[dict[str, Any]]:
        """ElectLeaders (preferred): the first replica leads again, if it is in sync and
        live."""
        current = self.partition(topic, index)
        if current is None:
            return self._no_partition(topic, index)
        preferred = current.replicas[0]
        if current.leader == preferred:
            return _not_needed()
        if preferred not in current.isr or preferred not in self.live_brokers():
            return _refused(ErrorCode.preferred_leader_not_available)
        changed = _new_leader(current, preferred)
        return Result(
            [self.partition_changed(topic, index, changed)], {"error_code": ErrorCode.none}
        )

    def move_leader(self, topic: str, index: int, to: int | None) -> Result[dict[str, Any]]:
        """Another in-sync, live replica leads (`to`, or the next one after the leader):
        what a test asks for to see its clients follow a leader that moved."""
        current = self.partition(topic, index)
        if current is None:
            return self._no_partition(topic, index)
        live = set(self.live_brokers())
        candidates = [r for r in current.isr if r in live and r != current.leader]
        if to is not None:
            candidates = [r for r in candidates if r == to]
        if not candidates:
            return _refused(
                ErrorCode.eligible_leaders_not_available, "no other live in-sync replica"
            )
        changed = _new_leader(current, candidates[0])
        answer = {"error_code": ErrorCode.none, "leader": changed.leader}
        return Result([self.partition_changed(topic, index, changed)], answer)

    def _no_partition(self, topic: str, index: int) -> Result[dict[str, Any]]:
        """An election's answer where there is no such partition, in Kafka's words."""
        missing = f"No such topic as {topic}" if topic not in self.topics else None
        return _refused(
            ErrorCode.unknown_topic_or_partition,
            missing or f"No such partition as {topic}-{index}",
        )

    def unclean(self, topic: str) -> bool:
        state = self.topics.get(topic)
        setting = None if state is None else state.configs.get("unclean.leader.election.enable")
        if setting is None:
            return self.settings.unclean_leader_election
        return setting.strip().lower() == "true"

    def delete_topic(self, name: str) -> Result[dict[str, Any]]:
        state = self.topics.get(name)
        if state is None:
            return _refused(ErrorCode.unknown_topic_or_partition)
        records = [rec.remove_topic(state.topic_id)]
        return Result(records, {"error_code": ErrorCode.none, "topic_id": state.topic_id})


def _created(topic_id: uuid.UUID) -> dict[str, Any]:
    return {"error_code": ErrorCode.none, "topic_id": topic_id}


def _refused(code: int, message: str | None = None) -> Result[dict[str, Any]]:
    return Result([], {"error_code": code, "error_message": message})


def _not_needed() -> Result[dict[str, Any]]:
    return _refused(ErrorCode.election_not_needed, default_message(ErrorCode.election_not_needed))


def _new_leader(partition: rec.PartitionValue, leader: int) -> rec.PartitionValue:
    """The partition led by `leader`, in a new leader epoch."""
    return replace(
        partition,
        leader=leader,
        leader_epoch=partition.leader_epoch + 1,
        partition_epoch=partition.partition_epoch + 1,
    )
