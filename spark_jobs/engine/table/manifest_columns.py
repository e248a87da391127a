"""A manifest's live entries as Arrow columns, one column per field the spec defines, inheritance applied.

Planning a table of 10^5-10^6 data files cannot afford a Python object per entry: the columns stay in Arrow, the
filters run over them vectorized (``planning.file_statistics``, ``planning.metrics_filter``), and only the entries
that need one become Python objects. Steps for one manifest:

1. Decode the Avro file into Arrow: with DuckDB's avro extension (``duckdb_avro``) when the manifests to decode
   are large enough to pay for loading it (``DUCKDB_MIN_BYTES`` in all) and it is installed, else with pyiceberg's
   decoder (the v3 entry schema, which reads v1 and v2 manifests too) followed by a conversion to columns.
2. Bring both to one layout (``ENTRY_COLUMNS``): the data file's fields at the top level; fields a format version
   lacks as nulls (``content`` 0 for v1); the partition as a struct of the spec's fields in their physical
   representation (dates as int32 days, times and timestamps as int64, UUIDs as 16 bytes); the column statistics
   as ``map<int32, ...>``.
3. Inherit what the spec says an entry inherits from its manifest (as ``manifest_entries.read_live_entries``
   does): the snapshot id; the data and file sequence numbers of ADDED entries (all entries of a manifest whose
   sequence number is 0); a live data file's null ``first_row_id``, the manifest's plus the record counts of the
   live data files before it that had none.
4. Keep the live entries (ADDED and EXISTING) in manifest order.

A file that is missing or does not decode raises ``CorruptFileError`` naming it, on either route.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.avro.file import AvroFile
from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    MANIFEST_ENTRY_SCHEMAS,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from spark_jobs.engine.shared.errors import CorruptFileError, file_error
from spark_jobs.engine.table import duckdb_avro
from spark_jobs.engine.table.manifest_entries import (
    content_offset,
    content_size_in_bytes,
    first_row_id,
    manifest_first_row_id,
    referenced_data_file,
)

log = logging.getLogger(__name__)

# Manifests to decode in one call, in bytes, from which DuckDB's route pays for loading it (about 0.1 s).
DUCKDB_MIN_BYTES = 2 * 1024 * 1024

STATUS_DELETED = 2
CONTENT_DATA = 0
CONTENT_POSITION_DELETES = 1
CONTENT_EQUALITY_DELETES = 2

_COUNTS = pa.map_(pa.int32(), pa.int64())
_BOUNDS = pa.map_(pa.int32(), pa.binary())
# Every column but ``partition``, in order, with its Arrow type.
ENTRY_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("status", pa.int32()),
    ("snapshot_id", pa.int64()),
    ("sequence_number", pa.int64()),
    ("file_sequence_number", pa.int64()),
    ("content", pa.int32()),
    ("file_path", pa.string()),
    ("file_format", pa.string()),
    ("record_count", pa.int64()),
    ("file_size_in_bytes", pa.int64()),
    ("column_sizes", _COUNTS),
    ("value_counts", _COUNTS),
    ("null_value_counts", _COUNTS),
    ("nan_value_counts", _COUNTS),
    ("lower_bounds", _BOUNDS),
    ("upper_bounds", _BOUNDS),
    ("key_metadata", pa.binary()),
    ("split_offsets", pa.list_(pa.int64())),
    ("equality_ids", pa.list_(pa.int32())),
    ("sort_order_id", pa.int32()),
    ("first_row_id", pa.int64()),
    ("referenced_data_file", pa.string()),
    ("content_offset", pa.int64()),
    ("content_size_in_bytes", pa.int64()),
)
_ENTRY_TYPES = dict(ENTRY_COLUMNS)
_TOP_LEVEL = ("status", "snapshot_id", "sequence_number", "file_sequence_number")


@dataclass(frozen=True)
class ManifestColumns:
    """One manifest's live entries as columns (``ENTRY_COLUMNS`` plus ``partition`` when the spec has fields)."""

    manifest_path: str
    spec_id: int
    table: pa.Table
    # The Iceberg types of the partition fields, in order (empty for an unpartitioned spec).
    partition_types: tuple[IcebergType, ...] = ()

    @property
    def num_rows(self) -> int:
        """How many live entries."""
        return self.table.num_rows

    @property
    def nbytes(self) -> int:
        """The bytes the columns hold (what a cache counts)."""
        return self.table.nbytes

    def column(self, name: str) -> pa.Array:
        """One column as a single array."""
        return self.table.column(name).combine_chunks()

    def numpy(self, name: str) -> np.ndarray:
        """A column without nulls as numpy (nulls as 0)."""
        return self.column(name).fill_null(0).to_numpy(zero_copy_only=False)

    @cached_property
    def partition_fields(self) -> tuple[pa.Array, ...]:
        """The partition's fields, one array each (empty for an unpartitioned spec)."""
        if not self.partition_types:
            return ()
        partition = self.column("partition")
        return tuple(partition.field(index) for index in range(len(self.partition_types)))

    @cached_property
    def partition_groups(self) -> tuple[np.ndarray, list[tuple[Any, ...]]]:
        """Each entry's index among the manifest's distinct partitions, and those partitions as pyiceberg holds
        them (files of one partition share one tuple)."""
        return partition_groups(self.partition_fields, self.partition_types, self.num_rows)

    def partition_tuples(self, rows: np.ndarray | None = None) -> list[tuple[Any, ...]]:
        """The partition of each entry (of ``rows``, when given) as pyiceberg holds partition values."""
        converters = [_python_value_converter(t) for t in self.partition_types]
        fields = [f if rows is None else f.take(rows) for f in self.partition_fields]
        count = self.num_rows if rows is None else len(rows)
        if not fields:
            return [()] * count
        columns = [
            [convert(value) for value in field.to_pylist()] if convert is not None else field.to_pylist()
            for field, convert in zip(fields, converters, strict=True)
        ]
        return list(zip(*columns, strict=True))


