"""The example DAGs: all import, their pieces fit together; hourly ingest and time travel run end to end."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_iceberg_provider.partition_events import task_partition_keys_supported
from tests.support.airflow_env import dag_bag_class, partitioned_scheduling, task_state, xcom_return_value

DagBag = dag_bag_class()

DAGS_DIR = Path(__file__).resolve().parents[2] / "dags"
EXAMPLE_DAGS = {
    "iceberg_demo_pipeline",
    "iceberg_hourly_ingest",
    "iceberg_nightly_compaction",
    "iceberg_backfill_time_travel",
    "iceberg_on_new_snapshot",
    "iceberg_spark_submit_read",
}
# Partitioned scheduling (PartitionedAssetTimetable) came with Airflow 3.2: before it the file defines no DAG.
if partitioned_scheduling():
    EXAMPLE_DAGS.add("iceberg_partition_refresh")


def _dag_bag() -> DagBag:
    return DagBag(dag_folder=str(DAGS_DIR))


@pytest.fixture
def dag_bag(example_settings) -> DagBag:
    return _dag_bag()


def test_every_example_dag_imports(dag_bag: DagBag) -> None:
    assert dag_bag.import_errors == {}
    assert set(dag_bag.dag_ids) >= EXAMPLE_DAGS


def test_the_ingest_outlet_is_the_asset_the_event_driven_dag_waits_for(dag_bag: DagBag) -> None:
    outlet = dag_bag.dags["iceberg_hourly_ingest"].get_task("ingest_hour").outlets
    # The table, and (Airflow 3.3+) its partitioned asset, which iceberg_partition_refresh is scheduled on.
    expected = ["iceberg://testing/example_dags/events"]
    if task_partition_keys_supported():
        expected.append("iceberg://testing/example_dags/events/partitions")
    assert [asset.uri for asset in outlet] == expected
    # References: they name the Assets declared by iceberg_on_new_snapshot and iceberg_partition_refresh.
    assert {type(asset).__name__ for asset in outlet} == {"AssetUriRef"}
    on_new = dag_bag.dags["iceberg_on_new_snapshot"]
    (scheduled_on,) = on_new.timetable.asset_condition.objects
    assert scheduled_on.uri == "iceberg://testing/example_dags/events"
    (watcher,) = scheduled_on.watchers
    assert watcher.trigger.serialize()[1]["catalog_name"] == "testing"
    # The read task in the same file declares the watched Asset itself, not a copy without the watcher.
    assert on_new.get_task("export_new_snapshot").inlets == [scheduled_on]


@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db", "example_settings")
def test_the_watcher_survives_every_example_file_being_parsed() -> None:
    """As the DAG processor does: each file's DAGs written to the database on its own, the watched one first.

    Airflow keeps one Asset per (name, URI); a file declaring the table's Asset without the watcher would remove
    the watcher from the database when it is parsed after the file that declares it.
    """
    from airflow.models.asset import AssetModel
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from tests.support.airflow_env import sync_dag_file

    files = sorted(DAGS_DIR.glob("*.py"), key=lambda path: path.name != "iceberg_on_new_snapshot.py")
    sync_dag_file(files[0])
    with create_session() as session:
        session.get(DagModel, "iceberg_on_new_snapshot").is_paused = False  # a watcher runs for unpaused DAGs
    for path in files:
        sync_dag_file(path)
    with create_session() as session:
        asset = session.scalars(
            select(AssetModel).where(AssetModel.uri == "iceberg://testing/example_dags/events")
        ).one()
        assert [trigger.classpath for trigger in asset.triggers] == [
            "airflow_iceberg_provider.triggers.snapshot.IcebergCatalogSnapshotTrigger"
        ]
        session.get(DagModel, "iceberg_on_new_snapshot").is_paused = True


@pytest.mark.airflow33
def test_the_partition_refresh_runs_per_partition_and_reads_only_it(dag_bag: DagBag) -> None:
    from airflow.sdk import PartitionedAssetTimetable

    dag = dag_bag.dags["iceberg_partition_refresh"]
    assert isinstance(dag.timetable, PartitionedAssetTimetable)
    assert dag.timetable.asset_condition.uri == "iceberg://testing/example_dags/events/partitions"
    refresh = dag.get_task("refresh_partition")
    assert refresh.partition_key == "{{ dag_run.partition_key }}"
    assert refresh.output_path.endswith("/partition_refresh/{{ dag_run.partition_key }}")


def test_nightly_compaction_is_gated_by_the_sensor(dag_bag: DagBag) -> None:
    dag = dag_bag.dags["iceberg_nightly_compaction"]
    assert [task.task_id for task in dag.topological_sort()] == [
        "compaction_needed",
        "plan_compaction",
        "compact",
        "expire_snapshots",
        "remove_orphan_files",
    ]
    assert dag.get_task("plan_compaction").plan_only
    assert dag.get_task("compaction_needed").soft_fail


def test_the_plain_spark_submit_example_points_at_the_read_job(dag_bag: DagBag) -> None:
    task = dag_bag.dags["iceberg_spark_submit_read"].get_task("read_events")
    assert task.application.endswith("spark_jobs/read.py")
    assert task.application_args[:4] == ["--catalog", "testing", "--table", "example_dags.events"]
    assert set(task.env_vars) == {
        "PYICEBERG_CATALOG__TESTING__TYPE",
        "PYICEBERG_CATALOG__TESTING__URI",
        "PYICEBERG_CATALOG__TESTING__WAREHOUSE",
    }


@pytest.mark.spark
@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db")
def test_time_travel_to_the_first_snapshot_over_a_date_range(example_settings, example_events, testing_catalog):
    from tests.support.airflow_env import register_dag

    first_snapshot = testing_catalog.load_table(example_events).snapshots()[0].snapshot_id
    dag = _dag_bag().dags["iceberg_backfill_time_travel"]
    register_dag(dag)
    output = example_settings / "first_day"
    dag_run = dag.test(
        run_conf={
            "table": example_events,
            "snapshot_id": first_snapshot,
            "start_date": "2026-01-01",
            "end_date": "2026-01-02",
            "output": str(output),
        }
    )
    assert task_state(dag_run, "export_at_snapshot") == "success"
    assert task_state(dag_run, "has_target") == "success"
    assert task_state(dag_run, "backfill_target") == "skipped"
    result = xcom_return_value(dag_run, "export_at_snapshot")
    assert (result["snapshot_id"], result["rows_out"]) == (first_snapshot, 4)
    assert sorted(pq.read_table(output).column("id").to_pylist()) == [1, 2, 3, 4]


def test_the_hourly_run_at_17_loads_the_hour_that_just_ended(monkeypatch, example_settings, tmp_path) -> None:
    """The scheduler's own timetable places the run; its rendered templates name the hour 16:00-17:00."""
    import pendulum
    from airflow.serialization.serialized_objects import LazyDeserializedDAG
    from airflow.timetables.base import DataInterval, TimeRestriction

    monkeypatch.setenv("ICEBERG_DEMO_LANDING_ROOT", str(tmp_path / "landing"))
    dag = _dag_bag().dags["iceberg_hourly_ingest"]
    timetable = LazyDeserializedDAG.from_dag(dag).timetable
    hour = pendulum.datetime(2026, 1, 1, 15, tz="UTC")
    run = timetable.next_dagrun_info(
        last_automated_data_interval=DataInterval(hour, hour.add(hours=1)),
        restriction=TimeRestriction(earliest=pendulum.datetime(2026, 1, 1, tz="UTC"), latest=None, catchup=True),
    )
    assert run.run_after == pendulum.datetime(2026, 1, 1, 17, tz="UTC")
    assert (run.data_interval.start, run.data_interval.end) == (hour.add(hours=1), run.run_after)
    context = {
        "data_interval_start": run.data_interval.start,
        "data_interval_end": run.data_interval.end,
        "logical_date": run.logical_date,
    }
    sensor, ingest = dag.get_task("wait_for_landing_files"), dag.get_task("ingest_hour")
    for task in (sensor, ingest):
        task.render_template_fields(context, jinja_env=dag.get_template_env())
    folder = f"{tmp_path}/landing/events/2026-01-01/16/"
    assert ingest.source == folder
    assert sensor.location == folder + "_SUCCESS"
    assert sensor.deferrable and sensor.timeout == 3 * 3600 and not sensor.soft_fail
    assert ingest.upstream_task_ids == {"wait_for_landing_files"}
    assert ingest.retries == 3 and ingest.retry_exponential_backoff


