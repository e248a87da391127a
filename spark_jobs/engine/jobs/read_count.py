"""count(*) of a table at a snapshot: from the manifests where no delete applies, else with a scan of the rest.

1. Resolve the snapshot and plan the count from the manifests (``planning.row_count``): when no delete file
   applies to any data file, the manifests' record counts are the answer and nothing is read.
2. Otherwise open a read of the narrowest column over only the data files with deletes, decide where it runs
   (``Placement.decide_for_scan``: by its planned bytes, unless decided already), and count its rows there;
   the manifests count the other files.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from pyiceberg.catalog import Catalog
from pyiceberg.table import Table

from spark_jobs.engine.jobs.placement import Placement
from spark_jobs.engine.jobs.read_results import CountResult, ReadRequest
from spark_jobs.engine.planning.row_count import plan_count
from spark_jobs.engine.read.session import narrowest_column, open_read_session
from spark_jobs.engine.table.catalog import load_catalog, load_table
from spark_jobs.engine.table.snapshots import ReadTarget, resolve_read_target

log = logging.getLogger("spark_jobs.read")  # the job's logger: these lines are the read job's


def count_table(
    catalog: str | Catalog,
    table: str,
    placement: Placement,
    *,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: int | str | None = None,
) -> tuple[int, dict[str, Any]]:
    """``count(*)`` of ``table`` at the chosen snapshot, and the counters saying how it was answered (module doc)."""
    catalog_object = load_catalog(catalog) if isinstance(catalog, str) else catalog
    iceberg_table = load_table(catalog_object, table)
    target = resolve_read_target(iceberg_table, snapshot_id=snapshot_id, ref=ref, as_of=as_of)
    plan = plan_count(iceberg_table, target.snapshot)
    counters = plan.counters()
    if plan.answered_from_metadata:
        log.info("count(*) of %s answered from the %s: %d rows", table, plan.source, plan.metadata_rows)
        return plan.metadata_rows, counters
    scanned = _count_by_scan(catalog_object, iceberg_table, target, plan.files_to_scan, placement)
    counters["rows_counted_by_scan"] = scanned
    log.info(
        "count(*) of %s: %d rows from the manifests, %d by scanning %d data files with deletes",
        table,
        plan.metadata_rows,
        scanned,
        len(plan.files_to_scan),
    )
    return plan.metadata_rows + scanned, counters


def _count_by_scan(
    catalog: Catalog, table: Table, target: ReadTarget, paths: frozenset[str], placement: Placement
) -> int:
    """Rows of the data files ``paths`` with their deletes applied, reading one narrow column."""
    snapshot_id = target.snapshot.snapshot_id if target.snapshot is not None else None
    session = open_read_session(catalog, table, columns=[narrowest_column(target.schema).name], snapshot_id=snapshot_id)
    session.keep_only_files(paths)
    return placement.decide_for_scan(session.tasks).count_rows(session)


def count_job(request: ReadRequest, placement: Placement) -> CountResult:
    """``--count``: count(*) at the request's snapshot; Spark starts only for a scan the manifests cannot replace
    that is too large for the driver."""
    started = time.perf_counter()
    table = load_table(load_catalog(request.catalog), request.table)
    target = resolve_read_target(table, **request.snapshot)
    snapshot_id = target.snapshot.snapshot_id if target.snapshot is not None else None
    rows, counters = count_table(request.catalog, request.table, placement, snapshot_id=snapshot_id)
    return CountResult(
        table=".".join(table.name()),
        snapshot_id=snapshot_id,
        count=rows,
        counters=counters,
        ran_in=placement.ran_in,
        seconds={"count": time.perf_counter() - started},
    )
