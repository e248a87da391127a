"""Demo pipeline of README command 1: every job of the provider on one table, then a short report.

1. generate: write an initial batch, a second batch, a batch of updates (changed rows and new ids) and a batch of
   ids to delete, as Parquet files.
2. ingest: append both batches (several small files), upsert the updates (position delete files), delete the ids
   (equality delete files): merge-on-read, one snapshot each.
3. read: export the current snapshot and the first snapshot (time travel) with the read job.
4. compact: rewrite the small files with their deletes folded in (a ``replace`` snapshot).
5. report: rows at each snapshot, data and delete files before and after compaction, time of each step; it fails
   when a count is not the one the generated data implies.

Runs on the embedded default (SQLite SQL catalog, local warehouse, Spark ``local[*]``) with
``airflow dags test iceberg_demo_pipeline``; ``scripts/demo.sh`` sets that up.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from airflow.sdk import dag, task

from airflow_iceberg_provider.operators.compact import IcebergCompactOperator
from airflow_iceberg_provider.operators.ingest import IcebergIngestOperator
from airflow_iceberg_provider.operators.read import IcebergReadOperator
from airflow_iceberg_provider.settings import ProviderSettings

SETTINGS = ProviderSettings.from_environment()
TABLE = f"{SETTINGS.namespace}.events"
WORK_ROOT = Path(SETTINGS.output_root)
ROWS_PER_BATCH = int(os.environ.get("ICEBERG_DEMO_ROWS", "100000"))
UPDATED_ROWS = ROWS_PER_BATCH // 20  # existing ids whose rows change
NEW_ROWS_IN_UPSERT = ROWS_PER_BATCH // 100  # ids the upsert inserts
DELETED_ROWS = ROWS_PER_BATCH // 50  # ids deleted by key
# The logger of the report's lines in the task log (scripts/demo_progress.py prints them on the demo's console).
REPORT_LOGGER = "iceberg_demo.report"
STEP_TASKS = ("ingest_first", "ingest_second", "upsert", "delete", "read_current", "read_first_snapshot", "compact")


def _ingest(task_id: str, source: str, mode: str, **options) -> IcebergIngestOperator:
    return IcebergIngestOperator(
        task_id=task_id,
        catalog=SETTINGS.catalog,
        table=TABLE,
        source=source,
        source_format="parquet",
        mode=mode,
        **options,
    )


@dag(schedule=None, start_date=datetime(2026, 1, 1), catchup=False, tags=["iceberg", "demo"])
def iceberg_demo_pipeline() -> None:
    """Generate -> append twice -> upsert -> delete -> read now and at the first snapshot -> compact -> report."""

    @task
    def generate() -> dict:
        """Write the demo's input batches and start from an empty table."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.parquet as pq
        from pyiceberg.catalog import load_catalog

        catalog = load_catalog(SETTINGS.catalog)
        catalog.create_namespace_if_not_exists(SETTINGS.namespace)
        if catalog.table_exists(TABLE):
            catalog.drop_table(TABLE)
        rng = np.random.default_rng(7)
        source = WORK_ROOT / "source"
        source.mkdir(parents=True, exist_ok=True)

        def rows(ids: np.ndarray) -> pa.Table:
            count = len(ids)
            return pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "category": pa.array(rng.choice(["a", "b", "c", "d"], count)),
                    "qty": pa.array(rng.integers(0, 1000, count, dtype=np.int32)),
                    "price": pa.array(np.round(rng.random(count) * 100, 2)),
                }
            )

        first_ids = np.arange(0, ROWS_PER_BATCH)
        second_ids = np.arange(ROWS_PER_BATCH, 2 * ROWS_PER_BATCH)
        updated_ids = rng.choice(2 * ROWS_PER_BATCH, UPDATED_ROWS, replace=False)
        new_ids = np.arange(2 * ROWS_PER_BATCH, 2 * ROWS_PER_BATCH + NEW_ROWS_IN_UPSERT)
        remaining = np.setdiff1d(np.arange(2 * ROWS_PER_BATCH), updated_ids)
        deleted_ids = rng.choice(remaining, DELETED_ROWS, replace=False)
        batches = {
            "first": rows(first_ids),
            "second": rows(second_ids),
            "upsert": rows(np.concatenate([updated_ids, new_ids])),
            "delete": pa.table({"id": pa.array(deleted_ids, pa.int64())}),
        }
        for name, batch in batches.items():
            (source / name).mkdir(exist_ok=True)
            # Several files per batch, so compaction has small files to pack.
            for part, offset in enumerate(range(0, batch.num_rows, max(batch.num_rows // 4, 1))):
                pq.write_table(batch.slice(offset, max(batch.num_rows // 4, 1)), source / name / f"part-{part}.parquet")
        return {
            "source": str(source),
            "expected_first": ROWS_PER_BATCH,
            "expected_current": 2 * ROWS_PER_BATCH + NEW_ROWS_IN_UPSERT - DELETED_ROWS,
        }

    generated = generate()
    source = "{{ ti.xcom_pull(task_ids='generate')['source'] }}"
    first = _ingest("ingest_first", source + "/first", "append", create_if_missing=True, sort_by="id")
    second = _ingest("ingest_second", source + "/second", "append")
    upsert = _ingest("upsert", source + "/upsert", "upsert", key="id", delete_mode="position")
    delete = _ingest("delete", source + "/delete", "delete", key="id", delete_mode="equality")
    read_current = IcebergReadOperator(
        task_id="read_current",
        catalog=SETTINGS.catalog,
        table=TABLE,
        output_path=str(WORK_ROOT / "current"),
        write_mode="overwrite",
    )
    read_first = IcebergReadOperator(
        task_id="read_first_snapshot",
        catalog=SETTINGS.catalog,
        table=TABLE,
        snapshot_id="{{ ti.xcom_pull(task_ids='ingest_first')['snapshot_id'] }}",
        output_path=str(WORK_ROOT / "first_snapshot"),
        write_mode="overwrite",
    )

    @task
    def files_before_compaction() -> dict:
        """Count live data and delete files before compaction."""
        return _file_counts()

    # The demo's table is small (a few files): groups of two files or more are worth compacting here.
    compact = IcebergCompactOperator(
        task_id="compact",
        catalog=SETTINGS.catalog,
        table=TABLE,
        target_file_size_bytes=64 * 1024 * 1024,
        min_input_files=2,
    )

    # The report is printed once: its return value (the XCom the tests read) is not logged again.
    @task(show_return_value_in_logs=False)
    def report(expected: dict, before: dict, **context) -> str:
        """Print rows at each snapshot, files before and after compaction, and where the time went; check counts."""
        import logging
        import time

        import pyarrow.parquet as pq

        results = {name: context["ti"].xcom_pull(task_ids=name) or {} for name in STEP_TASKS}
        rows_current = pq.read_table(WORK_ROOT / "current").num_rows
        rows_first = pq.read_table(WORK_ROOT / "first_snapshot").num_rows
        after = _file_counts()
        # Compaction folds every delete into the data files: the table's rows are then its data files' records.
        rows_compacted = after["data_rows"] if after["delete_files"] == 0 else None
        first_snapshot_id = results["ingest_first"].get("snapshot_id")
        spark_start = {name: (results[name].get("seconds") or {}).get("spark_start", 0.0) for name in STEP_TASKS}
        seconds = {name: sum((results[name].get("seconds") or {}).values()) - spark_start[name] for name in STEP_TASKS}
        run_start = context["dag_run"].start_date
        elapsed = time.time() - run_start.timestamp() if run_start is not None else None
        lines = [
            "=" * 78,
            f"Iceberg demo report: {TABLE} in catalog {SETTINGS.catalog}",
            f"  rows at current snapshot   {rows_current:>10,}   (expected {expected['expected_current']:,})",
            f"  rows at first snapshot     {rows_first:>10,}   (time travel to {first_snapshot_id})",
            f"  rows after compaction      {f'{rows_compacted:,}' if rows_compacted is not None else 'n/a':>10}",
            f"  data files   before/after  {before['data_files']:>4} / {after['data_files']:<4}"
            f"  delete files before/after {before['delete_files']:>3} / {after['delete_files']}",
            "  step seconds (job's own)   " + ", ".join(f"{name} {value:.1f}" for name, value in seconds.items()),
            "  Spark start per job        " + ", ".join(f"{name} {value:.1f}" for name, value in spark_start.items()),
        ]
        if elapsed is not None:
            own, start = sum(seconds.values()), sum(spark_start.values())
            lines.append(
                f"  DAG run {elapsed:.0f} s: jobs' own work {own:.0f} s, Spark start {start:.0f} s, the other "
                f"{max(elapsed - own - start, 0):.0f} s: spark-submit starting each job's JVM and Python, and Airflow "
                "starting each task"
            )
        lines.append("=" * 78)
        text = "\n".join(lines)
        # Logged (not printed): a print reaches the task log on another channel, and may land after the task's end.
        report_log = logging.getLogger(REPORT_LOGGER)
        for line in lines:
            report_log.info("%s", line)
        wrong = [
            (what, got, want)
            for what, got, want in [
                ("current", rows_current, expected["expected_current"]),
                ("first snapshot", rows_first, expected["expected_first"]),
                ("after compaction", rows_compacted, expected["expected_current"]),
            ]
            if got != want
        ]
        if wrong:
            raise ValueError(f"demo read back wrong row counts (what, got, expected): {wrong}")
        return text

    before = files_before_compaction()
    generated >> first >> second >> upsert >> delete >> [read_current, read_first] >> before >> compact
    compact >> report(generated, before)


def _file_counts() -> dict:
    """Live data files, their records and delete files of the demo table's current snapshot, from metadata."""
    from pyiceberg.catalog import load_catalog

    files = load_catalog(SETTINGS.catalog).load_table(TABLE).inspect.files()
    contents = files.column("content").to_pylist()
    records = files.column("record_count").to_pylist()
    return {
        "data_files": contents.count(0),
        "data_rows": sum(count for content, count in zip(contents, records, strict=True) if content == 0),
        "delete_files": len(contents) - contents.count(0),
    }


iceberg_demo_pipeline()
