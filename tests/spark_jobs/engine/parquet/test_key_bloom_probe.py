"""An upsert's key scan skips data files whose bloom filters prove they hold none of the keys."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
from pyiceberg.io.pyarrow import PyArrowFileIO

from spark_jobs.engine.parquet.bloom_filter import read_bloom_filter
from spark_jobs.engine.parquet.key_bloom_probe import KeyBloomProbe
from spark_jobs.engine.shared.errors import CorruptFileError
from spark_jobs.engine.shared.metrics import ScanMetrics

ID, NAME = 1, 2


def _write(path, ids: list[int], names: list[str], *, bloom: bool = True, row_group_size: int = 1000) -> int:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), metadata={"PARQUET:field_id": str(ID)}),
            pa.field("name", pa.string(), metadata={"PARQUET:field_id": str(NAME)}),
        ]
    )
    table = pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(names, pa.string())}, schema=schema)
    options = {"bloom_filter_options": {"id": {"ndv": 2000, "fpp": 0.01}, "name": {"ndv": 2000}}} if bloom else {}
    pq.write_table(table, path, row_group_size=row_group_size, **options)
    return path.stat().st_size


def _negatives(path, candidates) -> list[int]:
    """The candidate ids every row group's bloom filter rules out when probed alone (no false positive)."""
    parquet_file = pq.ParquetFile(path)
    with PyArrowFileIO().new_input(str(path)).open() as stream:
        filters = [
            read_bloom_filter(stream, parquet_file.metadata.row_group(index).column(0), str(path))[0]
            for index in range(parquet_file.metadata.num_row_groups)
        ]
    return [
        value
        for value in candidates
        if not any(
            f.might_contain_hash(xxhash.xxh64_intdigest(value.to_bytes(8, "little", signed=True), seed=0))
            for f in filters
        )
    ]


def _may_hold(path, size, keys) -> bool:
    return KeyBloomProbe(keys).file_may_hold_keys(str(path), size, PyArrowFileIO(), ScanMetrics())


def test_a_file_holding_none_of_the_keys_is_skipped_and_one_holding_a_key_is_kept(tmp_path):
    ids = list(range(0, 20000, 7))  # bounds 0..19999 span every key below: statistics cannot rule the file out
    path = tmp_path / "a.parquet"
    size = _write(path, ids, [f"n{i}" for i in ids])
    absent = _negatives(path, range(1, 20000, 7))[:200]  # keys the filter answers "no" for, one by one
    assert len(absent) == 200
    assert not _may_hold(path, size, {ID: absent})
    assert _may_hold(path, size, {ID: [*absent, 14]})  # 14 is in the file
    assert not _may_hold(path, size, {ID: [14], NAME: ["absent"]})  # each key column must find a value
    assert _may_hold(path, size, {ID: [14], NAME: ["n14"]})
    assert not _may_hold(path, size, {ID: []})


def test_any_row_group_that_may_hold_a_key_keeps_the_file(tmp_path):
    path = tmp_path / "groups.parquet"
    ids = list(range(0, 6000, 2))
    size = _write(path, ids, ["x"] * len(ids), row_group_size=500)
    assert pq.ParquetFile(path).metadata.num_row_groups == 6
    assert _may_hold(path, size, {ID: [5998]})  # in the last row group only
    assert not _may_hold(path, size, {ID: _negatives(path, [1, 3, 5, 7, 9, 5999])})


def test_without_bloom_filters_or_field_ids_nothing_is_proved(tmp_path):
    path = tmp_path / "plain.parquet"
    size = _write(path, [1, 2, 3], ["a", "b", "c"], bloom=False)
    assert _may_hold(path, size, {ID: [99]})
    assert _may_hold(path, size, {77: [99]})  # no column with this field id


def test_vectorized_probes_agree_with_probing_one_value_at_a_time(tmp_path):
    path = tmp_path / "v.parquet"
    ids = list(range(0, 3000, 3))
    _write(path, ids, ["x"] * len(ids))
    parquet_file = pq.ParquetFile(path)
    with PyArrowFileIO().new_input(str(path)).open() as stream:
        bloom_filter, _ = read_bloom_filter(stream, parquet_file.metadata.row_group(0).column(0), str(path))
    assert bloom_filter is not None
    candidates = range(-50, 3050)
    hashes = [xxhash.xxh64_intdigest(value.to_bytes(8, "little", signed=True), seed=0) for value in candidates]
    one_by_one = [bloom_filter.might_contain_hash(h) for h in hashes]
    assert all(one_by_one[i + 50] for i in ids)
    for start in range(0, len(hashes), 97):
        chunk = np.array(hashes[start : start + 97], dtype=np.uint64)
        assert bloom_filter.might_contain_any_hash(chunk) == any(one_by_one[start : start + 97])


def test_a_damaged_file_is_named(tmp_path):
    path = tmp_path / "bad.parquet"
    size = _write(path, [1, 2], ["a", "b"])
    path.write_bytes(path.read_bytes()[: size // 2])
    with pytest.raises(CorruptFileError, match=r"bad\.parquet"):
        _may_hold(path, size, {ID: [1]})
