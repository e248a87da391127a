"""Sources and outputs on storage the JVM cannot reach: an S3 store (SeaweedFS) read and written by pyarrow on the
executors, and local paths left to Spark's own reader. Checks the rows, the files written and what is refused."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import fs

from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.spark.files import existing_files, hadoop_uri, read_source, write_output

pytestmark = [pytest.mark.spark, pytest.mark.spark35]


@pytest.fixture
def store(seaweedfs):
    """A fresh folder in the ``landing`` bucket: (s3:// URI, bucket path for pyarrow, FileIO properties, filesystem)."""
    folder = f"landing/files-{uuid.uuid4().hex[:12]}"
    return f"s3://{folder}", folder, seaweedfs.s3_properties(), seaweedfs.filesystem()


def _put(filesystem: fs.FileSystem, path: str, data: bytes) -> None:
    with filesystem.open_output_stream(path) as stream:
        stream.write(data)


def _files(filesystem: fs.FileSystem, folder: str) -> list[str]:
    """The names of the files under ``folder``, ``_SUCCESS`` last."""
    return sorted(
        (path.rsplit("/", 1)[-1] for path in existing_files(filesystem, folder)), key=lambda n: (n == "_SUCCESS", n)
    )


def test_the_jvm_route_is_kept_for_local_and_hdfs_paths_and_dropped_without_a_connector(spark) -> None:
    assert hadoop_uri(spark, "/data/in/events.csv") == "/data/in/events.csv"
    assert hadoop_uri(spark, "file:///data/in") == "file:///data/in"
    assert hadoop_uri(spark, "hdfs://namenode:8020/in") == "hdfs://namenode:8020/in"
    # pip's pyspark has no hadoop-aws: neither S3 spelling has a JVM file system
    assert hadoop_uri(spark, "s3://landing/in") is None
    assert hadoop_uri(spark, "s3a://landing/in") is None


def test_a_local_source_is_read_by_sparks_own_reader(spark, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("id,name\n1,x\n2,y\n")
    frame = read_source(spark, str(tmp_path / "in"), "csv", {}, {"header": "true", "inferSchema": "true"})
    assert sorted((row.id, row.name) for row in frame.collect()) == [(1, "x"), (2, "y")]


@pytest.mark.s3
def test_parquet_files_are_read_in_the_first_files_schema(spark, store) -> None:
    uri, folder, properties, filesystem = store
    first = pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["a", "b"]})
    second = pa.table({"extra": [True], "id": pa.array([3], pa.int64())})  # no name, an extra column, wider id
    pq.write_table(first, f"{folder}/part-0.parquet", filesystem=filesystem)
    pq.write_table(second, f"{folder}/part-1.parquet", filesystem=filesystem)
    _put(filesystem, f"{folder}/_SUCCESS", b"")
    frame = read_source(spark, uri, "parquet", properties, {})
    assert frame.columns == ["id", "name"]
    assert frame.schema["id"].dataType.simpleString() == "int"
    assert sorted((row.id, row.name) for row in frame.collect()) == [(1, "a"), (2, "b"), (3, None)]


@pytest.mark.s3
def test_csv_and_json_lines_are_parsed_by_sparks_parsers(spark, store) -> None:
    uri, folder, properties, filesystem = store
    _put(filesystem, f"{folder}/csv/a.csv", b'id,name\r\n1,"x, quoted"\r\n2,y')  # CRLF, no final line break
    _put(filesystem, f"{folder}/csv/b.csv", b"id,name\n3,z\n")
    frame = read_source(spark, f"{uri}/csv", "csv", properties, {"header": "true", "inferSchema": "true"})
    assert sorted((row.id, row.name) for row in frame.collect()) == [(1, "x, quoted"), (2, "y"), (3, "z")]
    assert frame.schema["id"].dataType.simpleString() == "int"

    _put(filesystem, f"{folder}/json/a.json", b'{"id": 1, "tags": ["p"]}\n{"id": 2}\n')
    frame = read_source(spark, f"{uri}/json", "json", properties, {})
    assert sorted((row.id, row.tags) for row in frame.collect()) == [(1, ["p"]), (2, None)]


