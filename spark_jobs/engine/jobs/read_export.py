"""The read job's export: plan on the driver, decide where the tasks run, write through a staging directory.

1. Load the table and resolve the snapshot; when the snapshot alone shows the read is too large for the driver, or
   the planning mode is distributed (the manifests are read on the executors), rule the driver out now, so Spark
   starts beside the planning (``placement``).
2. Plan (bad input fails here, before any work), refuse an output over a table or the warehouse, and an output
   that is not free (``export_location.check_output_free``).
3. Decide where the tasks run: the driver unless its executor refuses the export (``export_refusal``: format,
   location, codec, planned bytes). On Spark, plan again when the first plan has fewer tasks than Spark's slots.
4. The executor writes the rows through a staging directory beside the output (``write_export``); the counters are
   the plan's plus those of the reads that ran on other processes.
"""

from __future__ import annotations

import logging
import time

from spark_jobs.engine.jobs.executor import ExportTarget
from spark_jobs.engine.jobs.export_location import check_output_free
from spark_jobs.engine.jobs.placement import Placement, spark_needed_before_planning
from spark_jobs.engine.jobs.read_results import ExportResult, ReadRequest
from spark_jobs.engine.planning.planning_mode import PlanningMode, planning_modes
from spark_jobs.engine.read.session import ReadSession, open_read_session
from spark_jobs.engine.table.catalog import load_catalog, load_table, refuse_output_over_tables
from spark_jobs.engine.table.snapshots import resolve_read_target

log = logging.getLogger("spark_jobs.read")  # the job's logger: these lines are the read job's


def export_table(request: ReadRequest, target: ExportTarget, placement: Placement) -> ExportResult:
    """Read ``request``'s rows and write them at ``target`` (module doc); the job's result."""
    phases: dict[str, float] = {"plan": 0.0}
    started = time.perf_counter()
    catalog = load_catalog(request.catalog)
    table = load_table(catalog, request.table)
    snapshot = resolve_read_target(table, **request.snapshot).snapshot
    phases["plan"] += time.perf_counter() - started
    # Distributed planning reads the manifests on the executors: Spark starts for it, beside the table's load.
    distributed = PlanningMode.DISTRIBUTED in planning_modes(table.properties, request.parsed_planning_mode())
    if distributed or spark_needed_before_planning(snapshot, request.row_filter, request.driver_max_bytes):
        placement.rule_out_driver()

    def plan(parallelism: int | None = None) -> ReadSession:
        log.info("plan: %s ...", request.table)
        started = time.perf_counter()
        # The executors' manifest reader when planning may use it: distributed planning (Spark started for it),
        # or ``auto`` once Spark runs anyway; else every manifest is read in this process.
        remote = placement.manifest_reader() if distributed or parallelism is not None else None
        planned = open_read_session(
            catalog,
            table,
            columns=request.columns,
            row_filter=request.row_filter,
            split_size=request.split_size,
            parallelism=parallelism,
            remote=remote,
            planning_mode=request.parsed_planning_mode(),
            **request.snapshot,
        )
        phases["plan"] += time.perf_counter() - started
        log.info(
            "plan done in %.1f s: snapshot %s, %d tasks",
            time.perf_counter() - started,
            planned.snapshot_id,
            len(planned.tasks),
        )
        return planned

    session = plan()
    refuse_output_over_tables(catalog, table, target.output)
    check_output_free(target.output, target.mode, session.context.io_properties)
    if not placement.decided:
        refusal = placement.in_process.export_refusal(session, target, request.driver_max_bytes)
        if refusal is not None:
            log.info("the read runs on Spark: %s", refusal)
        executor = placement.decide(refusal)
    else:
        executor = placement.executor()
    parallelism = executor.parallelism()
    if parallelism is not None:
        if request.split_size is None and len(session.tasks) < parallelism:
            # Planned before Spark started (bad input fails fast); plan again so the split size fits Spark's slots.
            session = plan(parallelism)
        log.info("read and write to %s (%s) ...", target.output, target.output_format)
    started = time.perf_counter()
    remote_counters = executor.write_export(session, target)
    phases["read_and_write"] = time.perf_counter() - started
    log.info("read and write done in %.1f s", phases["read_and_write"])
    counters = session.metrics.as_dict()
    for key, value in remote_counters.items():
        counters[key] = counters.get(key, 0) + value
    return ExportResult(
        table=session.table_name,
        snapshot_id=session.snapshot_id,
        output=target.output,
        output_format=target.output_format,
        counters=counters,
        ran_in=executor.ran_in,
        seconds=phases,
    )
