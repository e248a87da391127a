"""The bin-pack planner against hand-computed expectations (Java's rules), then on corpus tables Java wrote."""

import itertools
from collections import Counter

from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestEntry, ManifestEntryStatus
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.typedef import Record

from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
from spark_jobs.engine.compaction.candidates import RewriteCandidate
from spark_jobs.engine.compaction.planner import group_by_partition, plan_file_groups, plan_groups
from spark_jobs.engine.planning.delete_index import AppliedDeletes
from spark_jobs.engine.planning.scan_tasks import DeletionVector, EqualityDeleteFile, PositionDeleteFile

# target 100, min 75, max 180 (write max 140); groups up to 50 bytes unless a test says otherwise
OPTIONS = RewriteOptions(
    target_file_size_bytes=100, min_file_size_bytes=75, max_file_size_bytes=180, max_file_group_size_bytes=50
)
MIB = 1024 * 1024


def _file(size: int, *, name: str = "", spec_id: int = 1, partition: tuple = ("a",), rows: int = 10, **deletes):
    data_file = DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=f"file:/t/data/{name or next(_FILE_NUMBERS)}.parquet",
        file_format=FileFormat.PARQUET,
        partition=Record(*partition),
        record_count=rows,
        file_size_in_bytes=size,
    )
    data_file.spec_id = spec_id
    entry = ManifestEntry.from_args(
        status=ManifestEntryStatus.ADDED, snapshot_id=1, sequence_number=1, file_sequence_number=1, data_file=data_file
    )
    return RewriteCandidate.of_entry(entry, PartitionSpec(spec_id=spec_id), AppliedDeletes(**deletes))


_FILE_NUMBERS = itertools.count()


def _sizes(groups: list[list[RewriteCandidate]]) -> list[list[int]]:
    return [[candidate.length for candidate in group] for group in groups]


def _position_deletes(rows: int, *, target: str | None) -> PositionDeleteFile:
    return PositionDeleteFile(f"file:/t/data/pos-{rows}-{target}.parquet", 10, rows, 2, target)


def _dv(deleted: int, target: str) -> DeletionVector:
    return DeletionVector("file:/t/data/dvs.puffin", 4, 40, deleted, target, 2)


def _equality_deletes(rows: int) -> EqualityDeleteFile:
    return EqualityDeleteFile(f"file:/t/data/eq-{rows}.parquet", 10, rows, (1,), 2)


def test_small_files_are_packed_in_order_and_a_group_too_small_is_dropped():
    files = [_file(10) for _ in range(12)]
    # 12 files of 10 bytes, groups of at most 50: 5 + 5 + 2; the last has 2 files (< 5) and 20 bytes (<= target)
    assert _sizes(plan_file_groups(files, OPTIONS)) == [[10] * 5, [10] * 5]
    assert [c.path for group in plan_file_groups(files, OPTIONS) for c in group] == [f.path for f in files[:10]]


def test_files_within_the_size_range_are_left_alone():
    files = [_file(10), _file(75), _file(100), _file(180), _file(10), _file(10), _file(10), _file(10)]
    # 75, 100 and 180 are within [min 75, max 180]; the five 10-byte files make one group of 50
    assert _sizes(plan_file_groups(files, OPTIONS)) == [[10] * 5]


def test_large_files_are_taken_alone_and_split_into_target_sized_outputs():
    options = RewriteOptions(target_file_size_bytes=100, min_file_size_bytes=75, max_file_size_bytes=180)
    files = [_file(400, name="a"), _file(150, name="b"), _file(250, name="c")]
    # group size 100 GiB: both large files fit one group; 650 bytes > max 180 ("too much content")
    assert _sizes(plan_file_groups(files, options)) == [[400, 250]]
    narrow = RewriteOptions(
        target_file_size_bytes=100, min_file_size_bytes=75, max_file_size_bytes=180, max_file_group_size_bytes=300
    )
    assert _sizes(plan_file_groups(files, narrow)) == [[400], [250]]
    table_plan = _plan_of(files, narrow)
    # 400: 4 files of 100; 250: remainder 50 <= 75 and average 125 >= 110, so 3 files
    assert [(g.input_bytes, g.expected_output_files) for g in table_plan] == [(400, 4), (250, 3)]


