"""The compaction report: size buckets tied to the target file size, counts before and after, HTML and text."""

from __future__ import annotations

import re

from airflow_iceberg_provider.compaction_report import html_report, size_histogram, text_report
from airflow_iceberg_provider.compaction_stats import FileStats, PartitionStats

MIB = 1024 * 1024


def _stats(sizes: list[int], snapshot_id: int, delete_files: int = 0) -> FileStats:
    target = 512 * MIB
    return FileStats(
        snapshot_id=snapshot_id,
        data_files=len(sizes),
        small_data_files=sum(size < 0.75 * target for size in sizes),
        small_file_bytes=int(0.75 * target),
        data_rows=10 * len(sizes),
        delete_files=delete_files,
        deleted_rows=delete_files,
        fragment_files=sum(size < target / 8 for size in sizes),
        fragment_file_bytes=target // 8,
        data_bytes=sum(sizes),
        target_file_size_bytes=target,
        partitions=(PartitionStats("(unpartitioned)", len(sizes)),),
        data_file_sizes=tuple(sizes),
    )


def test_buckets_follow_the_target_file_size() -> None:
    histogram = size_histogram([1, 8 * MIB - 1, 8 * MIB, 100 * MIB, 384 * MIB, 512 * MIB, 2 * 1024 * MIB], 512 * MIB)
    assert histogram.labels[:3] == ("< 8.0 MiB", "< 32 MiB", "< 64 MiB")
    assert histogram.labels[-1] == ">= 922 MiB"
    assert histogram.counts == (2, 1, 0, 1, 0, 0, 1, 1, 1)


def test_the_page_and_the_log_hold_the_counts_and_both_histograms() -> None:
    before = _stats([MIB] * 40 + [300 * MIB], snapshot_id=1, delete_files=3)
    after = _stats([500 * MIB], snapshot_id=2)
    job = {"file_groups": 1, "rewritten_file_groups": 1, "data_files_removed": 41, "data_files_added": 1}
    page = html_report("sales.orders", before, after, job, ["partition (unpartitioned): 41 data files -> needed"])
    assert page.count("<svg") == 2
    assert re.search(r"<th>data files</th><td>41</td><td>1</td>", page)
    assert re.search(r"<th>delete files</th><td>3</td><td>0</td>", page)
    assert re.search(r"<th>data files removed / added</th><td colspan=2>41 / 1</td>", page)
    assert "<title>&lt; 8.0 MiB: 40 files</title>" in page
    assert "41 data files -&gt; needed" in page
    lines = text_report("sales.orders", before, after, job)
    assert any(re.fullmatch(r"\s+data files\s+41 -> 1", line) for line in lines), lines
    assert any(re.fullmatch(r"\s+< 8.0 MiB\s+40 #{40}", line) for line in lines), lines
