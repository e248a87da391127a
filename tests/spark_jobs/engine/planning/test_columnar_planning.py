"""The columnar planner gives the very tasks the per-entry planner gives (the engine's planning before manifests
became columns): same slices, same deletes, same constants, same packing order, same counters.

The reference plan is made from pyiceberg objects one entry at a time, as the engine planned before: the manifests
``ManifestPruner.select_manifests`` keeps, their entries as objects, pyiceberg's partition and metrics evaluators per
file, ``DeleteFileIndex.add``/``for_data_file`` per entry, ``split_data_file`` and ``pack_slices``. Every snapshot
of every Java-written corpus table is planned with filters on every kind of column and predicate, both ways.
"""

from __future__ import annotations

import pickle

import pytest
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.expressions.visitors import _InclusiveMetricsEvaluator
from pyiceberg.manifest import DataFileContent

from spark_jobs.engine.planning.delete_index import DeleteFileIndex
from spark_jobs.engine.planning.manifest_pruning import ManifestPruner
from spark_jobs.engine.planning.scan_planner import bind_row_filter, plan_scan, whole_file_slice
from spark_jobs.engine.planning.splitting import SplitSettings, pack_slices, split_data_file
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.table import duckdb_avro, manifest_columns
from spark_jobs.engine.table.manifest_cache import cached_live_entries, cached_manifests, manifest_columns_cache
from spark_jobs.engine.table.snapshots import schema_for_snapshot

FILTERS = {
    "corpus.mor_v2_pos": [
        None,
        "id = 17",
        "id < 40 AND category = 'c'",
        "ts >= '2024-01-05T00:00:00+00:00'",
        "score > 0.5 OR qty IN (1, 2, 3)",
        "note IS NULL",
        "category STARTS WITH 'b'",
        "NOT (id > 100)",
        "amount > 10",
    ],
    "corpus.mor_v3_dv": [None, "id BETWEEN 10 AND 90", "ts < '2024-01-03T00:00:00+00:00'", "flag = true"],
    "corpus.v2_eq_deletes": [None, "id = 3", "category != 'a'", "score IS NOT NULL AND score < 0.1"],
    "corpus.v2_eq_deletes_part": [None, "category = 'a'", "v = 'x'"],
    "corpus.schema_evolution": [None, "a > 5", "fl IS NAN", "fl NOT NAN"],
    "corpus.partition_evolution": [None, "category = 'b'", "id < 1000", "ts > '2024-01-10T00:00:00+00:00'"],
    "corpus.small_files": [None, "id = 5", "id NOT IN (1, 2)"],
    "corpus.types": [None, "i > 3", "s = 'x'", "dt >= '2024-01-02'", "d < 0.5", "f > 1.0", "ts_ntz IS NULL"],
    "corpus.v1_cow": [None, "category = 'a'", "id > 20"],
}
CASES = [(table, row_filter) for table, filters in FILTERS.items() for row_filter in filters]


def _reference_plan(table, snapshot, schema, row_filter, settings: SplitSettings):
    """The per-entry planner: objects, one evaluation per file (module doc)."""
    unbound, _ = bind_row_filter(table, schema, row_filter, True)
    specs = table.specs()
    metrics = ScanMetrics()
    pruner = ManifestPruner(specs, schema, unbound, True)
    metrics_evaluator = _InclusiveMetricsEvaluator(schema, unbound, True)
    filters = unbound != AlwaysTrue()
    data_manifests, delete_manifests = pruner.select_manifests(cached_manifests(snapshot, table.io), metrics)
    index = DeleteFileIndex(specs, table.schema())
    data_entries = []
    for entries in cached_live_entries(data_manifests + delete_manifests, table.io):
        for entry in entries:
            data_file = entry.data_file
            if data_file.content != DataFileContent.DATA:
                if pruner.partition_may_match(data_file):
                    index.add(entry)
                continue
            metrics.data_files_total += 1
            may_match = metrics_evaluator.eval(data_file) if filters else data_file.record_count > 0
            if pruner.partition_may_match(data_file) and may_match:
                data_entries.append(entry)
            else:
                metrics.data_files_pruned += 1
    slices = [
        whole_file_slice(entry, specs[entry.data_file.spec_id], index.for_data_file(entry)) for entry in data_entries
    ]
    applied = {
        d for s in slices for d in (*s.position_deletes, *s.equality_deletes, s.deletion_vector) if d is not None
    }
    metrics.delete_files_applied = len(applied)
    pieces = [piece for data_file in slices for piece in split_data_file(data_file, settings.split_size)]
    return pack_slices(pieces, settings), metrics