def test_min_input_files_and_enough_content():
    four_small = [_file(10) for _ in range(4)]
    assert plan_file_groups(four_small, OPTIONS) == []  # 4 files < min-input-files 5, 40 bytes <= target 100
    fewer_needed = RewriteOptions(**{**_fields(OPTIONS), "min_input_files": 4})
    assert _sizes(plan_file_groups(four_small, fewer_needed)) == [[10] * 4]
    two_of_sixty = [_file(60), _file(60)]
    roomy = RewriteOptions(**{**_fields(OPTIONS), "max_file_group_size_bytes": 1000})
    assert _sizes(plan_file_groups(two_of_sixty, roomy)) == [[60, 60]]  # 120 bytes > target: enough content
    assert plan_file_groups([_file(60)], roomy) == []  # one file alone is never enough
    min_one = RewriteOptions(**{**_fields(roomy), "min_input_files": 1})
    assert plan_file_groups([_file(60)], min_one) == []  # "enough input files" also needs more than one file


def test_delete_ratio_counts_only_file_scoped_deletes():
    scoped = _file(100, name="scoped", rows=10)
    path = scoped.path
    at_ratio = _file(100, rows=10, deletion_vector=_dv(3, "x"))  # 3 of 10 rows: 0.3 >= 0.3
    below_ratio = _file(100, rows=10, position_deletes=(_position_deletes(2, target="x"),))  # 0.2
    partition_wide = _file(100, rows=10, position_deletes=(_position_deletes(9, target=None),))  # not file-scoped
    equality = _file(100, rows=10, equality_deletes=(_equality_deletes(9),))  # equality deletes are not counted
    capped = _file(100, rows=10, position_deletes=(_position_deletes(50, target=path),))  # min(50, 10) / 10
    groups = plan_file_groups([at_ratio, below_ratio, partition_wide, equality, capped], _roomy())
    # a 100-byte file is within the size range: only the delete-ridden ones are taken; their group is kept
    assert [[c.path for c in group] for group in groups] == [[at_ratio.path, capped.path]]
    lower = RewriteOptions(**{**_fields(_roomy()), "delete_ratio_threshold": 0.2})
    assert len(plan_file_groups([below_ratio], lower)[0]) == 1  # a single file group is kept for its deletes


def test_delete_file_threshold_counts_every_delete_file():
    two_deletes = _file(
        100, equality_deletes=(_equality_deletes(1),), position_deletes=(_position_deletes(1, target=None),)
    )
    one_delete = _file(100, equality_deletes=(_equality_deletes(1),))
    assert plan_file_groups([two_deletes, one_delete], _roomy()) == []  # default threshold: off
    threshold = RewriteOptions(**{**_fields(_roomy()), "delete_file_threshold": 2})
    assert [[c.path for c in g] for g in plan_file_groups([two_deletes, one_delete], threshold)] == [[two_deletes.path]]


def test_rewrite_all_takes_every_file_and_keeps_every_group():
    files = [_file(100), _file(100), _file(10)]
    everything = RewriteOptions(**{**_fields(_roomy()), "rewrite_all": True, "max_file_group_size_bytes": 150})
    # files within the size range are taken; the lone-file group [100] is kept although no rule keeps it
    assert _sizes(plan_file_groups(files, everything)) == [[100], [100, 10]]


def test_files_of_other_specs_are_grouped_together_under_an_all_null_partition():
    current_a = [_file(10, spec_id=2, partition=("a", 1)) for _ in range(2)]
    current_b = [_file(10, spec_id=2, partition=("b", 1))]
    old_unpartitioned = [_file(10, spec_id=0, partition=())]
    old_days = [_file(10, spec_id=1, partition=(19000,))]
    current_null = [_file(10, spec_id=2, partition=(None, None))]
    candidates = [current_a[0], old_unpartitioned[0], current_b[0], old_days[0], current_a[1], current_null[0]]
    grouped = group_by_partition(candidates, output_spec_id=2, output_partition_width=2)
    assert list(grouped) == [("a", 1), (None, None), ("b", 1)]  # order of first appearance
    assert grouped[("a", 1)] == current_a
    assert grouped[(None, None)] == old_unpartitioned + old_days + current_null


def test_group_indexes_and_expected_outputs_in_a_plan():
    files = [_file(40, partition=("a",)) for _ in range(11)] + [_file(40, partition=("b",)) for _ in range(5)]
    options = RewriteOptions(
        target_file_size_bytes=100, min_file_size_bytes=75, max_file_size_bytes=180, max_file_group_size_bytes=200
    )
    groups = _plan_of(files, options)
    # partition a: 11 x 40 bytes in groups of at most 200: 5 + 5 + 1 (dropped); partition b: 5 files (200)
    assert [(g.global_index, g.partition_index, g.partition, len(g.files)) for g in groups] == [
        (1, 1, ("a",), 5),
        (2, 2, ("a",), 5),
        (3, 1, ("b",), 5),
    ]
    # 200 bytes: remainder 0, average 100 < 110: 2 files; split size 200 / 2 + 5 KiB capped at write max 140
    assert [(g.expected_output_files, g.input_split_size) for g in groups] == [(2, 140)] * 3


