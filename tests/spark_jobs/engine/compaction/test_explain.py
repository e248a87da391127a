"""A bin-pack plan explained in words: per partition, what was taken, and why each group was kept or dropped."""

from spark_jobs.engine.compaction import RewriteOptions
from spark_jobs.engine.compaction.explain import explain_plan
from spark_jobs.engine.compaction.planner import plan_groups
from tests.spark_jobs.engine.compaction.test_planner import OPTIONS, _file


def test_each_partition_and_group_says_what_the_planner_decided() -> None:
    kept = [_file(10, partition=("a",)) for _ in range(5)]  # 5 small files: >= min-input-files 5
    dropped = [_file(10, partition=("b",)) for _ in range(2)]  # 2 small files, 20 bytes: neither rule
    settled = [_file(100, partition=("c",))]  # within [75, 180]: not taken
    lines = explain_plan([*kept, *dropped, *settled], 1, 1, OPTIONS)
    assert lines == [
        "partition (a): 5 data files, 5 taken (5 under min-file-size-bytes 75 B, 0 over max-file-size-bytes 180 B, "
        "0 with delete-file-threshold 2147483647 or delete-ratio-threshold 0.3 reached)",
        "  group 1: 5 files, kept: 5 files >= min-input-files 5",
        "partition (b): 2 data files, 2 taken (2 under min-file-size-bytes 75 B, 0 over max-file-size-bytes 180 B, "
        "0 with delete-file-threshold 2147483647 or delete-ratio-threshold 0.3 reached)",
        "  group 1: 2 files, dropped: 2 files < min-input-files 5, 20 B <= target 100 B, 20 B <= max 180 B, "
        "0 delete-ridden files",
        "partition (c): 1 data files, 0 taken (0 under min-file-size-bytes 75 B, 0 over max-file-size-bytes 180 B, "
        "0 with delete-file-threshold 2147483647 or delete-ratio-threshold 0.3 reached)",
    ]
    # The words follow the planner: the groups it keeps are the ones explained as kept.
    assert [len(group.files) for group in plan_groups([*kept, *dropped, *settled], 1, 1, OPTIONS)] == [5]


def test_an_empty_table_and_rewrite_all() -> None:
    assert explain_plan([], 1, 1, OPTIONS) == ["no live data file matches: nothing to rewrite"]
    every = RewriteOptions(**{**OPTIONS.__dict__, "rewrite_all": True})
    assert explain_plan([_file(100, partition=("c",))], 1, 1, every) == [
        "partition (c): 1 data files, 1 taken (rewrite-all)",
        "  group 1: 1 files: kept (rewrite-all)",
    ]
