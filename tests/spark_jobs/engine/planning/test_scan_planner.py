"""End-to-end planning on the corpus and on small tables: files, deletes, constants, slices, tasks, errors."""

from __future__ import annotations

import itertools
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.expressions import EqualTo

from spark_jobs.engine.planning import plan_scan
from spark_jobs.engine.shared.errors import InvalidFilterError
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.table.snapshots import resolve_read_target
from tests.support.conformance import CORPUS_DIR

TABLES = [
    "mor_v2_pos",
    "mor_v3_dv",
    "v2_eq_deletes",
    "v2_eq_deletes_part",
    "schema_evolution",
    "partition_evolution",
    "small_files",
    "types",
    "v1_cow",
]


def _corpus_files(table_name: str) -> dict[int, dict]:
    corpus = json.loads((CORPUS_DIR / "corpus.json").read_text())
    return {group["content"]: group for group in corpus["tables"][table_name]["files"]}


def _slices(plan):
    return [data_file for task in plan.tasks for data_file in task.slices]


@pytest.mark.parametrize("table_name", TABLES)
def test_current_plan_holds_every_live_file_of_the_corpus(conformance_catalog, table_name):
    table = conformance_catalog.load_table(f"corpus.{table_name}")
    target = resolve_read_target(table)
    plan = plan_scan(table, target.snapshot, schema=target.schema)
    expected = _corpus_files(table_name)
    slices = _slices(plan)

    assert len({s.path for s in slices}) == expected[0]["files"]
    assert sum(s.record_count for s in slices if s.start == 0) == expected[0]["records"]
    applied = {d for s in slices for d in (*s.position_deletes, *s.equality_deletes, s.deletion_vector) if d}
    expected_deletes = sum(group["files"] for content, group in expected.items() if content != 0)
    assert len(applied) == plan.metrics.delete_files_applied == expected_deletes
    assert plan.metrics.tasks == len(plan.tasks) > 0
    assert plan.metrics.data_files_total == expected[0]["files"]
    assert plan.metrics.data_files_pruned == 0


def test_slices_carry_identity_partition_constants_of_their_own_spec(conformance_catalog):
    table = conformance_catalog.load_table("corpus.partition_evolution")
    plan = plan_scan(table, table.current_snapshot(), schema=table.schema())
    category_id = table.schema().find_field("category").field_id
    identity_specs = {
        spec_id for spec_id, spec in table.specs().items() if any(f.source_id == category_id for f in spec.fields)
    }
    by_spec: dict[int, set] = {}
    for data_file in _slices(plan):
        by_spec.setdefault(data_file.spec_id, set()).add(tuple(sorted(data_file.partition_constants.items())))
        if data_file.spec_id in identity_specs:
            assert set(data_file.partition_constants) == {category_id}
            assert f"category={data_file.partition_constants[category_id]}/" in data_file.path
        else:
            assert data_file.partition_constants == {}
    assert identity_specs == {3, 4}
    # Spec 2 (bucket only) was replaced before any commit wrote with it.
    assert set(by_spec) == {0, 1, 3, 4}


def test_equality_delete_of_one_partition_reaches_only_older_files_of_that_partition(conformance_catalog):
    table = conformance_catalog.load_table("corpus.v2_eq_deletes_part")
    plan = plan_scan(table, table.current_snapshot(), schema=table.schema())
    with_deletes = [s for s in _slices(plan) if s.has_deletes]
    assert len(with_deletes) == 1
    (data_file,) = with_deletes
    assert data_file.partition_constants == {2: "a"}
    assert data_file.equality_deletes[0].data_sequence_number > data_file.data_sequence_number


def test_time_travel_before_any_delete_plans_no_deletes(conformance_catalog):
    table = conformance_catalog.load_table("corpus.mor_v2_pos")
    target = resolve_read_target(table, snapshot_id=6259216817822909813)  # append2, before delete1
    plan = plan_scan(table, target.snapshot, schema=target.schema)
    assert len(_slices(plan)) == 112
    assert not any(s.has_deletes for s in _slices(plan))
    assert plan.metrics.delete_files_applied == 0


def test_time_travel_binds_the_filter_to_the_snapshot_schema(conformance_catalog):
    table = conformance_catalog.load_table("corpus.schema_evolution")
    target = resolve_read_target(table, snapshot_id=1751675199814403909)  # before c was renamed to c_renamed
    plan = plan_scan(table, target.snapshot, schema=target.schema, row_filter="c IS NOT NULL")
    assert [f.name for f in plan.schema.fields] == ["id", "a", "fl", "c", "d"]
    assert str(plan.bound_filter.term.ref().field.name) == "c"
    with pytest.raises(InvalidFilterError, match=r"table corpus\.schema_evolution .*c_renamed"):
        plan_scan(table, target.snapshot, schema=target.schema, row_filter="c_renamed IS NOT NULL")


def test_filter_errors_name_the_table_and_the_problem(conformance_catalog):
    table = conformance_catalog.load_table("corpus.v1_cow")
    with pytest.raises(
        InvalidFilterError, match=r"'id >>= 3' for table corpus\.v1_cow does not parse at column 1, near"
    ):
        plan_scan(table, table.current_snapshot(), row_filter="id >>= 3")
    with pytest.raises(InvalidFilterError, match=r"does not parse at column 11, at its end"):
        plan_scan(table, table.current_snapshot(), row_filter="id > 3 AND")
    with pytest.raises(InvalidFilterError, match=r"Could not convert abc into a long"):
        plan_scan(table, table.current_snapshot(), row_filter="id = 'abc'")
    with pytest.raises(InvalidFilterError) as error:
        plan_scan(table, table.current_snapshot(), row_filter="colour = 'red'")
    assert "corpus.v1_cow" in str(error.value)
    assert "colour" in str(error.value)
    assert "columns: id, ts, category" in str(error.value)
    with pytest.raises(InvalidFilterError, match="colour"):
        plan_scan(table, table.current_snapshot(), row_filter=EqualTo("colour", "red"))