def test_java_defaults_by_hand():
    defaults = RewriteOptions.resolve({})  # target 512 MiB, min 384 MiB, max 921.6 MiB, 5 files, 100 GiB groups
    small = [_file(100 * MIB) for _ in range(10)]
    huge = _file(1024 * MIB)
    right_sized = _file(600 * MIB)
    groups = _plan_of([small[0], huge, *small[1:], right_sized], defaults)
    # the 600 MiB file is within [384 MiB, 921.6 MiB]; the rest fit one 100 GiB group, in file order
    assert [len(group.files) for group in groups] == [11]
    assert groups[0].files[1] is huge and groups[0].input_bytes == 2024 * MIB
    # 2024 MiB: 3 files of 512 MiB and a remainder of 488 MiB > min 384 MiB, which is kept: 4 files
    assert groups[0].expected_output_files == 4
    # alone: the 1 GiB file is "too much content" (> max) and splits exactly into 2 files of 512 MiB
    assert [(len(g.files), g.expected_output_files) for g in _plan_of([huge], defaults)] == [(1, 2)]
    # four small files: 400 MiB, fewer than 5 files, not above the target: left alone
    assert _plan_of(small[:4], defaults) == []
    assert [g.expected_output_files for g in _plan_of(small[:5], defaults)] == [1]  # 500 MiB, below the target


# -- corpus tables written by Iceberg Java ----------------------------------------------------------------------


def test_small_files_table_is_one_group_of_two_thousand_files(conformance_catalog):
    table = conformance_catalog.load_table("corpus.small_files")
    plan = plan_rewrite(table, table.current_snapshot(), RewriteOptions.resolve(table.properties))
    # 2,000 files of about 5 KiB, 10,460,022 bytes: below the 512 MiB target, one output file
    assert [(len(g.files), g.input_bytes, g.expected_output_files) for g in plan.groups] == [(2000, 10460022, 1)]
    one_mib = plan_rewrite(table, table.current_snapshot(), RewriteOptions.resolve({}, target_file_size_bytes=MIB))
    # remainder 10,460,022 - 9 MiB = 1,022,838 > min 786,432: 10 files
    assert [g.expected_output_files for g in one_mib.groups] == [10]
    four_mib = plan_rewrite(table, table.current_snapshot(), RewriteOptions.resolve({}, target_file_size_bytes=4 * MIB))
    # remainder 2,071,414 <= min 3,145,728; average 5,230,011 >= 1.1 x 4 MiB: keep the remainder file, 3 files
    assert [g.expected_output_files for g in four_mib.groups] == [3]
    assert four_mib.as_dict()["rewritten_rows"] == 200000


def test_small_files_table_packed_into_groups_of_two_mebibytes(conformance_catalog):
    table = conformance_catalog.load_table("corpus.small_files")
    options = RewriteOptions.resolve({}, target_file_size_bytes=MIB, max_file_group_size_bytes=2 * MIB)
    plan = plan_rewrite(table, table.current_snapshot(), options)
    groups = list(plan.groups)
    assert sum(len(g.files) for g in groups) == 2000
    assert len({c.path for g in groups for c in g.files}) == 2000
    for group, following in itertools.pairwise(groups):
        assert group.input_bytes <= 2 * MIB
        assert group.input_bytes + following.files[0].length > 2 * MIB  # lookback 1: a group closes when full
    # every full group (about 2 MiB, remainder ~1 MiB > min 0.75 MiB) makes 2 files
    assert [g.expected_output_files for g in groups[:-1]] == [2] * (len(groups) - 1)
    assert len(groups) == 5
    summary = plan.as_dict()
    assert (summary["file_groups"], summary["rewritten_data_files"], summary["rewritten_bytes"]) == (5, 2000, 10460022)


