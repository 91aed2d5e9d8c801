"""The log directories' identity, scan and placement (broker/dataplane/log_dirs.py)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from odradek.broker.dataplane.log_dirs import (
    LogDirError,
    LogDirs,
    future_name,
    kafka_uuid,
    moved_name,
    parse_kafka_uuid,
)


def test_kafka_uuid_round_trip() -> None:
    value = uuid.UUID("7b2a1c4e-0000-4000-8000-00000000abcd")
    text = kafka_uuid(value)
    assert len(text) == 22 and "=" not in text
    assert parse_kafka_uuid(text) == value


def test_meta_properties_kept_across_starts(tmp_path: Path) -> None:
    paths = [tmp_path / "a", tmp_path / "b"]
    first = LogDirs(paths, "cluster-1", 3)
    assert first.open() == []
    text = (paths[1] / "meta.properties").read_text()
    assert "cluster.id=cluster-1\n" in text and "node.id=3\n" in text and "version=1\n" in text
    again = LogDirs(paths, "cluster-1", 3)
    again.open()
    assert [d.directory_id for d in again] == [d.directory_id for d in first]
    assert first.dirs[0].directory_id != first.dirs[1].directory_id
    with pytest.raises(LogDirError, match="belongs to node 3"):
        LogDirs(paths, "cluster-1", 4).open()
    with pytest.raises(LogDirError, match="belongs to cluster cluster-1"):
        LogDirs(paths, "cluster-2", 3).open()


def test_a_directory_that_cannot_be_made_starts_offline(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    log_dirs = LogDirs([tmp_path / "a", tmp_path / "file"], "c", 0)
    failed = log_dirs.open()
    assert [d.path for d, _ in failed] == [tmp_path / "file"]
    assert log_dirs.online() == [log_dirs.first]
    with pytest.raises(OSError):
        LogDirs([tmp_path / "file", tmp_path / "a"], "c", 0).open()  # the first must work


def test_scan_and_placement(tmp_path: Path) -> None:
    log_dirs = LogDirs([tmp_path / "a", tmp_path / "b"], "c", 0)
    log_dirs.open()
    a, b = log_dirs.dirs
    (a.path / "t-0").mkdir()
    (b.path / "t-1").mkdir()
    (b.path / future_name("t-0")).mkdir()
    (a.path / "t-2.0123456789abcdef0123456789abcdef-delete").mkdir()
    (a.path / "not-a-partition").mkdir()
    current, future, removed = log_dirs.scan()
    assert current == {"t-0": a, "t-1": b}
    assert future == {"t-0": b}
    assert [p.name for p in removed] == ["t-2.0123456789abcdef0123456789abcdef-delete"]
    assert moved_name(future_name("my.topic-12")) == ("my.topic-12", "-future")
    a.partitions, b.partitions = 2, 1
    assert log_dirs.place() is b
    b.partitions = 2
    assert log_dirs.place() is a  # the first listed on a tie
    b.online = False
    assert log_dirs.place() is a
    (b.path / "t-0").mkdir()
    b.online = True
    with pytest.raises(LogDirError, match="is found in both"):
        log_dirs.scan()
