"""The ingest job on S3 behind a REST catalog whose commits fail: refused, reply lost, connection dropped, reloads
failing, the job killed while its commit is in flight.

The catalog is SeaweedFS's Iceberg REST behind a proxy that fails chosen requests (``tests.support.rest_fault_proxy``);
the warehouse is SeaweedFS's S3. Every job runs with an ``--idempotency-key``. After each fault:

1. the table reads the model's rows: the change applied once if its commit landed, not at all otherwise (no
   partial snapshot);
2. every file the metadata references exists on S3, and every file there before the job still is (no committed
   file deleted);
3. a file the job left on S3 that nothing references is named in what the job reported (its error or its log);
4. a retry with the same idempotency key applies the change exactly once;
5. no S3 key, REST credential or bearer token appears in the job's output, its log, its error, or the command line
   of any process it started.

CI tries some of the faults (``CI_CASES``, a job killed after its commit landed); ``AIP_S3_FAULTS=all`` tries all.
"""

from __future__ import annotations

import itertools
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import fs

from spark_jobs import ingest as ingest_job
from tests.support import object_store
from tests.support.object_store import SeaweedFS
from tests.support.referenced_files import files_that_must_exist
from tests.support.rest_fault_proxy import LOAD, Fault, RestFaultProxy
from tests.support.services import spark_process_env
from tests.support.table_model import Row, TableModel

pytestmark = [pytest.mark.s3, pytest.mark.spark]

CATALOG = "s3restfaulty"
SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string()), ("v", pa.string())])
PARTS = ["a/b", "50%", "#tag", "why?", "ñ", None]
QUICK_RETRIES = {
    "commit.retry.num-retries": "2",
    "commit.retry.min-wait-ms": "1",
    "commit.status-check.num-retries": "1",
    "commit.status-check.min-wait-ms": "1",
    "commit.status-check.max-wait-ms": "10",
}
_names = itertools.count()


@pytest.fixture(scope="module")
def faulty_rest(seaweedfs: SeaweedFS) -> Iterator[tuple[RestFaultProxy, dict[str, str]]]:
    """Catalog ``s3restfaulty``: SeaweedFS's REST catalog behind the fault proxy; the proxy and the secrets."""
    proxy = RestFaultProxy(seaweedfs.rest_uri)
    properties = {**seaweedfs.rest_catalog_properties(), "uri": proxy.url}
    environment = object_store.catalog_env(CATALOG, properties)
    os.environ.update(environment)
    secrets = {"s3 secret key": seaweedfs.secret_key, "rest credential": properties["credential"]}
    yield proxy, secrets
    for key in environment:
        os.environ.pop(key, None)
    proxy.stop()


def rows(ids: range | list[int], version: int) -> list[Row]:
    return [{"id": i, "part": PARTS[i % len(PARTS)], "v": f"v{version}-{i}"} for i in ids]


