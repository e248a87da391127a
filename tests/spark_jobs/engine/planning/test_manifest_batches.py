"""Small manifests of one layout are joined in order; a large one, or one of another layout, ends the batch."""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.types import IntegerType, StringType

from spark_jobs.engine.planning.manifest_batches import batched_manifests
from spark_jobs.engine.table.manifest_columns import ManifestColumns


def _manifest(name: str, ids: list[int], spec_id: int = 0, *, as_string: bool = False) -> ManifestColumns:
    values = pa.array([str(i) for i in ids]) if as_string else pa.array(ids, pa.int64())
    return ManifestColumns(name, spec_id, pa.table({"file_path": [f"{name}-{i}" for i in ids], "v": values}))


def _paths(batch: ManifestColumns) -> list[str]:
    return batch.table.column("file_path").to_pylist()


def test_small_manifests_of_one_layout_join_in_order_up_to_the_row_bound() -> None:
    manifests = [_manifest(f"m{n}", [n * 10, n * 10 + 1]) for n in range(5)]
    batches = list(batched_manifests(manifests, max_rows=4))
    assert [count for _, count in batches] == [2, 2, 1]
    assert [path for batch, _ in batches for path in _paths(batch)] == [path for m in manifests for path in _paths(m)]
    assert all(batch.spec_id == 0 for batch, _ in batches)


def test_a_large_manifest_goes_alone_as_it_was_given() -> None:
    small, large, after = _manifest("a", [1]), _manifest("b", list(range(10))), _manifest("c", [2])
    batches = list(batched_manifests([small, large, after], max_rows=5))
    assert [(_paths(batch), count) for batch, count in batches] == [
        (["a-1"], 1),
        (_paths(large), 1),
        (["c-2"], 1),
    ]
    assert batches[1][0] is large


def test_another_spec_schema_or_partition_type_starts_a_new_batch() -> None:
    typed = ManifestColumns("t", 0, _manifest("t", [7]).table, (IntegerType(),))
    other_type = ManifestColumns("u", 0, _manifest("u", [8]).table, (StringType(),))
    manifests = [
        _manifest("a", [1]),
        _manifest("b", [2], spec_id=1),
        _manifest("c", [3], spec_id=1, as_string=True),
        typed,
        other_type,
        _manifest("d", [4]),
        _manifest("e", [5]),
    ]
    counts = [count for _, count in batched_manifests(manifests, max_rows=100)]
    assert counts == [1, 1, 1, 1, 1, 2]
