"""A manifest's entries as columns: DuckDB's route and pyiceberg's give the same table, and both what
``read_live_entries`` reads (objects), on manifests Iceberg Java wrote and on ours with every partition type."""

from __future__ import annotations

import math
import uuid
from decimal import Decimal

import pyarrow as pa
import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    write_manifest,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from spark_jobs.engine.commit.manifest_writers import write_entries
from spark_jobs.engine.shared.errors import CorruptFileError
from spark_jobs.engine.table import duckdb_avro
from spark_jobs.engine.table.manifest_columns import decode_manifest
from spark_jobs.engine.table.manifest_entries import (
    first_row_id,
    in_v3_list_layout,
    partition_values,
    read_live_entries,
    set_first_row_id,
)

PARTITION_TYPES = [
    BooleanType(),
    IntegerType(),
    LongType(),
    FloatType(),
    DoubleType(),
    DecimalType(9, 2),
    DecimalType(30, 5),
    DateType(),
    TimeType(),
    TimestampType(),
    TimestamptzType(),
    StringType(),
    UUIDType(),
    FixedType(3),
    BinaryType(),
]
VALUES = [
    [
        True,
        7,
        2**40,
        1.5,
        -2.25,
        Decimal("12.34"),
        Decimal("-123456789012345678901.12345"),
        19733,
        3_600_000_000,
        1_700_000_000_000_000,
        1_700_000_000_000_001,
        "a/b=c ü",
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
        b"\x00\x01\x02",
        b"\xff\x00",
    ],
    [None] * len(PARTITION_TYPES),
    [
        False,
        -1,
        -5,
        float("nan"),
        0.0,
        Decimal("0.00"),
        Decimal("1.00000"),
        -3,
        0,
        -1,
        0,
        "",
        uuid.UUID(int=0),
        b"abc",
        b"",
    ],
]

requires_duckdb = pytest.mark.skipif(not duckdb_avro.duckdb_avro_available(), reason="DuckDB's avro extension")


def _schema() -> Schema:
    return Schema(
        NestedField(1, "id", LongType(), required=False),
        *(NestedField(10 + i, f"c{i}", t, required=False) for i, t in enumerate(PARTITION_TYPES)),
    )


def _spec() -> PartitionSpec:
    return PartitionSpec(
        *(PartitionField(10 + i, 1000 + i, IdentityTransform(), f"c{i}") for i in range(len(PARTITION_TYPES))),
        spec_id=3,
    )


def _data_file(index: int, values: list, version: int, content: DataFileContent = DataFileContent.DATA) -> DataFile:
    data_file = DataFile.from_args(
        _table_format_version=version,
        content=content,
        file_path=f"file:/warehouse/t/data/f-{index}.parquet",
        file_format=FileFormat.PARQUET,
        partition=Record(*values),
        record_count=10 + index,
        file_size_in_bytes=1000 + index,
        column_sizes={1: 40, 10: 8},
        value_counts={1: 10 + index, 10: 10},
        null_value_counts={1: 0, 10: 2},
        nan_value_counts={13: 1},
        lower_bounds={1: (index).to_bytes(8, "little", signed=True), 21: b"a"},
        upper_bounds={1: (index + 9).to_bytes(8, "little", signed=True), 21: b"z\xf0"},
        split_offsets=[4, 500] if index % 2 else None,
        equality_ids=[1] if content == DataFileContent.EQUALITY_DELETES else None,
        sort_order_id=0 if index % 2 else None,
    )
    data_file.spec_id = 3
    return data_file


def _entries(version: int, content: DataFileContent = DataFileContent.DATA, *, v1: bool = False) -> list[ManifestEntry]:
    statuses = [ManifestEntryStatus.ADDED, ManifestEntryStatus.EXISTING, ManifestEntryStatus.DELETED]
    entries = []
    for index in range(9):
        status = statuses[index % 3]
        explicit = status != ManifestEntryStatus.ADDED
        entries.append(
            ManifestEntry.from_args(
                _table_format_version=version,
                status=status,
                snapshot_id=None if status == ManifestEntryStatus.ADDED and not v1 else 5,
                sequence_number=4 if explicit else None,
                file_sequence_number=4 if explicit else None,
                data_file=_data_file(index, VALUES[index % 3], version, content),
            )
        )
    return entries


def _written(tmp_path, version: int, content: ManifestContent = ManifestContent.DATA):
    output = PyArrowFileIO().new_output(str(tmp_path / f"m-{version}-{content.name}.avro"))
    file_content = DataFileContent.DATA if content == ManifestContent.DATA else DataFileContent.EQUALITY_DELETES
    if version == 1:
        with write_manifest(1, _spec(), _schema(), output, snapshot_id=9, avro_compression="deflate") as writer:
            for entry in _entries(2, v1=True):
                writer.add_entry(entry)
        return writer.to_manifest_file()
    manifest = write_entries(
        content=content,
        entries=_entries(version, file_content),
        spec=_spec(),
        schema=_schema(),
        output_file=output,
        snapshot_id=9,
        compression="deflate",
        format_version=version,
    )
    manifest.sequence_number = 6
    if version == 3 and content == ManifestContent.DATA:
        manifest = in_v3_list_layout(manifest)
        set_first_row_id(manifest, 1000)
    return manifest


