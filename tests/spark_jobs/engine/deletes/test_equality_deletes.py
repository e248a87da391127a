"""Equality delete sets: loading by field id with type promotion, Java's equality (NULL, NaN, -0.0), the corpus."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import struct
import uuid
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.types import (
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    UUIDType,
)

from spark_jobs.engine.deletes.cache import DeleteFileCache
from spark_jobs.engine.deletes.equality_deletes import EqualityDeleteSet, load_equality_deletes
from spark_jobs.engine.deletes.position_deletes import load_deleted_positions
from spark_jobs.engine.planning.scan_tasks import DataFileSlice
from spark_jobs.engine.shared.errors import CorruptFileError, EngineError
from spark_jobs.engine.shared.row_predicate import PredicateKind, RowPredicate
from tests.spark_jobs.engine.deletes.delete_file_writers import (
    corpus_query,
    data_file_slice,
    field_with_id,
    read_data_file_by_field_id,
    write_equality_delete_file,
)
from tests.support.conformance import table_checksum

DATA = "file:/warehouse/db/t/data/part-a.parquet"


def _surviving(delete_set: EqualityDeleteSet, columns: dict[int, pa.Array]) -> list[bool]:
    """keep_mask as a list, with its shape and dtype checked."""
    num_rows = len(next(iter(columns.values())))
    mask = delete_set.keep_mask(columns, num_rows)
    assert mask.dtype == np.bool_
    assert mask.shape == (num_rows,)
    return mask.tolist()


def _load_one(tmp_path: Path, io, cache, columns: dict[tuple[str, int], pa.Array], field_types) -> EqualityDeleteSet:
    """Write one equality delete file and load its set for a data file."""
    delete_file = write_equality_delete_file(tmp_path / "eq.parquet", columns)
    (delete_set,) = load_equality_deletes(
        data_file_slice(DATA, equality_deletes=(delete_file,)), io=io, field_types=field_types, cache=cache
    )
    return delete_set


def test_single_long_key(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    delete_set = _load_one(tmp_path, io, cache, {("id", 1): pa.array([3, 5, 5, 9], pa.int64())}, {1: LongType()})

    assert isinstance(delete_set, RowPredicate)
    assert delete_set.kind is PredicateKind.EQUALITY_DELETE
    assert delete_set.field_ids == frozenset({1})
    assert delete_set.key_count == 3
    assert _surviving(delete_set, {1: pa.array([1, 3, 5, 7, 9, None], pa.int64())}) == [
        True,
        False,
        False,
        True,
        False,
        True,
    ]


INT64_MIN, INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


@pytest.mark.parametrize(
    "keys",
    [[10, 12, 20], [INT64_MIN, INT64_MIN + 2], [INT64_MAX - 2, INT64_MAX], [INT64_MIN, 5, INT64_MAX]],
    ids=["small range", "at the int64 minimum", "at the int64 maximum", "whole int64 range"],
)
def test_long_keys_at_range_edges_match_exactly(tmp_path: Path, io, cache: DeleteFileCache, keys) -> None:
    delete_set = _load_one(tmp_path, io, cache, {("id", 1): pa.array(keys, pa.int64())}, {1: LongType()})
    probes = sorted(
        {INT64_MIN, INT64_MIN + 1, INT64_MAX - 1, INT64_MAX, 0}
        | {k + d for k in keys for d in (-1, 0, 1) if INT64_MIN <= k + d <= INT64_MAX}
    )
    # Long enough to span several probe blocks, in a shuffled order.
    data = np.resize(np.array(probes, dtype=np.int64), 200_003)
    np.random.default_rng(5).shuffle(data)

    assert _surviving(delete_set, {1: pa.array(data)}) == [int(value) not in set(keys) for value in data]


def test_composite_keys_match_on_every_column(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    delete_set = _load_one(
        tmp_path,
        io,
        cache,
        {("id", 1): pa.array([1, 1, 2], pa.int64()), ("category", 2): pa.array(["a", "b", "a"])},
        {1: LongType(), 2: StringType()},
    )
    data = {1: pa.array([1, 1, 1, 2, 2, 3], pa.int64()), 2: pa.array(["a", "b", "c", "a", "b", "a"])}

    assert _surviving(delete_set, data) == [False, False, True, False, True, True]
    assert delete_set.key_count == 3


def test_null_in_a_delete_row_matches_null_in_a_data_row(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    delete_set = _load_one(
        tmp_path,
        io,
        cache,
        {("id", 1): pa.array([None, 1, None], pa.int64()), ("category", 2): pa.array(["a", None, None])},
        {1: LongType(), 2: StringType()},
    )
    data = {
        1: pa.array([None, None, None, 1, 1, 2], pa.int64()),
        2: pa.array(["a", "b", None, None, "a", None]),
    }

    assert _surviving(delete_set, data) == [False, True, False, False, True, True]


def test_int_file_column_matches_long_table_column(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    delete_set = _load_one(tmp_path, io, cache, {("id", 1): pa.array([7, -2], pa.int32())}, {1: LongType()})

    assert _surviving(delete_set, {1: pa.array([7, 2, -2, 1 << 40], pa.int64())}) == [False, True, False, True]


def test_float_file_column_matches_double_table_column(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    delete_set = _load_one(tmp_path, io, cache, {("score", 4): pa.array([0.5, 1.1], pa.float32())}, {4: DoubleType()})
    promoted_1_1 = float(np.float32(1.1))  # what Java reads from the float file after promotion

    data = {4: pa.array([0.5, 1.1, promoted_1_1], pa.float64())}

    assert _surviving(delete_set, data) == [False, True, False]


def test_dropped_column_is_found_by_field_id_under_its_old_name(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    delete_set = _load_one(
        tmp_path,
        io,
        cache,
        {("legacy_code", 17): pa.array(["x", "y"]), ("id", 1): pa.array([1, 2])},
        {1: LongType(), 17: StringType()},
    )

    data = {17: pa.array(["x", "x", "y"], pa.large_string()), 1: pa.array([1, 2, 2], pa.int64())}

    assert _surviving(delete_set, data) == [False, True, False]


def test_string_decimal_and_date_keys(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    delete_set = _load_one(
        tmp_path,
        io,
        cache,
        {
            ("note", 2): pa.array(["", "é漢", "b"]),
            ("amount", 3): pa.array([Decimal("1.20"), Decimal("-3.00"), Decimal("0.00")], pa.decimal128(9, 2)),
            ("day", 5): pa.array([dt.date(1969, 12, 31), dt.date(2024, 1, 1), dt.date(2024, 1, 2)]),
        },
        {2: StringType(), 3: DecimalType(18, 2), 5: DateType()},
    )
    data = {
        2: pa.array(["", "é漢", "b", "", "B"], pa.large_string()),
        3: pa.array(
            [Decimal("1.20"), Decimal("-3.00"), Decimal("0.00"), Decimal("1.21"), Decimal("0.00")], pa.decimal128(18, 2)
        ),
        5: pa.array(
            [
                dt.date(1969, 12, 31),
                dt.date(2024, 1, 1),
                dt.date(2024, 1, 2),
                dt.date(1969, 12, 31),
                dt.date(2024, 1, 2),
            ]
        ),
    }

    assert _surviving(delete_set, data) == [False, False, False, True, True]


def test_uuid_keys(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    deleted, kept = uuid.UUID(int=1), uuid.UUID(int=2)
    delete_set = _load_one(tmp_path, io, cache, {("u", 6): pa.array([deleted.bytes], pa.binary(16))}, {6: UUIDType()})

    data = pa.array([deleted.bytes, kept.bytes, None], pa.binary(16))

    assert _surviving(delete_set, {6: data}) == [False, True, True]
    assert _surviving(delete_set, {6: pa.ExtensionArray.from_storage(pa.uuid(), data)}) == [False, True, True]


def _doubles(bit_patterns: Sequence[int | None]) -> pa.Array:
    """float64 values from exact bit patterns (None: null)."""
    bits = np.array([b if b is not None else 0 for b in bit_patterns], dtype=np.uint64)
    return pa.array(bits.view(np.float64), mask=np.array([b is None for b in bit_patterns], dtype=bool))


CANONICAL_NAN = 0x7FF8000000000000
PAYLOAD_NAN = 0x7FF8000000000001
NEGATIVE_NAN = 0xFFF8000000000000
POSITIVE_ZERO = 0x0000000000000000
NEGATIVE_ZERO = 0x8000000000000000
ONE = 0x3FF0000000000000


def test_nan_equals_every_nan_and_negative_zero_differs_from_zero() -> None:
    delete_set = EqualityDeleteSet((4,), [_doubles([PAYLOAD_NAN, NEGATIVE_ZERO])])

    data = {4: _doubles([CANONICAL_NAN, NEGATIVE_NAN, PAYLOAD_NAN, POSITIVE_ZERO, NEGATIVE_ZERO, ONE, None])}

    assert _surviving(delete_set, data) == [False, False, False, True, False, True, True]


def test_dictionary_view_and_chunked_data_columns() -> None:
    delete_set = EqualityDeleteSet((2,), [pa.array(["a", None], pa.large_string())])
    expected = [False, True, False, False]
    plain = pa.array(["a", "b", None, "a"])

    assert _surviving(delete_set, {2: plain}) == expected
    assert _surviving(delete_set, {2: plain.dictionary_encode()}) == expected
    assert _surviving(delete_set, {2: plain.cast(pa.string_view())}) == expected
    assert _surviving(delete_set, {2: pa.chunked_array([plain[:1], plain[1:]])}) == expected
    # Nulls carried by the dictionary's values rather than its indices.
    dictionary_with_null = pa.DictionaryArray.from_arrays(
        pa.array([0, 1, 2, 0], pa.int32()), pa.array(["a", "b", None])
    )
    assert _surviving(delete_set, {2: dictionary_with_null}) == expected


def test_files_with_the_same_ids_merge_and_other_ids_form_another_set(
    tmp_path: Path, io, cache: DeleteFileCache
) -> None:
    by_id = write_equality_delete_file(tmp_path / "by_id.parquet", {("id", 1): pa.array([1, 2], pa.int64())})
    more_by_id = write_equality_delete_file(tmp_path / "more.parquet", {("id", 1): pa.array([2, 3], pa.int64())})
    pair = write_equality_delete_file(
        tmp_path / "pair.parquet", {("category", 2): pa.array(["a"]), ("id", 1): pa.array([9], pa.int64())}
    )
    same_pair_reordered = write_equality_delete_file(
        tmp_path / "pair2.parquet", {("id", 1): pa.array([8], pa.int64()), ("category", 2): pa.array(["b"])}
    )
    data_file = data_file_slice(DATA, equality_deletes=(by_id, pair, more_by_id, same_pair_reordered))

    sets = load_equality_deletes(data_file, io=io, field_types={1: LongType(), 2: StringType()}, cache=cache)

    assert sorted(s.equality_ids for s in sets) == [(1,), (1, 2)]
    data = {1: pa.array([1, 3, 4, 9, 9, 8], pa.int64()), 2: pa.array(["z", "z", "z", "a", "b", "b"])}
    keep = np.logical_and.reduce([s.keep_mask(data, 6) for s in sets])
    assert keep.tolist() == [False, False, True, False, True, False]


def test_sets_and_files_are_loaded_once_per_cache(tmp_path: Path, recording_io, cache: DeleteFileCache) -> None:
    delete_file = write_equality_delete_file(tmp_path / "eq.parquet", {("id", 1): pa.array([1], pa.int64())})

    for data_path in ("file:/a.parquet", "file:/b.parquet"):
        load_equality_deletes(
            data_file_slice(data_path, equality_deletes=(delete_file,)),
            io=recording_io,
            field_types={1: LongType()},
            cache=cache,
        )

    assert recording_io.log.opened == [delete_file.path]


def test_delete_file_without_the_field_id_is_corrupt(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    delete_file = write_equality_delete_file(tmp_path / "eq.parquet", {("id", 1): pa.array([1], pa.int64())})
    delete_file = type(delete_file)(delete_file.path, 1, 1, (1, 2), 3)

    with pytest.raises(CorruptFileError, match=r"eq\.parquet: no column with field id \[2\]"):
        load_equality_deletes(
            data_file_slice(DATA, equality_deletes=(delete_file,)),
            io=io,
            field_types={1: LongType(), 2: StringType()},
            cache=cache,
        )


def test_field_types_must_cover_the_equality_ids(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    delete_file = write_equality_delete_file(tmp_path / "eq.parquet", {("id", 1): pa.array([1], pa.int64())})

    with pytest.raises(EngineError, match=r"field ids \[1\] that field_types does not give a type for"):
        load_equality_deletes(
            data_file_slice(DATA, equality_deletes=(delete_file,)), io=io, field_types={2: IntegerType()}, cache=cache
        )


def test_nested_struct_field_is_found_by_field_id(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    inner = field_with_id("code", pa.string(), 12)
    struct_type = pa.struct([inner])
    schema = pa.schema([field_with_id("location", struct_type, 11)])
    pq.write_table(pa.table([pa.array([{"code": "x"}, None], struct_type)], schema=schema), tmp_path / "eq.parquet")
    delete_file = write_equality_delete_file(tmp_path / "unused.parquet", {("id", 1): pa.array([1])})
    delete_file = type(delete_file)(str(tmp_path / "eq.parquet"), 1, 2, (12,), 3)

    (delete_set,) = load_equality_deletes(
        data_file_slice(DATA, equality_deletes=(delete_file,)), io=io, field_types={12: StringType()}, cache=cache
    )

    assert _surviving(delete_set, {12: pa.array(["x", "y", None])}) == [False, True, False]


# ---------------------------------------------------------------------------------------------------------------
# Property test against a plain-Python oracle with Java's equality
# ---------------------------------------------------------------------------------------------------------------

_float_bits = st.sampled_from([CANONICAL_NAN, PAYLOAD_NAN, NEGATIVE_NAN, POSITIVE_ZERO, NEGATIVE_ZERO, ONE, None])
_row = st.tuples(
    st.one_of(st.none(), st.integers(-3, 3)), _float_bits, st.one_of(st.none(), st.sampled_from(["", "a", "é"]))
)


def _java_equality_key(row: tuple[int | None, int | None, str | None]) -> tuple[Any, ...]:
    """A row as Java's StructLikeSet compares it: Double.equals on the float (all NaNs equal, -0.0 != 0.0)."""
    number, float_bits, text = row
    if float_bits is None:
        float_key: Any = None
    else:
        value = struct.unpack("<d", float_bits.to_bytes(8, "little"))[0]
        float_key = "NaN" if math.isnan(value) else float_bits
    return number, float_key, text


