"""The driver's questions to Kafka: which partitions a subscription covers and which
offsets its bounds stand for. One admin client, asked with a timeout every time."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from odradek.spark.options import EARLIEST, LATEST, OffsetBound, Subscription
from odradek.spark.options import TopicPartition as TP

# Settings of one kind of client that another kind logs a warning about.
CONSUMER_ONLY = frozenset(
    {
        "isolation.level",
        "group.id",
        "group.instance.id",
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "max.poll.interval.ms",
        "auto.commit.interval.ms",
        "fetch.min.bytes",
        "fetch.max.bytes",
        "fetch.wait.max.ms",
        "fetch.max.wait.ms",
        "max.partition.fetch.bytes",
        "queued.min.messages",
        "queued.max.messages.kbytes",
        "check.crcs",
        "partition.assignment.strategy",
        "group.protocol",
    }
)
PRODUCER_ONLY = frozenset(
    {
        "acks",
        "linger.ms",
        "batch.size",
        "batch.num.messages",
        "compression.type",
        "compression.codec",
        "enable.idempotence",
        "transaction.timeout.ms",
        "queue.buffering.max.messages",
        "queue.buffering.max.kbytes",
        "message.timeout.ms",
        "delivery.timeout.ms",
        "retries",
        "partitioner",
    }
)

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


class KafkaSourceError(RuntimeError):
    """The source could not do what the query asks: a missing topic, an unreachable
    cluster, data lost to retention while ``failOnDataLoss`` is true."""


def admin_config(config: Mapping[str, str]) -> dict[str, str | int | float | bool]:
    return {k: v for k, v in config.items() if k not in CONSUMER_ONLY | PRODUCER_ONLY}


class ClusterView:
    """Partitions and offsets as the cluster sees them now."""

    def __init__(self, config: Mapping[str, str], *, timeout_ms: int, read_committed: bool):
        self._bootstrap = config.get("bootstrap.servers", "")
        self._timeout = timeout_ms / 1000
        self._isolation = (
            IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
        )
        self._admin = AdminClient(admin_config(config))

    def _fail(self, what: str, exc: BaseException) -> KafkaSourceError:
        return KafkaSourceError(
            f"{what} from Kafka at {self._bootstrap} failed within {self._timeout:g} s: {exc}"
        )

    def topics(self) -> dict[str, int]:
        """Every topic and its partition count; internal topics left out."""
        try:
            metadata = self._admin.list_topics(timeout=self._timeout)
        except KafkaException as exc:
            raise self._fail("Reading metadata", exc) from None
        return {
            name: len(topic.partitions)
            for name, topic in metadata.topics.items()
            if topic.error is None and name not in INTERNAL_TOPICS
        }

    def partitions(self, subscription: Subscription, *, require_existing: bool = True) -> list[TP]:
        """The partitions a subscription covers now, sorted. A named topic or partition that
        does not exist is an error (left out when not ``require_existing``); a pattern that
        matches nothing is not."""
        topics = self.topics()
        if subscription.pattern is not None:
            pattern = re.compile(subscription.pattern)
            names = [t for t in topics if pattern.fullmatch(t)]
            return sorted((t, p) for t in names for p in range(topics[t]))
        if subscription.partitions:
            missing = [tp for tp in subscription.partitions if tp[1] >= topics.get(tp[0], 0)]
            if missing and require_existing:
                raise KafkaSourceError(
                    f"Assigned partitions do not exist on {self._bootstrap}: "
                    + ", ".join(f"{t}-{p}" for t, p in sorted(missing))
                )
            return sorted(set(subscription.partitions) - set(missing))
        missing_topics = [t for t in subscription.topics if t not in topics]
        if missing_topics and require_existing:
            raise KafkaSourceError(
                f"Topic(s) not found on {self._bootstrap}: {', '.join(missing_topics)}"
            )
        return sorted((t, p) for t in subscription.topics for p in range(topics.get(t, 0)))

    def _list_offsets(self, specs: Mapping[TP, OffsetSpec]) -> dict[TP, int]:
        if not specs:
            return {}
        request = {TopicPartition(t, p): spec for (t, p), spec in specs.items()}
        try:
            futures = self._admin.list_offsets(
                request, isolation_level=self._isolation, request_timeout=self._timeout
            )
            return {(tp.topic, tp.partition): f.result().offset for tp, f in futures.items()}
        except KafkaException as exc:
            raise self._fail("Listing offsets", exc) from None

    def earliest(self, partitions: Iterable[TP]) -> dict[TP, int]:
        return self._list_offsets({tp: OffsetSpec.earliest() for tp in partitions})

    def latest(self, partitions: Iterable[TP]) -> dict[TP, int]:
        """High watermarks, or last stable offsets under read_committed."""
        return self._list_offsets({tp: OffsetSpec.latest() for tp in partitions})

    def offsets_for_times(self, times: Mapping[TP, int]) -> dict[TP, int | None]:
        """The first offset whose timestamp is at or after the given one; None where no
        record is that late."""
        found = self._list_offsets({tp: OffsetSpec.for_timestamp(ts) for tp, ts in times.items()})
        return {tp: (offset if offset >= 0 else None) for tp, offset in found.items()}

    def resolve(
        self, bound: OffsetBound, partitions: list[TP], *, starting: bool, latest_if_missing: bool
    ) -> dict[TP, int]:
        """Concrete offsets for ``bound`` on ``partitions``. Partitions a per-partition bound
        leaves out get the default end (earliest for a start, latest for an end)."""
        default = EARLIEST if starting else LATEST
        named = set(bound.per_partition) - set(partitions)
        if named:
            option = "starting" if starting else "ending"
            raise KafkaSourceError(
                f"Option '{option}...' names partitions the query does not read: "
                + ", ".join(f"{t}-{p}" for t, p in sorted(named))
            )
        wanted: dict[TP, int] = {}
        if bound.kind in ("earliest", "latest"):
            wanted = dict.fromkeys(partitions, EARLIEST if bound.kind == "earliest" else LATEST)
        elif bound.kind == "offsets":
            wanted = {tp: bound.per_partition.get(tp, default) for tp in partitions}
        else:
            if bound.kind == "timestamp":
                assert bound.timestamp is not None
                times = dict.fromkeys(partitions, bound.timestamp)
            else:
                times = {tp: ts for tp, ts in bound.per_partition.items()}
            for tp, offset in self.offsets_for_times(times).items():
                if offset is None and not latest_if_missing:
                    raise KafkaSourceError(
                        f"No record in {tp[0]}-{tp[1]} has a timestamp at or after {times[tp]}; "
                        "set startingOffsetsByTimestampStrategy=latest to start at the end"
                    )
                wanted[tp] = LATEST if offset is None else offset
            for tp in partitions:
                wanted.setdefault(tp, default)
        earliest = self.earliest(tp for tp, o in wanted.items() if o == EARLIEST)
        latest = self.latest(tp for tp, o in wanted.items() if o == LATEST)
        return {tp: earliest.get(tp, latest.get(tp, o)) for tp, o in wanted.items()}

    def close(self) -> None:
        # AdminClient has no close; dropping the reference ends its threads.
        self._admin = None  # type: ignore[assignment]
