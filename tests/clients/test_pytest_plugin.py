"""The pytest plugin as another project uses it: a test file outside this repository,
run by pytest in a process of its own, with the plugin found through its entry point."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

PROJECT_TESTS = """
    import time

    from confluent_kafka import Consumer, Producer

    from odradek.testing import Broker


    def read(bootstrap, topic, count):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic,
                             "auto.offset.reset": "earliest"})
        consumer.subscribe([topic])
        values, deadline = [], time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        consumer.close()
        return values


    def write(bootstrap, topic, values):
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for value in values:
            producer.produce(topic, value)
        assert producer.flush(15) == 0


    def test_session_broker(odradek_bootstrap_servers, odradek_broker):
        assert odradek_broker.is_running()
        write(odradek_bootstrap_servers, "orders", [b"a", b"b"])
        assert sorted(read(odradek_bootstrap_servers, "orders", 2)) == [b"a", b"b"]


    def test_factory_settings_crash_and_restart(odradek_broker_factory):
        broker = odradek_broker_factory(num_partitions=3)
        write(broker.bootstrap_servers, "events", [b"%d" % i for i in range(30)])
        broker.kill()
        assert not broker.is_running()
        broker.restart()
        assert len(read(broker.bootstrap_servers, "events", 30)) == 30
        from confluent_kafka.admin import AdminClient
        topics = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(
            timeout=10).topics
        assert len(topics["events"].partitions) == 3


    def test_context_manager_cleans_up():
        with Broker() as broker:
            data_dir = broker.data_dir
            write(broker.bootstrap_servers, "t", [b"x"])
            assert data_dir.exists()
        assert not broker.is_running()
        assert not data_dir.exists()
"""


def test_another_project_uses_the_plugin(tmp_path: Path) -> None:
    (tmp_path / "test_with_odradek.py").write_text(textwrap.dedent(PROJECT_TESTS))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "3 passed" in done.stdout
