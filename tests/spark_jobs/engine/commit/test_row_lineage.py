"""Row lineage of v3 commits: the first row id a snapshot starts at, and the v3 manifest list that gives this
commit's data manifests the next unused ids while carried and delete manifests keep what they have."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.avro.file import AvroFile
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import (
    MANIFEST_LIST_FILE_SCHEMAS,
    UNASSIGNED_SEQ,
    ManifestContent,
    ManifestFile,
    PartitionFieldSummary,
)
from pyiceberg.table import Table

from spark_jobs.engine.commit.format_v3 import allow_v3_metadata_writes
from spark_jobs.engine.commit.row_lineage import ManifestListWriterV3, first_row_id_of_next_snapshot
from spark_jobs.engine.table.manifest_entries import manifest_first_row_id, read_manifest_list
from tests.support.rewrite_tables import SCHEMA, SPEC, append, rows

SNAPSHOT_ID = 4242
SEQUENCE_NUMBER = 7


def _table(sql_catalog, format_version: int) -> Table:
    """Two one-file appends through our committer: 20 rows in 'a', then 30 in 'b'."""
    if format_version >= 3:
        allow_v3_metadata_writes()
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table(
        "ns.events", SCHEMA, partition_spec=SPEC, properties={"format-version": str(format_version)}
    )
    append(table, rows(list(range(20)), "a"), "a0")
    append(table, rows(list(range(20, 50)), "b"), "a1")
    return sql_catalog.load_table("ns.events")


def _written_by_this_commit(
    added_rows: int,
    existing_rows: int = 0,
    content: ManifestContent = ManifestContent.DATA,
    snapshot_id: int = SNAPSHOT_ID,
) -> ManifestFile:
    """A manifest this commit wrote: no sequence number or first row id yet."""
    return ManifestFile.from_args(
        _table_format_version=2,
        manifest_path=f"file:///warehouse/ns/events/metadata/new-{added_rows}-{int(content)}.avro",
        manifest_length=4096,
        partition_spec_id=0,
        content=content,
        sequence_number=UNASSIGNED_SEQ,
        min_sequence_number=UNASSIGNED_SEQ,
        added_snapshot_id=snapshot_id,
        added_files_count=1,
        existing_files_count=1 if existing_rows else 0,
        deleted_files_count=0,
        added_rows_count=added_rows,
        existing_rows_count=existing_rows,
        deleted_rows_count=0,
        partitions=[],
    )


def _list_writer(path: str, *, first_row_id: int, parent_snapshot_id: int | None = None) -> ManifestListWriterV3:
    """A v3 manifest list writer of snapshot ``SNAPSHOT_ID`` at ``path``."""
    return ManifestListWriterV3(
        PyArrowFileIO().new_output(path),
        snapshot_id=SNAPSHOT_ID,
        parent_snapshot_id=parent_snapshot_id,
        sequence_number=SEQUENCE_NUMBER,
        compression="deflate",
        first_row_id=first_row_id,
    )


def _read_list(path: str) -> tuple[list[ManifestFile], dict[str, str]]:
    with AvroFile[ManifestFile](
        PyArrowFileIO().new_input(path),
        MANIFEST_LIST_FILE_SCHEMAS[3],
        read_types={-1: ManifestFile, 508: PartitionFieldSummary},
        read_enums={517: ManifestContent},
    ) as reader:
        return list(reader), dict(reader.header.meta)


def test_a_table_that_never_assigned_row_ids_starts_at_zero(sql_catalog) -> None:
    assert first_row_id_of_next_snapshot(_table(sql_catalog, 2).metadata) == 0


def test_each_v3_commit_starts_where_the_last_one_stopped(sql_catalog) -> None:
    table = _table(sql_catalog, 3)
    first, second = [table.metadata.snapshot_by_id(entry.snapshot_id) for entry in table.history()]
    assert (first.first_row_id, first.added_rows) == (0, 20)
    assert (second.first_row_id, second.added_rows) == (20, 30)
    assert first_row_id_of_next_snapshot(table.metadata) == 50
    ids = [manifest_first_row_id(m) for m in read_manifest_list(table.current_snapshot(), table.io)]
    assert sorted(ids) == [0, 20]  # type: ignore[type-var]


def test_new_data_manifests_get_the_next_ids_and_carried_and_delete_manifests_keep_theirs(
    sql_catalog, tmp_path: Path
) -> None:
    table = _table(sql_catalog, 3)
    carried_a, carried_b = sorted(
        read_manifest_list(table.current_snapshot(), table.io), key=lambda m: manifest_first_row_id(m) or 0
    )
    new_small = _written_by_this_commit(20)
    deletes = _written_by_this_commit(5, content=ManifestContent.DELETES)
    new_large = _written_by_this_commit(30)
    path = f"file://{tmp_path}/snap-list.avro"
    writer = _list_writer(path, first_row_id=50, parent_snapshot_id=table.current_snapshot().snapshot_id)
    with writer:
        writer.add_manifests([carried_a, new_small, deletes, carried_b, new_large])
    assert writer.next_row_id == 100  # 50 + 20 + 30: the delete manifest's rows take no ids

    written, meta = _read_list(path)
    assert [(m.content, manifest_first_row_id(m)) for m in written] == [
        (ManifestContent.DATA, 0),
        (ManifestContent.DATA, 50),
        (ManifestContent.DELETES, None),
        (ManifestContent.DATA, 20),
        (ManifestContent.DATA, 70),
    ]
    assert [m.sequence_number for m in written] == [1, SEQUENCE_NUMBER, SEQUENCE_NUMBER, 2, SEQUENCE_NUMBER]
    assert (meta["format-version"], meta["first-row-id"], meta["snapshot-id"]) == ("3", "50", str(SNAPSHOT_ID))
    assert manifest_first_row_id(new_small) is None  # the caller's manifest is not changed


def test_existing_rows_of_a_new_manifest_take_ids_too(tmp_path: Path) -> None:
    manifest = _written_by_this_commit(4, existing_rows=6)
    writer = _list_writer(f"file://{tmp_path}/list.avro", first_row_id=7)
    with writer:
        writer.add_manifests([manifest])
    assert writer.next_row_id == 17


def test_a_manifest_from_another_snapshot_without_a_sequence_number_is_refused(tmp_path: Path) -> None:
    stray = _written_by_this_commit(10, snapshot_id=1)
    writer = _list_writer(f"file://{tmp_path}/list.avro", first_row_id=0)
    with writer, pytest.raises(ValueError, match="unassigned sequence number"):
        writer.add_manifests([stray])
