"""Does a table need compaction? File counts, sizes and deleted rows per partition, from manifests alone.

1. Read the current snapshot's manifests (live entries only) through the table's FileIO; no data file is opened.
   DuckDB sums them per partition in one query per spec (``manifest_summary``: seconds for 10^6 files, no Python
   object per file); where its avro extension does not load, pyiceberg reads the entries one by one.
2. Per partition (spec and partition values): data files, their rows and bytes, the *small* ones (under
   ``small_file_ratio`` x the target file size: AWS Glue's 75 %), the *fragments* (under target / ``fragment_ratio``:
   Apache Amoro's target/8), delete files and the rows they delete (their record counts: an upper bound, as a delete
   may name an already deleted row). The target is the table's ``write.target-file-size-bytes`` (else 512 MiB).
3. Each threshold that a partition (or, for the table-wide ones, the table) reaches is one reason to compact, said
   in words; a partition that reaches none is said to be healthy with its numbers.

The defaults are what production systems use when no threshold is given:
- AWS Glue's table optimizer compacts a partition with more than 100 files under 75 % of the target size;
- Apache Amoro's self-optimizing starts on 12 or more fragment files (under target / 8) in a partition, or a
  deleted-row (duplicate) ratio of 0.1.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from pyiceberg.manifest import DataFileContent
from pyiceberg.typedef import Record

from airflow_iceberg_provider.manifest_summary import summarize

TARGET_FILE_SIZE_PROPERTY = "write.target-file-size-bytes"
DEFAULT_TARGET_FILE_SIZE = 512 * 1024 * 1024
MIN_FILE_SIZE_RATIO = 0.75
UNPARTITIONED = "(unpartitioned)"
# How many partitions a report lists (the ones that need compaction first, most small files first).
PARTITIONS_LISTED = 25


@dataclass(frozen=True)
class PartitionStats:
    """Live files of one partition of one snapshot: data files by size class, delete files, rows."""

    partition: str
    data_files: int = 0
    small_files: int = 0
    fragment_files: int = 0
    data_rows: int = 0
    data_bytes: int = 0
    delete_files: int = 0
    deleted_rows: int = 0

    @property
    def deleted_row_ratio(self) -> float:
        """Deleted rows over data rows (0 for no rows)."""
        return self.deleted_rows / self.data_rows if self.data_rows else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with the ratio."""
        return {**asdict(self), "deleted_row_ratio": round(self.deleted_row_ratio, 6)}


