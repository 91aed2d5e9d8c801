"""Answers to requests a client sends together reach it together.

A new librdkafka consumer sends Metadata and FindCoordinator on its bootstrap
connection at once. If the Metadata answer arrives alone, librdkafka learns the
broker's id from it, drops the bootstrap connection, loses the FindCoordinator
answer still on its way ("FindCoordinator response error: _DESTROY_BROKER") and
asks again only 50 ms later: a one-member join that should take a few
milliseconds takes over 50. Apache Kafka 4.4 answers the two apart and loses most of
them (22 of 30 joins when measured).

Odradek holds an answer behind a quick request that is already there, and on a new
connection a Metadata answer waits up to 1 ms for a request sent with it. On a machine
so busy that the client's thread is not scheduled within that millisecond the answer
can still be lost now and then (3 in 200 joins with two busy processes on two cores),
so the join test allows a tenth of them.
"""

from __future__ import annotations

import logging
import select
import socket
import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from helpers.broker import Broker
from helpers.logs import client_logger
from helpers.topics import create_topic
from helpers.wire import WireClient

pytestmark = pytest.mark.timeout(120)

JOINS = 30
METADATA, FIND_COORDINATOR = 3, 10


def _join_once(bootstrap: str, topic: str, index: int) -> list[str]:
    """One new consumer subscribes and waits for its assignment; its cgrp log lines."""
    logger, handler = client_logger(logging.DEBUG)
    assigned: list[TopicPartition] = []
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"pipelined-{index}-{uuid.uuid4().hex[:8]}",
            "debug": "cgrp",
            "logger": logger,
        }
    )
    try:
        consumer.subscribe([topic], on_assign=lambda _c, parts: assigned.extend(parts))
        deadline = time.monotonic() + 30
        while not assigned and time.monotonic() < deadline:
            consumer.poll(0.01)
        assert assigned, "no assignment within 30 s"
    finally:
        consumer.close()
    return handler.lines


def test_find_coordinator_answer_is_not_lost_with_the_bootstrap_connection(
    shared_broker: Broker, unique_topic: str
) -> None:
    create_topic(shared_broker.bootstrap, unique_topic, 1)
    lost = []
    for index in range(JOINS):
        lines = _join_once(shared_broker.bootstrap, unique_topic, index)
        lost += [line for line in lines if "FindCoordinator response error" in line][:1]
    assert len(lost) <= JOINS // 10, lost


def test_metadata_and_find_coordinator_sent_together_are_answered_together(
    shared_broker: Broker,
) -> None:
    """What librdkafka's bootstrap connection sends, in one write: both answers come
    back in one write, so the second is already there when the first has been read
    (on a few new connections, as answers sent apart are sometimes quick enough too)."""
    for attempt in range(5):
        with WireClient(shared_broker.bootstrap) as client:
            client.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            metadata_id, metadata = client.request_bytes(METADATA, 12, {"topics": []})
            coordinator_id, coordinator = client.request_bytes(
                FIND_COORDINATOR, 3, {"key": f"pipelined-together-{attempt}", "key_type": 0}
            )
            client.send_raw(metadata + coordinator)
            first = client.read_frame()
            readable, _, _ = select.select([client.sock], [], [], 0)
            assert readable, f"connection {attempt}: FindCoordinator answered after Metadata"
            second = client.read_frame()
            answered = [int.from_bytes(frame[:4], "big") for frame in (first, second)]
            assert answered == [metadata_id, coordinator_id]
