"""Fixtures for the Parquet reader tests: real files written with pyarrow, carrying Iceberg field ids."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs.engine.parquet.footer_cache import FOOTER_CACHE
from spark_jobs.engine.parquet.rejected_rows_cache import rejected_rows_cache
from spark_jobs.engine.planning.scan_tasks import DataFileSlice


@pytest.fixture(autouse=True)
def empty_footer_cache() -> None:
    """Each test starts with empty process-wide footer and rejected-rows caches (tmp paths are reused across runs)."""
    FOOTER_CACHE.clear()
    rejected_rows_cache().clear()


@pytest.fixture
def write_data_file(tmp_path: Path) -> Callable[..., DataFileSlice]:
    """Write a table as Parquet (pyarrow writer options pass through) and describe it as a whole-file slice."""

    def write(table: pa.Table, name: str = "data.parquet", **writer_options) -> DataFileSlice:
        path = tmp_path / name
        pq.write_table(table, path, **writer_options)
        size = path.stat().st_size
        return DataFileSlice(f"file:{path}", size, table.num_rows, 0, length=size)

    return write
