"""A compaction's report: data file sizes before and after as histograms, and the counts, for a person to read.

1. Before the job, and again after it, the table's live files are counted from manifests (``compaction_stats``).
2. File sizes fall into buckets tied to the table's target file size, so the chart reads as the rules do: under
   target/64, /16, /8 (Amoro's fragments), /4, /2, 3/4 (Glue's and Java's small files), the target, 1.8 x the
   target (Java's largest), and above.
3. The report is one self-contained HTML page (inline SVG bar charts, no script, no external file) written next to
   the task's other outputs, and the same numbers as text for the task log.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_iceberg_provider.compaction_stats import FileStats, describe_size

# Bucket upper edges as fractions of the target file size (the last bucket is open).
BUCKET_EDGES = (1 / 64, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 3 / 4, 1.0, 1.8)
_BAR_WIDTH, _CHART_HEIGHT, _LABEL_HEIGHT = 64, 160, 44


@dataclass(frozen=True)
class Histogram:
    """Data file counts per size bucket; ``labels[i]`` names bucket ``i``."""

    labels: tuple[str, ...]
    counts: tuple[int, ...]


def size_histogram(sizes: Sequence[int], target_file_size: int) -> Histogram:
    """File sizes counted into buckets relative to ``target_file_size``."""
    edges = [int(target_file_size * fraction) for fraction in BUCKET_EDGES]
    counts = [0] * (len(edges) + 1)
    for size in sizes:
        counts[next((index for index, edge in enumerate(edges) if size < edge), len(edges))] += 1
    labels = [f"< {describe_size(edge)}" for edge in edges] + [f">= {describe_size(edges[-1])}"]
    return Histogram(tuple(labels), tuple(counts))


def counts_table(before: FileStats, after: FileStats) -> list[tuple[str, str, str]]:
    """(what, before, after) rows of the report."""
    rows = [
        ("snapshot", str(before.snapshot_id), str(after.snapshot_id)),
        ("data files", f"{before.data_files:,}", f"{after.data_files:,}"),
        (
            f"small files (< {describe_size(before.small_file_bytes)})",
            f"{before.small_data_files:,}",
            f"{after.small_data_files:,}",
        ),
        (
            f"fragment files (< {describe_size(before.fragment_file_bytes)})",
            f"{before.fragment_files:,}",
            f"{after.fragment_files:,}",
        ),
        ("delete files", f"{before.delete_files:,}", f"{after.delete_files:,}"),
        ("data rows", f"{before.data_rows:,}", f"{after.data_rows:,}"),
        ("rows deleted by delete files", f"{before.deleted_rows:,}", f"{after.deleted_rows:,}"),
        ("data bytes", describe_size(before.data_bytes), describe_size(after.data_bytes)),
        ("partitions", f"{len(before.partitions):,}", f"{len(after.partitions):,}"),
    ]
    return rows


def text_report(table: str, before: FileStats, after: FileStats, job: Mapping[str, Any]) -> list[str]:
    """The report as log lines: the counts, then both histograms as bars of ``#``."""
    lines = [f"compaction report for {table} (target file size {describe_size(before.target_file_size_bytes)})"]
    lines += [f"  {what:<34} {was:>14} -> {now}" for what, was, now in counts_table(before, after)]
    lines += [f"  {what:<34} {value}" for what, value in job_lines(job)]
    for title, stats in (("before", before), ("after", after)):
        histogram = size_histogram(stats.data_file_sizes, before.target_file_size_bytes)
        widest = max(histogram.counts) or 1
        lines.append(f"  data file sizes {title}:")
        for label, count in zip(histogram.labels, histogram.counts, strict=True):
            lines.append(f"    {label:>12} {count:>7,} {'#' * round(40 * count / widest)}")
    return lines


