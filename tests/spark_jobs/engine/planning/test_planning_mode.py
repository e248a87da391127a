"""Planning modes: Iceberg Java's properties, values and ``auto`` rule."""

from __future__ import annotations

import pytest
from pyiceberg.manifest import ManifestContent, ManifestFile

from spark_jobs.engine.planning.planning_mode import (
    LOCAL_PLANNING_MAX_SLOT_SIZE,
    PlanningMode,
    plan_locally,
    planning_modes,
)
from spark_jobs.engine.shared.errors import UserInputError


def _manifests(count: int, length: int) -> list[ManifestFile]:
    return [
        ManifestFile.from_args(
            manifest_path=f"m{index}.avro",
            manifest_length=length,
            partition_spec_id=0,
            content=ManifestContent.DATA,
            sequence_number=1,
            min_sequence_number=1,
            added_snapshot_id=1,
        )
        for index in range(count)
    ]


def test_modes_come_from_the_table_properties_unless_asked():
    properties = {"read.data-planning-mode": "distributed", "read.delete-planning-mode": "LOCAL"}
    assert planning_modes(properties) == (PlanningMode.DISTRIBUTED, PlanningMode.LOCAL)
    assert planning_modes({}) == (PlanningMode.AUTO, PlanningMode.AUTO)
    assert planning_modes(properties, PlanningMode.LOCAL) == (PlanningMode.LOCAL, PlanningMode.LOCAL)


def test_a_bad_property_names_itself():
    with pytest.raises(UserInputError, match=r"read\.data-planning-mode must be one of auto, local, distributed"):
        planning_modes({"read.data-planning-mode": "remote"})


def test_auto_follows_javas_rule():
    many_large = _manifests(20, LOCAL_PLANNING_MAX_SLOT_SIZE)
    assert not plan_locally(PlanningMode.AUTO, many_large, remote_parallelism=16, local_parallelism=2)
    # no wider cluster, few manifests, or little metadata: local
    assert plan_locally(PlanningMode.AUTO, many_large, remote_parallelism=2, local_parallelism=2)
    assert plan_locally(PlanningMode.AUTO, many_large[:4], remote_parallelism=16, local_parallelism=2)
    assert plan_locally(PlanningMode.AUTO, _manifests(20, 1024), remote_parallelism=16, local_parallelism=2)
    # statistics needed beside the delete index (equality deletes): local
    assert plan_locally(PlanningMode.AUTO, many_large, remote_parallelism=16, local_parallelism=2, needs_local=True)


def test_explicit_modes_are_obeyed_and_nothing_to_read_is_local():
    assert not plan_locally(PlanningMode.DISTRIBUTED, _manifests(1, 10), remote_parallelism=1, local_parallelism=8)
    assert plan_locally(PlanningMode.DISTRIBUTED, [], remote_parallelism=16, local_parallelism=2)
    assert plan_locally(PlanningMode.LOCAL, _manifests(99, 2**30), remote_parallelism=99, local_parallelism=1)
