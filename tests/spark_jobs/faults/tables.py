"""Small tables for the fault-injection suite, built with the engine's own writers and committer."""

from __future__ import annotations

import itertools

from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation

from spark_jobs.engine.commit.committer import commit_change
from spark_jobs.engine.commit.snapshot_change import SnapshotChange
from spark_jobs.engine.table.catalog import load_catalog
from spark_jobs.engine.write.file_entries import to_data_file
from spark_jobs.engine.write.write_context import WriteContext, write_data
from tests.spark_jobs.faults.conftest import QUICK_RETRIES
from tests.support.rewrite_tables import SCHEMA, SPEC, rows

_names = itertools.count()
INITIAL = {i: ("ab"[i // 4 % 2],) for i in range(16)}  # four files of four rows: a, b, a, b


def data_files(table: Table, ids: list[int], category: str, tag: str) -> list:
    """Data files of ``table`` holding ``ids`` in ``category`` (written, not committed)."""
    return [to_data_file(item) for item in write_data(rows(ids, category), WriteContext.for_table(table), tag)]


def append_change(table: Table, tag: str) -> SnapshotChange:
    """An append of ids 100 and 101 in category a."""
    return SnapshotChange(Operation.APPEND, added_data_files=data_files(table, [100, 101], "a", tag))


def new_table(catalog_name: str) -> tuple[Table, str]:
    """A new table (quick retries) with ``INITIAL``'s rows in four files of two partitions; it and its name."""
    catalog = load_catalog(catalog_name)
    catalog.create_namespace_if_not_exists("commits")
    identifier = f"commits.t{next(_names)}"
    table = catalog.create_table(identifier, SCHEMA, partition_spec=SPEC, properties=QUICK_RETRIES)
    for index in range(4):
        ids = list(range(index * 4, index * 4 + 4))
        files = data_files(table, ids, "ab"[index % 2], f"i{index}")
        commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=files))
    return table, identifier