def partition_groups(
    fields: Sequence[pa.Array], types: Sequence[IcebergType], rows: int
) -> tuple[np.ndarray, list[tuple[Any, ...]]]:
    """For each row the index of its distinct partition, and the distinct partitions as Python tuples.

    Each field is dictionary-encoded (nulls as an entry of their own); the rows' tuples of dictionary indices are
    then numbered, so that the Python values are made once per distinct partition, not once per file.
    """
    if not fields:
        return np.zeros(rows, dtype=np.int64), [()]
    indices, dictionaries = [], []
    for field, field_type in zip(fields, types, strict=True):
        encoded = pc.dictionary_encode(field, null_encoding="encode")
        indices.append(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64))
        convert = _python_value_converter(field_type)
        values = encoded.dictionary.to_pylist()
        dictionaries.append([convert(v) for v in values] if convert is not None else values)
    if len(indices) == 1:
        codes, unique_rows = indices[0], [(i,) for i in range(len(dictionaries[0]))]
    else:
        stacked = np.stack(indices, axis=1)
        unique, codes = np.unique(stacked, axis=0, return_inverse=True)
        codes = codes.reshape(-1)
        unique_rows = [tuple(row) for row in unique.tolist()]
    partitions = [
        tuple(dictionary[index] for dictionary, index in zip(dictionaries, row, strict=True)) for row in unique_rows
    ]
    return codes, partitions


def decode_manifest(
    manifest: ManifestFile, io: FileIO, partition_type: StructType, *, use_duckdb: bool, live_only: bool = True
) -> ManifestColumns:
    """The manifest's live entries as columns (module doc), decoded by DuckDB when ``use_duckdb`` and available;
    with ``live_only`` False its DELETED entries too. An empty ``partition_type`` leaves the partition out."""
    path = manifest.manifest_path
    partition_types = tuple(field.field_type for field in partition_type.fields)
    try:
        if use_duckdb and duckdb_avro.duckdb_avro_available():
            raw = _normalized_duckdb_table(_read_with_duckdb(path, io), partition_type, path)
        else:
            raw = _pyiceberg_table(path, io, partition_type)
    except Exception as error:  # named when it is the file's fault, re-raised as it was otherwise
        raise file_error("manifest", path, _as_decoding_error(error)) from error
    table = _with_inheritance(raw, manifest, live_only=live_only)
    return ManifestColumns(path, manifest.partition_spec_id, table, partition_types)


