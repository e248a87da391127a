"""A bad literal argument fails the operator's construction (so the DAG fails to parse) naming the parameter; the
same argument templated is left to the job, and the choices the operators check are the jobs' own."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from airflow_iceberg_provider.operators import _arguments as arguments
from airflow_iceberg_provider.operators.compact import IcebergCompactOperator
from airflow_iceberg_provider.operators.ingest import IcebergIngestOperator
from airflow_iceberg_provider.operators.maintenance import IcebergMaintenanceOperator
from airflow_iceberg_provider.operators.read import IcebergReadOperator
from airflow_iceberg_provider.sensors.compaction import IcebergCompactionNeededSensor
from airflow_iceberg_provider.sensors.snapshot import IcebergSnapshotSensor
from spark_jobs import compact as compact_job
from spark_jobs import ingest as ingest_job
from spark_jobs import maintain as maintain_job
from spark_jobs import read as read_job

READ = (IcebergReadOperator, {"output_path": "/tmp/out"})
INGEST = (IcebergIngestOperator, {"source": "/tmp/in"})
COMPACT = (IcebergCompactOperator, {})
EXPIRE = (IcebergMaintenanceOperator, {"action": "expire-snapshots"})
SNAPSHOT_SENSOR = (IcebergSnapshotSensor, {})
COMPACTION_SENSOR = (IcebergCompactionNeededSensor, {})

# (operator and its required arguments, the bad arguments, what the error must name)
CASES: list[tuple[tuple[type, dict[str, Any]], dict[str, Any], list[str]]] = [
    (READ, {"table": "events"}, ["'events'", "namespace.table"]),
    (READ, {"table": "db..events"}, ["'db..events'"]),
    (READ, {"table": ""}, ["namespace.table"]),
    (READ, {"output_format": "avro"}, ["output_format", "avro", "parquet"]),
    (READ, {"write_mode": "append"}, ["write_mode", "append", "overwrite"]),
    (READ, {"snapshot_id": "latest"}, ["snapshot_id", "latest", "integer"]),
    (READ, {"snapshot_id": 1, "ref": "main"}, ["snapshot_id", "ref"]),
    (READ, {"ref": "main", "as_of": "2024-01-01"}, ["ref", "as_of"]),
    (READ, {"split_size": 0}, ["split_size", "at least 1"]),
    (READ, {"driver_max_bytes": -1}, ["driver_max_bytes", "at least 0"]),
    (READ, {"output_path": None}, ["output_path", "aggregates"]),
    (READ, {"aggregates": "count(*)"}, ["output_path", "aggregates"]),
    (INGEST, {"mode": "merge"}, ["mode", "merge"]),
    (INGEST, {"mode": "upsert"}, ["upsert", "key"]),
    (INGEST, {"mode": "delete", "key": []}, ["delete", "key"]),
    (INGEST, {"source_format": "xml"}, ["source_format", "xml"]),
    (INGEST, {"delete_mode": "copy"}, ["delete_mode", "copy"]),
    (INGEST, {"source_mode": "lenient"}, ["source_mode", "lenient", "failfast"]),
    (INGEST, {"overwrite_filter": "id > 1"}, ["overwrite_filter", "overwrite"]),
    (INGEST, {"partition_by": "day(ts)"}, ["partition_by", "create_if_missing"]),
    (INGEST, {"sort_by": ["id"]}, ["sort_by", "create_if_missing"]),
    (INGEST, {"source": ""}, ["source"]),
    (INGEST, {"format_version": 4, "create_if_missing": True}, ["format_version"]),
    (INGEST, {"format_version": 3}, ["format_version", "create_if_missing"]),
    (INGEST, {"table": "events"}, ["'events'"]),
    (COMPACT, {"strategy": "zorder"}, ["strategy", "zorder", "binpack"]),
    (COMPACT, {"rewrite_job_order": "random"}, ["rewrite_job_order", "random"]),
    (COMPACT, {"target_file_size_bytes": "512MB"}, ["target_file_size_bytes", "512MB", "integer"]),
    (COMPACT, {"min_input_files": 2.5}, ["min_input_files"]),
    (COMPACT, {"max_commits": 3}, ["max_commits", "partial_progress"]),
    (COMPACT, {"output_spec_id": "current"}, ["output_spec_id"]),
    (EXPIRE, {"action": "vacuum"}, ["action", "vacuum"]),
    (EXPIRE, {"retain_last": 0}, ["retain_last", "at least 1"]),
    (EXPIRE, {"retain_last": "two"}, ["retain_last", "two"]),
    (EXPIRE, {"where": "id > 1"}, ["where", "rewrite-position-deletes"]),
    (EXPIRE, {"spec_id": 0}, ["spec_id", "rewrite-manifests"]),
    (EXPIRE, {"table": "a.b..c"}, ["'a.b..c'"]),
    (SNAPSHOT_SENSOR, {"table": "events"}, ["'events'"]),
    (COMPACTION_SENSOR, {"table": ".events"}, ["'.events'"]),
    (SNAPSHOT_SENSOR, {"catalog": None}, ["catalog", "iceberg_conn_id"]),
    (COMPACTION_SENSOR, {"min_deleted_row_ratio": 10}, ["min_deleted_row_ratio", "(0, 1]"]),
    (COMPACTION_SENSOR, {"min_small_files": -1}, ["min_small_files", "at least 1"]),
    (COMPACTION_SENSOR, {"small_file_bytes": "64MB"}, ["small_file_bytes", "whole number"]),
    (COMPACTION_SENSOR, {"max_small_files_per_partition": 0}, ["max_small_files_per_partition"]),
    (COMPACTION_SENSOR, {"small_file_ratio": 1.5}, ["small_file_ratio"]),
]


def _operator(kind: tuple[type, dict[str, Any]], **given: Any) -> Any:
    cls, required = kind
    return cls(**{"task_id": "t", "catalog": "c", "table": "ns.events", **required, **given})


@pytest.mark.parametrize(
    ("kind", "given", "named"), CASES, ids=[f"{kind[0].__name__}-{given}" for kind, given, _ in CASES]
)
def test_a_bad_literal_argument_fails_construction_naming_it(kind, given, named) -> None:
    with pytest.raises((ValueError, TypeError)) as raised:
        _operator(kind, **given)
    for text in named:
        assert text in str(raised.value), f"{text!r} not in: {raised.value}"


@pytest.mark.parametrize(
    ("kind", "given"),
    [
        (READ, {"output_format": "{{ params.format }}", "split_size": "{{ params.split }}"}),
        (READ, {"snapshot_id": "{{ params.snapshot_id }}", "as_of": "{{ params.as_of }}"}),
        (INGEST, {"mode": "{{ params.mode }}", "delete_mode": "{{ params.delete_mode }}"}),
        (INGEST, {"mode": "upsert", "key": "{{ params.key }}"}),
        (COMPACT, {"strategy": "{{ params.strategy }}", "min_input_files": "{{ params.n }}"}),
        (EXPIRE, {"retain_last": "{{ params.keep }}", "table": "{{ params.table }}"}),
        (READ, {"snapshot_id": "", "ref": "", "as_of": None}),
    ],
)
def test_templated_or_empty_arguments_are_left_to_the_job(kind, given) -> None:
    _operator(kind, **given)


# Every parameter the operators check at construction, each given a task's output (an XComArg: known at run time).
TASK_OUTPUT_CASES = [
    (READ, ["table", "output_format", "write_mode", "snapshot_id", "split_size"]),
    (INGEST, ["table", "mode", "source", "source_format", "delete_mode", "overwrite_filter"]),
    (COMPACT, ["table", "strategy", "rewrite_job_order", "target_file_size_bytes", "min_input_files"]),
    (EXPIRE, ["table", "retain_last"]),
    (SNAPSHOT_SENSOR, ["table"]),
]


@pytest.mark.parametrize(
    ("kind", "parameters"), TASK_OUTPUT_CASES, ids=[kind[0].__name__ for kind, _ in TASK_OUTPUT_CASES]
)
def test_a_task_output_as_an_argument_is_left_to_the_job(kind, parameters) -> None:
    import datetime as dt

    from airflow.sdk import DAG, task

    with DAG("task_outputs", start_date=dt.datetime(2024, 1, 1), schedule=None):

        @task
        def upstream() -> str:
            return "value"

        for parameter in parameters:
            cls, _ = kind
            operator = _operator(kind, task_id=f"{cls.__name__}_{parameter}", **{parameter: upstream()})
            assert "{{" in str(getattr(operator, parameter))


def _choices(parser: argparse.ArgumentParser, flag: str, action: str | None = None) -> tuple[str, ...]:
    if action is not None:
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = subparsers.choices[action]
    return tuple(next(a for a in parser._actions if flag in a.option_strings).choices)


def test_the_operators_choices_are_the_jobs() -> None:
    assert _choices(read_job.build_parser(), "--output-format") == arguments.READ_OUTPUT_FORMATS
    assert _choices(read_job.build_parser(), "--mode") == arguments.READ_WRITE_MODES
    assert _choices(ingest_job.build_parser(), "--source-format") == arguments.INGEST_SOURCE_FORMATS
    assert _choices(ingest_job.build_parser(), "--delete-mode") == arguments.INGEST_DELETE_MODES
    assert _choices(compact_job.build_parser(), "--strategy") == arguments.COMPACT_STRATEGIES
    assert _choices(compact_job.build_parser(), "--rewrite-job-order") == arguments.REWRITE_JOB_ORDERS
    assert (
        _choices(maintain_job.build_parser(), "--rewrite-job-order", "rewrite-position-deletes")
        == arguments.REWRITE_JOB_ORDERS
    )