@dataclass(frozen=True)
class FileStats:
    """Live files of one snapshot, table-wide and per partition, and the sizes that classify them."""

    snapshot_id: int | None
    data_files: int
    small_data_files: int
    small_file_bytes: int
    data_rows: int
    delete_files: int
    deleted_rows: int
    fragment_files: int = 0
    fragment_file_bytes: int = 0
    data_bytes: int = 0
    target_file_size_bytes: int = DEFAULT_TARGET_FILE_SIZE
    partitions: tuple[PartitionStats, ...] = ()
    data_file_sizes: tuple[int, ...] = field(default=(), repr=False)

    @property
    def deleted_row_ratio(self) -> float:
        """Deleted rows over data rows (0 for an empty table)."""
        return self.deleted_rows / self.data_rows if self.data_rows else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready table-wide numbers with the ratio (partitions and sizes are reported separately)."""
        table_wide = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_TABLE_WIDE}
        return {
            **table_wide,
            "partition_count": len(self.partitions),
            "deleted_row_ratio": round(self.deleted_row_ratio, 6),
        }


_NOT_TABLE_WIDE = ("partitions", "data_file_sizes")


# The thresholds that count files or bytes (a rule is off when None, never with 0 or less).
_COUNTS_AND_SIZES = (
    "min_small_files",
    "min_delete_files",
    "small_file_bytes",
    "max_small_files_per_partition",
    "min_fragment_files_per_partition",
    "min_delete_files_per_partition",
    "target_file_size_bytes",
)


@dataclass(frozen=True)
class CompactionThresholds:
    """When compaction is needed: any threshold reached. ``None`` switches a rule off.

    Per partition: ``max_small_files_per_partition`` (more than this many small files: AWS Glue, 100),
    ``min_fragment_files_per_partition`` (at least this many fragments: Amoro, 12), ``min_deleted_row_ratio`` (deleted
    rows / rows: Amoro, 0.1), ``min_delete_files_per_partition``. Table-wide: ``min_small_files``,
    ``min_delete_files``. With no threshold given at all, the production defaults apply (``with_defaults``).
    """

    min_small_files: int | None = None
    min_delete_files: int | None = None
    min_deleted_row_ratio: float | None = None
    small_file_bytes: int | None = None
    max_small_files_per_partition: int | None = None
    min_fragment_files_per_partition: int | None = None
    min_delete_files_per_partition: int | None = None
    small_file_ratio: float = MIN_FILE_SIZE_RATIO
    fragment_ratio: int = 8
    target_file_size_bytes: int | None = None

    def __post_init__(self) -> None:
        if not 0 < self.small_file_ratio <= 1:
            raise ValueError(f"compaction thresholds: small_file_ratio {self.small_file_ratio} must be in (0, 1]")
        if self.fragment_ratio < 1:
            raise ValueError(f"compaction thresholds: fragment_ratio {self.fragment_ratio} must be at least 1")
        if self.min_deleted_row_ratio is not None and not 0 < self.min_deleted_row_ratio <= 1:
            raise ValueError(
                f"compaction thresholds: min_deleted_row_ratio {self.min_deleted_row_ratio} must be in (0, 1]"
            )
        for name in _COUNTS_AND_SIZES:
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"compaction thresholds: {name} {value!r} must be a whole number, at least 1")

    def with_defaults(self) -> CompactionThresholds:
        """These thresholds, or AWS Glue's and Apache Amoro's when none is set."""
        rules = (
            self.min_small_files,
            self.min_delete_files,
            self.min_deleted_row_ratio,
            self.max_small_files_per_partition,
            self.min_fragment_files_per_partition,
            self.min_delete_files_per_partition,
        )
        if any(rule is not None for rule in rules):
            return self
        return replace(
            self, max_small_files_per_partition=100, min_fragment_files_per_partition=12, min_deleted_row_ratio=0.1
        )

    def reasons(self, stats: FileStats) -> list[str]:
        """One sentence per threshold reached (table-wide first, then per partition); empty when none is."""
        reasons = []
        if self.min_small_files is not None and stats.small_data_files >= self.min_small_files:
            reasons.append(
                f"{stats.small_data_files} data files under {stats.small_file_bytes} bytes "
                f"(threshold {self.min_small_files})"
            )
        if self.min_delete_files is not None and stats.delete_files >= self.min_delete_files:
            reasons.append(f"{stats.delete_files} delete files (threshold {self.min_delete_files})")
        for partition in stats.partitions:
            reasons += [f"partition {partition.partition}: {why}" for why in self.partition_reasons(partition, stats)]
        return reasons

    def partition_reasons(self, partition: PartitionStats, stats: FileStats) -> list[str]:
        """The thresholds one partition reaches, each in words with the rule it comes from."""
        reasons = []
        limit = self.max_small_files_per_partition
        if limit is not None and partition.small_files > limit:
            reasons.append(
                f"{partition.small_files} small files (under {describe_size(stats.small_file_bytes)}) > {limit} "
                "(AWS Glue's rule)"
            )
        minimum = self.min_fragment_files_per_partition
        if minimum is not None and partition.fragment_files >= minimum:
            fragment = describe_size(stats.fragment_file_bytes)
            reasons.append(
                f"{partition.fragment_files} fragment files (under {fragment}) >= {minimum} (Apache Amoro's rule)"
            )
        ratio = self.min_deleted_row_ratio
        if ratio is not None and partition.deleted_rows and partition.deleted_row_ratio >= ratio:
            reasons.append(f"deleted-row ratio {partition.deleted_row_ratio:.3f} >= {ratio}")
        minimum = self.min_delete_files_per_partition
        if minimum is not None and partition.delete_files >= minimum:
            reasons.append(f"{partition.delete_files} delete files >= {minimum}")
        return reasons

    def explain(self, stats: FileStats, limit: int = PARTITIONS_LISTED) -> list[str]:
        """One line per partition (those that need compaction first): its files and the decision, in words."""
        ranked = sorted(
            stats.partitions,
            key=lambda p: (not self.partition_reasons(p, stats), -p.small_files, -p.delete_files, p.partition),
        )
        lines = []
        for partition in ranked[:limit]:
            why = self.partition_reasons(partition, stats)
            decision = "compaction needed: " + "; ".join(why) if why else "healthy: no threshold reached"
            lines.append(f"partition {partition.partition}: {describe_partition(partition)} -> {decision}")
        if len(ranked) > limit:
            needing = sum(1 for p in ranked[limit:] if self.partition_reasons(p, stats))
            lines.append(f"... {len(ranked) - limit} more partitions ({needing} of them need compaction)")
        return lines


def describe_partition(partition: PartitionStats) -> str:
    """A partition's files in words."""
    text = (
        f"{partition.data_files} data files ({describe_size(partition.data_bytes)}, {partition.data_rows:,} rows), "
        f"{partition.small_files} small, {partition.fragment_files} fragments, {partition.delete_files} delete files"
    )
    if partition.deleted_rows:
        text += f" ({partition.deleted_rows:,} deleted rows, ratio {partition.deleted_row_ratio:.3f})"
    return text