def test_small_files_pack_into_tasks_by_open_file_cost(conformance_catalog):
    table = conformance_catalog.load_table("corpus.small_files")
    metrics = ScanMetrics()
    plan = plan_scan(table, table.current_snapshot(), metrics=metrics)
    # Each file is far below 4 MiB, so weighs the open-file cost: 32 per 128 MiB task, 2000 files in 63 tasks.
    assert plan.metrics is metrics
    assert len(plan.tasks) == 63
    assert sorted(len(task.slices) for task in plan.tasks) == [16] + [32] * 62
    assert all(s.is_whole_file for s in _slices(plan))
    smaller = plan_scan(table, table.current_snapshot(), split_size=64 * 1024 * 1024)
    assert len(smaller.tasks) == 125
    # Weighed by open-file cost, 2000 small files already fill 63 tasks: adapting to 2 slots changes nothing.
    assert len(plan_scan(table, table.current_snapshot(), parallelism=2).tasks) == 63


def test_large_files_split_on_row_group_boundaries(sql_catalog):
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table(
        "ns.big",
        schema=pa.schema([("id", pa.int64()), ("payload", pa.string())]),
        properties={"write.parquet.row-group-limit": "500", "write.parquet.compression-codec": "uncompressed"},
    )
    ids = list(range(5000))
    table.append(pa.table({"id": pa.array(ids, pa.int64()), "payload": pa.array([f"{i:08d}" * 8 for i in ids])}))
    (data_file,) = [
        entry.data_file for entry in table.current_snapshot().manifests(table.io)[0].fetch_manifest_entry(table.io)
    ]
    metadata = pq.read_metadata(table.io.new_input(data_file.file_path).open())
    row_group_starts = list(data_file.split_offsets)
    assert metadata.num_row_groups == len(row_group_starts) == 10
    row_group_bytes = row_group_starts[1] - row_group_starts[0]

    plan = plan_scan(table, table.current_snapshot(), split_size=3 * row_group_bytes, open_file_cost=0, lookback=1)
    slices = sorted(_slices(plan), key=lambda s: s.start)

    assert [s.start for s in slices] == [0, row_group_starts[3], row_group_starts[6], row_group_starts[9]]
    assert slices[-1].start + slices[-1].length == data_file.file_size_in_bytes
    for start in row_group_starts:
        assert sum(s.start <= start < s.start + s.length for s in slices) == 1
    assert len(plan.tasks) == 4
    assert plan.metrics.tasks == 4


def test_table_without_snapshot_plans_nothing(sql_catalog):
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.empty", schema=pa.schema([("id", pa.int64())]))
    plan = plan_scan(table, None, row_filter="id > 3")
    assert plan.tasks == []
    assert plan.metrics.tasks == 0
    assert plan.snapshot is None


def test_case_insensitive_filters_bind_any_spelling(conformance_catalog):
    table = conformance_catalog.load_table("corpus.v2_eq_deletes_part")
    plan = plan_scan(table, table.current_snapshot(), row_filter="CATEGORY = 'b'", case_sensitive=False)
    assert {s.partition_constants[2] for s in _slices(plan)} == {"b"}
    assert plan.metrics.data_files_pruned == 2
    with pytest.raises(InvalidFilterError, match="CATEGORY"):
        plan_scan(table, table.current_snapshot(), row_filter="CATEGORY = 'b'")


def test_split_size_adapts_to_the_readers_parallelism(sql_catalog):
    """One 35 MiB file is one 128 MiB split; for 2 slots it is cut on row groups into splits of about half."""
    sql_catalog.create_namespace("ns")
    rows = 540_000
    payload = pa.array([f"{i:064d}" for i in range(rows)])
    table = sql_catalog.create_table(
        "ns.wide",
        schema=pa.schema([("id", pa.int64()), ("payload", pa.string())]),
        properties={"write.parquet.row-group-limit": "54000", "write.parquet.compression-codec": "uncompressed"},
    )
    table.append(pa.table({"id": pa.array(range(rows), pa.int64()), "payload": payload}))
    (data_file,) = [
        entry.data_file for entry in table.current_snapshot().manifests(table.io)[0].fetch_manifest_entry(table.io)
    ]
    assert 32 * 1024 * 1024 < data_file.file_size_in_bytes < 64 * 1024 * 1024
    snapshot = table.current_snapshot()

    assert len(plan_scan(table, snapshot).tasks) == 1
    adapted = plan_scan(table, snapshot, parallelism=2, open_file_cost=0)
    assert len(adapted.tasks) == 2
    task_bytes = [sum(s.length for s in task.slices) for task in adapted.tasks]
    boundaries = [*data_file.split_offsets, data_file.file_size_in_bytes]
    row_group_bytes = max(end - start for start, end in itertools.pairwise(boundaries))
    assert max(task_bytes) - min(task_bytes) <= row_group_bytes  # halves, up to a row group boundary
    assert sum(task_bytes) == data_file.file_size_in_bytes
    # An explicit split size, or the table property set to false, keeps the plan as configured.
    assert len(plan_scan(table, snapshot, parallelism=2, split_size=128 * 1024 * 1024).tasks) == 1
    with table.transaction() as transaction:
        transaction.set_properties({"read.split.adaptive-size.enabled": "false"})
    assert len(plan_scan(table, table.current_snapshot(), parallelism=2).tasks) == 1
