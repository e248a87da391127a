"""Every job on a warehouse in S3, as one short story per catalog: the steps the S3 matrix runs on each Spark.

``run(catalog, prefix, filesystem, steps)`` writes small sources to ``s3://landing/<prefix>/`` and drives the jobs'
``main`` in this process (the caller's SparkSession decides local or standalone):

1. ingest: a Parquet directory (append, table created, partitioned), CSV (append), JSON (upsert, position deletes),
   Parquet ids (delete, equality deletes), Parquet (overwrite by filter);
2. rewrite the position delete files (maintenance);
3. read: at the first snapshot id (Parquet to S3), at a tag (CSV to S3), at a branch's head (Parquet to S3), as of a
   time (Parquet to S3), current with a filter; each output read back from S3 and counted; count(*) from metadata;
4. compact, rewrite manifests, expire snapshots (the tag keeps its snapshot), remove an orphan file planted in the
   table's data folder;
5. a format v3 table: append, then a delete by key written as deletion vectors (Puffin files). An S3 Tables bucket
   takes no ``.puffin`` object, so that table's ``write.data.path`` is an ordinary bucket (as a user of such a catalog
   does).

Each step checks its result; a failed check raises AssertionError naming the step. ``steps`` picks a subset by name.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from pyarrow import fs

ALL_STEPS = (
    "append",
    "csv",
    "upsert",
    "delete",
    "overwrite",
    "rewrite_deletes",
    "reads",
    "compact",
    "rewrite_manifests",
    "expire",
    "orphans",
    "deletion_vectors",
)
# The jobs each step runs, by the names ``run`` returns their results under (a step not listed runs one, its own).
_JOBS_OF_STEP = {
    "reads": ("read_snapshot", "read_ref", "read_branch", "read_as_of", "read_filter", "read_count"),
    "deletion_vectors": ("v3_append", "v3_delete"),
}
JOB_STEPS = tuple(job for step in ALL_STEPS for job in _JOBS_OF_STEP.get(step, (step,)))


def jobs_of_step(step: str) -> tuple[str, ...]:
    """The names ``run`` returns the results of ``step``'s jobs under."""
    return _JOBS_OF_STEP.get(step, (step,))


def _rows(ids: Iterable[int], tag: str) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "cat": pa.array(["a" if i % 2 else "b" for i in ids]),
            "v": pa.array([f"{tag}-{i}" for i in ids]),
        }
    )


def _put(filesystem: fs.FileSystem, path: str, data: bytes) -> None:
    with filesystem.open_output_stream(path) as stream:
        stream.write(data)


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def write_sources(filesystem: fs.FileSystem, prefix: str) -> str:
    """The scenario's source files under s3://landing/<prefix>/; returns that URI."""
    root = f"landing/{prefix}"
    base = _rows(range(100), "base")
    _put(filesystem, f"{root}/base/part-0.parquet", _parquet_bytes(base.slice(0, 50)))
    _put(filesystem, f"{root}/base/part-1.parquet", _parquet_bytes(base.slice(50)))
    _put(filesystem, f"{root}/base/_SUCCESS", b"")  # hidden: skipped as Spark skips it
    csv_sink = pa.BufferOutputStream()
    pacsv.write_csv(_rows(range(100, 120), "csv"), csv_sink)
    _put(filesystem, f"{root}/csv/batch.csv", csv_sink.getvalue().to_pybytes())
    lines = [json.dumps({"id": i, "cat": "a" if i % 2 else "b", "v": f"json-{i}"}) for i in range(110, 130)]
    _put(filesystem, f"{root}/json/batch.json", ("\n".join(lines) + "\n").encode())
    _put(filesystem, f"{root}/delete/ids.parquet", _parquet_bytes(pa.table({"id": pa.array(range(10), pa.int64())})))
    _put(filesystem, f"{root}/overwrite/rows.parquet", _parquet_bytes(_rows(range(120, 125), "over")))
    return f"s3://{root}"