def test_partition_evolution_table_groups_old_spec_files_together(conformance_catalog):
    table = conformance_catalog.load_table("corpus.partition_evolution")
    current_spec = table.spec().spec_id
    options = RewriteOptions.resolve({}, target_file_size_bytes=MIB, min_input_files=2)
    plan = plan_rewrite(table, table.current_snapshot(), options)
    old_spec_groups = [g for g in plan.groups if any(c.file.spec_id != current_spec for c in g.files)]
    assert len(old_spec_groups) == 1
    assert old_spec_groups[0].partition == (None,) * len(table.spec().fields)
    assert Counter(c.file.spec_id for c in old_spec_groups[0].files) == {0: 14, 1: 56, 3: 20}
    for group in plan.groups:
        if group not in old_spec_groups:
            assert {c.file.spec_id for c in group.files} == {current_spec}
            assert all(tuple(c.file.partition) == group.partition for c in group.files)


def test_delete_ratio_on_a_table_with_deletion_vectors(conformance_catalog):
    table = conformance_catalog.load_table("corpus.mor_v3_dv")
    # every file is small; with min-input-files raised out of reach only delete-ridden groups stay
    options = RewriteOptions.resolve({}, min_input_files=1000, delete_ratio_threshold=0.4)
    plan = plan_rewrite(table, table.current_snapshot(), options)
    ratios = [c.known_deleted_records / c.record_count for g in plan.groups for c in g.files]
    assert plan.groups
    for group in plan.groups:
        assert any(c.known_deleted_records / c.record_count >= 0.4 for c in group.files)
    assert max(ratios) >= 0.4


def _roomy() -> RewriteOptions:
    return RewriteOptions(**{**_fields(OPTIONS), "max_file_group_size_bytes": 1000})


def _fields(options: RewriteOptions) -> dict:
    return dict(options.__dict__)


def _plan_of(files: list[RewriteCandidate], options: RewriteOptions):
    """The planner's groups for candidates built in memory (output spec 1 with one partition field)."""
    return plan_groups(files, 1, 1, options)


# -- rewrite-job-order, compression-factor, output-spec-id ------------------------------------------------------


def test_rewrite_job_order_sorts_numbered_groups_stably():
    import dataclasses

    from spark_jobs.engine.compaction.planner import order_groups

    files = [_file(40, partition=("a",)) for _ in range(5)] + [_file(30, partition=("b",)) for _ in range(6)]
    files += [_file(40, partition=("c",)) for _ in range(5)]
    options = RewriteOptions(
        target_file_size_bytes=100, min_file_size_bytes=75, max_file_size_bytes=180, max_file_group_size_bytes=200
    )
    groups = _plan_of(files, options)  # a: 200 bytes / 5 files, b: 180 / 6, c: 200 / 5
    assert [g.global_index for g in groups] == [1, 2, 3]

    def order(name: str) -> list[int]:
        return [g.global_index for g in order_groups(groups, dataclasses.replace(options, rewrite_job_order=name))]

    assert order("none") == [1, 2, 3]
    assert order("bytes-asc") == [2, 1, 3]
    assert order("bytes-desc") == [1, 3, 2]  # equal sizes keep plan order, as Java's stable sort
    assert order("files-asc") == [1, 3, 2]
    assert order("files-desc") == [2, 1, 3]


def test_compression_factor_scales_the_expected_output_files():
    from spark_jobs.engine.compaction.sizing import expected_output_files

    options = RewriteOptions(target_file_size_bytes=100, min_file_size_bytes=75, max_file_size_bytes=180)
    assert expected_output_files(400, options) == 4
    import dataclasses

    assert expected_output_files(400, dataclasses.replace(options, compression_factor=0.5)) == 2
    assert expected_output_files(400, dataclasses.replace(options, compression_factor=2.0)) == 8
    assert expected_output_files(400, dataclasses.replace(options, compression_factor=0.001)) == 1  # at least one


def test_output_spec_id_must_be_a_spec_of_the_table(conformance_catalog):
    import pytest

    from spark_jobs.engine.shared.errors import UserInputError

    table = conformance_catalog.load_table("corpus.partition_evolution")
    options = RewriteOptions.resolve({}, target_file_size_bytes=MIB, min_input_files=2, output_spec_id=0)
    plan = plan_rewrite(table, table.current_snapshot(), options)
    assert plan.output_spec_id == 0 and plan.as_dict()["output_spec_id"] == 0
    assert plan.partition_fields == tuple(f.name for f in table.spec().fields)  # still grouped by the current spec
    with pytest.raises(UserInputError, match="Cannot use output spec id 42 because the table does not contain"):
        plan_rewrite(table, table.current_snapshot(), RewriteOptions.resolve({}, output_spec_id=42))
