"""Manifest and data file pruning: counts on hand-built tables, and soundness on every filter of the corpus."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.expressions.parser import parse
from pyiceberg.expressions.visitors import bind, extract_field_ids
from pyiceberg.io.pyarrow import expression_to_pyarrow, schema_to_pyarrow
from pyiceberg.manifest import DataFileContent
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.planning.file_selection import select_files
from spark_jobs.engine.planning.scan_tasks import EqualityDeleteFile
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.table.manifest_entries import read_live_entries
from tests.support.conformance import load_queries

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False), NestedField(2, "category", StringType(), required=False)
)
BY_CATEGORY = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "category"))
FILTER_QUERIES = [q for q in load_queries() if q.where and q.name == "filter"]


def _rows(ids: range, category: str) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "category": pa.array([category] * len(ids), pa.string())})


def _selected(table, row_filter, metrics: ScanMetrics | None = None):
    return select_files(
        table,
        table.current_snapshot(),
        schema=table.schema(),
        row_filter=row_filter,
        case_sensitive=True,
        metrics=metrics or ScanMetrics(),
    )


def _select(table, row_filter: str) -> tuple[list[str], ScanMetrics]:
    metrics = ScanMetrics()
    return list(_selected(table, parse(row_filter), metrics).paths), metrics


def test_partition_summaries_prune_whole_manifests(sql_catalog):
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.parts", schema=SCHEMA, partition_spec=BY_CATEGORY)
    for category, ids in (("a", range(0, 10)), ("b", range(10, 20)), ("c", range(20, 30))):
        table.append(_rows(ids, category))

    paths, metrics = _select(table, "category = 'b'")

    assert len(paths) == 1
    assert "category=b" in paths[0]
    assert (metrics.manifests_total, metrics.manifests_pruned) == (3, 2)
    assert (metrics.data_files_total, metrics.data_files_pruned) == (3, 2)


def test_partition_tuples_prune_files_inside_a_manifest_that_may_match(sql_catalog):
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.mixed", schema=SCHEMA, partition_spec=BY_CATEGORY)
    table.append(pa.concat_tables([_rows(range(0, 10), "a"), _rows(range(10, 20), "c")]))

    paths, metrics = _select(table, "category = 'b'")
    assert paths == []
    # 'b' lies between the manifest's bounds 'a' and 'c': only the partition tuples exclude both files.
    assert (metrics.manifests_total, metrics.manifests_pruned) == (1, 0)
    assert (metrics.data_files_total, metrics.data_files_pruned) == (2, 2)


def test_column_metrics_prune_data_files_of_an_unpartitioned_table(sql_catalog):
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.flat", schema=SCHEMA)
    for start in (0, 100, 200):
        table.append(_rows(range(start, start + 100), "x"))

    paths, metrics = _select(table, "id >= 250")
    assert len(paths) == 1
    assert (metrics.manifests_pruned, metrics.data_files_total, metrics.data_files_pruned) == (0, 3, 2)
    paths, metrics = _select(table, "id >= 250 AND category = 'y'")
    assert paths == []
    assert metrics.data_files_pruned == 3


def test_delete_manifests_of_partitions_the_filter_excludes_are_pruned(conformance_catalog):
    table = conformance_catalog.load_table("corpus.v2_eq_deletes_part")
    metrics = ScanMetrics()
    selected = _selected(table, parse("category = 'b'"), metrics)
    assert selected.deletes == {}
    assert {partition[0] for partition in selected.partitions} == {"b"}
    assert metrics.manifests_pruned >= 1  # the delete manifest of partition 'a' is never read

    unfiltered = _selected(table, AlwaysTrue())
    applied = unfiltered.applied_delete_files()
    assert len(applied) == 1
    assert all(isinstance(d, EqualityDeleteFile) for d in applied)


def _rows_matching(table, path: str, schema: Schema, bound_filter) -> int:
    """Rows of one data file that match the filter, columns found by field id (missing ones read as null)."""
    with table.io.new_input(path).open() as stream:
        file_table = pq.read_table(stream)
    ids_in_file = {
        int(field.metadata[b"PARQUET:field_id"]): field.name for field in file_table.schema if field.metadata
    }
    columns = {}
    for field_id in extract_field_ids(bound_filter):
        field = schema.find_field(field_id)
        arrow_type = schema_to_pyarrow(field.field_type)
        if field_id in ids_in_file:
            columns[field.name] = file_table.column(ids_in_file[field_id]).cast(arrow_type)
        else:
            columns[field.name] = pa.nulls(file_table.num_rows, arrow_type)
    if not columns:
        return file_table.num_rows
    return pa.table(columns).filter(expression_to_pyarrow(bound_filter)).num_rows


@pytest.mark.parametrize("query", FILTER_QUERIES, ids=lambda q: q.id)
def test_no_data_file_pruned_for_a_corpus_filter_holds_a_matching_row(conformance_catalog, query):
    _assert_pruning_is_sound(conformance_catalog.load_table(query.table), query.where)


@pytest.mark.parametrize(
    "where",
    ["a > 500", "a <= 20", "fl < 0.25", "d > 50.00", "d < 1.00", "c_renamed = 'r'", "e IS NOT NULL", "id >= 9000"],
)
def test_pruning_on_promoted_renamed_and_re_added_columns_is_sound(conformance_catalog, where):
    # int -> long, float -> double, decimal(9,2) -> (18,2): old files carry bounds of the narrower type.
    _assert_pruning_is_sound(conformance_catalog.load_table("corpus.schema_evolution"), where)


def _assert_pruning_is_sound(table, where: str) -> None:
    """Every data file the pruner drops holds no row matching ``where`` (read back by field id)."""
    schema = table.schema()
    row_filter = parse(where)
    manifests = table.current_snapshot().manifests(table.io)
    metrics = ScanMetrics()
    kept_paths = set(_selected(table, row_filter, metrics).paths)
    all_paths = {
        entry.data_file.file_path
        for manifest in manifests
        for entry in read_live_entries(manifest, table.io)
        if entry.data_file.content == DataFileContent.DATA
    }
    pruned_paths = sorted(all_paths - kept_paths)

    assert metrics.data_files_total == len(all_paths)
    assert metrics.data_files_pruned == len(pruned_paths)
    bound_filter = bind(schema, row_filter, case_sensitive=True)
    assert [path for path in pruned_paths if _rows_matching(table, path, schema, bound_filter)] == []