def _count_output(filesystem: fs.FileSystem, uri: str, output_format: str) -> int:
    """Rows in a read job's output folder on S3 (every part file; ``_SUCCESS`` must be there)."""
    root = uri.removeprefix("s3://").rstrip("/")
    infos = filesystem.get_file_info(fs.FileSelector(root, recursive=True))
    names = {info.base_name for info in infos}
    assert "_SUCCESS" in names, f"{uri} has no _SUCCESS: {sorted(names)}"
    total = 0
    for info in infos:
        if info.base_name.startswith("part-"):
            with filesystem.open_input_file(info.path) as stream:
                if output_format == "csv":
                    total += pacsv.read_csv(stream).num_rows
                else:
                    total += pq.read_table(stream).num_rows
    return total


def run(catalog: str, prefix: str, filesystem: fs.FileSystem, steps: Iterable[str] = ALL_STEPS) -> dict[str, Any]:
    """Run the chosen steps on table ``<prefix>.events`` of ``catalog``; returns each step's JSON result."""
    from spark_jobs import compact, ingest, maintain, read
    from spark_jobs.engine.read.session import open_read_session
    from spark_jobs.engine.table.catalog import load_catalog

    steps = set(steps)
    source = write_sources(filesystem, prefix)
    table_name = f"{prefix}.events"
    iceberg = load_catalog(catalog)
    iceberg.create_namespace_if_not_exists(prefix)
    results: dict[str, Any] = {}
    base = ["--catalog", catalog, "--table", table_name]
    expected = 0

    def step(name: str, job: Any, argv: list[str]) -> dict[str, Any]:
        started = time.perf_counter()
        result = job.main(argv)
        print(f"step {name}: {time.perf_counter() - started:.1f} s, job phases {result.get('seconds')}")
        assert result["status"] == "ok", (name, result)
        results[name] = result
        return result

    def count(row_filter: str | None = None, snapshot_id: int | None = None) -> int:
        """Rows the engine reads (pyiceberg's own scan cannot apply equality deletes)."""
        session = open_read_session(catalog, table_name, columns=["id"], row_filter=row_filter, snapshot_id=snapshot_id)
        return session.to_arrow().num_rows

    first = step(
        "append",
        ingest,
        [*base, "--source", f"{source}/base/", "--mode", "append", "--create-if-missing", "--partition-by", "cat"],
    )
    expected = 100
    assert first["data_files_added"] >= 2, first  # at least one per partition
    assert count() == expected
    if "csv" in steps:
        step("csv", ingest, [*base, "--source", f"{source}/csv/", "--source-format", "csv", "--mode", "append"])
        expected = 120
        assert count() == expected
    if "upsert" in steps:
        json_source = f"{source}/json/batch.json"
        result = step(
            "upsert",
            ingest,
            [*base, "--source", json_source, "--source-format", "json", "--mode", "upsert", "--key", "id"],
        )
        expected = 130 if "csv" in steps else 120
        assert result["delete_files_written"] >= (1 if "csv" in steps else 0), result
        assert count() == expected
    if "delete" in steps:
        step(
            "delete",
            ingest,
            [*base, "--source", f"{source}/delete/", "--mode", "delete", "--key", "id", "--delete-mode", "equality"],
        )
        expected -= 10
        assert count() == expected
    if "overwrite" in steps:
        removed = count("id >= 120")
        step(
            "overwrite",
            ingest,
            [*base, "--source", f"{source}/overwrite/", "--mode", "overwrite", "--overwrite-filter", "id >= 120"],
        )
        expected = expected - removed + 5
        assert count() == expected
    if "rewrite_deletes" in steps:
        result = step("rewrite_deletes", maintain, ["rewrite-position-deletes", *base, "--rewrite-all"])
        assert result["operation"] == "replace" and result["delete_files_removed"] >= 1, result
        assert count() == expected
    table = iceberg.load_table(table_name)
    snapshots = table.snapshots()
    if "reads" in steps:
        out = f"s3://warehouse/exports/{prefix}"
        result = step(
            "read_snapshot", read, [*base, "--snapshot-id", str(snapshots[0].snapshot_id), "--output", f"{out}/first"]
        )
        assert result["rows_out"] == 100 == _count_output(filesystem, f"{out}/first", "parquet")
        tagged = snapshots[min(1, len(snapshots) - 1)]
        table.manage_snapshots().create_tag(tagged.snapshot_id, "checkpoint").commit()
        tagged_rows = count(snapshot_id=tagged.snapshot_id)
        result = step(
            "read_ref", read, [*base, "--ref", "checkpoint", "--output", f"{out}/tag", "--output-format", "csv"]
        )
        assert result["rows_out"] == tagged_rows == _count_output(filesystem, f"{out}/tag", "csv")
        branched = snapshots[min(2, len(snapshots) - 1)]
        table.manage_snapshots().create_branch(branched.snapshot_id, "audit").commit()
        branched_rows = count(snapshot_id=branched.snapshot_id)
        result = step("read_branch", read, [*base, "--ref", "audit", "--output", f"{out}/branch"])
        assert result["rows_out"] == branched_rows == _count_output(filesystem, f"{out}/branch", "parquet")
        as_of = snapshots[-1].timestamp_ms
        result = step("read_as_of", read, [*base, "--as-of", str(as_of), "--output", f"{out}/as_of"])
        assert result["rows_out"] == expected == _count_output(filesystem, f"{out}/as_of", "parquet")
        result = step(
            "read_filter", read, [*base, "--filter", "cat = 'a'", "--output", f"{out}/as_of", "--mode", "overwrite"]
        )
        odd = count("cat = 'a'")
        assert result["rows_out"] == odd == _count_output(filesystem, f"{out}/as_of", "parquet")
        result = step("read_count", read, [*base, "--count"])
        assert result["count"] == expected, result
    if "compact" in steps:
        result = step("compact", compact, [*base, "--min-input-files", "1"])
        assert result["rewritten_file_groups"] >= 1, result
        assert count() == expected
    if "rewrite_manifests" in steps:
        result = step("rewrite_manifests", maintain, ["rewrite-manifests", *base])
        assert result["manifests_after"] <= result["manifests_before"], result
        assert count() == expected
    if "expire" in steps:
        now = str(int(time.time() * 1000) + 1000)
        result = step("expire", maintain, ["expire-snapshots", *base, "--older-than", now, "--retain-last", "1"])
        assert result["expired_snapshot_ids"], result
        assert count() == expected
    if "orphans" in steps:
        location = iceberg.load_table(table_name).location().removeprefix("s3://")
        orphan = f"{location}/data/orphan-00000.parquet"
        _put(filesystem, orphan, _parquet_bytes(_rows([1], "orphan")))
        time.sleep(1.1)
        now = str(int(time.time() * 1000))
        result = step(
            "orphans", maintain, ["remove-orphan-files", *base, "--older-than", now, "--allow-short-retention"]
        )
        assert result["orphan_file_locations"] == [f"s3://{orphan}"], result
        assert filesystem.get_file_info(orphan).type == fs.FileType.NotFound
        assert count() == expected
    if "deletion_vectors" in steps:
        _deletion_vectors(step, iceberg, catalog, prefix=prefix, source=source, filesystem=filesystem)
    return results


