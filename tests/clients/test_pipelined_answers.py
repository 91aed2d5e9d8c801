"""Answers to requests a client sends together reach it together.

A new librdkafka consumer sends Metadata and FindCoordinator on its bootstrap
connection at once. If the Metadata answer arrives alone, librdkafka learns the
broker's id from it, drops the bootstrap connection, loses the FindCoordinator
answer still on its way ("FindCoordinator response error: _DESTROY_BROKER") and
asks again only 50 ms later: a one-member join that should take a few
milliseconds takes over 50.
"""

from __future__ import annotations

import logging
import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from helpers.broker import Broker
from helpers.logs import client_logger
from helpers.topics import create_topic

pytestmark = pytest.mark.timeout(120)

JOINS = 15


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
        lost += [line for line in lines if "FindCoordinator response error" in line]
    assert not lost, lost
