"""The compact job's sort and z-order strategies on local Spark: sorted files over disjoint ranges, rows unchanged.

Also the job's contract for these options: ``--dry-run`` prints the plan in words and as the final JSON line, and
what cannot be done (unknown column, a transform that cannot sort the column, a spec the table does not have) exits
2 with one line.
"""

from __future__ import annotations

import itertools
import json
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs import compact as compact_job
from spark_jobs.engine.read.session import open_read_session
from spark_jobs.engine.table.manifest_entries import read_live_entries
from spark_jobs.job_contract import missing_result_fields
from spark_jobs.job_support import EXIT_USAGE, run_job
from tests.support.conformance import table_checksum

pytestmark = pytest.mark.spark35

ROWS_PER_FILE = 2000


def _unsorted_table(catalog, files: int = 4):
    """Format v2, unpartitioned: ``files`` appends of random k (some null), ids in order, a name and a score."""
    namespace = f"sort_{uuid.uuid4().hex[:10]}"
    catalog.create_namespace(namespace)
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("k", pa.int64()),
            pa.field("name", pa.string()),
            pa.field("score", pa.float64()),
        ]
    )
    table = catalog.create_table(f"{namespace}.events", schema=schema, properties={"format-version": "2"})
    rng = np.random.default_rng(11)
    for index in range(files):
        ids = np.arange(index * ROWS_PER_FILE, (index + 1) * ROWS_PER_FILE)
        k = rng.integers(0, 100_000, ROWS_PER_FILE)
        rows = {
            "id": pa.array(ids, pa.int64()),
            "k": pa.array([None if i % 97 == 0 else int(v) for i, v in zip(ids, k, strict=True)], pa.int64()),
            "name": pa.array([f"name-{int(v) % 1000:04d}" for v in rng.integers(0, 10_000, ROWS_PER_FILE)]),
            "score": pa.array(rng.random(ROWS_PER_FILE)),
        }
        table.append(pa.table(rows, schema=schema))
    return table


def _args(table) -> list[str]:
    return ["--catalog", "testing", "--table", ".".join(table.name())]


def _rows_and_checksum(table) -> tuple[int, str]:
    rows = open_read_session(table.catalog, table).to_arrow()
    return rows.num_rows, table_checksum(rows, rows.column_names)[0]


def _new_files(table, snapshot_id: int) -> list:
    table = table.catalog.load_table(table.name())
    entries = [
        entry
        for manifest in table.current_snapshot().manifests(table.io)
        if manifest.content == 0
        for entry in read_live_entries(manifest, table.io)
        if entry.snapshot_id == snapshot_id
    ]
    return [entry.data_file for entry in entries]


def _column(data_file, name: str) -> list:
    return pq.read_table(data_file.file_path.removeprefix("file://"), columns=[name]).column(0).to_pylist()


@pytest.mark.spark
def test_sort_compaction_writes_sorted_files_over_disjoint_ranges(spark, testing_catalog):
    table = _unsorted_table(testing_catalog)
    before = _rows_and_checksum(table)
    size = sum(table.inspect.files().column("file_size_in_bytes").to_pylist())
    args = [*_args(table), "--strategy", "sort", "--sort-order", "k desc nulls last", "--rewrite-all"]
    result = compact_job.main([*args, "--target-file-size-bytes", str(size // 3)])
    assert (result["strategy"], result["sort_order"], result["commits"]) == ("sort", "k DESC NULLS LAST", 1)
    assert result["rows_written"] == result["rows_read"] == 4 * ROWS_PER_FILE
    after = testing_catalog.load_table(table.name())
    assert _rows_and_checksum(after) == before
    files = _new_files(after, result["snapshot_id"])
    assert len(files) >= 2
    ranges = []
    for data_file in files:
        values = _column(data_file, "k")
        numbers = [v for v in values if v is not None]
        assert values == sorted(numbers, reverse=True) + [None] * (len(values) - len(numbers))
        ranges.append((min(numbers, default=None), max(numbers, default=None), None in values))
    ranges.sort(key=lambda r: -(r[1] if r[1] is not None else -1))
    for (low, _, _), (_, high, _) in itertools.pairwise(ranges):
        assert high is None or low > high  # descending ranges that do not overlap
    assert sum(has_null for _, _, has_null in ranges) == 1  # every null in one file, the last range


@pytest.mark.spark
def test_zorder_compaction_orders_rows_by_the_interleaved_key(spark, testing_catalog):
    from spark_jobs.engine.compaction.strategy import resolve_strategy

    table = _unsorted_table(testing_catalog, files=3)
    before = _rows_and_checksum(table)
    args = [*_args(table), "--sort-order", "zorder(k, name)", "--rewrite-all", "--var-length-contribution", "4"]
    result = compact_job.main(args)
    assert (result["strategy"], result["sort_order"], result["var-length-contribution"]) == (
        "zorder",
        "zorder(k, name)",
        4,
    )
    after = testing_catalog.load_table(table.name())
    assert _rows_and_checksum(after) == before
    (data_file,) = _new_files(after, result["snapshot_id"])
    assert data_file.sort_order_id == 0
    keys = resolve_strategy(after, "sort", "zorder(k, name)", var_length_contribution=4).keys
    rows = pq.read_table(data_file.file_path.removeprefix("file://"))
    z_values = keys.key_table(rows).column(0).to_pylist()
    assert z_values == sorted(z_values)


def test_dry_run_prints_the_plan_in_words_then_json(testing_catalog, capsys):
    table = _unsorted_table(testing_catalog, files=2)
    result = compact_job.main([*_args(table), "--sort-order", "name, k desc", "--rewrite-all", "--dry-run"])
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith(f"plan: SORT by name ASC NULLS FIRST, k DESC NULLS LAST rewrite of {result['table']}")
    assert "2 data files" in out[0] and "group 1 (unpartitioned): 2 files" in out[1]
    assert result["dry_run"] and result["strategy"] == "sort" and result["operation"] == "replace"
    assert testing_catalog.load_table(table.name()).metadata_location == table.metadata_location


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (["--sort-order", "nope desc"], "unknown column 'nope'"),
        (["--sort-order", "years(k)"], "cannot be sorted: transform year does not apply to column 'k' of type long"),
        (["--sort-order", "void(k)"], "unknown transform 'void'"),
        (["--strategy", "sort"], "Cannot sort data without a valid sort order"),
        (["--output-spec-id", "7"], "Cannot use output spec id 7"),
        (["--strategy", "binpack", "--sort-order", "k"], "needs --strategy sort"),
        (["--shuffle-partitions-per-file", "2"], "not supported by the action or the rewriter BIN-PACK"),
    ],
)
def test_bad_input_exits_2_with_one_line(testing_catalog, capsys, extra, reason):
    table = _unsorted_table(testing_catalog, files=1)
    exit_code = run_job("compact", lambda: compact_job.main([*_args(table), *extra, "--dry-run"]))
    assert exit_code == EXIT_USAGE
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and reason in errors[0]


def test_dry_run_json_is_the_last_line_of_the_job(testing_catalog, capsys):
    table = _unsorted_table(testing_catalog, files=2)
    exit_code = run_job("compact", lambda: compact_job.main([*_args(table), "--sort-order", "k", "--dry-run"]))
    assert exit_code == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["strategy"] == "sort" and last["dry_run"] is True and missing_result_fields(last) == []