def job_lines(job: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What the job itself reported: groups, files added and removed, seconds."""
    if job.get("dry_run"):
        return [("file groups planned (dry run)", str(job.get("file_groups", 0)))]
    seconds = sum(float(value) for value in (job.get("seconds") or {}).values())
    return [
        ("file groups rewritten / planned", f"{job.get('rewritten_file_groups', 0)} / {job.get('file_groups', 0)}"),
        ("data files removed / added", f"{job.get('data_files_removed', 0):,} / {job.get('data_files_added', 0):,}"),
        ("delete files removed", f"{job.get('delete_files_removed', 0):,}"),
        ("job seconds", f"{seconds:.1f}"),
    ]


def _svg_histogram(title: str, histogram: Histogram, scale: int) -> str:
    """One bar chart as inline SVG, bars scaled to ``scale`` (the larger chart's tallest bar, for comparison)."""
    width = _BAR_WIDTH * len(histogram.counts)
    bars = []
    for index, (label, count) in enumerate(zip(histogram.labels, histogram.counts, strict=True)):
        height = round(_CHART_HEIGHT * count / scale) if scale else 0
        x = index * _BAR_WIDTH
        top = 20 + _CHART_HEIGHT - height
        bars.append(
            f'<rect class="bar" x="{x + 6}" y="{top}" width="{_BAR_WIDTH - 12}" height="{height}">'
            f"<title>{html.escape(label)}: {count} files</title></rect>"
            f'<text x="{x + _BAR_WIDTH / 2}" y="{top - 4}" text-anchor="middle">{count}</text>'
            f'<text x="{x + _BAR_WIDTH / 2}" y="{20 + _CHART_HEIGHT + 16}" text-anchor="middle" '
            f'class="label">{html.escape(label)}</text>'
        )
    return (
        f"<figure><figcaption>{html.escape(title)}</figcaption>"
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{20 + _CHART_HEIGHT + _LABEL_HEIGHT}" '
        f'role="img" aria-label="{html.escape(title)}">{"".join(bars)}</svg></figure>'
    )


def html_report(
    table: str, before: FileStats, after: FileStats, job: Mapping[str, Any], explanation: Sequence[str] = ()
) -> str:
    """The report as one HTML page: counts before and after, both size histograms, the job's numbers."""
    target = before.target_file_size_bytes
    histograms = [size_histogram(stats.data_file_sizes, target) for stats in (before, after)]
    scale = max(max(h.counts) for h in histograms) or 1
    rows = "".join(
        f"<tr><th>{html.escape(what)}</th><td>{html.escape(was)}</td><td>{html.escape(now)}</td></tr>"
        for what, was, now in counts_table(before, after)
    )
    job_rows = "".join(
        f"<tr><th>{html.escape(what)}</th><td colspan=2>{html.escape(value)}</td></tr>"
        for what, value in job_lines(job)
    )
    notes = "".join(f"<li>{html.escape(line)}</li>" for line in explanation)
    charts = "".join(
        _svg_histogram(f"Data file sizes {title} ({stats.data_files:,} files)", histogram, scale)
        for title, stats, histogram in (("before", before, histograms[0]), ("after", after, histograms[1]))
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Compaction report: {html.escape(table)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border-bottom: 1px solid #ddd; padding: 4px 12px; text-align: right; }}
th {{ text-align: left; font-weight: normal; }}
figure {{ display: inline-block; margin: 1em 2em 1em 0; }}
figcaption {{ font-weight: bold; margin-bottom: 4px; }}
.bar {{ fill: #3b7dd8; }} text {{ font-size: 11px; }} .label {{ fill: #555; }}
</style></head>
<body>
<h1>Compaction report: {html.escape(table)}</h1>
<p>Target file size {html.escape(describe_size(target))}; snapshot {before.snapshot_id} &rarr; {after.snapshot_id}.</p>
<table><tr><th></th><th>before</th><th>after</th></tr>{rows}{job_rows}</table>
{charts}
{f"<h2>Partitions before</h2><ul>{notes}</ul>" if notes else ""}
</body></html>
"""
