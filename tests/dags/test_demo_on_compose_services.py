"""The distributed deployment run as local processes: docker-compose.yml's object store and REST catalog, Spark
master and worker, started with the commands and settings the file gives them, and the demo DAG run against them
with the Airflow environment the file gives its scheduler (the metadata database aside).

Every task of the demo runs for real, each job one ``spark-submit`` on the standalone cluster: the two appends (their
sources written by the Airflow side on the shared volume, the table on S3 through the REST catalog), the upsert
(position deletes) and the delete by key (equality deletes), the read of the current snapshot and the time-travel
read of the first one (their outputs written back on the shared volume by the Spark workers), the file count, the
compaction and the report. The test then checks what each produced: the rows each ingest added and the delete files
it wrote, one snapshot per writing step in DAG order, both exports row for row against what the generated batches
imply, the compaction's single ``replace`` snapshot with every delete folded in, and the report's counts.

What only containers would add (images, networks, volumes) is checked by tests/test_docker_compose.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import compose, object_store

# Rows per batch the demo generates: tiny, so each job's time is Spark's start and the jobs' fixed costs.
ROWS = 2000

pytestmark = [pytest.mark.s3, pytest.mark.spark, pytest.mark.standalone, pytest.mark.airflow]


@pytest.fixture(scope="module")
def compose_services():
    """The compose file's object store and Spark cluster as local processes, with the addresses they took."""
    spec = compose.load_compose()
    store, store_ports = compose.start_object_store(spec)
    try:
        cluster, spark_ports = compose.start_spark(spec)
    except Exception:
        store.stop()
        raise
    _check_same_commands(spec, store, cluster)
    yield spec, {**store_ports, **spark_ports}
    cluster.stop()
    store.stop()


# Flags whose values only say where a process runs on this host (addresses, ports, folders): the compose file's
# value is replaced by a local one; every other word of a service's command must be the same.
_PER_HOST_FLAGS = {
    "object-store": {"-dir", "-ip", "-ip.bind", *(f"-{name}" for name in object_store.PORT_FLAGS)},
    "spark-master": {"--host", "--port", "--webui-port"},
    "spark-worker-1": {"--webui-port", "--work-dir"},
}


def _check_same_commands(spec: dict, store, cluster) -> None:
    """The processes run the compose services' commands (read back from /proc), host-specific values aside."""
    started = {
        "object-store": store.managed.process.pid,
        "spark-master": cluster.processes[0].process.pid,
        "spark-worker-1": cluster.processes[1].process.pid,
    }
    for service, pid in started.items():
        running = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        words = compose.service_argv(spec, service)[1:]  # after the binary (the image's own path)
        index = 0
        while index < len(words):
            word = words[index]
            name, _, value = word.partition("=")
            pair = word.startswith("--") and not value and index + 1 < len(words)
            if name in _PER_HOST_FLAGS[service]:
                assert name in running or any(w.startswith(f"{name}=") for w in running), (service, name, running)
            elif word.startswith("-"):
                wanted = words[index + 1] if pair else value
                assert compose.flag(running, name) == wanted, (service, name, wanted, running)
            elif word.startswith("spark://"):  # the master's address: compose's host name, this host's port
                assert cluster.master_url in running, (service, running)
            else:
                assert word in running, (service, word, running)
            index += 2 if pair else 1


@pytest.mark.usefixtures("airflow_db")
def test_the_demo_pipeline_runs_on_the_compose_services(monkeypatch, tmp_path: Path, compose_services) -> None:
    from airflow.dag_processing.dagbag import DagBag

    from tests.support.airflow_env import path_with_spark_submit, register_dag, task_state, xcom_return_value

    spec, local_ports = compose_services
    shared = tmp_path / "shared"
    environment = compose.airflow_environment(spec, local_ports, shared)
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("ICEBERG_DEMO_ROWS", str(ROWS))
    # pyiceberg's load_catalog reads the environment once, at its import (an Airflow task process starts fresh).
    import pyiceberg.catalog
    from pyiceberg.catalog import load_catalog
    from pyiceberg.utils.config import Config

    monkeypatch.setattr(pyiceberg.catalog, "_ENV_CONFIG", Config())
    monkeypatch.setenv("PATH", path_with_spark_submit())
    assert environment["PYICEBERG_CATALOG__LAKEHOUSE__TYPE"] == "rest"
    dag_file = compose.REPO_ROOT / "dags" / "iceberg_demo_pipeline.py"
    dag = DagBag(dag_folder=str(dag_file)).dags["iceberg_demo_pipeline"]
    register_dag(dag)
    dag_run = dag.test()
    states = {task_id: task_state(dag_run, task_id) for task_id in dag.task_ids}
    assert set(states.values()) == {"success"}, states
    results = {task_id: xcom_return_value(dag_run, task_id) for task_id in dag.task_ids}
    for task_id, result in results.items():
        assert result is not None, f"{task_id} did not run"

    table = load_catalog("lakehouse").load_table("demo.events")
    assert table.metadata.location.startswith("s3://"), table.metadata.location
    _check_snapshots(table, results)
    _check_ingests(results)
    batches = _source_batches(Path(results["generate"]["source"]))
    _check_reads(shared / "output", batches, results)
    _check_compaction(table, results)
    assert f"{results['generate']['expected_current']:>10,}   (expected" in results["report"], results["report"]
    _check_compaction_report(dag_run, environment)