def _deletion_vectors(step: Any, iceberg: Any, catalog: str, *, prefix: str, source: str, filesystem: Any) -> None:
    """A format v3 table on S3: append, then a delete by key written as deletion vectors in a Puffin file."""
    from spark_jobs import ingest
    from spark_jobs.engine.read.session import open_read_session

    table_name = f"{prefix}.events_v3"
    base = ["--catalog", catalog, "--table", table_name]
    created = [*base, "--source", f"{source}/base/", "--mode", "append", "--create-if-missing", "--format-version", "3"]
    step("v3_append", ingest, created)
    data_root = f"warehouse/v3-data/{prefix}"
    table = iceberg.load_table(table_name)
    table.transaction().set_properties({"write.data.path": f"s3://{data_root}"}).commit_transaction()
    result = step("v3_delete", ingest, [*base, "--source", f"{source}/delete/", "--mode", "delete", "--key", "id"])
    assert result["delete_files_written"] >= 1, result
    written = [info.path for info in filesystem.get_file_info(fs.FileSelector(data_root, recursive=True))]
    assert any(path.endswith(".puffin") for path in written), written
    ids = open_read_session(catalog, table_name, columns=["id"]).to_arrow().column("id").to_pylist()
    assert sorted(ids) == list(range(10, 100)), ids
