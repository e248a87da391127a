"""A sensor's table that cannot be read: damaged metadata fails the task at once, naming the file and the table.

A retry cannot repair a truncated metadata file, manifest list or manifest, so a sensor (or its trigger) that meets
one fails without retries (``AirflowFailException``), as a job exits 2; anything else (a catalog or store that
does not answer) is left to Airflow's retries. Which file is damaged is found as the jobs find it
(``spark_jobs.engine.shared.damaged_metadata``):

1. loading the table: the metadata file pyiceberg was reading;
2. reading a loaded table's manifests (the compaction sensor): the current snapshot's manifest list and manifests,
   read again one by one, the first that is missing or does not decode.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from spark_jobs.engine.shared.damaged_metadata import (
    damaged_file_reason,
    first_damaged_file_reason,
    name_metadata_files,
)

T = TypeVar("T")


class DamagedTableError(Exception):
    """A table's metadata is missing or damaged; the message names the file and the table."""


def load_table_naming_damage(load: Callable[[], T], table_name: str) -> T:
    """``load()`` (a table load); a missing or damaged metadata file raises DamagedTableError naming it (step 1)."""
    name_metadata_files()
    try:
        return load()
    except Exception as error:
        reason = damaged_file_reason(table_name, error)
        if reason is None:
            raise
        raise DamagedTableError(reason) from error


def reading_naming_damage(read: Callable[[], T], table: Any) -> T:
    """``read()`` over a loaded ``table``; when it fails and a manifest list or manifest of the current snapshot is
    missing or damaged, DamagedTableError names it instead (step 2)."""
    name_metadata_files()
    try:
        return read()
    except Exception as error:
        reason = damaged_file_reason(".".join(table.name()), error) or first_damaged_file_reason(table)
        if reason is None:
            raise
        raise DamagedTableError(reason) from error


@contextmanager
def failing_on_damage() -> Iterator[None]:
    """Turn a DamagedTableError raised inside into ``AirflowFailException``: the task fails without retries."""
    from airflow_iceberg_provider.airflow_compat import AirflowFailException

    try:
        yield
    except DamagedTableError as error:
        raise AirflowFailException(str(error)) from error
