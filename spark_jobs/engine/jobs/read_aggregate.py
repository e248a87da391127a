"""Aggregates of a table's rows at a snapshot (every delete applied, then the filter), over the executor seam.

1. Parse the aggregates and check them against the chosen snapshot's schema (bad input fails before any work).
2. ``count(*)`` alone without a filter: the manifests answer for every data file no delete applies to
   (``planning.row_count``); only the others are scanned.
3. Otherwise plan the read of the aggregates' columns (filter and deletes as any read). Where the placement is
   still open, the planned bytes decide (``Placement.decide_for_scan``), and a plan for Spark is made again for its
   slots. Each task folds its batches into partials where it runs (``TaskExecutor.fold_tasks``: one Spark stage,
   no row handed to the JVM, or this process); the driver combines them under the executor's ANSI mode.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from pyiceberg.catalog import Catalog
from pyiceberg.table import Table

from spark_jobs.engine.jobs.placement import Placement, spark_needed_before_planning
from spark_jobs.engine.jobs.read_results import AggregateResult, ReadRequest
from spark_jobs.engine.planning.row_count import plan_count
from spark_jobs.engine.read.aggregates import bind_aggregates, json_safe, parse_aggregates
from spark_jobs.engine.read.session import ReadSession, narrowest_column, open_read_session
from spark_jobs.engine.table.catalog import load_catalog, load_table
from spark_jobs.engine.table.snapshots import resolve_read_target

log = logging.getLogger("spark_jobs.read")  # the job's logger: these lines are the read job's


def aggregate_rows(
    catalog: str | Catalog,
    table: str | Table,
    aggregates: str | Sequence[str],
    placement: Placement,
    *,
    row_filter: str | None = None,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: int | str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The aggregates' values by label and the counters saying how they were computed (module doc)."""
    parsed = parse_aggregates(aggregates)
    catalog_object = load_catalog(catalog) if isinstance(catalog, str) else catalog
    iceberg_table = load_table(catalog_object, table) if isinstance(table, str) else table  # or a loaded Table
    table_name = ".".join(iceberg_table.name())
    target = resolve_read_target(iceberg_table, snapshot_id=snapshot_id, ref=ref, as_of=as_of)
    plan = bind_aggregates(parsed, target.schema, table_name)
    resolved_id = target.snapshot.snapshot_id if target.snapshot is not None else None
    counters: dict[str, Any] = {"aggregates_from_metadata": False}
    metadata_rows = 0
    scan_only: frozenset[str] | None = None
    if plan.only_count_rows and row_filter is None:
        count_plan = plan_count(iceberg_table, target.snapshot)
        counters.update(count_plan.counters())
        if count_plan.answered_from_metadata:
            counters["aggregates_from_metadata"] = True
            counters["rows_aggregated"] = count_plan.metadata_rows
            log.info("%s of %s answered from the %s", plan.labels[0], table_name, count_plan.source)
            return {plan.labels[0]: count_plan.metadata_rows}, counters
        metadata_rows, scan_only = count_plan.metadata_rows, count_plan.files_to_scan
    # count(*) alone reads the narrowest column; otherwise the aggregates' columns.
    columns = list(plan.columns) or [narrowest_column(target.schema).name]

    def plan_scan(parallelism: int | None) -> ReadSession:
        planned = open_read_session(
            catalog_object,
            iceberg_table,
            columns=columns,
            row_filter=row_filter,
            snapshot_id=resolved_id,
            parallelism=parallelism,
        )
        if scan_only is not None:
            planned.keep_only_files(scan_only)
        return planned

    if placement.decided:
        executor = placement.executor()
        session = plan_scan(executor.parallelism())
    else:
        session = plan_scan(None)
        executor = placement.decide_for_scan(session.tasks)
        if executor.parallelism() is not None:
            session = plan_scan(executor.parallelism())
    counters.update(session.metrics.as_dict())
    description = f"aggregate {', '.join(plan.labels)} of {table_name}"
    partials, executor_counters = executor.fold_tasks(session, plan.partial_of, description)
    for key, value in executor_counters.items():
        counters[key] = counters.get(key, 0) + value
    counters["aggregate_tasks"] = len(session.tasks)
    counters["rows_aggregated"] = counters.get("rows_out", 0) + metadata_rows
    values = plan.combine(partials, ansi=executor.ansi_mode())
    if scan_only is not None:
        values[plan.labels[0]] += metadata_rows
    log.info("aggregates of %s at snapshot %s: %s", table_name, resolved_id, values)
    return values, counters


def aggregate_job(request: ReadRequest, aggregates: str, placement: Placement) -> AggregateResult:
    """``--aggregate``: the values in the result line; Spark starts at once unless the manifests may answer
    (count(*) alone) or the scan may run in the driver, and as soon as the snapshot shows it is too large."""
    started = time.perf_counter()
    parsed = parse_aggregates(aggregates)  # malformed aggregates fail before Spark starts
    count_rows_only = request.row_filter is None and all(a.function == "count" and a.column is None for a in parsed)
    if not (count_rows_only or request.driver_max_bytes > 0):
        placement.rule_out_driver()
    catalog = load_catalog(request.catalog)
    table = load_table(catalog, request.table)
    target = resolve_read_target(table, **request.snapshot)
    bind_aggregates(parsed, target.schema, ".".join(table.name()))
    if not count_rows_only and spark_needed_before_planning(
        target.snapshot, request.row_filter, request.driver_max_bytes
    ):
        placement.rule_out_driver()
    snapshot_id = target.snapshot.snapshot_id if target.snapshot is not None else None
    values, counters = aggregate_rows(
        catalog, table, aggregates, placement, row_filter=request.row_filter, snapshot_id=snapshot_id
    )
    return AggregateResult(
        table=".".join(table.name()),
        snapshot_id=snapshot_id,
        aggregates=json_safe(values),
        counters=counters,
        ran_in=placement.ran_in,
        seconds={"aggregate": time.perf_counter() - started},
    )
