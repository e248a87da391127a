"""A bin-pack plan in words: per partition, which files were taken and why each file group was kept or dropped.

The planner's own rules (``planner``), replayed on the same candidates so the words cannot drift from the decision:
1. per partition: its data files, how many were taken and for which reason (under ``min-file-size-bytes``, over
   ``max-file-size-bytes``, too many deletes or too high a delete ratio), or that none was;
2. the taken files packed as the planner packs them; each group kept, with the rules it meets, or dropped, with the
   rules it misses (``min-input-files``, more bytes than the target, more than ``max-file-size-bytes``, a
   delete-ridden file);
3. at most ``max_partitions`` partitions are described (the busiest first); the rest are counted.
"""

from __future__ import annotations

from collections.abc import Iterable

from spark_jobs.engine.compaction.bin_packing import ListPacker
from spark_jobs.engine.compaction.candidates import RewriteCandidate
from spark_jobs.engine.compaction.options import RewriteOptions
from spark_jobs.engine.compaction.planner import (
    PartitionValues,
    group_by_partition,
    is_group_worth_rewriting,
    is_rewrite_candidate,
    too_high_delete_ratio,
    too_many_deletes,
)


def _size(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def _partition(values: PartitionValues) -> str:
    return "unpartitioned table" if not values else "partition (" + ", ".join(str(v) for v in values) + ")"


def _delete_ridden(candidate: RewriteCandidate, options: RewriteOptions) -> bool:
    return too_many_deletes(candidate, options) or too_high_delete_ratio(candidate, options)


def _taken(files: list[RewriteCandidate], options: RewriteOptions) -> str:
    small = sum(candidate.length < options.min_file_size_bytes for candidate in files)
    large = sum(candidate.length > options.max_file_size_bytes for candidate in files)
    ridden = sum(_delete_ridden(candidate, options) for candidate in files)
    reasons = [
        f"{small} under min-file-size-bytes {_size(options.min_file_size_bytes)}",
        f"{large} over max-file-size-bytes {_size(options.max_file_size_bytes)}",
        f"{ridden} with delete-file-threshold {options.delete_file_threshold} or delete-ratio-threshold "
        f"{options.delete_ratio_threshold} reached",
    ]
    return ", ".join(reasons)


def group_reasons(group: list[RewriteCandidate], options: RewriteOptions) -> tuple[bool, list[str]]:
    """Whether the planner keeps ``group``, and the rules it meets (kept) or misses (dropped), in words."""
    size = sum(candidate.length for candidate in group)
    target, maximum = options.target_file_size_bytes, options.max_file_size_bytes
    met: list[str] = []
    missed: list[str] = []
    several = len(group) > 1
    (met if several and len(group) >= options.min_input_files else missed).append(
        f"{len(group)} files {'>=' if several and len(group) >= options.min_input_files else '<'} "
        f"min-input-files {options.min_input_files}" + ("" if several else " (one file)")
    )
    (met if several and size > target else missed).append(
        f"{_size(size)} {'>' if size > target else '<='} target {_size(target)}" + ("" if several else " (one file)")
    )
    (met if size > maximum else missed).append(f"{_size(size)} {'>' if size > maximum else '<='} max {_size(maximum)}")
    ridden = sum(_delete_ridden(candidate, options) for candidate in group)
    (met if ridden else missed).append(f"{ridden} delete-ridden files")
    kept = is_group_worth_rewriting(group, options)
    return kept, met if kept else missed


def explain_plan(
    candidates: Iterable[RewriteCandidate],
    output_spec_id: int,
    output_partition_width: int,
    options: RewriteOptions,
    max_partitions: int = 20,
) -> list[str]:
    """The plan's decisions in words (the module's steps), one line per partition and per file group."""
    partitions = group_by_partition(candidates, output_spec_id, output_partition_width)
    if not partitions:
        return ["no live data file matches: nothing to rewrite"]
    lines: list[str] = []
    busiest = sorted(partitions.items(), key=lambda item: -len(item[1]))
    for values, files in busiest[:max_partitions]:
        chosen = files if options.rewrite_all else [f for f in files if is_rewrite_candidate(f, options)]
        head = f"{_partition(values)}: {len(files)} data files, {len(chosen)} taken"
        if options.rewrite_all:
            lines.append(f"{head} (rewrite-all)")
        else:
            lines.append(f"{head} ({_taken(files, options)})")
        if not chosen:
            continue
        packer: ListPacker[RewriteCandidate] = ListPacker(options.max_file_group_size_bytes, 1, False)
        for index, group in enumerate(packer.pack(chosen, lambda candidate: candidate.length), start=1):
            if options.rewrite_all:
                lines.append(f"  group {index}: {len(group)} files: kept (rewrite-all)")
                continue
            kept, reasons = group_reasons(group, options)
            verdict = "kept: " + " or ".join(reasons) if kept else "dropped: " + ", ".join(reasons)
            lines.append(f"  group {index}: {len(group)} files, {verdict}")
    if len(busiest) > max_partitions:
        lines.append(f"... and {len(busiest) - max_partitions} more partitions")
    return lines
