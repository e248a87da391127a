"""Reachable files: one spelling per location, and every file of tables Java wrote is reachable from metadata."""

import pytest

from spark_jobs.engine.maintenance.orphan_files import list_table_files
from spark_jobs.engine.maintenance.reachable_files import normalize_location, reachable_locations


@pytest.mark.parametrize(
    ("location", "normal"),
    [
        ("file:/tmp/t/data/a.parquet", "/tmp/t/data/a.parquet"),
        ("file:///tmp/t/data/a.parquet", "/tmp/t/data/a.parquet"),
        ("/tmp/t/data/../data/a.parquet", "/tmp/t/data/a.parquet"),
        ("s3a://bucket/t/a.parquet", "s3://bucket/t/a.parquet"),
        ("s3://bucket/t/a.parquet", "s3://bucket/t/a.parquet"),
        ("hdfs://nn:8020/t/a.parquet", "hdfs://nn:8020/t/a.parquet"),
    ],
)
def test_normalize_location(location: str, normal: str):
    assert normalize_location(location) == normal


@pytest.mark.parametrize(
    "table_name", ["mor_v2_pos", "mor_v3_dv", "partition_evolution", "v1_cow", "v2_eq_deletes", "small_files"]
)
def test_every_file_java_wrote_is_reachable(conformance_catalog, table_name: str):
    table = conformance_catalog.load_table(f"corpus.{table_name}")
    reachable = reachable_locations(table.metadata, table.metadata_location, table.io)
    listed = list_table_files(table)
    assert listed
    assert {normalize_location(f.location) for f in listed} <= reachable
    kinds = {f.location.rsplit(".", 1)[-1] for f in listed}
    assert {"parquet", "avro", "json"} <= kinds


def test_reading_a_table_whole_names_a_missing_manifest_of_any_snapshot(sql_catalog) -> None:
    import os
    from urllib.parse import urlparse

    import pyarrow as pa
    import pytest

    from spark_jobs.engine.maintenance.reachable_files import read_whole
    from spark_jobs.engine.shared.errors import CorruptFileError

    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table("ns.whole", pa.schema([pa.field("id", pa.int64())]))
    for batch in range(3):
        table.append(pa.table({"id": pa.array([batch], pa.int64())}))
    contents = read_whole(table.metadata.snapshots, table.io, "ns.whole")
    assert len(contents) == 3 and all(len(c.live) == 1 for c in contents.values())
    oldest = table.metadata.snapshots[0].manifests(table.io)[0].manifest_path  # listed by every later snapshot too
    os.remove(urlparse(oldest).path)
    with pytest.raises(CorruptFileError, match=r"table ns\.whole cannot be read whole: manifest .* is missing"):
        read_whole(table.metadata.snapshots, table.io, "ns.whole")