def _columns(rows: list[tuple[int | None, int | None, str | None]]) -> list[pa.Array]:
    return [
        pa.array([r[0] for r in rows], pa.int64()),
        _doubles([r[1] for r in rows]),
        pa.array([r[2] for r in rows], pa.large_string()),
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    delete_rows=st.lists(_row, min_size=1, max_size=25),
    data_rows=st.lists(_row, min_size=0, max_size=60),
    key_columns=st.sampled_from([(0,), (1,), (2,), (0, 1), (1, 2), (2, 0), (0, 1, 2)]),
    dictionary_strings=st.booleans(),
    split_at=st.integers(0, 60),
)
def test_keep_mask_matches_a_python_oracle(
    delete_rows: list[tuple[Any, ...]],
    data_rows: list[tuple[Any, ...]],
    key_columns: tuple[int, ...],
    dictionary_strings: bool,
    split_at: int,
) -> None:
    field_ids = tuple(100 + column for column in key_columns)
    delete_columns = _columns(delete_rows)
    delete_set = EqualityDeleteSet(field_ids, [delete_columns[column] for column in key_columns])
    data_columns = _columns(data_rows)
    if dictionary_strings:
        data_columns[2] = data_columns[2].dictionary_encode()
    split_at = min(split_at, len(data_rows))
    data_columns = [pa.chunked_array([column[:split_at], column[split_at:]]) for column in data_columns]

    mask = delete_set.keep_mask({100 + c: data_columns[c] for c in key_columns}, len(data_rows))

    deleted_keys = {tuple(_java_equality_key(row)[c] for c in key_columns) for row in delete_rows}
    expected = [tuple(_java_equality_key(row)[c] for c in key_columns) not in deleted_keys for row in data_rows]
    assert mask.tolist() == expected
    assert delete_set.key_count == len(deleted_keys)


