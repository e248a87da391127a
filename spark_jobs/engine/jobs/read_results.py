"""The read job's request and its three results, each producing the job's final JSON line.

A result's ``as_json`` is the line the job prints (``job_contract.RESULT_FIELDS["read"]`` names the fields every
read result holds; the contract test checks each result class against it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spark_jobs.engine.jobs.executor import RanIn
from spark_jobs.engine.planning.planning_mode import PlanningMode


@dataclass(frozen=True)
class ReadRequest:
    """What to read: the table at a snapshot (at most one of id, ref, time), its columns and rows, and the limit
    of a scan the driver runs without Spark."""

    catalog: str
    table: str
    snapshot_id: int | None = None
    ref: str | None = None
    as_of: int | str | None = None
    columns: list[str] | None = None
    row_filter: str | None = None
    split_size: int | None = None
    driver_max_bytes: int = 0
    planning_mode: str | None = None  # auto, local, distributed (default: the table's properties, else auto)

    def parsed_planning_mode(self) -> PlanningMode | None:
        """The requested planning mode (bad input names ``--planning-mode``), or None for the table's."""
        return PlanningMode.parse(self.planning_mode, name="--planning-mode") if self.planning_mode else None

    @property
    def snapshot(self) -> dict[str, Any]:
        """The snapshot selection as keyword arguments of ``open_read_session`` and ``resolve_read_target``."""
        return {"snapshot_id": self.snapshot_id, "ref": self.ref, "as_of": self.as_of}


def _read_line(
    table: str, snapshot_id: int | None, fields: dict[str, Any], ran_in: RanIn, seconds: dict[str, float]
) -> dict[str, Any]:
    """A read result's JSON line: what every mode says (status, job, table, snapshot), its own ``fields`` (counters
    and ``rows_out`` among them), where it ran, and its seconds rounded to milliseconds."""
    head = {"status": "ok", "job": "read", "table": table, "snapshot_id": snapshot_id}
    rounded = {name: round(value, 3) for name, value in seconds.items()}
    return {**head, **fields, "ran_in": ran_in, "seconds": rounded}


@dataclass(frozen=True)
class ExportResult:
    """An export's outcome: what was read, where it was written, the counters, where it ran, seconds per phase."""

    table: str
    snapshot_id: int | None
    output: str
    output_format: str
    counters: dict[str, Any]
    ran_in: RanIn
    seconds: dict[str, float] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The job's final JSON line."""
        fields = {"output": self.output, "output_format": self.output_format, "counters": self.counters}
        return _read_line(
            self.table, self.snapshot_id, {**fields, "rows_out": self.counters["rows_out"]}, self.ran_in, self.seconds
        )


@dataclass(frozen=True)
class CountResult:
    """``--count``: count(*) and the counters saying how it was answered (manifests, scan, or both)."""

    table: str
    snapshot_id: int | None
    count: int
    counters: dict[str, Any]
    ran_in: RanIn
    seconds: dict[str, float] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The job's final JSON line (no output: ``rows_out`` is the count)."""
        fields = {"count": self.count, "output": None, "output_format": None, "counters": self.counters}
        return _read_line(self.table, self.snapshot_id, {**fields, "rows_out": self.count}, self.ran_in, self.seconds)


@dataclass(frozen=True)
class AggregateResult:
    """``--aggregate``: the values by label (JSON-safe), the counters, where the scan ran."""

    table: str
    snapshot_id: int | None
    aggregates: dict[str, Any]
    counters: dict[str, Any]
    ran_in: RanIn
    seconds: dict[str, float] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The job's final JSON line (``rows_out``: the rows aggregated, deletes and filter applied)."""
        fields = {"output": None, "output_format": None, "aggregates": self.aggregates, "counters": self.counters}
        rows = self.counters["rows_aggregated"]
        return _read_line(self.table, self.snapshot_id, {**fields, "rows_out": rows}, self.ran_in, self.seconds)
