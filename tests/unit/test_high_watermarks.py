"""The high watermark checkpoint's file: written and read back, and ignored whole
when it cannot be read."""

from __future__ import annotations

from pathlib import Path

from odradek.broker.cluster import high_watermarks


def test_written_and_read_back_in_kafkas_layout(tmp_path: Path) -> None:
    high_watermarks.write(tmp_path, {("orders", 1): 40, ("orders", 0): 7, ("a.b-c", 2): 0})
    text = (tmp_path / high_watermarks.FILE_NAME).read_text()
    assert text == "0\n3\na.b-c 2 0\norders 0 7\norders 1 40\n"
    assert high_watermarks.read(tmp_path) == {("orders", 1): 40, ("orders", 0): 7, ("a.b-c", 2): 0}


def test_a_missing_or_damaged_file_is_no_checkpoint(tmp_path: Path) -> None:
    assert high_watermarks.read(tmp_path) == {}
    path = tmp_path / high_watermarks.FILE_NAME
    for damaged in ("1\n1\norders 0 7\n", "0\n1\norders zero 7\n", "0\n1\norders 0\n", ""):
        path.write_text(damaged)
        assert high_watermarks.read(tmp_path) == {}, damaged
