"""Seeded random sequences of our jobs on a table whose warehouse is on S3 (SeaweedFS) behind its REST catalog.

Each seed draws a table (format v2 or v3; unpartitioned, or partitioned by a string column whose values are awkward
in a path or a URI: ``/``, `` ``, ``%``, ``=``, ``+``, ``#``, ``?``, ``&``, non-ASCII, a quote, null) and a sequence
of the jobs through their ``main(argv)`` entry points, every source and every read output on S3:

1. ingest: append, overwrite by filter, dynamic overwrite (partitioned tables), upsert and delete by key with
   position or equality deletes (deletion vectors on v3);
2. compaction: bin-pack or sort, all files or some, optionally only the files of one awkward partition (``--where``);
3. maintenance: rewrite-position-deletes, rewrite-manifests, expire-snapshots, remove-orphan-files with stray files
   in the data folders (partition folders included) on both sides of the cutoff;
4. reads: at a remembered snapshot, at a tag, as of a time, with a filter on an awkward partition value or on null,
   to Parquet or CSV on S3 (read back and compared); ``--count`` and ``--aggregate``.

Every operation is applied to a ``TableModel`` too. After each operation the engine's reader returns the model's
rows, and every file the table's metadata references (metadata files, manifest lists, manifests, live data and
delete files of every snapshot) exists on S3. A failure names the seed and the operations so far.

No S3 secret key or REST credential appears in anything the jobs log or print.

CI runs ``CI_SEEDS`` on SeaweedFS's REST catalog; ``AIP_S3_SEEDS=N`` runs seeds 0..N-1 instead (``A-B``: seeds
A..B-1), ``AIP_S3_OPS`` sets the length of a sequence, and ``AIP_S3_CATALOGS=seaweedfs,iceberg-java`` runs each seed
through Iceberg's own REST catalog fixture too (its warehouse on the same S3).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from pyarrow import fs

from spark_jobs import compact as compact_job
from spark_jobs import ingest as ingest_job
from spark_jobs import maintain as maintain_job
from spark_jobs import read as read_job
from tests.support.object_store import SeaweedFS
from tests.support.referenced_files import files_that_must_exist
from tests.support.seeds import draw_weighted, seeds_from_environment
from tests.support.table_model import Row, TableModel, arrow_checksum

pytestmark = [pytest.mark.s3, pytest.mark.spark]

CI_SEEDS = [0]  # v3 partitioned by the awkward strings
OPERATIONS = int(os.environ.get("AIP_S3_OPS", "8"))
SEEDS = seeds_from_environment("AIP_S3_SEEDS", CI_SEEDS, range_separator="-")

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string()), ("n", pa.int64()), ("v", pa.string())])
# Partition values a path or a URI treats specially; None is the null partition.
PARTS = ["a/b", "two words", "50%", "k=v", "1+1", "#tag", "why?", "x&y", "ñandú", "日本", "it's", None, "plain"]


def _bucket(count: int, of: str) -> Callable[[Any], Any]:
    """Iceberg's bucket transform of a string or a long column."""
    from pyiceberg.transforms import BucketTransform
    from pyiceberg.types import LongType, StringType

    return BucketTransform(count).transform(StringType() if of == "part" else LongType())


# Partition specs by weight of interest, and each one's partition of a row (for the model's dynamic overwrite).
SPECS: dict[str, Callable[[Row], Any] | None] = {
    "": None,
    "part": lambda row: row["part"],
    "truncate(2,part)": lambda row: None if row["part"] is None else row["part"][:2],  # code points, not bytes
    "bucket(3,part)": lambda row: _bucket(3, "part")(row["part"]),
    "part,bucket(2,id)": lambda row: (row["part"], _bucket(2, "id")(row["id"])),
}
# A delete written by our jobs on v3 is a deletion vector in a Puffin file; a table bucket of SeaweedFS takes no
# .puffin object, so v3 tables write their data files into an ordinary bucket (as a user of such a catalog does).
V3_DATA_BUCKET = "warehouse"
_batches = itertools.count()


