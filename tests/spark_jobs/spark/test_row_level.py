"""One table picks the row-level strategy from the delete mode, the format and whether the keys decide the partition.

The strategies themselves run in every upsert and delete of tests/spark_jobs/test_ingest.py and
spark/test_ingest_v3.py (v2 position deletes, v3 deletion vectors, equality deletes both ways).
"""

from __future__ import annotations

import itertools

import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from spark_jobs.engine.commit.format_v3 import allow_v3_metadata_writes
from spark_jobs.spark.row_level import (
    STRATEGIES,
    DeletionVectors,
    EqualityDeletesByPartition,
    EqualityDeletesWhereFound,
    PositionDeleteFiles,
    choose_strategy,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False), NestedField(2, "region", StringType(), required=False)
)
BY_REGION = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"))


def test_every_combination_has_exactly_one_strategy() -> None:
    combinations = set(itertools.product(("position", "equality"), (False, True), (False, True)))
    assert set(STRATEGIES) == combinations
    assert {strategy.reads_table for strategy in STRATEGIES.values()} == {True, False}


@pytest.mark.parametrize(
    ("format_version", "delete_mode", "key", "expected"),
    [
        (2, "position", ["id"], PositionDeleteFiles),
        (2, "position", ["id", "region"], PositionDeleteFiles),
        (3, "position", ["id"], DeletionVectors),
        (2, "equality", ["id", "region"], EqualityDeletesByPartition),
        (3, "equality", ["region", "id"], EqualityDeletesByPartition),
        (2, "equality", ["id"], EqualityDeletesWhereFound),
        (3, "equality", ["id"], EqualityDeletesWhereFound),
    ],
)
def test_the_table_picks_the_strategy(sql_catalog, format_version, delete_mode, key, expected) -> None:
    allow_v3_metadata_writes()
    sql_catalog.create_namespace("ns")
    table = sql_catalog.create_table(
        "ns.t", SCHEMA, partition_spec=BY_REGION, properties={"format-version": str(format_version)}
    )
    assert type(choose_strategy(table, delete_mode, key, [])) is expected
