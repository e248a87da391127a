"""Skipping equality delete files by column statistics: each rule, and a real delete file against real data."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.conversions import from_bytes, to_bytes
from pyiceberg.io.pyarrow import parquet_file_to_data_file
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestEntry, ManifestEntryStatus
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record
from pyiceberg.types import IntegerType, ListType, LongType, NestedField, StringType

from spark_jobs.engine.planning.delete_index import DeleteFileIndex
from spark_jobs.engine.planning.equality_delete_bounds import can_contain_equality_deletes, equality_fields
from spark_jobs.engine.table.manifest_entries import read_live_entries

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "category", StringType(), required=False),
    NestedField(3, "key", LongType(), required=True),
    NestedField(4, "tags", ListType(5, StringType()), required=False),
)
ID, CATEGORY, KEY = (SCHEMA.find_field(field_id) for field_id in (1, 2, 3))


def _stats(
    *,
    lower: dict | None = None,
    upper: dict | None = None,
    nulls: dict | None = None,
    values: dict | None = None,
) -> DataFile:
    def encoded(bounds):
        return {fid: to_bytes(SCHEMA.find_field(fid).field_type, value) for fid, value in (bounds or {}).items()}

    return DataFile.from_args(
        _table_format_version=3,
        content=DataFileContent.DATA,
        file_path="f.parquet",
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=10,
        file_size_in_bytes=100,
        lower_bounds=encoded(lower),
        upper_bounds=encoded(upper),
        null_value_counts=nulls,
        value_counts=values,
    )


def test_disjoint_ranges_prove_no_match_and_touching_ranges_may_match():
    data = _stats(lower={1: 0}, upper={1: 99}, nulls={1: 0})
    assert not can_contain_equality_deletes(data, _stats(lower={1: 100}, upper={1: 200}, nulls={1: 0}), [ID])
    assert not can_contain_equality_deletes(data, _stats(lower={1: -5}, upper={1: -1}, nulls={1: 0}), [ID])
    assert can_contain_equality_deletes(data, _stats(lower={1: 99}, upper={1: 200}, nulls={1: 0}), [ID])
    assert can_contain_equality_deletes(data, _stats(lower={1: -5}, upper={1: 0}, nulls={1: 0}), [ID])


def test_any_one_field_proving_no_match_is_enough():
    data = _stats(lower={1: 0, 2: "a"}, upper={1: 99, 2: "c"}, nulls={1: 0, 2: 0})
    overlapping_id_disjoint_category = _stats(lower={1: 5, 2: "x"}, upper={1: 6, 2: "z"}, nulls={1: 0, 2: 0})
    assert not can_contain_equality_deletes(data, overlapping_id_disjoint_category, [ID, CATEGORY])
    assert can_contain_equality_deletes(data, overlapping_id_disjoint_category, [ID])


def test_nulls_on_both_sides_may_match_whatever_the_ranges():
    data = _stats(lower={1: 0}, upper={1: 9}, nulls={1: 3}, values={1: 10})
    delete = _stats(lower={1: 50}, upper={1: 60}, nulls={1: 1}, values={1: 5})
    assert can_contain_equality_deletes(data, delete, [ID])


def test_all_null_on_one_side_and_no_null_on_the_other_proves_no_match():
    all_null = _stats(nulls={1: 10}, values={1: 10})
    no_null = _stats(lower={1: 0}, upper={1: 9}, nulls={1: 0}, values={1: 10})
    assert not can_contain_equality_deletes(all_null, no_null, [ID])
    assert not can_contain_equality_deletes(no_null, all_null, [ID])


def test_missing_statistics_and_required_fields():
    assert can_contain_equality_deletes(_stats(), _stats(lower={1: 100}, upper={1: 200}), [ID])
    # Unknown null counts on both sides: both may hold nulls, which match each other.
    assert can_contain_equality_deletes(
        _stats(lower={1: 0}, upper={1: 9}), _stats(lower={1: 100}, upper={1: 200}), [ID]
    )
    # Required: no nulls by definition, so ranges decide.
    assert not can_contain_equality_deletes(
        _stats(lower={3: 0}, upper={3: 9}), _stats(lower={3: 10}, upper={3: 20}), [KEY]
    )


def test_equality_fields_pass_over_dropped_and_nested_fields():
    assert [field.field_id for field in equality_fields(SCHEMA, [1, 99, 4, 3])] == [1, 3]


def test_an_int_bound_written_before_promotion_to_long_still_compares():
    data = _stats(lower={1: 0}, upper={1: 9}, nulls={1: 0})
    delete = _stats(nulls={1: 0})
    delete.lower_bounds[1] = to_bytes(IntegerType(), 10)
    delete.upper_bounds[1] = to_bytes(IntegerType(), 20)
    assert not can_contain_equality_deletes(data, delete, [ID])


def test_a_real_equality_delete_attaches_only_to_the_file_whose_key_range_it_meets(sql_catalog, tmp_path):
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.upserts", schema=pa.schema([("id", pa.int64()), ("category", pa.string())]))
    for start in (0, 1000):
        ids = pa.array(range(start, start + 100), pa.int64())
        table.append(pa.table({"id": ids, "category": pa.array(["c"] * 100)}))
    delete_path = f"file://{tmp_path}/eq-delete.parquet"
    pq.write_table(pa.table({"id": pa.array([1005, 1010], pa.int64())}), delete_path.removeprefix("file://"))
    delete_file = parquet_file_to_data_file(table.io, table.metadata, delete_path)
    delete_file[0] = DataFileContent.EQUALITY_DELETES
    delete_file[14] = [table.schema().find_field("id").field_id]
    delete_file.spec_id = 0
    delete_entry = ManifestEntry.from_args(
        status=ManifestEntryStatus.ADDED,
        snapshot_id=1,
        sequence_number=3,
        file_sequence_number=3,
        data_file=delete_file,
    )
    data_entries = [e for m in table.current_snapshot().manifests(table.io) for e in read_live_entries(m, table.io)]

    with_statistics = DeleteFileIndex(table.specs(), table.schema())
    rules_only = DeleteFileIndex(table.specs())
    with_statistics.add(delete_entry)
    rules_only.add(delete_entry)

    applied = {e.data_file.file_path: len(with_statistics.for_data_file(e).equality_deletes) for e in data_entries}
    lower_bounds = {e.data_file.file_path: from_bytes(LongType(), e.data_file.lower_bounds[1]) for e in data_entries}
    assert sorted((lower_bounds[path], count) for path, count in applied.items()) == [(0, 0), (1000, 1)]
    assert all(len(rules_only.for_data_file(e).equality_deletes) == 1 for e in data_entries)