def partition_type_resolver(table: Table) -> Callable[[int], StructType]:
    """The partition type of each spec of ``table``, bound to the newest schema that has its source fields."""
    specs = table.specs()
    schemas = [table.schema(), *sorted(table.metadata.schemas, key=lambda s: s.schema_id, reverse=True)]
    resolved: dict[int, StructType] = {}

    def partition_type_of(spec_id: int) -> StructType:
        found = resolved.get(spec_id)
        if found is None:
            spec = specs.get(spec_id)
            if spec is None:
                raise CorruptFileError(f"table {'.'.join(table.name())} has no partition spec {spec_id}")
            found = resolved[spec_id] = _partition_type(spec, schemas)
        return found

    return partition_type_of


def _partition_type(spec: PartitionSpec, schemas: Sequence[Schema]) -> StructType:
    error: Exception | None = None
    for schema in schemas:
        try:
            return spec.partition_type(schema)
        except (ValueError, KeyError) as failure:
            error = failure
    raise CorruptFileError(f"partition spec {spec.spec_id} has a source field no schema of the table holds ({error})")


def use_duckdb_for(manifests: Sequence[ManifestFile]) -> bool:
    """Whether decoding these manifests pays for DuckDB's route (their bytes reach ``DUCKDB_MIN_BYTES``)."""
    return sum(m.manifest_length or 0 for m in manifests) >= DUCKDB_MIN_BYTES


def _as_decoding_error(error: Exception) -> Exception:
    """DuckDB reports a damaged Avro file as its own exception types: make them the decoding errors they are."""
    module = type(error).__module__ or ""
    if module.startswith("duckdb") or module.startswith("_duckdb"):
        if any(marker in str(error) for marker in ("No such file", "does not exist", "No files found")):
            return FileNotFoundError(str(error))
        return ValueError(f"{type(error).__name__}: {error}")
    return error


def _read_with_duckdb(path: str, io: FileIO) -> pa.Table:
    local = _local_path(path)
    if local is not None:
        return duckdb_avro.read_avro_file(local)
    with io.new_input(path).open() as stream:
        return duckdb_avro.read_avro_bytes(stream.read())


def _local_path(path: str) -> str | None:
    """The file system path of a local location (``/x``, ``file:/x``, ``file:///x``), None for other schemes."""
    if path.startswith("file:"):
        rest = path[len("file:") :]
        return "/" + rest.lstrip("/") if rest.startswith("/") else None
    return path if "://" not in path else None


# --- step 2: one layout ---------------------------------------------------------------------------------------------


def _normalized_duckdb_table(decoded: pa.Table, partition_type: StructType, path: str) -> pa.Table:
    """DuckDB's table in the layout of ``ENTRY_COLUMNS``."""
    raise_if_not_manifest(decoded, path)
    rows = decoded.num_rows
    data_file = decoded.column("data_file").combine_chunks() if rows else None
    data_fields = (
        {}
        if data_file is None
        else {data_file.type.field(i).name: data_file.field(i) for i in range(data_file.type.num_fields)}
    )
    columns: dict[str, pa.Array] = {}
    for name, arrow_type in ENTRY_COLUMNS:
        if name in _TOP_LEVEL:
            source = decoded.column(name).combine_chunks() if name in decoded.column_names else None
        else:
            source = data_fields.get(name)
        columns[name] = _conform(source, arrow_type, rows)
    if partition_type.fields:
        partition = data_fields.get("partition")
        columns["partition"] = _duckdb_partition(partition, partition_type, rows)
    if columns["content"].null_count:  # v1 manifests hold data files only and have no content field
        columns["content"] = columns["content"].fill_null(CONTENT_DATA)
    return pa.table(columns)