@pytest.mark.spark
@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db")
def test_hourly_ingest_loads_the_hours_files(monkeypatch, example_settings, testing_catalog, tmp_path) -> None:
    from tests.support.airflow_env import register_dag

    testing_catalog.create_namespace_if_not_exists("example_dags")
    if testing_catalog.table_exists("example_dags.events"):
        testing_catalog.drop_table("example_dags.events")
    landing = tmp_path / "landing"
    monkeypatch.setenv("ICEBERG_DEMO_LANDING_ROOT", str(landing))
    # A run at 06:00 loads the hour 05:00-06:00; the hour 06 has landed too and must not be loaded.
    for hour in ("05", "06"):
        folder = landing / "events" / "2026-01-01" / hour
        folder.mkdir(parents=True)
        ts = pa.array([datetime(2026, 1, 1, int(hour), minute, tzinfo=UTC) for minute in (1, 2, 3)])
        rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "ts": ts.cast(pa.timestamp("us", tz="UTC"))})
        pq.write_table(rows, folder / "part-0.parquet")
        (folder / "_SUCCESS").touch()
    dag = _dag_bag().dags["iceberg_hourly_ingest"]
    register_dag(dag)
    dag_run = dag.test(logical_date=datetime(2026, 1, 1, 6, 0, tzinfo=UTC))
    assert task_state(dag_run, "wait_for_landing_files") == "success"
    assert task_state(dag_run, "ingest_hour") == "success"
    result = xcom_return_value(dag_run, "ingest_hour")
    table = testing_catalog.load_table("example_dags.events")
    assert result["snapshot_id"] == table.current_snapshot().snapshot_id
    loaded = table.scan().to_arrow().column("ts").to_pylist()
    assert sorted(ts.hour for ts in loaded) == [5, 5, 5]
    assert [field.name for field in table.spec().fields] == ["ts_day"]


