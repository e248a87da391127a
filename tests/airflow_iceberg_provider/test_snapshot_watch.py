"""New snapshots since a given one, by operation and summary, from table metadata (real pyiceberg tables)."""

from __future__ import annotations

import pytest

from airflow_iceberg_provider.snapshot_watch import SnapshotCondition, find_new_snapshot, parse_snapshot_id


@pytest.fixture
def two_snapshots(testing_catalog, events_table):
    table = testing_catalog.load_table(events_table)
    first, second = table.snapshots()
    return table, first.snapshot_id, second.snapshot_id


def test_the_snapshot_after_the_given_one_is_new(two_snapshots) -> None:
    table, first, second = two_snapshots
    found = find_new_snapshot(table, SnapshotCondition(since_snapshot_id=first))
    assert found["snapshot_id"] == second
    assert found["parent_snapshot_id"] == first
    assert found["operation"] == "append"
    assert found["summary"]["added-records"] == "5"


def test_nothing_is_new_at_the_head(two_snapshots) -> None:
    table, _, second = two_snapshots
    assert find_new_snapshot(table, SnapshotCondition(since_snapshot_id=second)) is None


def test_without_a_starting_snapshot_the_head_is_new(two_snapshots) -> None:
    table, _, second = two_snapshots
    assert find_new_snapshot(table, SnapshotCondition())["snapshot_id"] == second


@pytest.mark.parametrize(
    ("condition", "expected_index"),
    [
        ({"operation": "overwrite"}, None),
        ({"operation": "append"}, 1),
        ({"summary": {"added-records": "10"}}, 0),
        ({"summary": {"added-records": 5}}, 1),
        ({"summary": {"added-records": "7"}}, None),
    ],
)
def test_operation_and_summary_select_the_newest_match(two_snapshots, condition: dict, expected_index) -> None:
    table, first, second = two_snapshots
    found = find_new_snapshot(table, SnapshotCondition(**condition))
    assert (found["snapshot_id"] if found else None) == (
        None if expected_index is None else (first, second)[expected_index]
    )


def test_an_unknown_branch_has_no_snapshot(two_snapshots) -> None:
    table, _, _ = two_snapshots
    assert find_new_snapshot(table, SnapshotCondition(branch="audit")) is None


@pytest.mark.parametrize(("value", "expected"), [(None, None), ("", None), ("None", None), ("42", 42), (7, 7)])
def test_snapshot_ids_from_templates(value, expected) -> None:
    assert parse_snapshot_id(value) == expected


def test_a_snapshot_id_that_is_not_a_number_is_named() -> None:
    with pytest.raises(ValueError, match="snapshot id 'abc' is not an integer"):
        parse_snapshot_id("abc")