class FaultTable:
    """A table on S3, the model of its rows, and the checks after a fault."""

    def __init__(self, seaweedfs: SeaweedFS) -> None:
        from spark_jobs.engine.table.catalog import load_catalog

        self.seaweedfs = seaweedfs
        self.filesystem = seaweedfs.filesystem()
        self.name = f"faults.t{next(_names)}_{os.getpid()}"
        self.model = TableModel(SCHEMA)
        load_catalog(CATALOG).create_namespace_if_not_exists("faults")

    def source(self, batch: list[Row]) -> str:
        path = f"landing/faults/{self.name}-{time.time_ns()}.parquet"
        with self.filesystem.open_output_stream(path) as stream:
            pq.write_table(pa.Table.from_pylist(batch, schema=SCHEMA), stream)
        return f"s3://{path}"

    def argv(self, batch: list[Row], mode: str, key: str, *extra: str) -> list[str]:
        base = ["--catalog", CATALOG, "--table", self.name, "--source", self.source(batch), "--mode", mode]
        return [*base, "--idempotency-key", key, *extra]

    def create(self) -> None:
        from spark_jobs.engine.table.catalog import load_catalog

        batch = rows(range(30), 0)
        ingest_job.main([*self.argv(batch, "append", "create"), "--create-if-missing", "--partition-by", "part"])
        table = load_catalog(CATALOG).load_table(self.name)
        table.transaction().set_properties(QUICK_RETRIES).commit_transaction()
        self.model.append(batch)

    def load(self):
        from spark_jobs.engine.table.catalog import load_catalog

        return load_catalog(CATALOG).load_table(self.name)

    def objects(self) -> set[str]:
        """Every object (bucket/key) under the table location."""
        root = self.load().location().removeprefix("s3://")
        selector = fs.FileSelector(root, recursive=True)
        return {info.path for info in self.filesystem.get_file_info(selector) if info.type == fs.FileType.File}

    def referenced(self) -> set[str]:
        return {location.removeprefix("s3://") for location in files_that_must_exist(self.load())}

    def check(self, before: set[str], reported: str) -> None:
        """The checks 1-3 of the module doc."""
        from spark_jobs.engine.read.session import open_read_session

        data = open_read_session(CATALOG, self.name).to_arrow().select(SCHEMA.names)
        got = sorted(data.to_pylist(), key=lambda row: row["id"])
        assert got == sorted(self.model.rows, key=lambda row: row["id"]), "the table's rows are not the model's"
        now = self.objects()
        referenced = self.referenced()
        assert referenced <= now, f"referenced files missing on S3: {sorted(referenced - now)}"
        assert before <= now, f"files deleted: {sorted(before - now)}"
        unreported = [path for path in now - before - referenced if path.rsplit("/", 1)[-1] not in reported]
        assert not unreported, f"files left on S3 that nothing references or reports: {unreported}"


def assert_no_secret(text: str, secrets: dict[str, str], tokens: set[str]) -> None:
    for what, secret in [*secrets.items(), *(("bearer token", token) for token in tokens)]:
        assert secret not in text, f"the {what} appears in the job's output"


# (fault, whether the commit lands, whether the job's own run settles it)
CASES = {
    "refused_503": ([Fault("refuse", status=503)], False, True),
    "refused_500": ([Fault("refuse", status=500)], False, True),
    "reply_lost_504": ([Fault("lose_reply", status=504)], True, True),
    "connection_dropped": ([Fault("drop")], True, True),
    "reply_lost_and_reloads_failing": (
        [Fault("lose_reply", status=502), Fault("refuse", method="GET", path=LOAD, status=503, times=50, after=1)],
        True,
        False,
    ),
    "refused_500_and_reloads_failing": (
        [Fault("refuse", status=500), Fault("refuse", method="GET", path=LOAD, status=503, times=50, after=1)],
        False,
        False,
    ),
}


# CI tries the three endings that differ (landed and decided, landed and undecided, not landed and undecided) and
# kills one job; ``AIP_S3_FAULTS=all`` tries every case.
ALL_FAULTS = os.environ.get("AIP_S3_FAULTS") == "all"
CI_CASES = ("reply_lost_504", "reply_lost_and_reloads_failing", "refused_500_and_reloads_failing")


