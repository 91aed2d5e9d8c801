"""A minimal raw Kafka wire client for tests that need exact bytes on the socket.

Requests are built with kio through the broker's own `odradek.protocol.messages`
helpers (`build`, `encode`), so a test can send any version, field or garbage
it likes and read back the decoded response.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Mapping
from typing import Any

from kio.serial import entity_reader
from kio.serial.errors import OutOfBoundValue

from odradek.protocol import decoder, messages
from odradek.protocol.header import skip_tagged_fields


class WireClient:
    client_id = "wire-test"  # the request headers' (requests name none otherwise)

    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def request_bytes(
        self, api_key: int, version: int, body: Mapping[str, Any], client_id: str | None = None
    ) -> tuple[int, bytes]:
        self.correlation += 1
        client_id = self.client_id if client_id is None else client_id
        flexible = messages.is_flexible(api_key, version)
        raw_id = client_id.encode()
        header = struct.pack(">hhih", api_key, version, self.correlation, len(raw_id)) + raw_id
        if flexible:
            header += b"\x00"
        payload = messages.encode(messages.build(messages.request_class(api_key, version), body))
        message = header + payload
        return self.correlation, struct.pack(">i", len(message)) + message

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._read_exactly(4))[0]
        return self._read_exactly(size)

    def _read_exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(min(n, 1 << 20))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def call(self, api_key: int, version: int, body: Mapping[str, Any]) -> Any:
        correlation, data = self.request_bytes(api_key, version, body)
        self.send_raw(data)
        return self.read_response(api_key, version, correlation)

    def create_topic(
        self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None
    ) -> None:
        """CreateTopics v7 for one topic; fails the test unless it is created."""
        body = {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                }
            ],
            "timeout": 5000,
        }
        reply = self.call(19, 7, body)
        assert reply.topics[0].error_code == 0, reply
        self.wait_for_leaders(name, partitions)

    def wait_for_leaders(self, topic: str, partitions: int, timeout: float = 15.0) -> None:
        """Until Metadata names a leader for every partition: Kafka answers CreateTopics
        before its brokers lead the new partitions, so a client waits for this."""
        deadline = time.monotonic() + timeout
        while True:
            reply = self.call(3, 12, {"topics": [{"name": topic}]})
            found = reply.topics[0].partitions if reply.topics else ()
            led = [p for p in found if p.error_code == 0 and p.leader_id >= 0]
            if len(led) >= partitions:
                return
            assert time.monotonic() < deadline, f"no leader for {topic} in {timeout} s"
            time.sleep(0.05)

    def read_response(self, api_key: int, version: int, correlation: int) -> Any:
        frame = self.read_frame()
        (got,) = struct.unpack_from(">i", frame, 0)
        assert got == correlation, f"correlation {got} != {correlation}"
        position = 4
        if messages.is_flexible(api_key, version) and api_key != 18:
            position = skip_tagged_fields(frame, position)
        cls = messages.response_class(api_key, version)
        try:
            value, _ = entity_reader(cls)(frame, position)
        except OutOfBoundValue:
            # Kafka's -1 "no time" where kio wants a time (the delegation token
            # answers): the broker's own decoder reads it as None
            value = decoder.decode(cls, frame, position)
        return value

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True when the broker closes the connection within `timeout`."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