def _conform(source: pa.Array | None, arrow_type: pa.DataType, rows: int) -> pa.Array:
    if source is None:
        return pa.nulls(rows, arrow_type)
    if source.type == arrow_type:
        return source
    if pa.types.is_map(arrow_type) and pa.types.is_list(source.type):  # an array of key/value records
        keys = pc.struct_field(source.flatten(), [0])
        values = pc.struct_field(source.flatten(), [1])
        return pa.MapArray.from_arrays(
            source.offsets, keys.cast(arrow_type.key_type), values.cast(arrow_type.item_type), mask=source.is_null()
        )
    return source.cast(arrow_type)


def partition_arrow_type(field_type: IcebergType) -> pa.DataType:
    """The Arrow type of a partition value in its physical representation (how the columns hold it)."""
    if isinstance(field_type, BooleanType):
        return pa.bool_()
    if isinstance(field_type, (IntegerType, DateType)):
        return pa.int32()
    if isinstance(field_type, (LongType, TimeType, TimestampType, TimestamptzType)):
        return pa.int64()
    if isinstance(field_type, FloatType):
        return pa.float32()
    if isinstance(field_type, DoubleType):
        return pa.float64()
    if isinstance(field_type, DecimalType):
        return pa.decimal128(field_type.precision, field_type.scale)
    if isinstance(field_type, StringType):
        return pa.string()
    if isinstance(field_type, UUIDType):
        return pa.binary(16)
    if isinstance(field_type, (FixedType, BinaryType)):
        return pa.binary()
    return pa.int64()  # newer types in their physical long representation (e.g. timestamp_ns)


def _duckdb_partition(partition: pa.Array | None, partition_type: StructType, rows: int) -> pa.StructArray:
    """The partition struct of DuckDB's table, its fields by position, in their physical representation."""
    fields = partition_type.fields
    children: list[pa.Array] = []
    for index, field in enumerate(fields):
        arrow_type = partition_arrow_type(field.field_type)
        child = None
        if partition is not None and pa.types.is_struct(partition.type) and index < partition.type.num_fields:
            child = partition.field(index)
        children.append(pa.nulls(rows, arrow_type) if child is None else _physical(child, arrow_type))
    return pa.StructArray.from_arrays(children, names=[field.name for field in fields])