def test_commit_faults_through_rest_on_s3(
    spark, seaweedfs: SeaweedFS, faulty_rest: tuple[RestFaultProxy, dict[str, str]], caplog, capsys
) -> None:
    """Each fault in turn on one table: an upsert (position deletes) with an idempotency key, then its retry."""
    proxy, secrets = faulty_rest
    table = FaultTable(seaweedfs)
    table.create()
    caplog.set_level(logging.INFO)
    for number, (case, (planned, lands, settles)) in enumerate(CASES.items(), start=1):
        if not ALL_FAULTS and case not in CI_CASES:
            continue
        batch = rows([*range(number, 30, 5), 100 + number], number)
        key = f"run-{case}"
        before = table.objects()
        plan = proxy.arm(*[Fault(**vars(fault)) for fault in planned])
        caplog.clear()
        error: BaseException | None = None
        try:
            result = ingest_job.main(table.argv(batch, "upsert", key, "--key", "id"))
        except Exception as raised:  # the outcome of the fault is what is checked
            error = raised
        seen, tokens = list(plan.log), set(plan.tokens)
        proxy.arm()  # no fault from here on: the checks and the retry reach the catalog
        assert any(outcome.startswith(planned[0].kind) for _, _, outcome in seen), (case, seen)
        if settles:
            assert error is None, f"{case}: the job did not settle the fault itself: {error!r}"
            assert result["status"] == "ok" and not result["already_committed"], (case, result)
        else:
            assert error is not None and "outcome unknown" in str(error), (case, error)
        if lands or settles:
            table.model.upsert(batch, ["id"])
        reported = f"{error}\n{caplog.text}"
        assert_no_secret(reported + capsys.readouterr().out, secrets, tokens)
        table.check(before, reported)
        # The retry: the change applied exactly once.
        result = ingest_job.main(table.argv(batch, "upsert", key, "--key", "id"))
        assert result["status"] == "ok", (case, result)
        assert result["already_committed"] == (lands or settles), (case, result)
        if not (lands or settles):
            table.model.upsert(batch, ["id"])
        table.check(before, f"{reported}\n{caplog.text}")
        assert_no_secret(caplog.text + capsys.readouterr().out, secrets, tokens | plan.tokens)


_KILLED_JOB = """
import sys
sys.path.insert(0, {root!r})
from pyspark.sql import SparkSession
SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false") \\
    .config("spark.driver.host", "127.0.0.1").getOrCreate()
from spark_jobs import ingest
print(ingest.main(sys.argv[1:]), flush=True)
"""


@pytest.mark.parametrize(
    "forwarded",
    [True, False] if ALL_FAULTS else [True],
    ids=lambda forwarded: "commit_landed" if forwarded else "commit_not_sent",
)
def test_a_job_killed_while_its_commit_is_in_flight(
    spark, seaweedfs: SeaweedFS, faulty_rest: tuple[RestFaultProxy, dict[str, str]], forwarded: bool
) -> None:
    """The job's process killed while the catalog holds its commit reply; then a retry with the same key."""
    proxy, secrets = faulty_rest
    table = FaultTable(seaweedfs)
    table.create()
    batch = rows([*range(0, 30, 4), 200], 1)
    before = table.objects()
    plan = proxy.arm(Fault("hold", forward=forwarded))
    root = str(Path(__file__).resolve().parents[2])
    argv = table.argv(batch, "upsert", "killed-run", "--key", "id")
    job = subprocess.Popen(
        [sys.executable, "-c", _KILLED_JOB.format(root=root), *argv],
        env=spark_process_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert plan.held.wait(120), f"the job's commit never reached the catalog: {plan.log}"
        command_lines = [
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            for pid in _process_tree(job.pid)
        ]
        os.killpg(job.pid, signal.SIGKILL)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
        output = job.communicate(timeout=60)[0]
        plan.release.set()
    assert len(command_lines) >= 2, command_lines  # the job and its JVM
    assert_no_secret("\n".join(command_lines) + output, secrets, plan.tokens)
    if forwarded:
        table.model.upsert(batch, ["id"])
    # A killed job reports nothing: what it left unreferenced is an orphan for orphan removal; the table is intact.
    table.check(before, table.objects().__repr__())
    proxy.arm()
    result = ingest_job.main(argv)
    assert result["status"] == "ok" and result["already_committed"] == forwarded, result
    if not forwarded:
        table.model.upsert(batch, ["id"])
    table.check(before, table.objects().__repr__())


def _process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    tree, queue = [], [pid]
    while queue:
        current = queue.pop()
        tree.append(current)
        queue.extend(children.get(current, []))
    return tree