@pytest.fixture(params=["pyiceberg", "duckdb"])
def decoder(request, monkeypatch):
    """Manifests decoded by one route or the other (DuckDB's for any size, or never)."""
    if request.param == "duckdb" and not duckdb_avro.duckdb_avro_available():
        pytest.skip("DuckDB's avro extension is not installed")
    monkeypatch.setattr(manifest_columns, "DUCKDB_MIN_BYTES", 0 if request.param == "duckdb" else 2**62)
    manifest_columns_cache().clear()
    yield request.param
    manifest_columns_cache().clear()


@pytest.mark.parametrize(("table_name", "row_filter"), CASES)
@pytest.mark.parametrize("split_size", [None, 4096])
def test_every_snapshot_plans_the_same_tasks_as_one_entry_at_a_time(
    conformance_catalog, decoder, table_name, row_filter, split_size
):
    table = conformance_catalog.load_table(table_name)
    settings = SplitSettings.from_table_properties(table.properties, split_size=split_size)
    for snapshot in table.snapshots():
        schema = schema_for_snapshot(table, snapshot)
        try:
            expected_tasks, expected_metrics = _reference_plan(table, snapshot, schema, row_filter, settings)
        except Exception as error:  # a filter on a column this snapshot's schema lacks fails both ways
            with pytest.raises(type(error)):
                plan_scan(table, snapshot, schema=schema, row_filter=row_filter, split_size=split_size)
            continue
        plan = plan_scan(table, snapshot, schema=schema, row_filter=row_filter, split_size=split_size)
        assert [task.slices for task in plan.tasks] == [task.slices for task in expected_tasks], snapshot.snapshot_id
        for name in ("manifests_total", "manifests_pruned", "data_files_total", "data_files_pruned"):
            assert getattr(plan.metrics, name) == getattr(expected_metrics, name), name
        assert plan.metrics.delete_files_applied == expected_metrics.delete_files_applied
        assert plan.equality_field_ids == {
            field_id
            for task in plan.tasks
            for s in task.slices
            for d in s.equality_deletes
            for field_id in d.equality_ids
        }


@pytest.mark.parametrize("table_name", ["corpus.mor_v2_pos", "corpus.mor_v3_dv", "corpus.v2_eq_deletes"])
def test_a_pickled_task_reads_the_same_slices_without_the_plan(conformance_catalog, table_name):
    table = conformance_catalog.load_table(table_name)
    plan = plan_scan(table, table.current_snapshot())
    for task in plan.tasks:
        shipped = pickle.loads(pickle.dumps(task))
        assert shipped.slices == task.slices
        assert shipped.estimated_bytes == task.estimated_bytes


def test_a_plan_from_the_cache_is_the_plan_from_the_files(conformance_catalog):
    table = conformance_catalog.load_table("corpus.mor_v2_pos")
    manifest_columns_cache().clear()
    first = plan_scan(table, table.current_snapshot(), row_filter="id < 50")
    again = plan_scan(table, table.current_snapshot(), row_filter="id < 50")
    assert manifest_columns_cache().hits > 0
    assert [t.slices for t in first.tasks] == [t.slices for t in again.tasks]
