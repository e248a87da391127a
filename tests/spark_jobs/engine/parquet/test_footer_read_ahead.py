"""Footers read ahead: only files on an object store whose footer the cache lacks (the S3 side is tested in
tests/integration/test_s3_read_requests.py)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.io.pyarrow import PyArrowFileIO

from spark_jobs.engine.parquet.footer_cache import FooterCache
from spark_jobs.engine.parquet.footer_read_ahead import footers_read_ahead, take_footer_read_ahead


def test_local_files_are_not_read_ahead(tmp_path) -> None:
    path = tmp_path / "data.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3]}), path)
    size = path.stat().st_size
    with footers_read_ahead(PyArrowFileIO(), [(str(path), size), (f"file://{path}", size)], cache=FooterCache()):
        assert take_footer_read_ahead(str(path), size) is None
        assert take_footer_read_ahead(f"file://{path}", size) is None
