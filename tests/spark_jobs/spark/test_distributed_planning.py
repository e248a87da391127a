"""Distributed planning: manifests read on the Spark executors give the very tasks a local plan gives."""

from __future__ import annotations

import pytest

from spark_jobs.engine.planning.planning_mode import PlanningMode
from spark_jobs.engine.planning.scan_planner import plan_scan
from spark_jobs.engine.table.manifest_cache import manifest_columns_cache
from spark_jobs.job_support import engine_on_executors
from spark_jobs.read import load
from spark_jobs.spark.distributed_planning import SparkManifestReader

pytestmark = pytest.mark.spark35

CASES = [
    ("corpus.mor_v2_pos", None),
    ("corpus.mor_v2_pos", "id < 40 AND category = 'c'"),
    ("corpus.mor_v3_dv", "ts < '2024-01-03T00:00:00+00:00'"),
    ("corpus.v2_eq_deletes", "id > 3"),
    ("corpus.v2_eq_deletes_part", None),
    ("corpus.partition_evolution", "category = 'b' OR id < 1000"),
    ("corpus.v1_cow", "category = 'a'"),
]


class _CountingReader(SparkManifestReader):
    """The Spark reader, counting the manifests it read remotely."""

    def __init__(self, spark) -> None:
        super().__init__(spark)
        self.read: list[int] = []

    def survivors(self, table, manifests, *args, **kwargs):
        self.read.append(len(manifests))
        return super().survivors(table, manifests, *args, **kwargs)


@pytest.mark.parametrize(("table_name", "row_filter"), CASES)
def test_distributed_and_local_plans_give_the_same_tasks(spark, conformance_catalog, table_name, row_filter):
    engine_on_executors(spark)
    table = conformance_catalog.load_table(table_name)
    remote = _CountingReader(spark)
    for snapshot in table.snapshots():
        manifest_columns_cache().clear()
        local = plan_scan(table, snapshot, row_filter=row_filter, planning_mode=PlanningMode.LOCAL, remote=remote)
        distributed = plan_scan(
            table, snapshot, row_filter=row_filter, planning_mode=PlanningMode.DISTRIBUTED, remote=remote
        )
        assert [task.slices for task in distributed.tasks] == [task.slices for task in local.tasks]
        assert distributed.metrics.as_dict() == local.metrics.as_dict()
        assert distributed.equality_field_ids == local.equality_field_ids
    assert sum(remote.read) > 0  # the distributed plans did read on the executors


def test_auto_plans_locally_on_a_cluster_no_wider_than_the_driver(spark, conformance_catalog):
    engine_on_executors(spark)
    table = conformance_catalog.load_table("corpus.mor_v2_pos")
    remote = _CountingReader(spark)
    plan_scan(table, table.current_snapshot(), planning_mode=PlanningMode.AUTO, remote=remote)
    assert remote.read == []


def test_the_table_property_chooses_distributed_planning_for_load(spark, conformance_catalog):
    table = conformance_catalog.load_table("corpus.mor_v3_dv")
    expected = sorted(row.id for row in load(spark, "conformance", "corpus.mor_v3_dv", columns=["id"]).collect())
    distributed = load(spark, "conformance", "corpus.mor_v3_dv", columns=["id"], planning_mode="distributed")
    assert sorted(row.id for row in distributed.collect()) == expected
    assert table.properties.get("read.data-planning-mode") is None


def test_a_bad_planning_mode_names_the_argument(spark):
    from spark_jobs.engine.shared.errors import UserInputError

    with pytest.raises(UserInputError, match=r"planning_mode must be one of auto, local, distributed, got 'far'"):
        load(spark, "conformance", "corpus.mor_v3_dv", planning_mode="far")