def _check_snapshots(table, results: dict) -> None:
    """One snapshot per writing step, in DAG order, each the one its task reported, the compaction's current."""
    steps = ("ingest_first", "ingest_second", "upsert", "delete")
    chain = [snapshot.snapshot_id for snapshot in table.snapshots()]
    written = [results[step]["snapshot_id"] for step in steps]
    assert chain[: len(steps)] == written, (chain, written)
    assert chain[len(steps) :] == results["compact"]["snapshot_ids"], (chain, results["compact"])
    parents = [table.snapshot_by_id(snapshot_id).parent_snapshot_id for snapshot_id in chain]
    assert parents == [None, *chain[:-1]], (chain, parents)


def _check_ingests(results: dict) -> None:
    """Rows each ingest added, and the merge-on-read delete files the upsert and the delete wrote."""
    updated, new, deleted = ROWS // 20, ROWS // 100, ROWS // 50
    assert results["ingest_first"]["rows_added"] == ROWS, results["ingest_first"]
    assert results["ingest_second"]["rows_added"] == ROWS, results["ingest_second"]
    upsert = results["upsert"]
    assert upsert["rows_added"] == updated + new, upsert
    assert upsert["position_deletes_added"] == updated and upsert["equality_deletes_added"] == 0, upsert
    assert upsert["delete_files_written"] >= 1, upsert
    delete = results["delete"]
    assert delete["rows_added"] == 0 and delete["equality_deletes_added"] == deleted, delete
    assert delete["position_deletes_added"] == 0 and delete["delete_files_written"] >= 1, delete
    before = results["files_before_compaction"]
    assert before["delete_files"] == upsert["delete_files_written"] + delete["delete_files_written"], before
    assert before["data_rows"] == 2 * ROWS + updated + new, before


def _source_batches(source: Path) -> dict:
    """The batches ``generate`` wrote on the shared volume, by name."""
    import pyarrow.parquet as pq

    return {name: pq.read_table(source / name) for name in ("first", "second", "upsert", "delete")}


def _check_reads(output: Path, batches: dict, results: dict) -> None:
    """The exports hold exactly the rows the generated batches imply: now (upserted, deleted) and at the first
    snapshot (time travel by snapshot id)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    def rows(table: pa.Table) -> list[dict]:
        return table.select(["id", "category", "qty", "price"]).sort_by("id").to_pylist()

    appended = pa.concat_tables([batches["first"], batches["second"]])
    kept = appended.filter(pc.invert(pc.is_in(appended["id"], batches["upsert"]["id"])))
    current = pa.concat_tables([kept, batches["upsert"].cast(kept.schema)])
    current = current.filter(pc.invert(pc.is_in(current["id"], batches["delete"]["id"])))
    assert current.num_rows == results["generate"]["expected_current"]
    exported_now = pq.read_table(output / "current")
    assert rows(exported_now) == rows(current)
    assert results["read_current"]["rows_out"] == current.num_rows, results["read_current"]
    exported_first = pq.read_table(output / "first_snapshot")
    assert rows(exported_first) == rows(batches["first"])
    first_read = results["read_first_snapshot"]
    assert first_read["rows_out"] == ROWS and first_read["snapshot_id"] == results["ingest_first"]["snapshot_id"]


def _check_compaction(table, results: dict) -> None:
    """Compaction folded every delete into fewer data files and kept the current rows."""
    compacted = results["compact"]
    assert compacted["status"] == "ok" and compacted["snapshot_id"] == table.current_snapshot().snapshot_id
    before = results["files_before_compaction"]
    assert compacted["delete_files_removed"] == before["delete_files"], (compacted, before)
    files = table.inspect.files()
    assert set(files.column("content").to_pylist()) == {0}, files.column("content").to_pylist()
    assert sum(files.column("record_count").to_pylist()) == results["generate"]["expected_current"]
    assert len(files) < before["data_files"], (len(files), before)


def _check_compaction_report(dag_run, environment: dict[str, str]) -> None:
    """The report is on S3 under the compose file's report root, and the task links the plugin's page of it."""
    from airflow_iceberg_provider.hooks.iceberg_catalog import IcebergCatalogHook
    from airflow_iceberg_provider.links import CompactionReportLink
    from airflow_iceberg_provider.report_store import read_report, relative_report_path
    from tests.support.airflow_env import xcom_value

    root = environment["ICEBERG_PROVIDER_REPORT_ROOT"]
    assert root.startswith("s3://"), root
    location = xcom_value(dag_run, "compact", "compaction_report")["location"]
    relative = relative_report_path(root, location)
    assert relative is not None and relative.startswith("iceberg_demo_pipeline/"), location
    assert xcom_value(dag_run, "compact", CompactionReportLink().xcom_key) == f"/iceberg/reports/{relative}"
    properties = IcebergCatalogHook(environment["ICEBERG_PROVIDER_ICEBERG_CONN_ID"]).storage_properties()
    assert b"Compaction report: demo.events" in read_report(root, relative, properties)
