"""Equality delete sets: a data row is deleted when its values in the equality columns equal some delete row's.

Spec: apache/iceberg format/spec.md ("Equality Delete Files"). Equality follows Iceberg Java's ``StructLikeSet``
(``Comparators`` on each field): NULL equals NULL, every NaN equals every NaN, -0.0 and 0.0 differ, decimals compare
at the table's scale. Steps:

1. Group the data file's equality delete files by their set of equality field ids: one ``EqualityDeleteSet`` each.
2. Read each file's equality columns by Parquet field id (names may have changed by a rename; a dropped column's id
   still resolves in the file), cast them to the types the data columns are projected to (int->long,
   float->double, decimal precision), and keep them per file in the process-wide cache.
3. Build the set's key index once: per key column, the distinct values (``values``); then fold the columns, the
   one with the most distinct values first, into one dense code per distinct key prefix: the code of a prefix of
   j+1 columns is the position, in the distinct combined values, of ``code(prefix of j) * len(values[j]) + index
   of value j``. Codes stay below the number of distinct delete keys times one column's distinct values, so they
   never overflow int64, and the index is exact (Arrow's hash lookups compare values, floats by their bits once
   NaNs are made canonical).
4. ``keep_mask`` runs the same fold on a batch: ``index_in`` of the first column against ``values[0]`` (NULL
   matches a NULL value) gives the candidate rows; each further column is looked up for the remaining candidates
   only, then their combined codes; a row is deleted iff it is still a candidate after the last column.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from pyiceberg.io import FileIO
from pyiceberg.types import IcebergType

from spark_jobs.engine.deletes.bytes_read import compressed_bytes_of_columns, footer_bytes
from spark_jobs.engine.deletes.cache import DeleteFileCache, delete_file_cache
from spark_jobs.engine.deletes.parquet_field_ids import column_at_path, field_id_paths
from spark_jobs.engine.parquet.sized_fragment import read_fragment_footer, sized_fragment
from spark_jobs.engine.planning.scan_tasks import DataFileSlice, EqualityDeleteFile
from spark_jobs.engine.shared.arrow_types import schema_to_arrow
from spark_jobs.engine.shared.errors import CorruptFileError, EngineError
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.shared.row_predicate import PredicateKind

# Integer keys get a dense code table when it needs at most this many slots per key and in all (64 MiB of int64).
_DENSE_SPAN_PER_KEY = 64
_DENSE_MAX_SPAN = 1 << 23
# Single integer keys get a membership bitmap when their range needs at most this many bits (16 MiB).
_BITMAP_MAX_SPAN = 1 << 27
_INT64_MIN, _INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)
# Rows probed per block: the block's offsets stay in the CPU caches, and no temporary is allocated per block.
_PROBE_BLOCK_ROWS = 1 << 16
# Distinct values of an integer key column by membership in its range (not by hashing): from this many keys, when
# the range is dense as the dense code table counts it (``_DENSE_SPAN_PER_KEY``, ``_DENSE_MAX_SPAN``).
_DISTINCT_BY_MEMBERSHIP_MIN = 4096
_ENTRY_OVERHEAD_BYTES = 100


class EqualityDeleteSet:
    """The distinct keys of merged equality delete files, as a RowPredicate that keeps rows matching no key."""

    def __init__(
        self, equality_ids: Sequence[int], keys: Sequence[pa.Array | pa.ChunkedArray], source_paths: Sequence[str] = ()
    ) -> None:
        if len(equality_ids) != len(keys) or not equality_ids:
            raise ValueError(f"one key column per equality id is required, got ids {equality_ids} and {len(keys)}")
        self.equality_ids: tuple[int, ...] = tuple(equality_ids)
        self.source_paths: tuple[str, ...] = tuple(source_paths)
        self._key_type_names = tuple(str(column.type) for column in keys)
        key_columns = [_canonical_nans(_plain_array(column)) for column in keys]
        distinct_values = [_distinct_values(column) for column in key_columns]
        # Fold the most selective column (most distinct delete values) first: later columns see fewer candidates.
        fold_order = sorted(range(len(key_columns)), key=lambda j: -len(distinct_values[j]))
        self._fold_field_ids = tuple(self.equality_ids[j] for j in fold_order)
        self._column_values: list[pa.Array] = [distinct_values[j] for j in fold_order]
        self._column_values_has_nan = [_has_nan(values) for values in self._column_values]
        self._combined_values: list[pa.Array] = []
        # The delete rows' own codes matter only to fold further columns: a one-column set skips the hash lookup.
        codes = (
            _found_codes(pc.index_in(key_columns[fold_order[0]], value_set=self._column_values[0]))
            if len(fold_order) > 1
            else np.empty(0, dtype=np.int64)
        )
        for position, j in enumerate(fold_order[1:], start=1):
            column_codes = _found_codes(pc.index_in(key_columns[j], value_set=self._column_values[position]))
            combined = codes * len(self._column_values[position]) + column_codes
            combined_values = np.unique(combined)
            self._combined_values.append(pa.array(combined_values))
            codes = np.searchsorted(combined_values, combined)
        self.key_count = len(self._combined_values[-1]) if self._combined_values else len(self._column_values[0])
        self._aligned_values: dict[tuple[int, pa.DataType], pa.Array] = {}
        self._integer_lookups: dict[tuple[int, pa.DataType], _IntegerCodeLookup] = {
            (position, values.type): _IntegerCodeLookup(values)
            for position, values in enumerate(self._column_values)
            if pa.types.is_integer(values.type)
        }

    @property
    def field_ids(self) -> frozenset[int]:
        """The field ids whose columns decide equality."""
        return frozenset(self.equality_ids)

    @property
    def kind(self) -> PredicateKind:
        """Always ``PredicateKind.EQUALITY_DELETE``."""
        return PredicateKind.EQUALITY_DELETE

    @property
    def cache_identity(self) -> tuple[object, ...] | None:
        """The field ids, delete files and compared types: what decides the rows rejected in an immutable data file.

        None when the set was built without its source paths (its keys then have no stable name).
        """
        if not self.source_paths:
            return None
        return _set_identity(self.equality_ids, self.source_paths, self._key_type_names)

    @property
    def nbytes(self) -> int:
        """Bytes held by the key index (the cache counts them)."""
        values_bytes = sum(values.nbytes for values in self._column_values)
        lookup_bytes = sum(lookup.nbytes for lookup in self._integer_lookups.values())
        combined_bytes = sum(combined.nbytes for combined in self._combined_values)
        return values_bytes + lookup_bytes + combined_bytes + _ENTRY_OVERHEAD_BYTES

    def keep_mask(self, columns: Mapping[int, pa.Array], num_rows: int) -> np.ndarray:
        """True for rows whose equality columns match no delete key."""
        key_columns = [self._key_column(field_id, columns, num_rows) for field_id in self._fold_field_ids]
        if not self._combined_values and pa.types.is_integer(key_columns[0].type):
            lookup, column = self._integer_lookup(0, key_columns[0])
            if lookup is not None:
                member = lookup.contains(column)
                return np.logical_not(member, out=member)
        first_codes = self._column_codes(0, key_columns[0])
        if not self._combined_values:
            return np.asarray(pc.is_null(first_codes).to_numpy(zero_copy_only=False), dtype=bool)
        codes = _codes_or_missing(first_codes)
        candidate_rows = np.flatnonzero(codes >= 0)
        codes = codes[candidate_rows].astype(np.int64)
        for position, combined_values in enumerate(self._combined_values, start=1):
            if candidate_rows.size == 0:
                break
            key_column = key_columns[position]
            candidates = key_column if candidate_rows.size == num_rows else key_column.take(pa.array(candidate_rows))
            column_codes = _codes_or_missing(self._column_codes(position, candidates))
            combined = codes * len(self._column_values[position]) + column_codes
            combined_codes = _codes_or_missing(pc.index_in(pa.array(combined), value_set=combined_values))
            matches = (column_codes >= 0) & (combined_codes >= 0)
            candidate_rows = candidate_rows[matches]
            codes = combined_codes[matches]
        keep = np.ones(num_rows, dtype=bool)
        keep[candidate_rows] = False
        return keep

    def _key_column(self, field_id: int, columns: Mapping[int, pa.Array], num_rows: int) -> pa.Array:
        """The batch's column of one key field as one plain array, checked for presence and length."""
        column = columns.get(field_id)
        if column is None:
            raise EngineError(
                f"equality delete keep_mask needs the column of field id {field_id}; got {sorted(columns)}"
            )
        column = _plain_array(column)
        if len(column) != num_rows:
            raise EngineError(f"column of field id {field_id} has {len(column)} rows, expected num_rows={num_rows}")
        return column

    def _column_codes(self, position: int, column: pa.Array) -> pa.Array:
        """Each row's index into the distinct delete values of one key column (null: no delete key has it)."""
        if pa.types.is_null(column.type):  # a column the data file does not have: every row is NULL
            column = pa.nulls(len(column), self._column_values[position].type)
        if pa.types.is_dictionary(column.type):
            return self._dictionary_codes(position, column)
        return self._plain_codes(position, column)

    def _dictionary_codes(self, position: int, column: pa.DictionaryArray) -> pa.Array:
        """Codes of a dictionary-encoded column: look up the dictionary once, then take by the indices."""
        dictionary_codes = self._plain_codes(position, column.dictionary)
        codes = dictionary_codes.take(column.indices)
        values = self._values_for(position, column.dictionary.type)
        if column.indices.null_count and values.null_count:
            null_code = pc.index_in(pa.nulls(1, values.type), value_set=values)[0]
            codes = pc.if_else(pc.is_null(column.indices), null_code, codes)
        return codes

    def _plain_codes(self, position: int, column: pa.Array) -> pa.Array:
        """Codes of a plain (not dictionary-encoded) array."""
        lookup, column = self._integer_lookup(position, column)
        if lookup is not None:
            return lookup.codes(column)
        values = self._values_for(position, column.type)
        if self._column_values_has_nan[position]:
            column = _canonical_nans(column)
        return pc.index_in(column, value_set=values)

    def _integer_lookup(self, position: int, column: pa.Array) -> tuple[_IntegerCodeLookup | None, pa.Array]:
        """The column in the compared type, and the lookup of integer delete values built once for that type.

        ``index_in`` rebuilds its hash table of the value set on every call; these lookups are built once.
        """
        values = self._values_for(position, column.type)
        if values.type != column.type:
            column = column.cast(values.type)
        if not pa.types.is_integer(values.type):
            return None, column
        key = (position, values.type)
        lookup = self._integer_lookups.get(key)
        if lookup is None:
            lookup = self._integer_lookups[key] = _IntegerCodeLookup(values)
        return lookup, column

    def _values_for(self, position: int, column_type: pa.DataType) -> pa.Array:
        """The distinct delete values of a key column, cast to the batch's type when Arrow can look them up in it."""
        values = self._column_values[position]
        if column_type == values.type or not _can_look_up(column_type):
            return values
        key = (position, column_type)
        aligned = self._aligned_values.get(key)
        if aligned is None:
            try:
                aligned = _canonical_nans(values.cast(column_type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
                raise EngineError(
                    f"equality delete values of field id {self._fold_field_ids[position]} ({values.type}) do not cast "
                    f"to the data column's type {column_type}: {error}"
                ) from error
            self._aligned_values[key] = aligned
        return aligned

    def __repr__(self) -> str:
        files = len(self.source_paths)
        return f"EqualityDeleteSet(equality_ids={self.equality_ids}, keys={self.key_count}, files={files})"


class _IntegerCodeLookup:
    """Index of integer values in a set's distinct values, from structures built once per delete set.

    Gives what ``pc.index_in(column, value_set=values)`` gives (null where a value is not in the set; a NULL row gets
    the index of the set's NULL, if it has one) without rebuilding a hash table per batch:
    1. keys spanning a small range (at most ``_DENSE_SPAN_PER_KEY`` slots per key, ``_DENSE_MAX_SPAN`` in all): a
       dense table ``code[value - min]``, one array access per row;
    2. otherwise: binary search of the batch, sorted first (unsorted probes defeat the search's locality).

    Membership alone (one key column) uses a bitmap of ``value - min`` when the range fits ``_BITMAP_MAX_SPAN`` bits:
    random probes into an eighth of a byte per slot stay in the CPU caches, where a table of codes (or of bytes)
    does not. Rows are probed in blocks through buffers allocated once per call.
    """

    def __init__(self, values: pa.Array) -> None:
        valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        self._present_codes = np.flatnonzero(valid).astype(np.int64)
        self._present_values = values.filter(pa.array(valid)).to_numpy(zero_copy_only=False).astype(np.int64)
        present_values = self._present_values
        null_codes = np.flatnonzero(~valid)
        self._null_code = int(null_codes[0]) if null_codes.size else -1
        self._minimum = int(present_values.min()) if present_values.size else 0
        span = int(present_values.max()) - self._minimum + 1 if present_values.size else 0
        self._span = span
        self._dense = 0 < span <= min(_DENSE_MAX_SPAN, max(_DENSE_SPAN_PER_KEY * present_values.size, 1 << 16))
        # The code structures (dense table, or sorted values) are built on the first ``codes`` call: membership
        # alone, the common one-column case, needs only the bitmap. ``nbytes`` counts them from the start.
        self._code_structures: tuple[np.ndarray | None, np.ndarray, np.ndarray] | None = None
        self._code_structures_lock = threading.Lock()
        self._bitmap: np.ndarray | None = None
        if 0 < span <= _BITMAP_MAX_SPAN:
            # One empty slot below the smallest value and one above the largest (where the int64 range allows):
            # probes clipped into [low, high] land on an empty slot when out of range, so no range mask is needed.
            maximum = self._minimum + span - 1
            self._bitmap_low = self._minimum - 1 if self._minimum > _INT64_MIN else self._minimum
            self._bitmap_high = maximum + 1 if maximum < _INT64_MAX else maximum
            members = np.zeros(self._bitmap_high - self._bitmap_low + 1, dtype=bool)
            members[present_values - self._bitmap_low] = True
            self._bitmap = np.packbits(members, bitorder="little")

    @property
    def nbytes(self) -> int:
        """Bytes held by the lookup structures, the code structures counted whether built yet or not."""
        dense_bytes = self._span * 8 if self._dense else 0
        sorted_bytes = 0 if self._dense else self._present_values.nbytes + self._present_codes.nbytes
        bitmap_bytes = self._bitmap.nbytes if self._bitmap is not None else 0
        return dense_bytes + sorted_bytes + bitmap_bytes + self._present_values.nbytes + self._present_codes.nbytes

    def _structures(self) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """The dense code table (or None) and the sorted values with their codes, built once (thread-safe)."""
        structures = self._code_structures
        if structures is not None:
            return structures
        with self._code_structures_lock:
            if self._code_structures is None:
                dense_table: np.ndarray | None = None
                sorted_values = codes_of_sorted = np.empty(0, dtype=np.int64)
                if self._dense:
                    dense_table = np.full(self._span, -1, dtype=np.int64)
                    dense_table[self._present_values - self._minimum] = self._present_codes
                else:
                    order = np.argsort(self._present_values, kind="stable")
                    sorted_values, codes_of_sorted = self._present_values[order], self._present_codes[order]
                self._code_structures = (dense_table, sorted_values, codes_of_sorted)
            return self._code_structures

    def contains(self, column: pa.Array) -> np.ndarray:
        """For each row, whether the set holds its value (a NULL row: whether the set holds NULL)."""
        if self._bitmap is None:
            return np.asarray(self.codes(column).is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        filled = pc.fill_null(column, 0) if column.null_count else column
        data = filled.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        member = np.empty(len(data), dtype=bool)
        member_bytes = member.view(np.uint8)  # written with 0 or 1 only: valid booleans
        block_rows = min(len(data), _PROBE_BLOCK_ROWS)
        offsets_buffer, slots_buffer = np.empty(block_rows, dtype=np.int64), np.empty(block_rows, dtype=np.int64)
        bytes_buffer, bits_buffer = np.empty(block_rows, dtype=np.uint8), np.empty(block_rows, dtype=np.uint8)
        for start in range(0, len(data), _PROBE_BLOCK_ROWS):
            block = data[start : start + _PROBE_BLOCK_ROWS]
            rows = len(block)
            offsets, slots, bitmap_bytes, bits = (
                offsets_buffer[:rows],
                slots_buffer[:rows],
                bytes_buffer[:rows],
                bits_buffer[:rows],
            )
            np.clip(block, self._bitmap_low, self._bitmap_high, out=offsets)
            np.subtract(offsets, self._bitmap_low, out=offsets)
            np.right_shift(offsets, 3, out=slots)
            np.take(self._bitmap, slots, out=bitmap_bytes)
            # The slot's bit shifted down to bit 0, in uint8 throughout (the bit index 0-7 fits).
            np.bitwise_and(offsets, 7, out=bits, casting="unsafe")
            np.right_shift(bitmap_bytes, bits, out=bitmap_bytes)
            np.bitwise_and(bitmap_bytes, 1, out=member_bytes[start : start + rows])
        if column.null_count:
            member[~np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)] = self._null_code >= 0
        return member

    def codes(self, column: pa.Array) -> pa.Array:
        """Each row's index in the set's values; null where the set does not hold the row's value."""
        data = pc.fill_null(column, 0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        codes = np.full(len(data), -1, dtype=np.int64)
        dense_table, sorted_values, codes_of_sorted = self._structures()
        if dense_table is not None:
            offsets = data - self._minimum
            in_range = (offsets >= 0) & (offsets < dense_table.size)
            codes[in_range] = dense_table[offsets[in_range]]
        elif sorted_values.size:
            probe_order = np.argsort(data, kind="stable")
            sorted_probes = data[probe_order]
            positions = np.minimum(np.searchsorted(sorted_values, sorted_probes), sorted_values.size - 1)
            found = sorted_values[positions] == sorted_probes
            codes[probe_order[found]] = codes_of_sorted[positions[found]]
        if column.null_count:
            codes[~np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)] = self._null_code
        return pa.array(codes, mask=codes < 0)


def _found_codes(codes: pa.Array) -> np.ndarray:
    """Lookup codes of delete rows as int64 (every delete value is found in its own distinct values)."""
    return codes.to_numpy(zero_copy_only=False).astype(np.int64)


def _codes_or_missing(codes: pa.Array) -> np.ndarray:
    """Lookup codes as int64 with -1 where the value is not among the delete values."""
    return pc.fill_null(codes, -1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _can_look_up(arrow_type: pa.DataType) -> bool:
    """Whether Arrow's ``index_in`` has a kernel for this type (view types do not)."""
    return not (pa.types.is_string_view(arrow_type) or pa.types.is_binary_view(arrow_type))


def _plain_array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous array without an extension wrapper (dictionary encoding is kept)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if isinstance(column.type, pa.BaseExtensionType):
        column = column.storage
    return column


def _distinct_values(column: pa.Array) -> pa.Array:
    """The column's distinct values (NULL once, if present); in ascending order for signed integers in a dense range.

    At least ``_DISTINCT_BY_MEMBERSHIP_MIN`` signed integer keys without NULLs, spanning at most
    ``_DENSE_SPAN_PER_KEY`` slots per key and ``_DENSE_MAX_SPAN`` in all (a table's ids, say), are marked in a
    boolean array of their range and read back in order: about twice as fast as hashing them (100k keys: 2.1 ms
    against 3.8-4.2 ms). The bound in all keeps that array small (8 MiB) however many keys a delete file holds.
    """
    if (
        pa.types.is_signed_integer(column.type)
        and column.null_count == 0
        and len(column) >= _DISTINCT_BY_MEMBERSHIP_MIN
    ):
        values = column.to_numpy(zero_copy_only=False)
        minimum, maximum = int(values.min()), int(values.max())
        if maximum - minimum < min(_DENSE_MAX_SPAN, _DENSE_SPAN_PER_KEY * len(values)):
            members = np.zeros(maximum - minimum + 1, dtype=bool)
            # Offsets in int64 (a narrow type's own arithmetic could wrap); the range is small, so int64 cannot.
            members[values.astype(np.int64) - minimum] = True
            distinct = (np.flatnonzero(members) + minimum).astype(values.dtype)
            return pa.array(distinct, type=column.type)
    return pc.unique(column)


def _has_nan(values: pa.Array) -> bool:
    """Whether a floating-point array holds a NaN."""
    return pa.types.is_floating(values.type) and bool(pc.any(pc.is_nan(values)).as_py())


def _canonical_nans(column: pa.Array) -> pa.Array:
    """Floats with every NaN replaced by one bit pattern, so lookups by bits see all NaNs as equal (as Java does)."""
    if not pa.types.is_floating(column.type) or column.null_count == len(column):
        return column
    nan = pa.scalar(float("nan"), type=column.type)
    return pc.if_else(pc.is_nan(column), nan, column)


def load_equality_deletes(
    data_file: DataFileSlice,
    *,
    io: FileIO,
    field_types: Mapping[int, IcebergType],
    cache: DeleteFileCache | None = None,
    metrics: ScanMetrics | None = None,
) -> list[EqualityDeleteSet]:
    """One EqualityDeleteSet per distinct set of equality field ids, merging every file of the data file with it.

    Bytes read from storage (not from the cache) are added to ``metrics.delete_bytes_read``.
    """
    cache = cache if cache is not None else delete_file_cache()
    metrics = metrics if metrics is not None else ScanMetrics()
    return [
        cached_delete_set(group, io, cache, metrics=metrics) for group in equality_delete_groups(data_file, field_types)
    ]


class EqualityDeleteGroup(NamedTuple):
    """The equality delete files of a data file that share one set of equality field ids, and the compared types."""

    equality_ids: tuple[int, ...]
    files: list[EqualityDeleteFile]
    arrow_types: tuple[pa.DataType, ...]

    @property
    def cache_identity(self) -> tuple[object, ...]:
        """The ``cache_identity`` of the set these files make (known before any of them is read)."""
        paths = tuple(sorted({delete_file.path for delete_file in self.files}))
        return _set_identity(self.equality_ids, paths, tuple(str(arrow_type) for arrow_type in self.arrow_types))


def equality_delete_groups(
    data_file: DataFileSlice, field_types: Mapping[int, IcebergType]
) -> list[EqualityDeleteGroup]:
    """The data file's equality delete files grouped by their set of equality field ids, with the compared types."""
    files_by_ids: dict[tuple[int, ...], list[EqualityDeleteFile]] = {}
    for delete_file in data_file.equality_deletes:
        files_by_ids.setdefault(tuple(sorted(set(delete_file.equality_ids))), []).append(delete_file)
    return [
        EqualityDeleteGroup(equality_ids, files, _arrow_types(equality_ids, field_types, files))
        for equality_ids, files in files_by_ids.items()
    ]


def _set_identity(
    equality_ids: tuple[int, ...], source_paths: tuple[str, ...], key_type_names: tuple[str, ...]
) -> tuple[object, ...]:
    """What decides the rows a set rejects in an immutable data file: its field ids, files and compared types."""
    return (PredicateKind.EQUALITY_DELETE, equality_ids, source_paths, key_type_names)


def _arrow_types(
    equality_ids: tuple[int, ...], field_types: Mapping[int, IcebergType], files: list[EqualityDeleteFile]
) -> tuple[pa.DataType, ...]:
    """The Arrow storage type each equality column is compared in, from the projected Iceberg types."""
    missing = [field_id for field_id in equality_ids if field_id not in field_types]
    if missing:
        raise EngineError(
            f"equality delete files {[f.path for f in files]} use field ids {missing} that field_types does not give "
            f"a type for (it has {sorted(field_types)})"
        )
    return tuple(_storage_type(schema_to_arrow(field_types[field_id])) for field_id in equality_ids)


def _storage_type(arrow_type: pa.DataType) -> pa.DataType:
    """An extension type's storage type (uuid -> fixed_size_binary(16)), other types unchanged."""
    return arrow_type.storage_type if isinstance(arrow_type, pa.BaseExtensionType) else arrow_type


def cached_delete_set(
    group: EqualityDeleteGroup, io: FileIO, cache: DeleteFileCache, *, metrics: ScanMetrics
) -> EqualityDeleteSet:
    """The merged set of a group's files, built once per process for the same files and types."""
    equality_ids, files, arrow_types = group
    paths = tuple(sorted({delete_file.path for delete_file in files}))
    type_names = tuple(str(arrow_type) for arrow_type in arrow_types)

    def load() -> tuple[EqualityDeleteSet, int]:
        tables = [_cached_delete_file_keys(f, equality_ids, arrow_types, io, cache, metrics=metrics) for f in files]
        keys = [
            pa.chunked_array([chunk for table in tables for chunk in table.column(i).chunks], type=arrow_types[i])
            for i in range(len(equality_ids))
        ]
        delete_set = EqualityDeleteSet(equality_ids, keys, source_paths=paths)
        return delete_set, delete_set.nbytes

    return cache.get_or_load(("equality_delete_set", equality_ids, paths, type_names), load)


def _cached_delete_file_keys(
    delete_file: EqualityDeleteFile,
    equality_ids: tuple[int, ...],
    arrow_types: tuple[pa.DataType, ...],
    io: FileIO,
    cache: DeleteFileCache,
    *,
    metrics: ScanMetrics,
) -> pa.Table:
    """One file's equality columns cast to the compared types, read once per process."""
    type_names = tuple(str(arrow_type) for arrow_type in arrow_types)

    def load() -> tuple[pa.Table, int]:
        table = read_equality_delete_keys(delete_file, equality_ids, arrow_types, io=io, metrics=metrics)
        return table, table.nbytes + _ENTRY_OVERHEAD_BYTES

    return cache.get_or_load(("equality_delete_file", delete_file.path, equality_ids, type_names), load)


def read_equality_delete_keys(
    delete_file: EqualityDeleteFile,
    equality_ids: tuple[int, ...],
    arrow_types: tuple[pa.DataType, ...],
    *,
    io: FileIO,
    metrics: ScanMetrics | None = None,
) -> pa.Table:
    """The equality columns of a delete file, found by field id and cast to ``arrow_types``; columns named by id."""
    size = delete_file.file_size_in_bytes
    fragment = sized_fragment(io, delete_file.path, size)
    if fragment is not None:  # on an object store: opened with its recorded size, no HEAD request
        metadata = read_fragment_footer(fragment, delete_file.path, size)[0]
        table, top_level_names, paths = _equality_columns(delete_file, equality_ids, fragment.physical_schema, fragment)
    else:
        with io.new_input(delete_file.path).open(seekable=True) as stream:
            parquet_file = pq.ParquetFile(stream, pre_buffer=True)
            metadata = parquet_file.metadata
            table, top_level_names, paths = _equality_columns(
                delete_file, equality_ids, parquet_file.schema_arrow, parquet_file
            )
    if metrics is not None:
        metrics.delete_bytes_read += footer_bytes(metadata) + compressed_bytes_of_columns(
            metadata, range(metadata.num_row_groups), set(top_level_names)
        )
    columns = [
        _cast_key_column(delete_file.path, field_id, _plain_column(column_at_path(table, paths[field_id])), arrow_type)
        for field_id, arrow_type in zip(equality_ids, arrow_types, strict=True)
    ]
    return pa.table(columns, names=[str(field_id) for field_id in equality_ids])


def _equality_columns(
    delete_file: EqualityDeleteFile,
    equality_ids: tuple[int, ...],
    schema: pa.Schema,
    source: pq.ParquetFile | ds.ParquetFileFragment,
) -> tuple[pa.Table, list[str], dict[int, tuple[str, ...]]]:
    """The top-level columns holding the equality fields, read from ``source`` (a Parquet file or fragment), their
    names, and each field's path by id."""
    paths = field_id_paths(schema)
    missing = [field_id for field_id in equality_ids if field_id not in paths]
    if missing:
        raise CorruptFileError(
            f"equality delete file {delete_file.path}: no column with field id {missing} "
            f"(equality_ids {delete_file.equality_ids}); its columns are {schema.names}"
        )
    top_level_names = sorted({paths[field_id][0] for field_id in equality_ids})
    if isinstance(source, pq.ParquetFile):
        return source.read(columns=top_level_names), top_level_names, paths
    return source.to_table(columns=top_level_names), top_level_names, paths


def _plain_column(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column without extension wrappers, so it casts to storage types."""
    if isinstance(column.type, pa.BaseExtensionType):
        return pa.chunked_array([chunk.storage for chunk in column.chunks], type=column.type.storage_type)
    return column


def _cast_key_column(path: str, field_id: int, column: pa.ChunkedArray, arrow_type: pa.DataType) -> pa.ChunkedArray:
    """A delete column in the compared type; a lossy or impossible cast is a mismatch between file and table."""
    if column.type == arrow_type:
        return column
    try:
        return column.cast(arrow_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise CorruptFileError(
            f"equality delete file {path}: column of field id {field_id} is {column.type}, "
            f"which does not cast to the table's {arrow_type}: {error}"
        ) from error
