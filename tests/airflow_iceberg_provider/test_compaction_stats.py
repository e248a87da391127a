"""File statistics from manifests alone match what Iceberg Java recorded for each conformance table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_iceberg_provider.compaction_stats import CompactionThresholds, file_stats

CORPUS_JSON = Path("/tmp/iceberg-conformance/corpus/corpus.json")
TABLES = ["mor_v2_pos", "mor_v3_dv", "v2_eq_deletes", "small_files", "v1_cow"]


def _java_counts(table: str) -> dict[str, int]:
    """Live data and delete files and their records, as corpus.json records them."""
    counts = {"data_files": 0, "data_rows": 0, "delete_files": 0, "deleted_rows": 0}
    for group in json.loads(CORPUS_JSON.read_text())["tables"][table]["files"]:
        kind = "data" if group["content"] == 0 else "delete"
        counts[f"{kind}_files"] += group["files"]
        counts["data_rows" if kind == "data" else "deleted_rows"] += group["records"]
    return counts


@pytest.mark.parametrize("table", TABLES)
def test_counts_match_javas(conformance_catalog, table: str) -> None:
    stats = file_stats(conformance_catalog.load_table(f"corpus.{table}"))
    expected = _java_counts(table)
    assert {key: getattr(stats, key) for key in expected} == expected
    assert stats.small_data_files == stats.data_files  # every corpus file is far below 0.75 x 512 MiB


def test_small_file_size_follows_the_override(conformance_catalog) -> None:
    stats = file_stats(conformance_catalog.load_table("corpus.v1_cow"), small_file_bytes=1)
    assert stats.small_file_bytes == 1
    assert stats.small_data_files == 0


def test_thresholds_give_one_reason_each(conformance_catalog) -> None:
    stats = file_stats(conformance_catalog.load_table("corpus.mor_v2_pos"))
    reasons = CompactionThresholds(min_small_files=300, min_delete_files=280, min_deleted_row_ratio=0.3).reasons(stats)
    assert reasons == ["280 delete files (threshold 280)", "deleted-row ratio 0.312 (threshold 0.3)"]
    assert CompactionThresholds(min_delete_files=281, min_deleted_row_ratio=0.32).reasons(stats) == []


def test_at_least_one_threshold_is_required() -> None:
    with pytest.raises(ValueError, match="set at least one of"):
        CompactionThresholds(small_file_bytes=10)
