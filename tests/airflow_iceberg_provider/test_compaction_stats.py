"""File statistics from manifests alone match what Iceberg Java recorded for each conformance table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from airflow_iceberg_provider.compaction_stats import (
    CompactionThresholds,
    FileStats,
    PartitionStats,
    assess,
    file_stats,
)

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
    stats = file_stats(conformance_catalog.load_table("corpus.v2_eq_deletes"))
    reasons = CompactionThresholds(min_small_files=300, min_delete_files=15, min_deleted_row_ratio=0.1).reasons(stats)
    assert reasons[0] == "15 delete files (threshold 15)"
    assert reasons[1] == "partition (unpartitioned): deleted-row ratio 0.104 >= 0.1"
    assert CompactionThresholds(min_delete_files=16, min_deleted_row_ratio=0.11).reasons(stats) == []


@pytest.mark.parametrize("table", ["mor_v2_pos", "partition_evolution", "v2_eq_deletes_part"])
def test_partition_counts_match_pyicebergs_partitions_table(conformance_catalog, table: str) -> None:
    """Per partition, the files, rows, bytes and delete files agree with ``inspect.partitions()``."""
    loaded = conformance_catalog.load_table(f"corpus.{table}")
    stats = file_stats(loaded)
    ours = sorted((p.data_files, p.data_rows, p.data_bytes, p.delete_files) for p in stats.partitions if p.data_files)
    theirs = sorted(
        (
            row["file_count"],
            row["record_count"],
            row["total_data_file_size_in_bytes"],
            row["position_delete_file_count"] + row["equality_delete_file_count"],
        )
        for row in loaded.inspect.partitions().to_pylist()
    )
    assert ours == theirs
    assert sum(p.data_files for p in stats.partitions) == stats.data_files


def test_defaults_are_glues_and_amoros_rules() -> None:
    defaults = CompactionThresholds().with_defaults()
    assert (defaults.max_small_files_per_partition, defaults.small_file_ratio) == (100, 0.75)
    assert (defaults.min_fragment_files_per_partition, defaults.fragment_ratio) == (12, 8)
    assert defaults.min_deleted_row_ratio == 0.1
    # Any threshold given: only the given ones apply.
    assert CompactionThresholds(min_delete_files=3).with_defaults() == CompactionThresholds(min_delete_files=3)


def test_glues_rule_counts_more_than_100_small_files_in_one_partition() -> None:
    stats = FileStats(
        None, 101, 101, 75, 101, 0, 0, fragment_file_bytes=12, partitions=(PartitionStats("p", 101, 101),)
    )
    at_limit = FileStats(
        None, 100, 100, 75, 100, 0, 0, fragment_file_bytes=12, partitions=(PartitionStats("q", 100, 100),)
    )
    rules = CompactionThresholds(max_small_files_per_partition=100)
    assert rules.reasons(stats) == ["partition p: 101 small files (under 75 B) > 100 (AWS Glue's rule)"]
    assert rules.reasons(at_limit) == []


def test_the_decision_is_explained_per_partition_in_words(conformance_catalog) -> None:
    decision = assess(conformance_catalog.load_table("corpus.v1_cow"), CompactionThresholds())
    assert not decision["needed"]
    assert decision["thresholds"]["max_small_files_per_partition"] == 100
    lines = decision["explanation"]
    assert len(lines) == decision["stats"]["partition_count"] > 1
    assert all(
        re.fullmatch(r"partition category=\w+: \d+ data files .* -> healthy: no threshold reached", line)
        for line in lines
    ), lines

    small = assess(conformance_catalog.load_table("corpus.small_files"), CompactionThresholds())
    assert small["needed"]
    (line,) = small["explanation"]
    assert line.startswith("partition (unpartitioned): 2000 data files (")
    assert "2000 small files (under 384 MiB) > 100 (AWS Glue's rule)" in line
    assert "2000 fragment files (under 64 MiB) >= 12 (Apache Amoro's rule)" in line


@pytest.mark.parametrize(
    "table", ["mor_v2_pos", "mor_v3_dv", "v2_eq_deletes", "v2_eq_deletes_part", "partition_evolution", "v1_cow"]
)
def test_duckdbs_sums_equal_the_entry_by_entry_reading(conformance_catalog, monkeypatch, table: str) -> None:
    """The manifests summed by DuckDB give the very numbers, names and sizes pyiceberg's entries give."""
    from airflow_iceberg_provider import compaction_stats

    loaded = conformance_catalog.load_table(f"corpus.{table}")
    sizes = sorted(file_stats(loaded).data_file_sizes)
    rules = CompactionThresholds(small_file_bytes=sizes[len(sizes) // 2])  # about half the files are small
    by_duckdb = file_stats(loaded, thresholds=rules)
    monkeypatch.setattr(compaction_stats, "summarize", lambda *args, **kwargs: None)
    by_entries = file_stats(loaded, thresholds=rules)
    assert by_duckdb.partitions == by_entries.partitions
    assert sorted(by_duckdb.data_file_sizes) == sorted(by_entries.data_file_sizes)
    assert by_duckdb.as_dict() == by_entries.as_dict()
    assert 0 < by_duckdb.small_data_files < by_duckdb.data_files or len(set(sizes)) == 1


def test_a_spec_whose_manifests_differ_in_version_is_summed_exactly(sql_catalog, monkeypatch) -> None:
    """A table upgraded from v1: its spec's manifests are read in one query (a v1 manifest's missing ``content``
    reads as null: data files), or one by one where the v1 manifest comes first; the sums equal the entry-by-entry
    reading either way."""
    import pyarrow as pa

    from airflow_iceberg_provider import compaction_stats, manifest_summary

    sql_catalog.create_namespace("stats")
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "kind": ["a", "b", "a"]})
    table = sql_catalog.create_table("stats.upgraded", rows.schema, properties={"format-version": "1"})
    table.append(rows)
    with table.transaction() as transaction:
        transaction.upgrade_table_version(2)
    table = sql_catalog.load_table("stats.upgraded")
    table.append(rows)
    table.append(rows.slice(0, 1))
    queries: list[list[str]] = []
    reading = manifest_summary._manifest_rows

    def counted(connection, paths, *rest):
        queries.append(list(paths))
        return reading(connection, paths, *rest)

    monkeypatch.setattr(manifest_summary, "_manifest_rows", counted)
    by_duckdb = file_stats(table)
    paths = queries[0]
    assert [len(query) for query in queries] == [3]  # newest (v2) first: one query
    monkeypatch.setattr(compaction_stats, "summarize", lambda *args, **kwargs: None)
    by_entries = file_stats(table)
    assert by_duckdb.as_dict() == by_entries.as_dict() and by_duckdb.data_files == 3

    connection = manifest_summary._connection()
    queries.clear()
    oldest_first = manifest_summary._spec_rows(connection, paths[::-1], 1 << 30, 1 << 20)
    assert [len(query) for query in queries] == [3, 1, 1, 1]  # the v1 manifest first: one by one
    newest_first = manifest_summary._spec_rows(connection, paths, 1 << 30, 1 << 20)
    assert oldest_first and _sums(oldest_first) == _sums(newest_first)


def _sums(rows: list[tuple]) -> dict:
    """Rows of ``_spec_rows`` added up per partition and content (one row per manifest, or one for all)."""
    total: dict = {}
    for partition, content, files, count, size, small, fragment, sizes in rows:
        entry = total.setdefault((repr(partition), int(content or 0)), [0, 0, 0, 0, 0, []])
        for index, value in enumerate((files, count, size, small, fragment)):
            entry[index] += value
        entry[5] = sorted([*entry[5], *(sizes or [])])
    return total
