"""Fixtures of the delete tests: local FileIOs, a fresh cache, and the Java-written corpus as planned data files."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import PyArrowFileIO

from spark_jobs.engine.deletes.cache import DeleteFileCache
from spark_jobs.engine.planning.scan_planner import plan_scan
from spark_jobs.engine.planning.scan_tasks import DataFileSlice
from tests.spark_jobs.engine.deletes.delete_file_writers import RecordingFileIO


@pytest.fixture
def io() -> FileIO:
    """A local FileIO."""
    return PyArrowFileIO()


@pytest.fixture
def recording_io() -> RecordingFileIO:
    """A local FileIO that records opens and reads."""
    return RecordingFileIO()


@pytest.fixture
def cache() -> DeleteFileCache:
    """A fresh cache per test, so tests never see each other's files."""
    return DeleteFileCache(max_bytes=64 * 1024 * 1024)


@pytest.fixture(scope="session")
def corpus_data_files(conformance_catalog: Catalog) -> Callable[[str], list[DataFileSlice]]:
    """table name -> its current snapshot's data files, each with the deletes the planner attached (whole files)."""
    planned: dict[str, list[DataFileSlice]] = {}

    def data_files(table_name: str) -> list[DataFileSlice]:
        if table_name not in planned:
            table = conformance_catalog.load_table(f"corpus.{table_name}")
            plan = plan_scan(table, table.current_snapshot(), split_size=1 << 40)
            slices = [data_file for task in plan.tasks for data_file in task.slices]
            assert all(data_file.is_whole_file for data_file in slices)
            planned[table_name] = slices
        return planned[table_name]

    return data_files
