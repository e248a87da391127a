"""Catalog credentials never show on the Spark side: not in the contexts shipped to executors, not in a job's log.

The catalog's properties carry credentials (as a real object-store catalog's do); they reach the table's FileIO,
are pickled into every task context, and must still work there, but no ``repr`` or log line may print them.
"""

from __future__ import annotations

import logging
import pickle

import pyarrow as pa
import pytest

from spark_jobs import read as read_job
from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
from spark_jobs.engine.compaction.rewrite_tasks import plan_rewrite_tasks, rewrite_contexts
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.write.write_context import WriteContext

pytestmark = pytest.mark.spark35

SECRETS = {
    "s3.secret-access-key": "secret-access-key-4e1f",
    "adls.account-key": "adls-account-key-77c0",
    "s3.session-token": "session-token-a93d",
}


@pytest.fixture
def secret_catalog(monkeypatch, tmp_path):
    """The name of a SQLite catalog whose properties carry credentials, with a table ``ns.t`` of 3 files."""
    from spark_jobs.engine.table.catalog import load_catalog

    prefix = "PYICEBERG_CATALOG__WITHSECRETS__"
    monkeypatch.setenv(prefix + "TYPE", "sql")
    monkeypatch.setenv(prefix + "URI", f"sqlite:///{tmp_path}/catalog.db")
    monkeypatch.setenv(prefix + "WAREHOUSE", f"file://{tmp_path}/warehouse")
    for key, value in SECRETS.items():
        monkeypatch.setenv(prefix + key.upper().replace(".", "__").replace("-", "_"), value)
    (tmp_path / "warehouse").mkdir()
    catalog = load_catalog("withsecrets")
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", pa.schema([pa.field("id", pa.int64())]), properties={"format-version": "2"})
    for start in (0, 10, 20):
        table.append(pa.table({"id": pa.array(range(start, start + 10), pa.int64())}))
    assert all(table.io.properties[key] == value for key, value in SECRETS.items())
    return "withsecrets"


def _assert_no_secret(text: str, where: str) -> None:
    leaked = [value for value in SECRETS.values() if value in text]
    assert not leaked, f"secrets in {where}: {leaked}"


def test_contexts_shipped_to_executors_keep_the_credentials_but_never_print_them(secret_catalog) -> None:
    from spark_jobs.engine.table.catalog import load_catalog

    table = load_catalog(secret_catalog).load_table("ns.t")
    session = open_read_session(secret_catalog, "ns.t")
    write_context = WriteContext.for_table(table)
    plan = plan_rewrite(table, table.current_snapshot(), RewriteOptions.resolve(table.properties, min_input_files=2))
    contexts = rewrite_contexts(table, plan, plan_rewrite_tasks(table, plan.groups))
    for name, value in [("scan context", session.context), ("write context", write_context), ("rewrite", contexts)]:
        _assert_no_secret(repr(value), f"repr of the {name}")
        _assert_no_secret(str(value), f"str of the {name}")
        shipped = pickle.loads(pickle.dumps(value))
        _assert_no_secret(repr(shipped), f"repr of the unpickled {name}")
    assert pickle.loads(pickle.dumps(session.context)).io_properties["adls.account-key"] == SECRETS["adls.account-key"]
    assert pickle.loads(pickle.dumps(write_context)).io_properties["s3.session-token"] == SECRETS["s3.session-token"]


@pytest.mark.spark
def test_a_job_logs_no_credential_even_at_debug_level(spark, secret_catalog, tmp_path, caplog, capfd) -> None:
    with caplog.at_level(logging.DEBUG):
        result = read_job.main(
            ["--catalog", secret_catalog, "--table", "ns.t", "--output", str(tmp_path / "out"), "--mode", "error"]
        )
    assert result["rows_out"] == 30
    captured = capfd.readouterr()
    _assert_no_secret(caplog.text, "the job's log")
    _assert_no_secret(captured.out + captured.err, "the job's output")
