"""The ingest job under commit faults, on real SQLite and PostgreSQL catalogs.

Every phase is tried with ``append``; every mode is tried with the two endings that differ for the job: a commit
that certainly failed (the manifest list write fails) and one whose outcome is unknown although it landed (the
call raises after landing and the table cannot be reloaded). ``test_commit_faults`` tries every phase on the
change each mode commits, without Spark. The engine runs in this process on the shared local Spark session; the
catalog is a real SQL catalog whose calls fail as planned (``tests.support.faults``).

After each fault: the table reads, its rows are the model's (the change applied once when it landed, not at all
otherwise), and every file the job wrote is referenced by the table, listed in a pending commit record, or named in
the job's error or log. An unknown outcome is settled by a retry
with the same idempotency key: the change ends up applied exactly once and nothing is left over.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass

import pyarrow as pa
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.commit.committer import CommitOutcomeUnknownError
from spark_jobs.engine.commit.pending_commits import read_pending_records
from spark_jobs.engine.table.catalog import load_catalog
from spark_jobs.spark.ingest import IngestOptions, ingest
from tests.spark_jobs.faults.conftest import QUICK_RETRIES
from tests.spark_jobs.faults.phases import PHASE_IDS, PHASES, Phase
from tests.support import faults
from tests.support.fault_checks import files_under, rows_by_id, unaccounted_files, unreferenced_new_files

pytestmark = pytest.mark.spark

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "category", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="category"))
INITIAL = {i: (f"v0-{i}", "ab"[i % 2]) for i in range(8)}
_names = itertools.count()


@dataclass(frozen=True)
class Mode:
    """An ingest mode, its batch, and the model of what it does to the rows."""

    name: str
    options: dict
    batch: dict[int, tuple[str, str]]

    def apply(self, rows: dict[int, tuple]) -> dict[int, tuple]:
        """The rows after this ingest landed once."""
        mode = self.options["mode"]
        if mode == "append":
            return {**rows, **self.batch}
        if mode == "overwrite" and "overwrite_filter" in self.options:  # category = 'a'
            return {**{i: r for i, r in rows.items() if r[1] != "a"}, **self.batch}
        if mode == "overwrite":  # the batch's partitions replaced
            categories = {row[1] for row in self.batch.values()}
            return {**{i: r for i, r in rows.items() if r[1] not in categories}, **self.batch}
        if mode == "upsert":
            return {**rows, **self.batch}
        return {i: r for i, r in rows.items() if i not in self.batch}


MODES = [
    Mode("append", {"mode": "append"}, {100: ("new", "a"), 101: ("new", "b")}),
    Mode("overwrite-filter", {"mode": "overwrite", "overwrite_filter": "category = 'a'"}, {100: ("new", "a")}),
    Mode("overwrite-dynamic", {"mode": "overwrite"}, {100: ("new", "a"), 102: ("new", "a")}),
    Mode("upsert-position", {"mode": "upsert", "key": ("id",)}, {1: ("v1", "b"), 2: ("v1", "a"), 100: ("new", "a")}),
    Mode(
        "upsert-equality",
        {"mode": "upsert", "key": ("id",), "delete_mode": "equality"},
        {1: ("v1", "b"), 2: ("v1", "a"), 100: ("new", "a")},
    ),
    Mode("delete-position", {"mode": "delete", "key": ("id",)}, {1: ("", "b"), 2: ("", "a")}),
    Mode(
        "delete-equality",
        {"mode": "delete", "key": ("id",), "delete_mode": "equality"},
        {1: ("", "b"), 4: ("", "a")},
    ),
]


def _new_table(catalog_name: str) -> str:
    catalog = load_catalog(catalog_name)
    catalog.create_namespace_if_not_exists("faults")
    identifier = f"faults.t{next(_names)}"
    table = catalog.create_table(identifier, SCHEMA, partition_spec=SPEC, properties=QUICK_RETRIES)
    ids = sorted(INITIAL)
    table.append(
        pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "name": [INITIAL[i][0] for i in ids],
                "category": [INITIAL[i][1] for i in ids],
            }
        )
    )
    return identifier


def _ingest(spark, catalog_name: str, identifier: str, mode: Mode) -> dict:
    frame = spark.createDataFrame(
        [(i, name, category) for i, (name, category) in sorted(mode.batch.items())],
        "id long, name string, category string",
    )
    return ingest(spark, catalog_name, identifier, frame, IngestOptions(**mode.options, idempotency_key="run-1"))


def _run_under_fault(spark, catalog_name, identifier, mode, phase, caplog):  # noqa: PLR0917
    """The ingest's result or error under ``phase``'s faults (which must have fired)."""
    plan = faults.reset_plan(**phase.plan)
    caplog.clear()
    try:
        with caplog.at_level(logging.WARNING):
            return _ingest(spark, catalog_name, identifier, mode), None
    except Exception as error:  # the caller inspects it
        return None, error
    finally:
        faults.reset_plan()
        assert plan.fired, f"no fault of {phase.name} fired"


def check_fault(spark, catalog_name: str, mode: Mode, phase: Phase, caplog) -> None:
    """Run ``mode`` under ``phase``'s fault and check everything the module doc promises."""
    identifier = _new_table(catalog_name)
    table = load_catalog(catalog_name).load_table(identifier)
    before = files_under(table)
    result, error = _run_under_fault(spark, catalog_name, identifier, mode, phase, caplog)

    if phase.ends == "ok":
        assert error is None, f"{phase.name}: the ingest failed: {error!r}"
        assert result["snapshot_id"] is not None and not result["already_committed"]
    elif phase.ends == "unknown":
        assert isinstance(error, CommitOutcomeUnknownError), f"{phase.name}: expected an unknown outcome: {error!r}"
        message = str(error)
        assert identifier in message and str(error.snapshot_id) in message and error.record_location in message
        assert "\n" not in message
    else:
        assert error is not None and not isinstance(error, CommitOutcomeUnknownError), f"{phase.name}: {error!r}"

    expected = mode.apply(INITIAL) if phase.lands else INITIAL
    assert rows_by_id(catalog_name, identifier) == expected
    reported = f"{error}\n{caplog.text}"
    assert unaccounted_files(table, before, reported) == set()
    if phase.ends == "error" and not phase.plan.get("deletes_failing"):
        assert unreferenced_new_files(table, before) == set(), "a commit that certainly failed left files behind"
    if phase.ends == "ok":
        assert unreferenced_new_files(table, before) == set()

    if phase.ends == "unknown":
        retried = _ingest(spark, catalog_name, identifier, mode)
        assert retried["already_committed"] == phase.lands
        assert rows_by_id(catalog_name, identifier) == mode.apply(INITIAL)
        table.refresh()
        assert read_pending_records(table) == {}, "the retry did not settle the pending commit record"
        assert unreferenced_new_files(table, before) == set()


ENDINGS = [p for p in PHASES if p.name in ("manifest list write", "call raising after it landed, no reload")]


@pytest.mark.parametrize("phase", ENDINGS, ids=[phase.name.replace(" ", "-") for phase in ENDINGS])
@pytest.mark.parametrize("mode", MODES, ids=[mode.name for mode in MODES])
def test_every_mode_under_a_certain_and_an_unknown_commit_failure(spark, sqlite_faulty_catalog, mode, phase, caplog):
    check_fault(spark, sqlite_faulty_catalog, mode, phase, caplog)


@pytest.mark.parametrize("phase", [phase for phase in PHASES if phase not in ENDINGS], ids=lambda phase: phase.name)
def test_an_append_under_a_fault_at_each_other_phase(spark, sqlite_faulty_catalog, phase, caplog) -> None:
    check_fault(spark, sqlite_faulty_catalog, MODES[0], phase, caplog)


@pytest.mark.postgres
@pytest.mark.parametrize("phase", PHASES, ids=PHASE_IDS)
def test_an_append_under_a_fault_at_each_phase_on_postgres(spark, postgres_faulty_catalog, phase, caplog) -> None:
    check_fault(spark, postgres_faulty_catalog, MODES[0], phase, caplog)
