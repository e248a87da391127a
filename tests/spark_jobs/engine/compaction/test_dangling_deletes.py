"""Delete files freed by a rewrite: those whose every applicable data file is replaced."""

from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestEntry, ManifestEntryStatus
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.typedef import Record

from spark_jobs.engine.compaction import RewriteOptions, plan_rewrite
from spark_jobs.engine.compaction.candidates import RewriteCandidate, list_candidates
from spark_jobs.engine.compaction.dangling_deletes import DeleteUsage, delete_keys
from spark_jobs.engine.planning.delete_index import AppliedDeletes
from spark_jobs.engine.planning.scan_tasks import DeletionVector, EqualityDeleteFile, PositionDeleteFile

PARTITION_WIDE = PositionDeleteFile("pos-partition.parquet", 10, 5, 2, None)
ONLY_A = PositionDeleteFile("pos-a.parquet", 10, 1, 2, "a.parquet")
EQUALITY = EqualityDeleteFile("eq.parquet", 10, 3, (1,), 3)


def _dv(target: str, offset: int) -> DeletionVector:
    return DeletionVector("dvs.puffin", offset, 40, 1, target, 4)


def _candidate(path: str, deletes: AppliedDeletes) -> RewriteCandidate:
    data_file = DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=10,
        file_size_in_bytes=100,
    )
    data_file.spec_id = 0
    entry = ManifestEntry.from_args(
        status=ManifestEntryStatus.ADDED, snapshot_id=1, sequence_number=1, data_file=data_file
    )
    return RewriteCandidate.of_entry(entry, PartitionSpec(spec_id=0), deletes)


USAGE = DeleteUsage(
    [
        _candidate("a.parquet", AppliedDeletes((PARTITION_WIDE, ONLY_A), None, (EQUALITY,))),
        _candidate("b.parquet", AppliedDeletes((PARTITION_WIDE,), None, (EQUALITY,))),
        _candidate("c.parquet", AppliedDeletes((), _dv("c.parquet", 4), (EQUALITY,))),
        _candidate("d.parquet", AppliedDeletes((), _dv("d.parquet", 44), ())),
    ]
)


def test_a_delete_is_freed_only_when_every_file_it_applies_to_is_replaced():
    assert USAGE.freed_by([]) == set()
    assert USAGE.freed_by(["a.parquet"]) == {("pos-a.parquet", None)}
    assert USAGE.freed_by(["a.parquet", "b.parquet"]) == {("pos-a.parquet", None), ("pos-partition.parquet", None)}
    assert USAGE.freed_by(["a.parquet", "b.parquet", "c.parquet"]) == {
        ("pos-a.parquet", None),
        ("pos-partition.parquet", None),
        ("eq.parquet", None),
        ("dvs.puffin", 4),
    }


def test_deletion_vectors_of_one_puffin_file_are_freed_one_by_one():
    assert USAGE.freed_by(["d.parquet"]) == {("dvs.puffin", 44)}
    assert USAGE.freed_by(["unrelated.parquet"]) == set()
    # by location, the Puffin file is freed only when every vector in it is
    assert USAGE.freed_locations_by(["d.parquet"]) == set()
    assert USAGE.freed_locations_by(["c.parquet", "d.parquet"]) == {"dvs.puffin"}
    assert USAGE.freed_locations_by(["a.parquet"]) == {"pos-a.parquet"}


def test_rewriting_a_whole_table_frees_every_delete_file(conformance_catalog):
    table = conformance_catalog.load_table("corpus.mor_v2_pos")
    snapshot = table.current_snapshot()
    plan = plan_rewrite(table, snapshot, RewriteOptions.resolve({}, min_input_files=1))
    every_delete = {key for candidate in list_candidates(table, snapshot) for key in delete_keys(candidate)}
    assert sum(len(group.files) for group in plan.groups) == 280
    assert plan.freed_delete_files == every_delete and every_delete
    assert plan.freed_delete_locations == {location for location, _ in every_delete}


def test_a_filtered_rewrite_keeps_deletes_that_still_apply_elsewhere(conformance_catalog):
    table = conformance_catalog.load_table("corpus.mor_v3_dv")
    snapshot = table.current_snapshot()
    where = "ts < '2024-01-03T00:00:00+00:00'"
    plan = plan_rewrite(table, snapshot, RewriteOptions.resolve({}, min_input_files=1), where=where)
    replaced = {candidate.path for group in plan.groups for candidate in group.files}
    everything = list_candidates(table, snapshot)
    assert 0 < len(replaced) < len(everything)
    kept_files = [candidate for candidate in everything if candidate.path not in replaced]
    still_needed = {key for candidate in kept_files for key in delete_keys(candidate)}
    assert plan.freed_delete_files and not (plan.freed_delete_files & still_needed)
    assert (
        plan.freed_delete_files
        == {key for candidate in everything if candidate.path in replaced for key in delete_keys(candidate)}
        - still_needed
    )
