"""Equality delete sets loading on a helper thread: the same answers, identity and counters as a set loaded first."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.types import LongType, StringType

from spark_jobs.engine.deletes.cache import DeleteFileCache
from spark_jobs.engine.deletes.equality_deletes import load_equality_deletes
from spark_jobs.engine.deletes.pending_equality_deletes import (
    EqualityDeleteLoadError,
    finish,
    start_loading_equality_deletes,
)
from spark_jobs.engine.shared.errors import CorruptFileError, EngineError
from spark_jobs.engine.shared.row_predicate import PredicateKind, RowPredicate
from tests.spark_jobs.engine.deletes.delete_file_writers import data_file_slice, write_equality_delete_file

DATA = "file:/warehouse/db/t/data/part-a.parquet"
FIELD_TYPES = {1: LongType(), 2: StringType()}


def test_pending_sets_answer_as_loaded_sets_and_count_bytes_once(tmp_path: Path, io) -> None:
    by_id = write_equality_delete_file(tmp_path / "id.parquet", {("id", 1): pa.array([1, 3, None], pa.int64())})
    pair = write_equality_delete_file(
        tmp_path / "pair.parquet", {("id", 1): pa.array([4, 5], pa.int64()), ("cat", 2): pa.array(["a", None])}
    )
    data_file = data_file_slice(DATA, equality_deletes=(by_id, pair))
    data = {1: pa.array([1, 2, 3, 4, 5, None, 4], pa.int64()), 2: pa.array(["a", "b", "c", "a", None, "x", "b"])}
    cache = DeleteFileCache(max_bytes=1 << 26)

    pending = start_loading_equality_deletes(data_file, io=io, field_types=FIELD_TYPES, cache=cache)
    loaded = load_equality_deletes(data_file, io=io, field_types=FIELD_TYPES, cache=DeleteFileCache(1 << 26))

    assert [p.equality_ids for p in pending] == [s.equality_ids for s in loaded]
    for waiting, delete_set in zip(pending, loaded, strict=True):
        assert isinstance(waiting, RowPredicate) and waiting.kind is PredicateKind.EQUALITY_DELETE
        assert waiting.field_ids == delete_set.field_ids
        assert waiting.cache_identity == delete_set.cache_identity  # remembered rejections are shared
        assert waiting.keep_mask(data, 7).tolist() == delete_set.keep_mask(data, 7).tolist()
    assert finish(pending).delete_bytes_read > 0
    again = start_loading_equality_deletes(data_file, io=io, field_types=FIELD_TYPES, cache=cache)
    assert finish(again).delete_bytes_read == 0  # from the cache


def test_a_failed_load_raises_from_its_cause_at_the_first_keep_mask_and_at_finish(tmp_path: Path, io) -> None:
    delete_file = write_equality_delete_file(tmp_path / "eq.parquet", {("id", 1): pa.array([1], pa.int64())})
    delete_file = type(delete_file)(delete_file.path, 1, 1, (1, 2), 3)  # names a field id the file lacks
    data_file = data_file_slice(DATA, equality_deletes=(delete_file,))

    (pending,) = start_loading_equality_deletes(
        data_file, io=io, field_types=FIELD_TYPES, cache=DeleteFileCache(1 << 20)
    )

    with pytest.raises(EqualityDeleteLoadError) as raised:
        pending.keep_mask({1: pa.array([1], pa.int64()), 2: pa.array(["a"])}, 1)
    assert isinstance(raised.value.__cause__, CorruptFileError) and "eq.parquet" in str(raised.value.__cause__)
    with pytest.raises(EqualityDeleteLoadError):
        finish([pending])


def test_field_types_missing_an_equality_id_raise_before_loading(tmp_path: Path, io) -> None:
    delete_file = write_equality_delete_file(tmp_path / "eq.parquet", {("id", 1): pa.array([1], pa.int64())})

    with pytest.raises(EngineError, match=r"field ids \[1\] that field_types does not give a type for"):
        start_loading_equality_deletes(
            data_file_slice(DATA, equality_deletes=(delete_file,)), io=io, field_types={2: StringType()}
        )