@pytest.mark.spark
@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db", "example_settings")
def test_nightly_compaction_compacts_a_table_with_many_small_files(testing_catalog) -> None:
    from tests.support.airflow_env import register_dag

    testing_catalog.create_namespace_if_not_exists("example_dags")
    if testing_catalog.table_exists("example_dags.events"):
        testing_catalog.drop_table("example_dags.events")
    batch = pa.table({"id": pa.array([0], pa.int64())})
    table = testing_catalog.create_table("example_dags.events", schema=batch.schema)
    for number in range(20):
        table.append(pa.table({"id": pa.array([number], pa.int64())}))
    dag = _dag_bag().dags["iceberg_nightly_compaction"]
    register_dag(dag)
    dag_run = dag.test()
    states = {task_id: task_state(dag_run, task_id) for task_id in dag.task_ids}
    assert set(states.values()) == {"success"}, states
    assert xcom_return_value(dag_run, "compaction_needed")["stats"]["small_data_files"] == 20
    assert xcom_return_value(dag_run, "plan_compaction")["file_groups"] == 1
    table = testing_catalog.load_table("example_dags.events")
    assert table.current_snapshot().summary.operation.value == "replace"
    assert len(table.inspect.files()) == 1
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == list(range(20))


@pytest.mark.spark
@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db")
def test_plain_spark_submit_example_exports_the_table(example_settings, example_events) -> None:
    from tests.support.airflow_env import register_dag

    dag = _dag_bag().dags["iceberg_spark_submit_read"]
    register_dag(dag)
    dag_run = dag.test(logical_date=datetime(2026, 1, 3, tzinfo=UTC))
    assert task_state(dag_run, "read_events") == "success"
    exported = pq.read_table(example_settings / "spark_submit_read" / "2026-01-03")
    assert sorted(exported.column("id").to_pylist()) == [1, 2, 3, 4, 5, 6, 7]


@pytest.mark.spark
@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_db")
def test_event_driven_example_exports_the_current_snapshot_when_run_by_hand(
    example_settings, example_events, testing_catalog
) -> None:
    from tests.support.airflow_env import register_dag

    dag = _dag_bag().dags["iceberg_on_new_snapshot"]
    register_dag(dag)
    dag_run = dag.test()
    assert task_state(dag_run, "export_new_snapshot") == "success"
    result = xcom_return_value(dag_run, "export_new_snapshot")
    current = testing_catalog.load_table(example_events).current_snapshot().snapshot_id
    assert (result["snapshot_id"], result["rows_out"]) == (current, 7)
