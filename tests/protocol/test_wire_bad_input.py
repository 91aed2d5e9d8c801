"""Bad input on the wire: a clear error or a closed connection, never a crash,
a hang or unbounded memory, and the broker keeps serving everyone else."""

from __future__ import annotations

import os
import socket
import struct

import pytest
from helpers.broker import rss_kb
from helpers.wire import WireClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.protocol.batch import build_batch

API_VERSIONS, METADATA, PRODUCE, FETCH = 18, 3, 0, 1


def assert_serving(bootstrap: str) -> None:
    with WireClient(bootstrap) as client:
        response = client.call(
            API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
        )
        assert response.error_code == 0
        assert any(k.api_key == PRODUCE for k in response.api_keys)


def test_api_versions_newer_than_known_gets_v0_error_with_its_range(shared_broker) -> None:
    """As Kafka (KIP-511): UNSUPPORTED_VERSION, and the versions of ApiVersions alone."""
    with WireClient(shared_broker.bootstrap) as client:
        header = struct.pack(">hhih", API_VERSIONS, 99, 7, 1) + b"x" + b"\x00"
        client.send_raw(struct.pack(">i", len(header)) + header)
        frame = client.read_frame()
        correlation, error_code, count = struct.unpack_from(">ihi", frame, 0)
        assert correlation == 7
        assert error_code == 35  # UNSUPPORTED_VERSION
        assert count == 1
        assert struct.unpack_from(">hhh", frame, 10) == (API_VERSIONS, 0, 5)


def test_two_gigabyte_size_prefix_closes_without_allocating(shared_broker) -> None:
    before = rss_kb(shared_broker.pid)
    with WireClient(shared_broker.bootstrap) as client:
        client.send_raw(struct.pack(">i", 2**31 - 1) + b"\x00" * 100)
        assert client.is_closed_by_peer()
    assert rss_kb(shared_broker.pid) - before < 50_000
    assert_serving(shared_broker.bootstrap)


def test_truncated_frame_then_disconnect(shared_broker) -> None:
    with WireClient(shared_broker.bootstrap) as client:
        _, data = client.request_bytes(METADATA, 9, {"topics": None})
        client.send_raw(data[: len(data) // 2])
    assert_serving(shared_broker.bootstrap)


def test_unknown_api_key_and_version_close_only_that_connection(shared_broker) -> None:
    with WireClient(shared_broker.bootstrap) as bystander:
        for api_key, version in ((9999, 0), (METADATA, 99), (PRODUCE, 0)):
            with WireClient(shared_broker.bootstrap) as client:
                header = struct.pack(">hhih", api_key, version, 1, -1) + b"\x00" * 16
                client.send_raw(struct.pack(">i", len(header)) + header)
                assert client.is_closed_by_peer()
        response = bystander.call(METADATA, 9, {"topics": []})
        assert response.brokers[0].port == shared_broker.port


def test_lying_lengths_in_a_produce_request(shared_broker, unique_topic) -> None:
    with WireClient(shared_broker.bootstrap) as client:
        created = client.call(
            19,
            7,
            {
                "topics": [{"name": unique_topic, "num_partitions": 1, "replication_factor": 1}],
                "timeout": 5000,
            },
        )
        assert created.topics[0].error_code == 0
        good = build_batch([(b"k", b"v")])
        reply = client.call(
            PRODUCE,
            9,
            {
                "acks": 1,
                "timeout": 5000,
                "topic_data": [
                    {"name": unique_topic, "partition_data": [{"index": 0, "records": good}]}
                ],
            },
        )
        assert reply.responses[0].partition_responses[0].error_code == 0
        # A batch whose length field claims more bytes than were sent.
        lying = bytearray(good)
        struct.pack_into(">i", lying, 8, 10_000)
        reply = client.call(
            PRODUCE,
            9,
            {
                "acks": 1,
                "timeout": 5000,
                "topic_data": [
                    {
                        "name": unique_topic,
                        "partition_data": [{"index": 0, "records": bytes(lying)}],
                    }
                ],
            },
        )
        # no whole batch in the records: INVALID_RECORD, as Kafka answers
        assert reply.responses[0].partition_responses[0].error_code == 87
        # A garbled CRC.
        garbled = bytearray(good)
        garbled[-1] ^= 0x55
        reply = client.call(
            PRODUCE,
            9,
            {
                "acks": 1,
                "timeout": 5000,
                "topic_data": [
                    {
                        "name": unique_topic,
                        "partition_data": [{"index": 0, "records": bytes(garbled)}],
                    }
                ],
            },
        )
        assert reply.responses[0].partition_responses[0].error_code == 2
        # A string length in the request body that runs past the frame.
        _, data = client.request_bytes(
            METADATA, 4, {"topics": [{"name": "abc"}], "allow_auto_topic_creation": False}
        )
        broken = bytearray(data)
        struct.pack_into(">h", broken, len(broken) - 6, 30000)
        client.send_raw(bytes(broken))
        assert client.is_closed_by_peer()
    with WireClient(shared_broker.bootstrap) as client:
        fetched = client.call(
            FETCH,
            11,
            {
                "max_wait": 0,
                "min_bytes": 0,
                "max_bytes": 1 << 20,
                "topics": [
                    {
                        "topic": unique_topic,
                        "partitions": [
                            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                        ],
                    }
                ],
            },
        )
        partition = fetched.responses[0].partitions[0]
        assert partition.high_watermark == 1, "only the one good batch was stored"
        assert partition.records == good or partition.records[12:] == good[12:]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    api_key=st.sampled_from([0, 1, 2, 3, 18, 19, 20, 22, 32, 37, 9999]),
    version=st.integers(min_value=-2, max_value=20),
    body=st.binary(max_size=512),
)
def test_fuzzed_frames_never_take_the_broker_down(shared_broker, api_key, version, body) -> None:
    header = struct.pack(">hhih", api_key, version, 1, 4) + b"fuzz"
    message = header + body
    sock = socket.create_connection(("127.0.0.1", shared_broker.port), timeout=5)
    try:
        sock.sendall(struct.pack(">i", len(message)) + message)
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(5)
        while sock.recv(65536):
            pass
    except (ConnectionResetError, TimeoutError):
        pass
    finally:
        sock.close()
    assert shared_broker.is_running()


def test_random_bytes_streams_and_memory_stays_bounded(shared_broker) -> None:
    before = rss_kb(shared_broker.pid)
    for _ in range(50):
        sock = socket.create_connection(("127.0.0.1", shared_broker.port), timeout=5)
        try:
            sock.sendall(os.urandom(4096))
            sock.settimeout(2)
            sock.recv(100)
        except (ConnectionResetError, BrokenPipeError, TimeoutError):
            pass
        finally:
            sock.close()
    assert_serving(shared_broker.bootstrap)
    assert rss_kb(shared_broker.pid) - before < 50_000


@pytest.mark.parametrize("claimed", [100 * 1024 * 1024 + 1, 2**31 - 1])
def test_oversized_frame_closed_before_body_is_read(shared_broker, claimed) -> None:
    with WireClient(shared_broker.bootstrap) as client:
        client.send_raw(struct.pack(">i", claimed))
        assert client.is_closed_by_peer()