def _same_as_objects(columns, manifest, io) -> None:
    entries = read_live_entries(manifest, io)
    table = columns.table
    assert table.column("file_path").to_pylist() == [e.data_file.file_path for e in entries]
    assert table.column("status").to_pylist() == [int(e.status) for e in entries]
    assert table.column("snapshot_id").to_pylist() == [e.snapshot_id for e in entries]
    assert table.column("sequence_number").to_pylist() == [e.sequence_number for e in entries]
    assert table.column("file_sequence_number").to_pylist() == [e.file_sequence_number for e in entries]
    assert table.column("content").to_pylist() == [int(e.data_file.content) for e in entries]
    assert table.column("first_row_id").to_pylist() == [first_row_id(e.data_file) for e in entries]
    assert table.column("record_count").to_pylist() == [e.data_file.record_count for e in entries]
    assert table.column("split_offsets").to_pylist() == [e.data_file.split_offsets for e in entries]
    assert table.column("equality_ids").to_pylist() == [e.data_file.equality_ids for e in entries]
    for name in ("value_counts", "null_value_counts", "nan_value_counts", "lower_bounds", "upper_bounds"):
        as_dicts = [None if v is None else dict(v) for v in table.column(name).to_pylist()]
        assert as_dicts == [getattr(e.data_file, name) for e in entries], name
    expected_partitions = [partition_values(e.data_file) for e in entries]
    got = columns.partition_tuples()
    assert [_nan_safe(p) for p in got] == [_nan_safe(p) for p in expected_partitions]
    assert columns.spec_id == manifest.partition_spec_id


def _nan_safe(values: tuple) -> tuple:
    return tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in values)


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("use_duckdb", [False, pytest.param(True, marks=requires_duckdb)])
def test_every_partition_type_and_field_reads_as_pyiceberg_reads_it(tmp_path, version, use_duckdb):
    manifest = _written(tmp_path, version)
    io = PyArrowFileIO()
    partition_type = _spec().partition_type(_schema())
    columns = decode_manifest(manifest, io, partition_type, use_duckdb=use_duckdb)
    assert columns.num_rows == 6  # the DELETED entries are gone
    _same_as_objects(columns, manifest, io)


@requires_duckdb
@pytest.mark.parametrize("version", [2, 3])
def test_delete_manifests_decode_the_same_on_both_routes(tmp_path, version):
    manifest = _written(tmp_path, version, ManifestContent.DELETES)
    io = PyArrowFileIO()
    partition_type = _spec().partition_type(_schema())
    by_duckdb = decode_manifest(manifest, io, partition_type, use_duckdb=True)
    by_pyiceberg = decode_manifest(manifest, io, partition_type, use_duckdb=False)
    assert by_duckdb.table.equals(by_pyiceberg.table)
    _same_as_objects(by_duckdb, manifest, io)


@requires_duckdb
@pytest.mark.parametrize(
    "table_name",
    [
        "corpus.v1_cow",
        "corpus.mor_v2_pos",
        "corpus.v2_eq_deletes",
        "corpus.mor_v3_dv",
        "corpus.partition_evolution",
        "corpus.types",
        "corpus.schema_evolution",
        "corpus.v2_eq_deletes_part",
        "corpus.small_files",
    ],
)
def test_java_written_manifests_decode_the_same_on_both_routes(conformance_catalog, table_name):
    table = conformance_catalog.load_table(table_name)
    for snapshot in table.snapshots():
        for manifest in snapshot.manifests(table.io):
            partition_type = table.specs()[manifest.partition_spec_id].partition_type(table.schema())
            by_duckdb = decode_manifest(manifest, table.io, partition_type, use_duckdb=True)
            by_pyiceberg = decode_manifest(manifest, table.io, partition_type, use_duckdb=False)
            assert by_duckdb.table.equals(by_pyiceberg.table), manifest.manifest_path
            _same_as_objects(by_duckdb, manifest, table.io)


@pytest.mark.parametrize("use_duckdb", [False, pytest.param(True, marks=requires_duckdb)])
def test_a_damaged_manifest_is_named(tmp_path, use_duckdb):
    manifest = _written(tmp_path, 2)
    path = manifest.manifest_path
    with open(path, "rb") as whole:
        data = whole.read()
    with open(path, "wb") as damaged:
        damaged.write(data[: len(data) // 2])
    with pytest.raises(CorruptFileError, match=r"manifest .*m-2-DATA\.avro"):
        decode_manifest(manifest, PyArrowFileIO(), _spec().partition_type(_schema()), use_duckdb=use_duckdb)


@pytest.mark.parametrize("use_duckdb", [False, pytest.param(True, marks=requires_duckdb)])
def test_a_missing_manifest_is_named(tmp_path, use_duckdb):
    manifest = _written(tmp_path, 2)
    (tmp_path / "m-2-DATA.avro").unlink()
    with pytest.raises(CorruptFileError, match=r"manifest .*m-2-DATA\.avro is missing"):
        decode_manifest(manifest, PyArrowFileIO(), _spec().partition_type(_schema()), use_duckdb=use_duckdb)


def test_columns_keep_arrow_types_of_the_layout(tmp_path):
    manifest = _written(tmp_path, 3)
    columns = decode_manifest(manifest, PyArrowFileIO(), _spec().partition_type(_schema()), use_duckdb=False)
    assert columns.table.schema.field("lower_bounds").type == pa.map_(pa.int32(), pa.binary())
    assert columns.table.schema.field("partition").type.field(7).type == pa.int32()  # a date as its days