# ---------------------------------------------------------------------------------------------------------------
# The Java-written corpus
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("table_name", ["v2_eq_deletes", "v2_eq_deletes_part"])
def test_java_written_equality_deletes_leave_the_rows_java_returned(
    table_name: str, corpus_data_files: Callable[[str], list[DataFileSlice]], conformance_catalog, io, cache
) -> None:
    schema = conformance_catalog.load_table(f"corpus.{table_name}").schema()
    query = corpus_query(table_name, "projection")
    field_ids = [schema.find_field(name).field_id for name in query.result_columns]
    field_types = {field.field_id: field.field_type for field in schema.fields}
    surviving_parts = []
    equality_sets_seen = 0

    for data_file in corpus_data_files(table_name):
        sets = load_equality_deletes(data_file, io=io, field_types=field_types, cache=cache)
        equality_sets_seen += len(sets)
        needed = sorted(set(field_ids).union(*(s.field_ids for s in sets)))
        columns = read_data_file_by_field_id(data_file.path, needed, io)
        keep = np.ones(data_file.record_count, dtype=bool)
        keep[load_deleted_positions(data_file, io=io, cache=cache).positions] = False
        for delete_set in sets:
            keep &= delete_set.keep_mask(columns, data_file.record_count)
        mask = pa.array(keep)
        surviving_parts.append(
            pa.table(
                {name: columns[fid].filter(mask) for name, fid in zip(query.result_columns, field_ids, strict=True)}
            )
        )

    result = pa.concat_tables(surviving_parts)
    assert equality_sets_seen > 0
    assert result.num_rows == query.row_count
    checksum, _ = table_checksum(result, query.result_columns)
    assert checksum == query.checksum