def make_row(i: int, version: int = 0) -> Row:
    """Row ``i``; ``version`` changes every value but the key and the partition (a row keeps its partition)."""
    return {
        "id": i,
        "part": PARTS[i % len(PARTS)],
        "n": None if (i + version) % 7 == 0 else i * 10 + version,
        "v": f"{'pqr'[(i + version) % 3]}-{i}-{version}",
    }


def sql_string(value: str) -> str:
    """A string literal of pyiceberg's filter syntax (a quote doubled)."""
    return "'" + value.replace("'", "''") + "'"


def part_filter(value: str | None) -> tuple[str, Callable[[Row], bool]]:
    """A row filter selecting one partition value, and the same predicate on model rows."""
    if value is None:
        return "part is null", lambda row: row["part"] is None
    return f"part = {sql_string(value)}", lambda row: row["part"] == value


def rows_key(rows: list[Row]) -> list[tuple]:
    """Rows in a comparable order."""
    return sorted(tuple((row[name] is None, row[name] or 0) for name in SCHEMA.names) for row in rows)


@dataclass
class Sequence:
    """One seed's table on S3, the model of its rows, and the operations so far (what a failure prints)."""

    seed: int
    catalog: str
    server: SeaweedFS
    format_version: int
    spec: str
    table: str
    rng: random.Random
    model: TableModel = field(default_factory=lambda: TableModel(SCHEMA))
    log: list[str] = field(default_factory=list)
    next_id: int = 0
    version: int = 0
    strays: set[str] = field(default_factory=set)  # stray objects (bucket/key) still on S3

    @property
    def filesystem(self) -> fs.S3FileSystem:
        return self.server.filesystem()

    @property
    def base(self) -> list[str]:
        return ["--catalog", self.catalog, "--table", self.table]

    def load(self):
        from spark_jobs.engine.table.catalog import load_catalog

        return load_catalog(self.catalog).load_table(self.table)

    def fresh(self, count: int) -> list[int]:
        ids = list(range(self.next_id, self.next_id + count))
        self.next_id += count
        return ids

    def existing_ids(self, count: int) -> list[int]:
        ids = sorted(row["id"] for row in self.model.rows)
        return self.rng.sample(ids, min(count, len(ids)))

    def source(self, batch: list[Row], *, creates: bool = False) -> list[str]:
        """The batch as a Parquet, CSV or JSON file on S3 (Parquet when it creates the table: a text source's types
        are inferred); the ingest arguments that read it."""
        number = next(_batches)
        data = pa.Table.from_pylist(batch, schema=SCHEMA)
        source_format = "parquet" if creates else self.rng.choices(["parquet", "csv", "json"], weights=[3, 1, 1])[0]
        path = f"landing/s3seq/seed{self.seed}/batch-{number}.{source_format}"
        with self.filesystem.open_output_stream(path) as stream:
            if source_format == "parquet":
                pq.write_table(data, stream)
            elif source_format == "csv":
                pacsv.write_csv(data, stream)
            else:
                lines = [json.dumps(row, ensure_ascii=self.rng.random() < 0.5) for row in batch]
                stream.write(("\n".join(lines) + "\n").encode())
        return ["--source", f"s3://{path}", "--source-format", source_format]

    def ingest(self, batch: list[Row], mode: str, *args: str) -> dict[str, Any]:
        source = self.source(batch, creates="--create-if-missing" in args)
        result = ingest_job.main([*self.base, *source, "--mode", mode, *args])
        assert result["status"] == "ok", result
        return result

    # ------------------------------------------------------------------------------------------------ operations
    def create(self) -> None:
        ids = self.fresh(self.rng.randrange(30, 60))
        args = ["--create-if-missing", "--format-version", str(self.format_version)]
        if self.spec:
            args += ["--partition-by", self.spec]
        self.log.append(f"create v{self.format_version} partition-by {self.spec!r}: append ids {ids[0]}..{ids[-1]}")
        if self.format_version >= 3:
            # Created empty first, so that every data file lands in the ordinary bucket.
            self.ingest([make_row(ids[0])], "append", *args)
            table = self.load()
            path = f"s3://{V3_DATA_BUCKET}/s3seq-data/{self.table.replace('.', '/')}"
            table.transaction().set_properties({"write.data.path": path}).commit_transaction()
            self.model.append([make_row(ids[0])])
            ids = ids[1:]
            self.ingest([make_row(i) for i in ids], "append")
        else:
            self.ingest([make_row(i) for i in ids], "append", *args)
        self.model.append([make_row(i) for i in ids])

    def append(self) -> None:
        ids = self.fresh(self.rng.randrange(3, 25))
        self.log.append(f"append ids {ids[0]}..{ids[-1]}")
        self.ingest([make_row(i) for i in ids], "append")
        self.model.append([make_row(i) for i in ids])

    def overwrite_filter(self) -> None:
        self.version += 1
        if self.rng.random() < 0.5:
            low = self.rng.randrange(0, max(1, self.next_id))
            high = low + self.rng.randrange(3, 30)
            text, matches = f"id >= {low} and id < {high}", lambda row: low <= row["id"] < high
            ids = list(range(low, high))
            self.next_id = max(self.next_id, high)  # fresh ids stay fresh
        else:
            text, matches = part_filter(self.rng.choice(PARTS))
            ids = [row["id"] for row in self.model.rows if matches(row)]
        batch = [make_row(i, self.version) for i in ids if self.rng.random() < 0.6 and matches(make_row(i))]
        self.log.append(f"overwrite --overwrite-filter {text!r} with {len(batch)} rows v{self.version}")
        self.ingest(batch, "overwrite", "--overwrite-filter", text)
        self.model.overwrite_where(matches, batch)

    def overwrite_dynamic(self) -> None:
        partition_of = SPECS[self.spec]
        if partition_of is None:
            return self.overwrite_filter()
        ids = self.fresh(self.rng.randrange(2, 12))
        batch = [make_row(i) for i in ids if self.rng.random() < 0.7]
        if not batch:
            return None
        self.log.append(f"overwrite (dynamic) ids {[row['id'] for row in batch]}")
        self.ingest(batch, "overwrite")
        self.model.overwrite_partitions(partition_of, batch)
        return None

    def row_level(self, mode: str) -> None:
        delete_mode = self.rng.choice(["position", "equality"])
        existing = self.existing_ids(self.rng.randrange(1, 15))
        if mode == "upsert":
            self.version += 1
            batch = [make_row(i, self.version) for i in existing + self.fresh(self.rng.randrange(0, 4))]
        else:
            batch = [make_row(i) for i in [*existing, self.next_id + 1000]]  # one key the table lacks
        ids = sorted(row["id"] for row in batch)
        self.log.append(f"{mode} --delete-mode {delete_mode} ids {ids} v{self.version}")
        self.ingest(batch, mode, "--key", "id", "--delete-mode", delete_mode)
        if mode == "upsert":
            self.model.upsert(batch, ["id"])
        else:
            self.model.delete(batch, ["id"])

    def compact(self) -> None:
        args = [*self.base, "--min-input-files", self.rng.choice(["1", "2"])]
        if self.rng.random() < 0.5:
            args += ["--strategy", "sort", "--sort-order", self.rng.choice(["id desc", "part, id", "n nulls first"])]
        if self.rng.random() < 0.6:
            args += ["--rewrite-all"]
        if self.rng.random() < 0.4:
            args += ["--where", part_filter(self.rng.choice(PARTS))[0]]
        if self.rng.random() < 0.3:
            args += ["--partial-progress", "--max-commits", self.rng.choice(["1", "3"])]
        if self.rng.random() < 0.3:
            args += ["--target-file-size-bytes", "1500"]  # several output files per group
        self.log.append(f"compact {' '.join(args[4:])}")
        assert compact_job.main(args)["status"] == "ok"

    def rewrite_position_deletes(self) -> None:
        args = ["rewrite-position-deletes", *self.base, *self.rng.choice([["--rewrite-all"], []])]
        self.log.append(f"maintain {' '.join(args[:1] + args[5:])}")
        assert maintain_job.main(args)["status"] == "ok"

    def rewrite_manifests(self) -> None:
        self.log.append("maintain rewrite-manifests")
        assert maintain_job.main(["rewrite-manifests", *self.base])["status"] == "ok"

    def expire(self) -> None:
        keep = self.rng.randrange(1, 4)
        dry = self.rng.random() < 0.2
        self.log.append(f"maintain expire-snapshots --retain-last {keep}{' --dry-run' if dry else ''}")
        older_than = str(int(time.time() * 1000) + 1)
        args = ["expire-snapshots", *self.base, "--older-than", older_than, "--retain-last", str(keep)]
        before = self.load().metadata_location
        assert maintain_job.main(args + (["--dry-run"] if dry else []))["status"] == "ok"
        if dry:
            assert self.load().metadata_location == before, "a dry run of expire-snapshots committed"
        live = {snapshot.snapshot_id for snapshot in self.load().snapshots()}
        self.model.history = {key: rows for key, rows in self.model.history.items() if key in live}

    def stray_folders(self) -> list[str]:
        """Folders (bucket/key) under the table location where strays go: the folders of its data files there,
        partition folders of awkward values, the data and metadata folders. (Orphan removal lists the table location
        only, as Iceberg Java's does: a v3 table's data folder elsewhere is not searched.)"""
        from spark_jobs.engine.maintenance.reachable_files import live_content_files, manifests_of

        table = self.load()
        location = table.location().removeprefix("s3://").rstrip("/")
        snapshot = table.current_snapshot()
        manifests = manifests_of([snapshot] if snapshot is not None else [], table.io)
        files = [path.removeprefix("s3://") for path in live_content_files(manifests.values(), table.io)]
        folders = {path.rsplit("/", 1)[0] for path in files if path.startswith(location + "/")}
        folders |= {f"{location}/data", f"{location}/metadata", f"{location}/data/part=%23tag"}
        return sorted(folders)

    @staticmethod
    def stray_name(folder: str, tag: str = "old") -> str:
        """A stray file in ``folder`` named as the folder's files are (a table bucket takes no other names there)."""
        suffix = "avro" if folder.endswith("/metadata") else "parquet"
        return f"{folder}/stray-{next(_batches)}-{tag}.{suffix}"

    def remove_orphans(self) -> None:
        folders = self.stray_folders()
        old = [self.stray_name(self.rng.choice(folders)) for _ in range(self.rng.randrange(1, 4))]
        for path in old:
            with self.filesystem.open_output_stream(path) as stream:
                stream.write(b"not a data file")
        self.strays.update(old)
        time.sleep(1.1)
        cutoff = int(time.time() * 1000)
        time.sleep(1.1)  # S3 keeps modification times in seconds: the young stray is clearly newer
        young = self.stray_name(self.rng.choice(folders), "young")
        with self.filesystem.open_output_stream(young) as stream:
            stream.write(b"a file of a write in progress")
        dry = self.rng.random() < 0.3
        if self.rng.random() < 0.15:  # the default cutoff (3 days ago): every stray is younger, none is listed
            self.log.append("maintain remove-orphan-files (default cutoff)")
            result = maintain_job.main(["remove-orphan-files", *self.base])
            assert result["status"] == "ok" and result["orphan_file_locations"] == [], result
            assert all(self.exists(path) for path in (*self.strays, young)), "a young stray was removed"
            self.strays.add(young)
            return
        args = ["remove-orphan-files", *self.base, "--older-than", str(cutoff), "--allow-short-retention"]
        self.log.append(f"maintain remove-orphan-files{' --dry-run' if dry else ''}: strays {sorted(self.strays)}")
        result = maintain_job.main(args + (["--dry-run"] if dry else []))
        assert result["status"] == "ok", result
        listed = {location.removeprefix("s3://") for location in result["orphan_file_locations"]}
        assert listed == self.strays, f"orphans listed {sorted(listed)}, strays older than the cutoff {self.strays}"
        present = {path for path in (*self.strays, young) if self.exists(path)}
        if dry:
            assert present == {*self.strays, young}, f"a dry run removed {sorted({*self.strays, young} - present)}"
        else:
            assert present == {young}, f"left {sorted(present)}; expected only the young stray {young}"
            self.strays = set()
        self.strays.add(young)

    def read(self) -> None:
        """The read job on a remembered snapshot, a tag, a time or the current table: rows to S3 (read back and
        compared), ``--count`` or ``--aggregate``."""
        table = self.load()
        live = [s.snapshot_id for s in table.snapshots() if s.snapshot_id in self.model.history]
        snapshot_id = self.rng.choice(live)
        rows = self.model.history[snapshot_id]
        args = [*self.base]
        how = self.rng.choice(["snapshot", "tag", "as-of", "current"])
        if how == "snapshot":
            args += ["--snapshot-id", str(snapshot_id)]
        elif how == "tag":
            tag = f"tag-{next(_batches)}"
            table.manage_snapshots().create_tag(snapshot_id, tag).commit()
            args += ["--ref", tag]
        elif how == "as-of":
            # A time of main's log that names one remembered snapshot (the next entry is later).
            log = table.metadata.snapshot_log
            times = [
                (entry.timestamp_ms, entry.snapshot_id)
                for index, entry in enumerate(log)
                if entry.snapshot_id in live
                and (index + 1 == len(log) or log[index + 1].timestamp_ms > entry.timestamp_ms)
            ]
            if times:
                at, snapshot_id = self.rng.choice(times)
                rows = self.model.history[snapshot_id]
                args += ["--as-of", str(at)]
            else:
                args += ["--snapshot-id", str(snapshot_id)]
        else:
            rows = self.model.rows
        what = self.rng.choices(["output", "count", "aggregate"], weights=[3, 1, 1])[0]
        if what == "count":
            self.log.append(f"read --count {' '.join(args[4:])}")
            result = read_job.main([*args, "--count"])
            assert result["count"] == len(rows), (result, len(rows))
            return
        if self.rng.random() < 0.6:
            text, matches = part_filter(self.rng.choice(PARTS))
            if self.rng.random() < 0.4:
                text = f"{text} or id < 5"
                matches = lambda row, selects=matches: selects(row) or row["id"] < 5  # noqa: E731
            args += ["--filter", text]
            rows = [row for row in rows if matches(row)]
        if what == "aggregate":
            self.log.append(f"read --aggregate {' '.join(args[4:])}")
            result = read_job.main([*args, "--aggregate", "count(*),count(n),sum(n),min(id),max(v)"])
            values = [row["n"] for row in rows if row["n"] is not None]
            expected = {
                "count(*)": len(rows),
                "count(n)": len(values),
                "sum(n)": sum(values) if values else None,
                "min(id)": min((row["id"] for row in rows), default=None),
                "max(v)": max((row["v"] for row in rows), default=None),
            }
            assert result["aggregates"] == expected, (result["aggregates"], expected)
            return
        output_format = self.rng.choice(["parquet", "csv"])
        output = f"s3://warehouse/s3seq-exports/seed{self.seed}/read-{next(_batches)}"
        self.log.append(f"read {' '.join(args[4:])} to {output_format}")
        result = read_job.main([*args, "--output", output, "--output-format", output_format])
        assert result["status"] == "ok" and result["rows_out"] == len(rows), (result, len(rows))
        assert rows_key(self.read_output(output, output_format)) == rows_key(rows)

    def read_output(self, uri: str, output_format: str) -> list[Row]:
        root = uri.removeprefix("s3://")
        infos = self.filesystem.get_file_info(fs.FileSelector(root, recursive=True))
        assert "_SUCCESS" in {info.base_name for info in infos}, f"{uri} has no _SUCCESS"
        rows: list[Row] = []
        for info in infos:
            if not info.base_name.startswith("part-"):
                continue
            with self.filesystem.open_input_file(info.path) as stream:
                if output_format == "csv":
                    options = pacsv.ConvertOptions(column_types=SCHEMA, strings_can_be_null=False)
                    data = pacsv.read_csv(stream, convert_options=options)
                else:
                    data = pq.read_table(stream)
            rows += data.select(SCHEMA.names).cast(SCHEMA).to_pylist()
        if output_format == "csv":  # CSV writes a null string as an empty field
            rows = [{**row, "part": row["part"] or None} for row in rows]
        return rows

    # ------------------------------------------------------------------------------------------------ checks
    def exists(self, path: str) -> bool:
        return self.filesystem.get_file_info(path).type == fs.FileType.File

    def step(self) -> None:
        operations: list[tuple[Callable[[], Any], int]] = [
            (self.append, 3),
            (self.overwrite_filter, 2),
            (self.overwrite_dynamic, 2),
            (lambda: self.row_level("upsert"), 4),
            (lambda: self.row_level("delete"), 3),
            (self.compact, 2),
            (self.rewrite_position_deletes, 1),
            (self.rewrite_manifests, 1),
            (self.expire, 1),
            (self.remove_orphans, 1),
            (self.read, 3),
        ]
        operation = draw_weighted(self.rng, operations)
        operation()
        self.check()

    def check(self) -> None:
        """The engine reads the model's rows; every file the metadata references exists on S3."""
        from spark_jobs.engine.read.session import open_read_session

        table = self.load()
        data = open_read_session(self.catalog, table).to_arrow().select(SCHEMA.names)
        got = arrow_checksum(data.cast(SCHEMA), SCHEMA.names)
        expected = self.model.checksum()
        if got != expected:
            raise AssertionError(f"engine read {got['rows']} rows, model has {expected['rows']}: {got} != {expected}")
        snapshot = table.current_snapshot()
        if snapshot is not None:
            self.model.remember(snapshot.snapshot_id)
        locations = files_that_must_exist(table)
        missing = sorted(location for location in locations if not self.exists(location.removeprefix("s3://")))
        assert not missing, f"files the metadata references are missing on S3: {missing}"