@pytest.mark.s3
def test_a_corrupt_parquet_source_names_the_file(spark, store) -> None:
    uri, folder, properties, filesystem = store
    _put(filesystem, f"{folder}/broken.parquet", b"not parquet at all")
    with pytest.raises(UserInputError, match=r"cannot read source .* \(parquet\): .*broken.parquet"):
        read_source(spark, uri, "parquet", properties, {})


@pytest.mark.s3
def test_parquet_output_is_one_file_per_task_then_success_and_an_existing_output_is_refused(spark, store) -> None:
    uri, folder, properties, filesystem = store
    frame = spark.createDataFrame([(i, f"n{i}") for i in range(10)], "id long, name string").repartition(2)
    write_output(frame, f"{uri}/out", "parquet", "error", properties)
    names = _files(filesystem, f"{folder}/out")
    assert names[-1] == "_SUCCESS" and len(names) == 3
    assert all(name.startswith("part-0000") and name.endswith(".parquet") for name in names[:-1])
    written = pa.concat_tables(
        pq.read_table(f"{folder}/out/{name}", filesystem=filesystem) for name in names[:-1]
    ).sort_by("id")
    assert written.column("id").to_pylist() == list(range(10))
    assert written.schema.field("name").type == pa.string()

    with pytest.raises(UserInputError, match=r"--output .*/out already exists; pass --mode overwrite"):
        write_output(frame, f"{uri}/out", "parquet", "error", properties)
    assert _files(filesystem, f"{folder}/out") == names


@pytest.mark.s3
def test_overwrite_replaces_the_old_files_and_csv_has_a_quoted_header(spark, store) -> None:
    uri, folder, properties, filesystem = store
    _put(filesystem, f"{folder}/out/old-part.csv", b"stale\n")
    frame = spark.createDataFrame([(1, "a,b"), (2, "c")], "id long, `x,y` string").coalesce(1)
    write_output(frame, f"{uri}/out", "csv", "overwrite", properties)
    names = _files(filesystem, f"{folder}/out")
    assert "old-part.csv" not in names and names[-1] == "_SUCCESS" and len(names) == 2
    with filesystem.open_input_stream(f"{folder}/out/{names[0]}") as stream:
        assert stream.read().decode() == 'id,"x,y"\n1,"a,b"\n2,c\n'


@pytest.mark.s3
def test_an_empty_result_is_one_parquet_file_with_the_schema(spark, store) -> None:
    uri, folder, properties, filesystem = store
    frame = spark.createDataFrame([], "id long, name string")
    write_output(frame, f"{uri}/empty", "parquet", "error", properties)
    names = _files(filesystem, f"{folder}/empty")
    assert len(names) == 2 and names[-1] == "_SUCCESS"
    empty = pq.read_table(f"{folder}/empty/{names[0]}", filesystem=filesystem)
    assert empty.num_rows == 0 and empty.column_names == ["id", "name"]


def test_existing_files_lists_a_file_a_folder_or_nothing(tmp_path: Path) -> None:
    local = fs.LocalFileSystem()
    (tmp_path / "out" / "sub").mkdir(parents=True)
    (tmp_path / "out" / "a.parquet").write_bytes(b"")
    (tmp_path / "out" / "sub" / "b.parquet").write_bytes(b"")
    assert sorted(existing_files(local, str(tmp_path / "out"))) == [
        str(tmp_path / "out" / "a.parquet"),
        str(tmp_path / "out" / "sub" / "b.parquet"),
    ]
    assert existing_files(local, str(tmp_path / "out" / "a.parquet")) == [str(tmp_path / "out" / "a.parquet")]
    assert existing_files(local, str(tmp_path / "missing")) == []