def test_null_typed_data_column_matches_only_a_null_key() -> None:
    with_null_key = EqualityDeleteSet((1, 2), [pa.array([1, 2], pa.int64()), pa.array([None, "a"])])

    data = {1: pa.array([1, 2, 3], pa.int64()), 2: pa.nulls(3)}

    assert _surviving(with_null_key, data) == [False, True, True]


def test_empty_delete_file_deletes_nothing(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    delete_set = _load_one(
        tmp_path,
        io,
        cache,
        {("id", 1): pa.array([], pa.int64()), ("category", 2): pa.array([], pa.string())},
        {1: LongType(), 2: StringType()},
    )

    assert delete_set.key_count == 0
    assert _surviving(delete_set, {1: pa.array([1, None], pa.int64()), 2: pa.array(["a", None])}) == [True, True]


def test_data_file_without_equality_deletes_has_no_sets(io, cache: DeleteFileCache) -> None:
    assert load_equality_deletes(data_file_slice(DATA), io=io, field_types={}, cache=cache) == []


def test_values_that_do_not_fit_the_data_column_type_name_their_field_id() -> None:
    # Field 2 has more distinct values, so it is looked up first; field 1's values overflow the int8 data column.
    delete_set = EqualityDeleteSet((1, 2), [pa.array([1000, 1000, 1000], pa.int64()), pa.array(["a", "b", "c"])])

    data = {1: pa.array([1], pa.int8()), 2: pa.array(["a"])}

    with pytest.raises(EngineError, match=r"field id 1 \(int64\) do not cast to the data column's type int8"):
        delete_set.keep_mask(data, 1)


@pytest.mark.parametrize(
    "keys",
    [
        [3, 7, -2, None, 1000],  # a small span: the dense code table
        [0, 10**15, -(10**12), None, 2**62],  # a huge span: binary search of the sorted batch
    ],
    ids=["dense-table", "sorted-search"],
)
def test_integer_key_lookups_agree_with_arrow_for_both_structures(keys: list[int | None]) -> None:
    delete_set = EqualityDeleteSet([1], [pa.array(keys, pa.int64())])
    present = [k for k in keys if k is not None]
    data = pa.array([*present, None, 4, 10**15 - 1, -3, *reversed(present), 5], pa.int64())
    expected_deleted = [value is None or value in present for value in data.to_pylist()]
    assert list(~delete_set.keep_mask({1: data}, len(data))) == expected_deleted
    int32_data = pa.array([3, None, 8, -2], pa.int32())
    if max(abs(k) for k in present) < 2**31:
        assert list(delete_set.keep_mask({1: int32_data}, 4)) == [False, False, True, False]


def test_bytes_read_from_storage_are_counted_once_then_served_from_the_cache(
    tmp_path: Path, io, cache: DeleteFileCache
) -> None:
    from spark_jobs.engine.shared.metrics import ScanMetrics

    delete_file = write_equality_delete_file(
        tmp_path / "eq.parquet",
        {("id", 1): pa.array([3, 5, 9], pa.int64()), ("note", 2): pa.array(["x" * 50] * 3)},
    )
    delete_file = dataclasses.replace(delete_file, equality_ids=(1,))
    metadata = pq.read_metadata(tmp_path / "eq.parquet")
    id_chunk = metadata.row_group(0).column(0).total_compressed_size
    metrics = ScanMetrics()

    for _ in range(2):
        load_equality_deletes(
            data_file_slice(DATA, equality_deletes=(delete_file,)),
            io=io,
            field_types={1: LongType()},
            cache=cache,
            metrics=metrics,
        )
        # Only the key column and the footer are read, and only the first time.
        assert metrics.delete_bytes_read == metadata.serialized_size + 8 + id_chunk


def test_cache_identity_names_the_field_ids_files_and_compared_types() -> None:
    keys = [pa.array([1, 2], pa.int64())]
    named = EqualityDeleteSet([1], keys, source_paths=["s3://b/eq-1.parquet"])
    assert named.cache_identity == (PredicateKind.EQUALITY_DELETE, (1,), ("s3://b/eq-1.parquet",), ("int64",))
    as_int32 = EqualityDeleteSet([1], [pa.array([1, 2], pa.int32())], source_paths=["s3://b/eq-1.parquet"])
    assert as_int32.cache_identity != named.cache_identity  # compared in another type: another answer
    assert EqualityDeleteSet([1], keys).cache_identity is None  # no source paths: nothing names the keys


@pytest.mark.parametrize("span", [1_000, 1 << 30], ids=["dense-codes", "sorted-codes"])
def test_integer_code_structures_are_built_on_first_use_and_counted_from_the_start(span: int) -> None:
    """Membership (one key column) needs only the bitmap; codes build their table once, already counted in nbytes."""
    from spark_jobs.engine.deletes.equality_deletes import _IntegerCodeLookup

    values = pa.array([5, span, None, 77], type=pa.int64())
    lookup = _IntegerCodeLookup(values)
    counted = lookup.nbytes
    probe = pa.array([77, 6, None, span, 5], type=pa.int64())
    if span < (1 << 27):
        assert lookup.contains(probe).tolist() == [True, False, True, True, True]
        assert lookup._code_structures is None
    assert lookup.codes(probe).to_pylist() == [3, None, 2, 1, 0]
    assert lookup._code_structures is not None
    assert lookup.nbytes == counted


def test_a_one_column_delete_set_keeps_rows_by_membership_alone() -> None:
    """A single integer key column: rows are kept or dropped by the bitmap, and no code table is built."""
    delete_set = EqualityDeleteSet([1], [pa.array([3, 9, 4_000_000], type=pa.int64())])
    keep = delete_set.keep_mask({1: pa.array([1, 3, 9, 10, 4_000_000], type=pa.int64())}, 5)
    assert keep.tolist() == [True, False, False, True, False]
    assert all(lookup._code_structures is None for lookup in delete_set._integer_lookups.values())


def test_bitmap_membership_matches_set_membership_at_every_bit_and_across_probe_blocks() -> None:
    """Every bit position of a bitmap byte, the range's edges and beyond, int64's extremes, more rows than a block."""
    from spark_jobs.engine.deletes.equality_deletes import _PROBE_BLOCK_ROWS, _IntegerCodeLookup

    rng = np.random.default_rng(7)
    low = -1_000
    deleted = {low, low + 7, low + 8, low + 15, *rng.integers(low, low + 200_000, 20_000).tolist(), low + 199_999}
    lookup = _IntegerCodeLookup(pa.array(sorted(deleted), type=pa.int64()))
    assert lookup._bitmap is not None
    edges = [low - 1, low, low + 1, low + 199_999, low + 200_000, -(2**63), 2**63 - 1]
    probes = np.concatenate([rng.integers(low - 50, low + 200_050, 2 * _PROBE_BLOCK_ROWS + 11), edges])
    member = lookup.contains(pa.array(probes, type=pa.int64()))
    assert member.dtype == np.bool_
    assert member.tolist() == [int(value) in deleted for value in probes]


@pytest.mark.parametrize("arrow_type", [pa.int8(), pa.int16(), pa.int32(), pa.int64()])
def test_distinct_dense_integer_keys_by_membership_are_the_hashed_distinct_values(arrow_type: pa.DataType) -> None:
    """Many keys in a dense range (duplicates, negatives, a narrow type's whole range) take the membership route."""
    from spark_jobs.engine.deletes.equality_deletes import _DISTINCT_BY_MEMBERSHIP_MIN, _distinct_values

    info = np.iinfo(arrow_type.to_pandas_dtype())
    low, high = max(int(info.min), -5_000), min(int(info.max), 5_000)
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.integers(low, high + 1, 2 * _DISTINCT_BY_MEMBERSHIP_MIN), [low, high]])
    column = pa.array(values, type=arrow_type)
    deleted = set(values.tolist())
    distinct = _distinct_values(column)
    assert distinct.type == arrow_type
    assert distinct.to_pylist() == sorted(deleted)
    delete_set = EqualityDeleteSet([1], [column])
    probe = pa.array(np.arange(low, high + 1), type=arrow_type)
    member = ~delete_set.keep_mask({1: probe}, len(probe))
    assert member.tolist() == [value in deleted for value in range(low, high + 1)]


