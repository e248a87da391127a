"""What a writing task sends the driver: its written files, or its count of nulls in columns the table requires.

Bad input is reported to the driver rather than raised in the task: Spark would retry the task, and each task
would name only its own rows. The driver sums the counts of every task (``files_without_nulls``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from spark_jobs.engine.shared.errors import RequiredColumnNullsError
from spark_jobs.engine.write.file_entries import WrittenFile


@dataclass(frozen=True)
class RequiredNulls:
    """A task's count of nulls in required columns, sent to the driver in place of its written files."""

    null_counts: dict[str, int]


TaskFiles = list[WrittenFile | RequiredNulls]  # what a writing task sends the driver


def written_or_nulls(write: Callable[[], Sequence[WrittenFile]]) -> TaskFiles:
    """A task's written files, or its count of nulls in required columns in their place (module doc)."""
    try:
        return list(write())
    except RequiredColumnNullsError as error:
        return [RequiredNulls(dict(error.null_counts))]


def files_without_nulls(described: Sequence[WrittenFile | RequiredNulls]) -> list[WrittenFile]:
    """The tasks' written files; ``RequiredColumnNullsError`` with the total when any task found nulls."""
    nulls: dict[str, int] = {}
    files: list[WrittenFile] = []
    for item in described:
        if isinstance(item, RequiredNulls):
            for name, count in item.null_counts.items():
                nulls[name] = nulls.get(name, 0) + count
        else:
            files.append(item)
    if nulls:
        raise RequiredColumnNullsError(nulls)
    return files