def describe_size(value: float) -> str:
    """Bytes in a readable unit (``384 MiB``)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" or value >= 10 else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def target_file_size_of(table: Any, override: int | None = None) -> int:
    """The target data file size of ``table`` (its ``write.target-file-size-bytes``, else 512 MiB)."""
    if override is not None:
        return int(override)
    return int(table.properties.get(TARGET_FILE_SIZE_PROPERTY, DEFAULT_TARGET_FILE_SIZE))


def file_stats(
    table: Any, small_file_bytes: int | None = None, thresholds: CompactionThresholds | None = None
) -> FileStats:
    """Counts of the live files of ``table``'s current snapshot (a pyiceberg Table), per partition, from manifests."""
    rules = thresholds or CompactionThresholds()
    target = target_file_size_of(table, rules.target_file_size_bytes)
    override = small_file_bytes if small_file_bytes is not None else rules.small_file_bytes
    small = int(override) if override is not None else int(target * rules.small_file_ratio)
    fragment = target // rules.fragment_ratio
    snapshot = table.current_snapshot()
    partitions: dict[tuple[int, Any], dict[str, int]] = {}
    names: dict[tuple[int, Any], str] = {}
    sizes: list[int] = []
    sums = summarize(table, snapshot, small=small, fragment=fragment) if snapshot is not None else None
    if sums is not None:
        specs, schema = table.specs(), table.schema()
        for item in sums:
            key = (item.spec_id, item.partition)
            counts = partitions.setdefault(key, dict.fromkeys(_COUNTED, 0))
            if key not in names:
                names[key] = _partition_name(specs.get(item.spec_id), Record(*item.partition), schema)
            if item.content == DataFileContent.DATA:
                sizes.extend(item.sizes)
                counts["data_files"] += item.files
                counts["data_rows"] += item.rows
                counts["data_bytes"] += item.bytes
                counts["small_files"] += item.small_files
                counts["fragment_files"] += item.fragment_files
            else:
                counts["delete_files"] += item.files
                counts["deleted_rows"] += item.rows
    elif snapshot is not None:
        specs, schema = table.specs(), table.schema()
        for data_file in _live_files(table, snapshot):
            key = (data_file.spec_id, data_file.partition)
            counts = partitions.setdefault(key, dict.fromkeys(_COUNTED, 0))
            if key not in names:
                names[key] = _partition_name(specs.get(data_file.spec_id), data_file.partition, schema)
            if data_file.content == DataFileContent.DATA:
                size = data_file.file_size_in_bytes
                sizes.append(size)
                counts["data_files"] += 1
                counts["data_rows"] += data_file.record_count
                counts["data_bytes"] += size
                counts["small_files"] += size < small
                counts["fragment_files"] += size < fragment
            else:
                counts["delete_files"] += 1
                counts["deleted_rows"] += data_file.record_count
    per_partition = tuple(
        sorted((PartitionStats(names[key], **counts) for key, counts in partitions.items()), key=lambda p: p.partition)
    )
    return FileStats(
        snapshot_id=snapshot.snapshot_id if snapshot is not None else None,
        data_files=sum(p.data_files for p in per_partition),
        small_data_files=sum(p.small_files for p in per_partition),
        small_file_bytes=small,
        data_rows=sum(p.data_rows for p in per_partition),
        delete_files=sum(p.delete_files for p in per_partition),
        deleted_rows=sum(p.deleted_rows for p in per_partition),
        fragment_files=sum(p.fragment_files for p in per_partition),
        fragment_file_bytes=fragment,
        data_bytes=sum(p.data_bytes for p in per_partition),
        target_file_size_bytes=target,
        partitions=per_partition,
        data_file_sizes=tuple(sizes),
    )


_COUNTED = ("data_files", "small_files", "fragment_files", "data_rows", "data_bytes", "delete_files", "deleted_rows")


def _live_files(table: Any, snapshot: Any) -> Iterable[Any]:
    for manifest in snapshot.manifests(table.io):
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            yield entry.data_file


def _partition_name(spec: Any, partition: Any, schema: Any) -> str:
    """``day=2026-01-01/bucket=3`` for a partition, ``(unpartitioned)`` for none (spec id added for older specs)."""
    if spec is None or spec.is_unpartitioned():
        return UNPARTITIONED
    try:
        path = spec.partition_to_path(partition, schema)
    except Exception:  # a partition value the transform cannot print: fall back to the raw record
        path = str(partition)
    return path


def assess(table: Any, thresholds: CompactionThresholds) -> dict[str, Any]:
    """The decision for ``table`` as a sensor or trigger reports it (JSON-ready): needed or not, and why in words.

    ``stats`` are table-wide; ``reasons`` one sentence per threshold reached; ``explanation`` one line per partition
    (those that need compaction first); ``partitions`` the listed partitions' numbers; ``thresholds`` the rules used.
    """
    rules = thresholds.with_defaults()
    stats = file_stats(table, thresholds=rules)
    reasons = rules.reasons(stats)
    if len(reasons) > PARTITIONS_LISTED:
        reasons = [*reasons[:PARTITIONS_LISTED], f"... and {len(reasons) - PARTITIONS_LISTED} more"]
    listed = sorted(stats.partitions, key=lambda p: (not rules.partition_reasons(p, stats), -p.small_files))
    return {
        "needed": bool(reasons),
        "stats": stats.as_dict(),
        "reasons": reasons,
        "explanation": rules.explain(stats),
        "partitions": [p.as_dict() for p in listed[:PARTITIONS_LISTED]],
        "thresholds": {key: value for key, value in asdict(rules).items() if value is not None},
    }
