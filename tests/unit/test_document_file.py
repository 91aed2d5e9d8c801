"""DocumentFile: the file behind the stores of the data directory (ACLs, credentials,
tokens, quotas, feature levels, group configs, client-metrics subscriptions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odradek.storage.document_file import DocumentFile


class NumbersFileError(RuntimeError):
    pass


def numbers_file(tmp_path: Path) -> DocumentFile[dict[str, int]]:
    return DocumentFile(
        tmp_path / "numbers.json",
        "numbers",
        lambda numbers: json.dumps(numbers, sort_keys=True).encode(),
        json.loads,
        NumbersFileError,
    )


async def test_a_written_value_reads_back(tmp_path: Path) -> None:
    file = numbers_file(tmp_path)
    await file.write({"one": 1, "two": 2})
    assert file.read() == {"one": 1, "two": 2}
    assert not (tmp_path / "numbers.json.tmp").exists()


def test_a_missing_file_reads_as_none(tmp_path: Path) -> None:
    assert numbers_file(tmp_path).read() is None


def test_an_unreadable_file_raises_the_error_it_was_given(tmp_path: Path) -> None:
    file = numbers_file(tmp_path)
    file.path.write_text("{not json")
    with pytest.raises(NumbersFileError, match=r"^cannot read numbers .*numbers\.json: "):
        file.read()


def test_adopting_the_value_in_use_writes_nothing(tmp_path: Path) -> None:
    file = numbers_file(tmp_path)
    assert file.adopted(b'{"one": 1}', {"one": 1}) is None
    assert not file.path.exists()


def test_adopting_another_value_writes_the_document_as_given(tmp_path: Path) -> None:
    file = numbers_file(tmp_path)
    document = b'{\n "two": 2\n}'
    assert file.adopted(document, {"one": 1}) == {"two": 2}
    assert file.path.read_bytes() == document


async def test_a_failed_write_raises_and_leaves_the_file(tmp_path: Path) -> None:
    file = numbers_file(tmp_path)
    await file.write({"one": 1})
    file.path.with_name("numbers.json.tmp").mkdir()  # the temporary file cannot be made
    with pytest.raises(OSError):
        await file.write({"two": 2})
    assert file.read() == {"one": 1}
