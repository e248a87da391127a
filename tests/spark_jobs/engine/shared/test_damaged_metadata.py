"""A table's damaged metadata named: pyiceberg's own readers note the file they fail on, and the failure is judged
damage (missing, or not decodable) or not (a store that did not answer). Real files of a real SQL catalog."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from spark_jobs.engine.shared.damaged_metadata import (
    damaged_file_reason,
    first_damaged_file_reason,
    name_metadata_files,
    noted_file_of,
)


def _local(location: str) -> Path:
    return Path(urlparse(location).path)


@pytest.fixture
def table(sql_catalog: SqlCatalog):
    sql_catalog.create_namespace("ns")
    created = sql_catalog.create_table("ns.t", pa.schema([pa.field("id", pa.int64())]))
    created.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    return sql_catalog.load_table("ns.t")


def _raised(action) -> BaseException:
    try:
        action()
    except Exception as error:  # the failure under test
        return error
    raise AssertionError("nothing was raised")


def test_a_truncated_metadata_file_is_named_without_its_content(sql_catalog: SqlCatalog, table) -> None:
    name_metadata_files()
    metadata = _local(table.metadata_location)
    metadata.write_bytes(metadata.read_bytes()[:300])
    error = _raised(lambda: sql_catalog.load_table("ns.t"))
    assert noted_file_of(error) == ("metadata file", table.metadata_location)
    reason = damaged_file_reason("ns.t", error)
    assert reason is not None and reason.startswith(f"table ns.t: metadata file {table.metadata_location} cannot")
    assert "it is damaged (Invalid JSON" in reason and '"location"' not in reason


@pytest.mark.parametrize("damage", ["manifest list", "manifest"])
def test_a_manifest_list_or_manifest_that_does_not_decode_is_named(sql_catalog, table, damage: str) -> None:
    name_metadata_files()
    snapshot = table.current_snapshot()
    manifest = snapshot.manifests(table.io)[0]
    path = _local(snapshot.manifest_list if damage == "manifest list" else manifest.manifest_path)
    path.write_bytes(path.read_bytes()[:100])
    reloaded = sql_catalog.load_table("ns.t")  # a new FileIO: pyiceberg's cache of manifest lists does not answer
    if damage == "manifest list":
        error = _raised(lambda: reloaded.current_snapshot().manifests(reloaded.io))
    else:
        error = _raised(lambda: manifest.fetch_manifest_entry(reloaded.io))
    reason = damaged_file_reason("ns.t", error)
    assert reason is not None and reason.startswith(f"table ns.t: {damage} ") and path.name in reason, reason
    assert "it is damaged" in reason
    found = first_damaged_file_reason(reloaded)
    assert found is not None and found.startswith(f"table ns.t: {damage} ") and path.name in found


def test_a_missing_file_is_missing_and_a_failure_of_the_store_is_not_damage(table) -> None:
    name_metadata_files()
    manifest = table.current_snapshot().manifests(table.io)[0]
    _local(manifest.manifest_path).unlink()
    reason = damaged_file_reason("ns.t", _raised(lambda: manifest.fetch_manifest_entry(table.io)))
    assert reason is not None and "is missing" in reason
    reset = ConnectionResetError("connection reset by peer")
    reset.add_note(f"airflow-iceberg-provider read manifest|{manifest.manifest_path}")
    assert damaged_file_reason("ns.t", reset) is None  # a retry may read it


def test_an_intact_table_has_no_damaged_file(table) -> None:
    assert first_damaged_file_reason(table) is None
