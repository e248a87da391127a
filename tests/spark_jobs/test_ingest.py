"""The ingest job end to end: spark-submit runs (exit codes, the final JSON line) and argument errors in-process."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs import ingest as ingest_job
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.job_contract import missing_result_fields
from tests.support.services import spark_home, spark_process_env

pytestmark = pytest.mark.spark35

INGEST_PY = Path(ingest_job.__file__).resolve()


def _spark_submit(args: list[str], *, timeout: int = 900) -> subprocess.CompletedProcess:
    command = [
        str(spark_home() / "bin" / "spark-submit"),
        "--master",
        "local[2]",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.driver.host=127.0.0.1",
        str(INGEST_PY),
        *args,
    ]
    return subprocess.run(
        command, env=spark_process_env(), capture_output=True, text=True, timeout=timeout, check=False
    )


def _last_json_line(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def _error_lines(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("error: ")]


def test_spark_submit_ingest_creates_upserts_and_is_idempotent(testing_catalog, tmp_path) -> None:
    table = "ingest_cli.events"
    csv = tmp_path / "first.csv"
    csv.write_text("id,name,day\n" + "".join(f"{i},n{i},2024-01-0{1 + i % 3}\n" for i in range(10)))
    created = _spark_submit(
        [
            "--catalog", "testing", "--table", table, "--source", str(csv), "--source-format", "csv",
            "--sql", "SELECT cast(id AS bigint) AS id, name, cast(day AS date) AS day FROM source",
            "--mode", "append", "--create-if-missing", "--partition-by", "month(day)", "--sort-by", "id",
        ]
    )  # fmt: skip
    assert created.returncode == 0, created.stderr[-4000:]
    result = _last_json_line(created.stdout)
    assert missing_result_fields(result) == []
    assert result["operation"] == "append" and result["rows_added"] == 10 and result["data_files_added"] >= 1
    assert set(result["seconds"]) >= {"source", "plan", "write", "commit"}
    assert [(p["partition"], p["rows_added"]) for p in result["partitions_changed"]] == [("day_month=2024-01", 10)]

    changes = tmp_path / "changes"
    changes.mkdir()
    pq.write_table(
        pa.table({"id": pa.array([2, 42], pa.int64()), "name": ["two", "forty-two"]}), changes / "part.parquet"
    )
    args = [
        "--catalog", "testing", "--table", table, "--source", str(changes), "--mode", "upsert", "--key", "id",
        "--idempotency-key", "run-7/ingest",
    ]  # fmt: skip
    upserted = _spark_submit(args)
    assert upserted.returncode == 0, upserted.stderr[-4000:]
    first = _last_json_line(upserted.stdout)
    assert first["operation"] == "overwrite" and first["position_deletes_added"] == 1 and first["rows_added"] == 2
    # The delete of id 2 lands in its month; both new rows (no day in the batch) in the null partition.
    changed = {p["partition"]: (p["position_deletes_added"], p["rows_added"]) for p in first["partitions_changed"]}
    assert changed == {"day_month=2024-01": (1, 0), "day_month=null": (0, 2)}
    again = _spark_submit(args)
    assert again.returncode == 0, again.stderr[-4000:]
    second = _last_json_line(again.stdout)
    assert second["already_committed"] and second["snapshot_id"] == first["snapshot_id"]
    assert second["partitions_changed"] == first["partitions_changed"]

    rows = open_read_session("testing", table, columns=["id", "name"]).to_arrow().sort_by("id").to_pylist()
    expected = {i: f"n{i}" for i in range(10)} | {2: "two", 42: "forty-two"}
    assert [(r["id"], r["name"]) for r in rows] == sorted(expected.items())
    assert len(testing_catalog.load_table(table).metadata.snapshots) == 2


def test_spark_submit_bad_input_exits_2_with_one_line_and_commits_nothing(testing_catalog, tmp_path) -> None:
    """A value the table cannot take, met by Spark on an executor (a decimal beyond its precision in --sql): exit 2,
    one line naming the table and the value, no JSON line of Spark's own logging in the output, nothing committed."""
    testing_catalog.create_namespace_if_not_exists("ingest_cli")
    table = testing_catalog.create_table(
        "ingest_cli.amounts", pa.schema([pa.field("id", pa.int64()), pa.field("amount", pa.decimal128(5, 2))]),
        properties={"format-version": "2"},
    )  # fmt: skip
    source = tmp_path / "amounts.csv"
    source.write_text("id,amount\n1,12.5\n2,123456.78\n")
    sql = "SELECT cast(id AS bigint) AS id, cast(amount AS decimal(5,2)) AS amount FROM source"
    done = _spark_submit(
        ["--catalog", "testing", "--table", "ingest_cli.amounts", "--source", str(source), "--source-format", "csv",
         "--sql", sql, "--mode", "append"]
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-4000:]
    reasons = _error_lines(done)
    assert len(reasons) == 1, reasons
    assert "table ingest_cli.amounts" in reasons[0] and "NUMERIC_VALUE_OUT_OF_RANGE" in reasons[0], reasons[0]
    assert "123456.78" in reasons[0] and "Decimal(5, 2)" in reasons[0]
    json_lines = [line for line in done.stdout.splitlines() if line.strip().startswith("{")]
    assert json_lines == [], json_lines  # PySpark's query-context logger printed one before
    assert testing_catalog.load_table(table.name()).current_snapshot() is None
    data_dir = Path(table.metadata.location.removeprefix("file://")) / "data"
    assert not list(data_dir.rglob("*.parquet"))


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--mode", "upsert"], "--mode upsert needs --key"),
        (["--mode", "append", "--overwrite-filter", "id > 1"], "--overwrite-filter applies to --mode overwrite"),
        (["--mode", "append", "--partition-by", "day(ts)"], "apply to a table made by --create-if-missing"),
        (["--mode", "sideways"], "invalid choice"),
    ],
)
def test_argument_errors_are_usage_errors(args, reason, tmp_path) -> None:
    with pytest.raises(UserInputError, match=reason):
        ingest_job.main(["--catalog", "testing", "--table", "ingest_cli.none", "--source", str(tmp_path), *args])


def test_a_format_v1_table_is_refused_as_bad_input(spark, testing_catalog, tmp_path) -> None:
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    testing_catalog.create_namespace_if_not_exists("ingest_cli")
    testing_catalog.create_table(
        "ingest_cli.v1", Schema(NestedField(1, "id", LongType())), properties={"format-version": "1"}
    )
    source = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), source)
    with pytest.raises(UserInputError, match=r"writes to format v1 tables are not supported \(table ingest_cli.v1\)"):
        ingest_job.main(
            ["--catalog", "testing", "--table", "ingest_cli.v1", "--source", str(source), "--mode", "append"]
        )
    assert testing_catalog.load_table("ingest_cli.v1").current_snapshot() is None


def test_a_missing_source_is_bad_input(spark, tmp_path) -> None:
    with pytest.raises(UserInputError, match="cannot read source"):
        ingest_job.main(
            ["--catalog", "testing", "--table", "ingest_cli.x", "--source", str(tmp_path / "nope"), "--mode", "append"]
        )