@pytest.fixture(scope="module")
def java_rest_catalog(seaweedfs: SeaweedFS) -> Iterator[str]:
    """Catalog ``s3seqjava``: Iceberg's REST fixture on 127.0.0.1, its warehouse on SeaweedFS S3."""
    from tests.support import iceberg_rest_fixture, object_store

    properties = seaweedfs.s3_properties()
    with iceberg_rest_fixture.running("s3://warehouse/s3seq-java-rest", properties) as server:
        environment = object_store.catalog_env("s3seqjava", {"type": "rest", "uri": server.uri, **properties})
        os.environ.update(environment)
        yield "s3seqjava"
        for key in environment:
            os.environ.pop(key, None)


# SeaweedFS's REST catalog in CI; ``AIP_S3_CATALOGS=seaweedfs,iceberg-java`` adds Iceberg's own REST fixture.
CATALOGS = os.environ.get("AIP_S3_CATALOGS", "seaweedfs").split(",")
CATALOG_FIXTURES = {"seaweedfs": "s3_rest_catalog", "iceberg-java": "java_rest_catalog"}


@pytest.mark.usefixtures("spark")
@pytest.mark.parametrize("catalog_kind", CATALOGS)
@pytest.mark.parametrize("seed", SEEDS, ids=lambda seed: f"seed{seed}")
def test_s3_sequences(request, catalog_kind: str, seed: int, caplog, capsys) -> None:
    from spark_jobs.engine.table.catalog import load_catalog

    seaweedfs: SeaweedFS = request.getfixturevalue("seaweedfs")
    catalog = request.getfixturevalue(CATALOG_FIXTURES[catalog_kind])
    caplog.set_level(logging.INFO)
    rng = random.Random(seed)
    format_version, spec = rng.choice([2, 3]), rng.choice(list(SPECS))
    namespace = "s3seq"
    load_catalog(catalog).create_namespace_if_not_exists(namespace)
    sequence = Sequence(seed, catalog, seaweedfs, format_version, spec, f"{namespace}.seed{seed}", rng)
    try:
        sequence.create()
        sequence.check()
        for _ in range(OPERATIONS):
            sequence.step()
        # No secret in anything the jobs logged or printed.
        output = caplog.text + capsys.readouterr().out
        for what, secret in (("S3 secret key", seaweedfs.secret_key), ("REST credential", seaweedfs.access_key + ":")):
            assert secret not in output, f"the {what} appears in the jobs' output"
    except Exception as error:
        steps = "\n".join(f"  {i}. {line}" for i, line in enumerate(sequence.log))
        raise AssertionError(
            f"S3 sequence failed: AIP_S3_SEEDS={seed}-{seed + 1} (AIP_S3_OPS={OPERATIONS}), catalog {catalog_kind}, "
            f"table {sequence.table}, v{format_version}, partition-by {spec!r}; operations:\n{steps}\nerror: {error!r}"
        ) from error