def test_sparse_or_nullable_or_few_integer_keys_are_hashed() -> None:
    from spark_jobs.engine.deletes.equality_deletes import _DISTINCT_BY_MEMBERSHIP_MIN, _distinct_values

    many = _DISTINCT_BY_MEMBERSHIP_MIN
    sparse = pa.array(np.arange(many, dtype=np.int64) * 1_000_003)
    with_null = pa.array([*range(many), None], type=pa.int64())
    few = pa.array([9, 3, 9], type=pa.int64())
    assert sorted(_distinct_values(sparse).to_pylist()) == sparse.to_pylist()
    assert _distinct_values(with_null).null_count == 1 and len(_distinct_values(with_null)) == many + 1
    assert _distinct_values(few).to_pylist() == [9, 3]  # hashing keeps first-seen order


def test_dense_integer_keys_over_a_range_too_large_to_mark_are_hashed() -> None:
    """Keys dense per key but spanning more than ``_DENSE_MAX_SPAN`` in all are hashed: no array of their range."""
    from spark_jobs.engine.deletes.equality_deletes import _DENSE_MAX_SPAN, _DENSE_SPAN_PER_KEY, _distinct_values

    stride = _DENSE_SPAN_PER_KEY // 2
    keys = np.random.default_rng(5).permutation(np.arange(_DENSE_MAX_SPAN // stride + 2, dtype=np.int64) * stride)
    assert keys.max() - keys.min() >= _DENSE_MAX_SPAN
    assert _distinct_values(pa.array(keys)).to_pylist() == keys.tolist()  # hashing keeps first-seen order
