"""The Python API over Spark: ``load`` a table as a DataFrame, ``count`` its rows, ``aggregate`` them.

``spark_jobs.read`` exports these names (``from spark_jobs.read import load``).

- ``load`` plans on the driver (a bad table, snapshot, column or filter fails there) and returns a DataFrame read
  by the engine on the executors: through ``mapInArrow`` over the planned tasks (the cheaper route for Spark), or,
  when ``spark.sql.python.filterPushdown.enabled`` is true, through the ``iceberg_mor`` data source so that Spark's
  own filters on the DataFrame are pushed into the engine. Without ``row_filter``, its ``count()`` is answered as
  ``count`` answers it (``metadata_counted``: a subclass of the DataFrame's own class, not a patched instance).
- ``count`` and ``aggregate`` run on a given session's executors, or in this process without one
  (``engine/jobs/read_count.py``, ``engine/jobs/read_aggregate.py`` over the executor seam).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from spark_jobs.engine.planning.scan_tasks import ScanTask
from spark_jobs.spark.placement import placement_of

log = logging.getLogger("spark_jobs.read")


def load(
    spark: SparkSession,
    catalog: str,
    table: str,
    *,
    columns: list[str] | None = None,
    row_filter: str | None = None,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: int | str | None = None,
    planning_mode: str | None = None,
) -> DataFrame:
    """A DataFrame of ``table`` at the chosen snapshot with every delete applied (nothing is read until an action).

    ``catalog`` is a catalog name resolved through pyiceberg's configuration; ``row_filter`` uses pyiceberg's
    row-filter syntax; at most one of ``snapshot_id``, ``ref``, ``as_of`` (epoch ms or ISO-8601) may be given.
    ``planning_mode`` (``auto``, ``local``, ``distributed``; default: the table's ``read.data-planning-mode`` and
    ``read.delete-planning-mode``, else ``auto``) says whether the manifests are read here or on the executors.
    Without Python filter pushdown the snapshot is the one current when ``load`` is called, for every action on
    the DataFrame; call ``load`` again to see later commits.
    """
    from spark_jobs.engine.planning.planning_mode import PlanningMode
    from spark_jobs.engine.read.session import open_read_session
    from spark_jobs.job_support import engine_on_executors, hint_session_defaults
    from spark_jobs.spark.distributed_planning import SparkManifestReader
    from spark_jobs.spark.scan import (
        dataframe_from_session,
        dataframe_from_source,
        python_filter_pushdown_enabled,
        read_parallelism,
    )
    from spark_jobs.spark.types import spark_schema_of

    # Plan once on the driver first: a bad table, snapshot, column or filter fails here with a clear message.
    parallelism = read_parallelism(spark)
    engine_on_executors(spark)  # before planning: distributed planning runs the engine on the executors
    session = open_read_session(
        catalog,
        table,
        columns=columns,
        row_filter=row_filter,
        snapshot_id=snapshot_id,
        ref=ref,
        as_of=as_of,
        parallelism=parallelism,
        remote=SparkManifestReader(spark),
        planning_mode=PlanningMode.parse(planning_mode, name="planning_mode") if planning_mode else None,
    )
    hint_session_defaults(spark)
    if not python_filter_pushdown_enabled(spark):
        frame = dataframe_from_session(spark, session)
        if row_filter is None:
            return metadata_counted(frame, spark, catalog, table, snapshot_id=session.snapshot_id)
        return frame
    options = {
        "catalog": catalog,
        "table": table,
        "columns": ",".join(columns) if columns else None,
        "filter": row_filter,
        "snapshot_id": snapshot_id,
        "ref": ref,
        "as_of": as_of,
        "parallelism": parallelism,
    }
    # The schema found here is handed to Spark so its planner process does not open the table again for it.
    frame = dataframe_from_source(spark, options, schema=spark_schema_of(session.output_schema))
    if row_filter is None:
        return metadata_counted(frame, spark, catalog, table, snapshot_id=snapshot_id, ref=ref, as_of=as_of)
    return frame


def count(
    spark: SparkSession | None,
    catalog: str | Any,
    table: str,
    *,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: int | str | None = None,
    spark_for_plan: Callable[[Sequence[ScanTask]], SparkSession | None] | None = None,
) -> tuple[int, dict[str, Any]]:
    """``count(*)`` of ``table`` at the chosen snapshot, and the counters saying how it was answered.

    From the manifests when no delete file applies to any data file (``spark`` may then be None: nothing is read);
    otherwise the data files with deletes are scanned (on ``spark``, or in this process when it is None) and the
    others counted from the manifests. With ``spark`` None, ``spark_for_plan`` (if given) sees the scan's planned
    tasks and returns a session to run a scan too large for this process, or None.
    """
    from spark_jobs.engine.jobs.read_count import count_table

    placement = placement_of(spark, spark_for_plan)
    return count_table(catalog, table, placement, snapshot_id=snapshot_id, ref=ref, as_of=as_of)


def aggregate(
    spark: SparkSession | None,
    catalog: str | Any,
    table: str | Any,
    aggregates: str | list[str],
    *,
    row_filter: str | None = None,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: int | str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Aggregates of ``table``'s rows at the chosen snapshot (every delete applied, then ``row_filter``).

    ``table`` is ``ns.table`` or a loaded pyiceberg Table. ``aggregates`` is ``"count(*), sum(price)"`` or a list
    of such items: ``count(*)``, ``count(col)``, ``sum``, ``min``, ``max``, ``avg`` of top-level columns. Returns
    the values by label (``"sum(price)"``) as Spark SQL's aggregate over ``load(...)`` returns them (Python ints,
    floats, Decimals, strings, dates, timestamps: aware in UTC for ``timestamptz``), and counters saying how they
    were computed. Each Spark task folds its own rows with pyarrow and returns one partial: one Spark stage, no row
    handed to the JVM. ``count(*)`` alone without a filter is answered from the manifests where no delete applies
    (``aggregates_from_metadata``). With ``spark`` None the tasks run in this process. A function the column's type
    does not take is bad input (UserInputError).
    """
    from spark_jobs.job_support import engine_on_executors
    from spark_jobs.spark.aggregate import aggregate_table

    if spark is not None:
        engine_on_executors(spark)
    return aggregate_table(
        spark, catalog, table, aggregates, row_filter=row_filter, snapshot_id=snapshot_id, ref=ref, as_of=as_of
    )


