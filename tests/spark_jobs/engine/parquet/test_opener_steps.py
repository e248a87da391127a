"""Each documented step of the per-file read, tested alone through ``DataFileOpener``, and its time counted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.expressions import EqualTo, GreaterThanOrEqual
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from spark_jobs.engine.parquet.data_file_input import DataFileInput
from spark_jobs.engine.parquet.opener import DataFileOpener
from spark_jobs.engine.parquet.predicates import translate_filter
from spark_jobs.engine.planning.scan_tasks import DataFileSlice
from spark_jobs.engine.shared.deleted_positions import NO_DELETED_POSITIONS
from spark_jobs.engine.shared.metrics import SCAN_TIME_STAGES, ScanMetrics, stage_seconds
from tests.spark_jobs.engine.parquet.scan_contexts import deleted_positions, scan_context

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def _file(tmp_path: Path) -> DataFileSlice:
    """Four row groups of 100 ids each (0..399), field id 1."""
    path = tmp_path / "ids.parquet"
    field = pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})
    pq.write_table(
        pa.table({"id": pa.array(range(400), pa.int64())}, schema=pa.schema([field])), path, row_group_size=100
    )
    return DataFileSlice(path=str(path), file_size_in_bytes=path.stat().st_size, record_count=400, spec_id=0)


def _opener(data_file: DataFileSlice, row_filter=None, deletes=NO_DELETED_POSITIONS) -> DataFileOpener:  # type: ignore[no-untyped-def]
    return DataFileOpener(data_file, scan_context(SCHEMA, [1], row_filter), deletes, (), ScanMetrics())


def test_step_1_opens_the_footer_and_resolves_the_files_columns(tmp_path) -> None:
    data_file = _file(tmp_path)
    opener = _opener(data_file)
    with DataFileInput(opener.context.io, data_file.path, data_file.file_size_in_bytes) as source:
        opened = opener.open_footer(source, filtered=False)
    assert opened.metadata.num_row_groups == 4 and opener.metrics.files_opened == 1
    assert opener.metrics.footer_time_ns > 0


def test_steps_2_and_3_prune_by_range_then_by_statistics(tmp_path) -> None:
    data_file = _file(tmp_path)
    opener = _opener(data_file, GreaterThanOrEqual("id", 250))
    filter_node = translate_filter(opener.context.bound_filter)
    with DataFileInput(opener.context.io, data_file.path, data_file.file_size_in_bytes) as source:
        opened = opener.open_footer(source, filtered=True)
        plan = opener.start_access_plan(opened)
        assert list(plan.scanned_row_groups()) == [0, 1, 2, 3]
        opener.prune_by_metadata(opened, plan, filter_node)
    assert list(plan.scanned_row_groups()) == [2, 3]
    assert opener.metrics.row_groups_pruned_by_statistics == 2 and opener.metrics.statistics_time_ns > 0


def test_step_4_applies_deleted_positions_and_skips_a_row_group_all_deleted(tmp_path) -> None:
    data_file = _file(tmp_path)
    opener = _opener(data_file, deletes=deleted_positions(np.arange(0, 100)))
    with DataFileInput(opener.context.io, data_file.path, data_file.file_size_in_bytes) as source:
        plan = opener.start_access_plan(opener.open_footer(source, filtered=False))
        opener.apply_deleted_positions(plan)
    assert list(plan.scanned_row_groups()) == [1, 2, 3]
    assert opener.metrics.rows_deleted_by_position_deletes == 100


def test_steps_5_to_7_leave_unproven_conjuncts_cut_units_and_decode(tmp_path) -> None:
    data_file = _file(tmp_path)
    opener = _opener(data_file, EqualTo("id", 150))
    batches = list(opener.read())
    assert pa.Table.from_batches(batches).column("id").to_pylist() == [150]
    counters = opener.metrics.as_dict()
    assert set(stage_seconds(counters)) <= set(SCAN_TIME_STAGES)
    assert {"footer", "statistics", "decode"} <= set(stage_seconds(counters))
