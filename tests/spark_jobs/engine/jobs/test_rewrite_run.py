"""The rewrite run over the executor seam, in this process: bin-pack groups rewritten in waves and committed in
batches with their rows kept, the files of the write that no commit names deleted, and a sort rewrite refused
before any work when no shuffle is given (Spark's run is tested in tests/spark_jobs/spark/test_compact.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
from spark_jobs.engine.compaction.strategy import resolve_strategy
from spark_jobs.engine.jobs.rewrite_run import RewriteRun, run_rewrite
from spark_jobs.engine.shared.errors import UnsupportedFeatureError
from spark_jobs.spark.driver_read import InProcessExecutor
from tests.support.rewrite_tables import build_events, ids_and_checksum


@pytest.fixture
def events(sql_catalog):
    """Two partitions (a, b) of six 20-row files each, ids 0..239."""
    return build_events(sql_catalog)


def _data_files_on_disk(table) -> set[Path]:
    return set(Path(table.location().removeprefix("file://"), "data").rglob("*.parquet"))


def test_groups_are_rewritten_in_waves_and_committed_in_batches_in_this_process(events) -> None:
    options = RewriteOptions.resolve(
        events.properties,
        min_input_files=2,
        max_concurrent_file_group_rewrites=1,
        partial_progress_enabled=True,
        partial_progress_max_commits=2,
    )
    plan = plan_rewrite(events, events.current_snapshot(), options)
    before = ids_and_checksum(events)
    files_before = _data_files_on_disk(events)
    outcome = run_rewrite(RewriteRun(InProcessExecutor()), events, plan)
    assert (outcome.committed_groups, outcome.waves, len(outcome.commits)) == ([1, 2], 2, 2)
    assert outcome.rows_written == 240 and outcome.counters.rows_read == 240
    assert ids_and_checksum(events) == before
    live = {Path(entry.file.file_path.removeprefix("file://")) for entry in events.scan().plan_files()}
    assert len(live) == 2 and not live & files_before
    assert _data_files_on_disk(events) == files_before | live  # nothing written that no commit names


def test_a_sort_rewrite_without_a_shuffle_is_refused_before_any_work(events) -> None:
    strategy = resolve_strategy(events, "sort", "id")
    options = RewriteOptions.resolve(events.properties, min_input_files=2)
    plan = plan_rewrite(events, events.current_snapshot(), options, strategy=strategy)
    files_before = _data_files_on_disk(events)
    snapshot_before = events.current_snapshot().snapshot_id
    with pytest.raises(UnsupportedFeatureError, match="shuffles its rows by key range"):
        run_rewrite(RewriteRun(InProcessExecutor()), events, plan)
    assert _data_files_on_disk(events) == files_before
    assert events.current_snapshot().snapshot_id == snapshot_before