class _MetadataCount:
    """Mixin of a whole-table DataFrame (no filter) whose ``count()`` is ``count``'s: from the manifests where no
    delete applies, so no row is read for it."""

    _count_target: tuple[SparkSession, str, str, dict[str, Any]]

    def count(self) -> int:
        """count(*) of the table at the frame's snapshot (``spark_jobs.read.count``)."""
        spark, catalog, table, snapshot = self._count_target
        rows, counters = count(spark, catalog, table, **snapshot)
        log.info("count(*) counters of %s: %s", table, counters)
        return rows


_COUNTED_TYPES: dict[type[DataFrame], type[DataFrame]] = {}


def _metadata_counted_type(base: type[DataFrame]) -> type[DataFrame]:
    """``base`` (the DataFrame class of this Spark) with the metadata ``count``; one class per base."""
    if base not in _COUNTED_TYPES:
        _COUNTED_TYPES[base] = type("MetadataCountedFrame", (_MetadataCount, base), {})
    return _COUNTED_TYPES[base]


def metadata_counted(
    frame: DataFrame, spark: SparkSession, catalog: str, table: str, **snapshot: int | str | None
) -> DataFrame:
    """A DataFrame of ``frame``'s plan whose ``count()`` is ``count``'s; every other method is the DataFrame's, and
    what they return are plain DataFrames."""
    counted = _metadata_counted_type(type(frame))(frame._jdf, frame.sparkSession)
    counted._count_target = (spark, catalog, table, snapshot)  # type: ignore[attr-defined]
    return counted
