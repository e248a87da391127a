"""An ingest's asset events, set on Airflow's own outlet event accessors: the table's event names the partitions; on
Airflow 3.3+ the partitioned asset gets one keyed event per changed partition, on 3.1 and 3.2 none."""

from __future__ import annotations

from airflow.sdk.execution_time.context import OutletEventAccessors

from airflow_iceberg_provider.assets import iceberg_partitions_asset, iceberg_table_asset
from airflow_iceberg_provider.partition_events import (
    MAX_PARTITION_KEY_LENGTH,
    partition_keys,
    record_ingest_events,
    task_partition_keys_supported,
)

RESULT = {"snapshot_id": 42, "operation": "append", "already_committed": False}
CHANGED = [
    {"spec_id": 0, "partition": "ts_day=2026-01-01/category=a"},
    {"spec_id": 0, "partition": "ts_day=2026-01-02/category=a%2Fb"},
    {"spec_id": 1, "partition": "ts_day=2026-01-02/category=a%2Fb"},  # same text in another spec: one key
    {"spec_id": 0, "partition": "x=" + "v" * MAX_PARTITION_KEY_LENGTH},  # too long for Airflow
]


def test_partition_keys_are_the_path_texts_airflow_can_hold() -> None:
    assert partition_keys(CHANGED) == ["ts_day=2026-01-01/category=a", "ts_day=2026-01-02/category=a%2Fb"]
    assert partition_keys([{"spec_id": 0, "partition": ""}]) == []  # unpartitioned


def test_the_table_event_names_the_partitions_and_each_partition_has_its_event() -> None:
    table, partitions = iceberg_table_asset("lake", "sales.orders"), iceberg_partitions_asset("lake", "sales.orders")
    events = OutletEventAccessors()
    keys = record_ingest_events({"outlet_events": events}, table, partitions, RESULT, CHANGED)
    assert events[table].extra == {
        "snapshot_id": 42,
        "operation": "append",
        "partitions": [change["partition"] for change in CHANGED],
        "partition_count": 4,
    }
    if task_partition_keys_supported():  # Airflow 3.3+
        assert keys == partition_keys(CHANGED)
        assert events[partitions].partition_keys == set(keys)
        assert events[partitions].extra == {"snapshot_id": 42, "operation": "append"}
    else:  # Airflow 3.1 and 3.2: the table's event alone
        assert keys == []
        assert not getattr(events[partitions], "partition_keys", None)


def test_no_partitioned_event_without_changed_partitions() -> None:
    table, partitions = iceberg_table_asset("lake", "sales.orders"), iceberg_partitions_asset("lake", "sales.orders")
    events = OutletEventAccessors()
    assert record_ingest_events({"outlet_events": events}, table, partitions, RESULT, []) == []
    assert events[table].extra["partition_count"] == 0
    # An unknown change (the job could not read it back) leaves the table's event without a partition list.
    unknown = OutletEventAccessors()
    record_ingest_events({"outlet_events": unknown}, table, partitions, RESULT, None)
    assert "partitions" not in unknown[table].extra
