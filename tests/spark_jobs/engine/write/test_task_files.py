"""What a writing task sends the driver: its files, or its nulls in required columns, summed over every task."""

from __future__ import annotations

import pytest

from spark_jobs.engine.shared.errors import RequiredColumnNullsError
from spark_jobs.engine.write.file_entries import WrittenFile
from spark_jobs.engine.write.task_files import RequiredNulls, files_without_nulls, written_or_nulls


def _file(path: str) -> WrittenFile:
    return WrittenFile(content=0, file_path=path, file_size_in_bytes=10, spec_id=0, partition_values=(), record_count=1)


def _nulls(counts: dict[str, int]) -> list[WrittenFile]:
    raise RequiredColumnNullsError(counts)


def test_a_task_sends_its_files_or_its_null_counts_in_their_place() -> None:
    assert written_or_nulls(lambda: (_file("a"), _file("b"))) == [_file("a"), _file("b")]
    assert written_or_nulls(lambda: _nulls({"id": 2})) == [RequiredNulls({"id": 2})]
    with pytest.raises(ValueError, match="other"):  # any other failure is the task's own
        written_or_nulls(lambda: (_ for _ in ()).throw(ValueError("other")))


def test_the_driver_sums_the_nulls_of_every_task_or_keeps_the_files() -> None:
    assert files_without_nulls([_file("a"), _file("b")]) == [_file("a"), _file("b")]
    described = [_file("a"), RequiredNulls({"id": 2}), RequiredNulls({"id": 3, "ts": 1})]
    with pytest.raises(RequiredColumnNullsError) as raised:
        files_without_nulls(described)
    assert raised.value.null_counts == {"id": 5, "ts": 1}
