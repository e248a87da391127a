"""The ingest modes and their options, with the combinations that cannot work refused before any work."""

from __future__ import annotations

from dataclasses import dataclass

from spark_jobs.engine.shared.errors import UserInputError

MODES = ("append", "overwrite", "upsert", "delete")
DELETE_MODES = ("position", "equality")
FORMAT_VERSIONS = (2, 3)  # of the tables --create-if-missing makes


@dataclass(frozen=True)
class IngestOptions:
    """What to do with the source rows (the ingest job's options)."""

    mode: str = "append"
    key: tuple[str, ...] = ()
    overwrite_filter: str | None = None
    delete_mode: str = "position"
    idempotency_key: str | None = None
    create_if_missing: bool = False
    partition_by: str | None = None
    sort_by: str | None = None
    allow_schema_evolution: bool = False
    format_version: int = 2  # of a table made by create_if_missing

    @property
    def deletes_by_key(self) -> bool:
        """Upsert and delete remove the table's rows whose key is in the batch."""
        return self.mode in ("upsert", "delete")


def check_options(options: IngestOptions) -> None:
    """Refuse option combinations that cannot work, before any Spark work."""
    if options.mode not in MODES:
        raise UserInputError(f"--mode must be one of {', '.join(MODES)}, got {options.mode!r}")
    if options.delete_mode not in DELETE_MODES:
        raise UserInputError(f"--delete-mode must be one of {', '.join(DELETE_MODES)}, got {options.delete_mode!r}")
    if options.deletes_by_key and not options.key:
        raise UserInputError(f"--mode {options.mode} needs --key naming the key column(s)")
    if options.overwrite_filter is not None and options.mode != "overwrite":
        raise UserInputError("--overwrite-filter applies to --mode overwrite only")
    if options.overwrite_filter is not None and not options.overwrite_filter.strip():
        # Blank would match every row: the whole table replaced, where leaving it out replaces only the partitions
        # the source writes to.
        raise UserInputError(
            "--overwrite-filter is empty; give a row filter ('true' replaces every row) or leave it out to replace "
            "the partitions the source writes to"
        )
    if options.idempotency_key is not None and not options.idempotency_key.strip():
        # Recorded as a key, a blank key would make every later run with it a silent no-op.
        raise UserInputError(
            "--idempotency-key is empty; give a key unique to the run (e.g. run id and task) or omit it"
        )
    if options.format_version not in FORMAT_VERSIONS:
        raise UserInputError(f"--format-version must be 2 or 3, got {options.format_version}")
    if (options.partition_by or options.sort_by) and not options.create_if_missing:
        raise UserInputError("--partition-by and --sort-by apply to a table made by --create-if-missing only")
