"""What the table health page's tests share: a running ``airflow api-server`` and tables worth drawing.

1. ``api_server`` starts ``airflow api-server`` on a free loopback port with the session's Airflow home (the
   simple auth manager with every user an admin, as ``airflow standalone`` can run), waits for its health check,
   and stops it by PID; the page is then looked at with headless Chromium (``tests/support/browser.py``);
2. ``make_health_table`` writes a table with many small files and a compaction.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.support.services import free_port


@contextlib.contextmanager
def api_server(log_path: Path, extra_env: dict[str, str] | None = None, timeout: float = 240) -> Iterator[str]:
    """A running ``airflow api-server`` (module doc, step 1); yields its base URL."""
    port = free_port()
    env = {
        **os.environ,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__WORKERS": "1",
        **(extra_env or {}),
    }
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "airflow", "api-server", "--port", str(port), "--workers", "1"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"airflow api-server exited with {process.returncode}: {log_path.read_text()[-3000:]}"
                )
            if _answers(f"{base}/api/v2/monitor/health"):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"airflow api-server did not answer in {timeout}s: {log_path.read_text()[-3000:]}")
            time.sleep(1)
        yield base
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=20)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def make_health_table(catalog: object, name: str, appends: int = 40) -> str:
    """A table partitioned by category: ``appends`` one-row appends, all in ``a`` but the first (in ``b``), then a
    compaction of ``b``'s file (a ``replace`` removing one data file and adding one). Written by the engine."""
    import pyarrow as pa
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.table.snapshots import Operation
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    from spark_jobs.engine.commit.committer import commit_change
    from spark_jobs.engine.commit.snapshot_change import SnapshotChange
    from spark_jobs.engine.write.file_entries import to_data_file
    from spark_jobs.engine.write.write_context import WriteContext, write_data

    namespace = name.rpartition(".")[0]
    catalog.create_namespace_if_not_exists(namespace)  # type: ignore[attr-defined]
    if catalog.table_exists(name):  # type: ignore[attr-defined]
        catalog.drop_table(name)  # type: ignore[attr-defined]
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "category", StringType()))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category"))
    properties = {"write.target-file-size-bytes": str(64 * 1024 * 1024)}
    table = catalog.create_table(name, schema, partition_spec=spec, properties=properties)  # type: ignore[attr-defined]

    def write(ids: list[int], category: str, tag: str) -> list:
        rows = pa.table({"id": pa.array(ids, pa.int64()), "category": [category] * len(ids)})
        return [to_data_file(item) for item in write_data(rows, WriteContext.for_table(table), tag)]

    first = write([0], "b", "t0")
    commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=first))
    for index in range(1, appends):
        commit_change(table, SnapshotChange(Operation.APPEND, added_data_files=write([index], "a", f"t{index}")))
    removed = {file.file_path for file in first}
    commit_change(
        table, SnapshotChange(Operation.REPLACE, added_data_files=write([0], "b", "c"), removed_data_file_paths=removed)
    )
    return name