def _physical(values: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    """A decoded partition field in its physical representation (date -> days, timestamp -> its long, ...)."""
    source_type = values.type
    if source_type == arrow_type:
        return values
    if pa.types.is_date32(source_type) or pa.types.is_time(source_type) or pa.types.is_timestamp(source_type):
        return values.view(pa.int32() if pa.types.is_date32(source_type) else pa.int64()).cast(arrow_type)
    if isinstance(source_type, pa.ExtensionType):
        return _physical(values.storage, arrow_type)
    if pa.types.is_string(source_type) and arrow_type == pa.binary(16):  # a UUID as its text
        return pa.array([None if text is None else uuid.UUID(text).bytes for text in values.to_pylist()], arrow_type)
    return values.cast(arrow_type)


def _pyiceberg_table(path: str, io: FileIO, partition_type: StructType) -> pa.Table:
    """pyiceberg's decoding of every entry, in the layout of ``ENTRY_COLUMNS``."""
    with AvroFile[ManifestEntry](
        io.new_input(path),
        MANIFEST_ENTRY_SCHEMAS[3],
        read_types={-1: ManifestEntry, 2: DataFile},
        read_enums={0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent},
    ) as reader:
        entries = list(reader)
    files = [entry.data_file for entry in entries]
    columns: dict[str, pa.Array] = {
        "status": pa.array([int(entry.status) for entry in entries], pa.int32()),
        "snapshot_id": pa.array([entry.snapshot_id for entry in entries], pa.int64()),
        "sequence_number": pa.array([entry.sequence_number for entry in entries], pa.int64()),
        "file_sequence_number": pa.array([entry.file_sequence_number for entry in entries], pa.int64()),
    }
    for name, arrow_type in ENTRY_COLUMNS[len(_TOP_LEVEL) :]:
        values = [_python_field(data_file, name) for data_file in files]
        if pa.types.is_map(arrow_type):
            values = [None if value is None else list(value.items()) for value in values]
        columns[name] = pa.array(values, arrow_type)
    if partition_type.fields:
        children = []
        for index, field in enumerate(partition_type.fields):
            arrow_type = partition_arrow_type(field.field_type)
            values = [_partition_value(data_file, index) for data_file in files]
            children.append(pa.array([_to_physical(value) for value in values], arrow_type))
        columns["partition"] = pa.StructArray.from_arrays(children, names=[f.name for f in partition_type.fields])
    return pa.table(columns)


_V3_ACCESSORS = {
    "first_row_id": first_row_id,
    "referenced_data_file": referenced_data_file,
    "content_offset": content_offset,
    "content_size_in_bytes": content_size_in_bytes,
}


def _python_field(data_file: DataFile, name: str) -> Any:
    accessor = _V3_ACCESSORS.get(name)
    value = accessor(data_file) if accessor is not None else getattr(data_file, name, None)
    if name == "content":
        return int(value) if value is not None else CONTENT_DATA
    if name == "file_format":
        return value.value if isinstance(value, FileFormat) else value
    return value


def _partition_value(data_file: DataFile, index: int) -> Any:
    partition = data_file.partition
    return partition[index] if partition is not None and index < len(partition) else None


def _to_physical(value: Any) -> Any:
    """A pyiceberg partition value as the columns hold it (a UUID as its 16 bytes)."""
    return value.bytes if isinstance(value, uuid.UUID) else value


def _python_value_converter(field_type: IcebergType) -> Callable[[Any], Any] | None:
    """How a column value becomes the value pyiceberg holds for this partition type (None: it already is)."""
    if isinstance(field_type, UUIDType):
        return lambda value: None if value is None else uuid.UUID(bytes=value)
    return None


# --- steps 3 and 4: inheritance, live entries ------------------------------------------------------------------------


def _with_inheritance(raw: pa.Table, manifest: ManifestFile, *, live_only: bool) -> pa.Table:
    """The (live) entries of ``raw`` with the values they inherit from ``manifest`` filled in (module doc, step 3)."""
    status = raw.column("status").combine_chunks().fill_null(0).to_numpy(zero_copy_only=False)
    added = status == int(ManifestEntryStatus.ADDED)
    live = status != STATUS_DELETED
    columns = {name: raw.column(name).combine_chunks() for name in raw.column_names}

    if manifest.added_snapshot_id is not None:
        columns["snapshot_id"] = columns["snapshot_id"].fill_null(manifest.added_snapshot_id)
    manifest_sequence_number = manifest.sequence_number
    if manifest_sequence_number is not None:
        inherits = np.full(raw.num_rows, True) if manifest_sequence_number == 0 else added
        for name in ("sequence_number", "file_sequence_number"):
            column = columns[name]
            fill = pa.array(np.where(inherits, manifest_sequence_number, 0), pa.int64())
            filled = pc.if_else(pc.and_(column.is_null(), pa.array(inherits)), fill, column)
            columns[name] = filled

    next_row_id = manifest_first_row_id(manifest)
    if next_row_id is not None:
        first_row_ids = columns["first_row_id"]
        content = columns["content"].fill_null(CONTENT_DATA).to_numpy(zero_copy_only=False)
        assign = live & (content == CONTENT_DATA) & first_row_ids.is_null().to_numpy(zero_copy_only=False)
        if assign.any():
            counts = np.where(assign, columns["record_count"].fill_null(0).to_numpy(zero_copy_only=False), 0)
            starts = next_row_id + np.cumsum(counts) - counts
            inherited = pa.array(starts, pa.int64())
            columns["first_row_id"] = pc.if_else(pa.array(assign), inherited, first_row_ids)

    table = pa.table(columns)
    return table if live.all() or not live_only else table.filter(pa.array(live))


def raise_if_not_manifest(decoded: pa.Table, path: str) -> None:
    """A decoded Avro file without a ``data_file`` record is not a manifest: name it (DuckDB reads any Avro)."""
    if decoded.num_rows and "data_file" not in decoded.column_names:
        raise CorruptFileError(f"manifest {path} is not a manifest file: its records have no data_file field")
