"""What each language's run does through its Testcontainers module, and what a user
would see: twenty orders produced to `orders` (three partitions) and read by the group
`readers`, which commits them; on `payments`, five payments committed in a transaction,
two aborted, then `paid-last` committed. The Java and Go programs print the result as
JSON; the Python test runs the same steps with confluent-kafka (`run`)."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

ORDERS, PAYMENTS, RECORDS = "orders", "payments", 20
PAID = [f"paid-{i}" for i in range(5)] + ["paid-last"]
VOID = ["void-0", "void-1"]
LIMIT_S = 60


def check(result: dict[str, Any]) -> None:
    """The group read every order once and committed past each; read_committed shows
    the committed payments in order and not the aborted ones, which the log holds."""
    assert sorted(result["consumed"]) == sorted(f"order-{i}" for i in range(RECORDS)), result
    assert result["group_committed"] == RECORDS, result
    assert result["read_committed"] == PAID, result
    assert result["read_uncommitted"] == PAID[:5] + VOID + PAID[5:], result


def run(bootstrap: str) -> dict[str, Any]:
    """The steps with confluent-kafka (librdkafka), as the Java and Go programs take them."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    created = admin.create_topics([NewTopic(ORDERS, 3, 1), NewTopic(PAYMENTS, 1, 1)])
    for future in created.values():
        future.result(LIMIT_S)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(RECORDS):
        producer.produce(ORDERS, key=f"k{i}", value=f"order-{i}")
    assert producer.flush(LIMIT_S) == 0
    result: dict[str, Any] = {"consumed": consume_as_group(bootstrap)}
    [offsets] = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("readers")]
    ).values()
    result["group_committed"] = sum(p.offset for p in offsets.result(LIMIT_S).topic_partitions)
    transact(bootstrap)
    for isolation in ("read_committed", "read_uncommitted"):
        result[isolation] = read_payments(bootstrap, isolation)
    return result


def _consumer(bootstrap: str, **settings: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "group.id": "unused",
            **settings,
        }
    )


def consume_as_group(bootstrap: str) -> list[str]:
    consumer = _consumer(bootstrap, **{"group.id": "readers"})
    values: list[str] = []
    try:
        consumer.subscribe([ORDERS])
        deadline = time.monotonic() + LIMIT_S
        while len(values) < RECORDS and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value().decode())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


def transact(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "payments-txn"})
    producer.init_transactions(LIMIT_S)
    for values, commit in ((PAID[:5], True), (VOID, False), (PAID[5:], True)):
        producer.begin_transaction()
        for value in values:
            producer.produce(PAYMENTS, value=value)
        if commit:
            producer.commit_transaction(LIMIT_S)
        else:
            producer.flush(LIMIT_S)
            producer.abort_transaction(LIMIT_S)


def read_payments(bootstrap: str, isolation: str) -> list[str]:
    consumer = _consumer(bootstrap, **{"isolation.level": isolation})
    values: list[str] = []
    try:
        consumer.assign([TopicPartition(PAYMENTS, 0, 0)])
        deadline = time.monotonic() + LIMIT_S
        while "paid-last" not in values and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error() is not None:
                raise KafkaException(message.error())
            values.append(message.value().decode())
    finally:
        consumer.close()
    return values
