"""Where a scan's manifests are read: in this process (local) or on the Spark executors (distributed).

Iceberg Java's planning modes (``PlanningMode``; table properties ``read.data-planning-mode`` and
``read.delete-planning-mode``, read options ``data-planning-mode`` and ``delete-planning-mode``), with its rule
for ``auto`` (``BaseDistributedDataScan.shouldPlanLocally``):

1. ``local`` reads every manifest in this process; ``distributed`` reads them on the executors (unless there are
   none to read, or no Spark session to read them with).
2. ``auto`` plans locally when the cluster offers no more parallelism than this process (``remote_parallelism``
   at most ``local_parallelism``, the threads this process decodes manifests on), or there are at most twice as many
   manifests as local threads, or their total size is at most 128 MiB per local thread; otherwise distributed.
3. In ``auto``, data manifests are planned locally when equality deletes may apply (their column statistics are
   needed beside the delete index), and delete manifests too when they may hold equality deletes, as Java does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum

from pyiceberg.manifest import ManifestFile

from spark_jobs.engine.shared.errors import UserInputError

DATA_PLANNING_MODE_PROPERTY = "read.data-planning-mode"
DELETE_PLANNING_MODE_PROPERTY = "read.delete-planning-mode"
LOCAL_PLANNING_MAX_SLOT_SIZE = 128 * 1024 * 1024


class PlanningMode(Enum):
    """Where manifests are read (module doc)."""

    AUTO = "auto"
    LOCAL = "local"
    DISTRIBUTED = "distributed"

    @classmethod
    def parse(cls, raw: str, *, name: str) -> PlanningMode:
        """``raw`` as a mode; anything else is an error naming ``name`` (the argument or property)."""
        try:
            return cls(raw.strip().lower())
        except ValueError:
            choices = ", ".join(mode.value for mode in cls)
            raise UserInputError(f"{name} must be one of {choices}, got {raw!r}") from None


def planning_modes(
    properties: Mapping[str, str], requested: PlanningMode | None = None
) -> tuple[PlanningMode, PlanningMode]:
    """The data and delete planning modes: ``requested`` for both when given, else the table's properties."""
    if requested is not None:
        return requested, requested
    data = PlanningMode.parse(properties.get(DATA_PLANNING_MODE_PROPERTY, "auto"), name=DATA_PLANNING_MODE_PROPERTY)
    deletes = PlanningMode.parse(
        properties.get(DELETE_PLANNING_MODE_PROPERTY, "auto"), name=DELETE_PLANNING_MODE_PROPERTY
    )
    return data, deletes


def plan_locally(
    mode: PlanningMode,
    manifests: Sequence[ManifestFile],
    *,
    remote_parallelism: int,
    local_parallelism: int,
    needs_local: bool = False,
) -> bool:
    """Whether ``manifests`` are read in this process (module doc, steps 1 to 3)."""
    if mode == PlanningMode.LOCAL or not manifests:
        return True
    if mode == PlanningMode.DISTRIBUTED:
        return False
    if needs_local:
        return True
    total_size = sum(manifest.manifest_length or 0 for manifest in manifests)
    return (
        remote_parallelism <= local_parallelism
        or len(manifests) <= 2 * local_parallelism
        or total_size <= local_parallelism * LOCAL_PLANNING_MAX_SLOT_SIZE
    )
