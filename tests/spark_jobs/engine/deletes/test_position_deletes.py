"""Deleted positions of a data file from position delete files (row-group pruned, cached) or its deletion vector."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs.engine.deletes.cache import DeleteFileCache
from spark_jobs.engine.deletes.position_deletes import load_deleted_positions
from spark_jobs.engine.planning.scan_tasks import DataFileSlice
from spark_jobs.engine.shared.deleted_positions import DeletedPositionsKind
from spark_jobs.engine.shared.errors import CorruptFileError, EngineError
from tests.spark_jobs.engine.deletes.delete_file_writers import (
    RecordingFileIO,
    corpus_query,
    data_file_slice,
    field_with_id,
    write_position_delete_file,
    write_puffin_file,
)

DATA_A = "file:/warehouse/db/t/data/part-a.parquet"
DATA_B = "file:/warehouse/db/t/data/part-b.parquet"
DATA_C = "file:/warehouse/db/t/data/part-c.parquet"


def test_one_delete_file_for_several_data_files(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    rows = [(DATA_A, p) for p in (9, 3, 4)] + [(DATA_B, p) for p in range(0, 50, 7)] + [(DATA_C, 1)]
    delete_file = write_position_delete_file(tmp_path / "pos.parquet", rows, row_group_size=4)

    for data_path, expected in [(DATA_A, [3, 4, 9]), (DATA_B, list(range(0, 50, 7))), (DATA_C, [1])]:
        deleted = load_deleted_positions(
            data_file_slice(data_path, position_deletes=(delete_file,)), io=io, cache=cache
        )
        assert deleted.kind is DeletedPositionsKind.POSITION_DELETES
        assert deleted.positions.dtype == np.int64
        assert deleted.positions.tolist() == expected


def test_several_delete_files_for_one_data_file_merge_sorted_unique(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    first = write_position_delete_file(tmp_path / "p1.parquet", [(DATA_A, 5), (DATA_A, 1), (DATA_B, 2)])
    second = write_position_delete_file(tmp_path / "p2.parquet", [(DATA_A, 5), (DATA_A, 0), (DATA_A, 1 << 33)])

    deleted = load_deleted_positions(data_file_slice(DATA_A, position_deletes=(first, second)), io=io, cache=cache)

    assert deleted.positions.tolist() == [0, 1, 5, 1 << 33]
    assert deleted.count == 4


def test_data_file_absent_from_the_delete_file_has_no_positions(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    delete_file = write_position_delete_file(tmp_path / "pos.parquet", [(DATA_A, 1), (DATA_C, 2)])

    deleted = load_deleted_positions(data_file_slice(DATA_B, position_deletes=(delete_file,)), io=io, cache=cache)

    assert deleted.positions.size == 0
    assert deleted.kind is DeletedPositionsKind.POSITION_DELETES


def test_no_deletes_gives_no_positions_and_no_kind(io, cache: DeleteFileCache) -> None:
    deleted = load_deleted_positions(data_file_slice(DATA_A), io=io, cache=cache)

    assert deleted.positions.size == 0
    assert deleted.kind is None


def test_deletion_vector_wins_over_position_delete_files(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    delete_file = write_position_delete_file(tmp_path / "pos.parquet", [(DATA_A, 1), (DATA_A, 2)])
    (dv,) = write_puffin_file(tmp_path / "dv.puffin", [(DATA_A, [7, 1 << 32])])

    deleted = load_deleted_positions(
        data_file_slice(DATA_A, position_deletes=(delete_file,), deletion_vector=dv), io=io, cache=cache
    )

    assert deleted.kind is DeletedPositionsKind.DELETION_VECTOR
    assert deleted.positions.tolist() == [7, 1 << 32]


def test_reads_only_row_groups_whose_file_path_range_holds_the_data_file(
    tmp_path: Path, recording_io: RecordingFileIO, cache: DeleteFileCache
) -> None:
    paths = [f"file:/warehouse/db/t/data/part-{i:03d}.parquet" for i in range(20)]
    rows = [(path, position) for path in paths for position in range(100)]
    delete_file = write_position_delete_file(tmp_path / "pos.parquet", rows, row_group_size=100)
    assert pq.ParquetFile(delete_file.path).metadata.num_row_groups == 20
    target = paths[13]
    # Read the footer first (no row group can hold a path sorting after every path), then watch the reads.
    beyond_every_path = data_file_slice("file:/zzz.parquet", position_deletes=(delete_file,))
    assert load_deleted_positions(beyond_every_path, io=recording_io, cache=cache).count == 0
    recording_io.log.reads.clear()

    deleted = load_deleted_positions(
        data_file_slice(target, position_deletes=(delete_file,)), io=recording_io, cache=cache
    )

    assert deleted.positions.tolist() == list(range(100))
    loaded_row_groups = [key[2] for key in cache._entries if key[0] == "position_delete_row_group"]
    assert loaded_row_groups == [13]
    first_byte, end_byte = _row_group_byte_range(pq.ParquetFile(delete_file.path).metadata.row_group(13))
    assert recording_io.log.reads
    assert all(first_byte <= offset and offset + size <= end_byte for _, offset, size in recording_io.log.reads)


def _row_group_byte_range(row_group: pq.RowGroupMetaData) -> tuple[int, int]:
    """The first and past-the-end byte of a row group's column chunks."""
    starts, ends = [], []
    for index in range(row_group.num_columns):
        chunk = row_group.column(index)
        start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
        starts.append(start)
        ends.append(start + chunk.total_compressed_size)
    return min(starts), max(ends)


def test_shared_delete_file_is_opened_once_per_row_group(
    tmp_path: Path, recording_io: RecordingFileIO, cache: DeleteFileCache
) -> None:
    delete_file = write_position_delete_file(tmp_path / "pos.parquet", [(DATA_A, 1), (DATA_B, 2), (DATA_C, 3)])

    for data_path in (DATA_A, DATA_B, DATA_C, DATA_A):
        load_deleted_positions(
            data_file_slice(data_path, position_deletes=(delete_file,)), io=recording_io, cache=cache
        )

    # One open for the footer, one for the single row group; every later data file is served from the cache.
    assert recording_io.log.opened == [delete_file.path, delete_file.path]


def test_columns_are_found_by_field_id_whatever_their_names(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    delete_file = write_position_delete_file(
        tmp_path / "pos.parquet", [(DATA_A, 4), (DATA_A, 2)], names=("renamed_path", "renamed_pos")
    )

    deleted = load_deleted_positions(data_file_slice(DATA_A, position_deletes=(delete_file,)), io=io, cache=cache)

    assert deleted.positions.tolist() == [2, 4]


def test_unsorted_delete_file_still_groups_every_position(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    schema = pa.schema(
        [field_with_id("file_path", pa.string(), 2147483546), field_with_id("pos", pa.int64(), 2147483545)]
    )
    table = pa.table([[DATA_B, DATA_A, DATA_B, DATA_A], [9, 8, 1, 0]], schema=schema)
    pq.write_table(table, tmp_path / "unsorted.parquet", write_statistics=False)
    delete_file = write_position_delete_file(tmp_path / "sorted.parquet", [])
    delete_file = type(delete_file)(str(tmp_path / "unsorted.parquet"), 1, 4, 2)

    for data_path, expected in [(DATA_A, [0, 8]), (DATA_B, [1, 9])]:
        deleted = load_deleted_positions(
            data_file_slice(data_path, position_deletes=(delete_file,)), io=io, cache=cache
        )
        assert deleted.positions.tolist() == expected


def test_file_without_a_pos_field_id_is_corrupt(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    schema = pa.schema([field_with_id("file_path", pa.string(), 2147483546), field_with_id("pos", pa.int64(), 7)])
    pq.write_table(pa.table([[DATA_A], [1]], schema=schema), tmp_path / "bad.parquet")
    delete_file = write_position_delete_file(tmp_path / "ok.parquet", [])
    delete_file = type(delete_file)(str(tmp_path / "bad.parquet"), 1, 1, 2)

    with pytest.raises(CorruptFileError, match=r"bad\.parquet: no top-level column with field id 2147483545 \(pos\)"):
        load_deleted_positions(data_file_slice(DATA_A, position_deletes=(delete_file,)), io=io, cache=cache)


def test_null_positions_are_corrupt(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    schema = pa.schema(
        [field_with_id("file_path", pa.string(), 2147483546), field_with_id("pos", pa.int64(), 2147483545)]
    )
    pq.write_table(pa.table([[DATA_A, DATA_A], [1, None]], schema=schema), tmp_path / "nulls.parquet")
    delete_file = write_position_delete_file(tmp_path / "ok.parquet", [])
    delete_file = type(delete_file)(str(tmp_path / "nulls.parquet"), 1, 2, 2)

    with pytest.raises(CorruptFileError, match=r"nulls\.parquet, row group 0: .* pos has 1 nulls"):
        load_deleted_positions(data_file_slice(DATA_A, position_deletes=(delete_file,)), io=io, cache=cache)


@pytest.mark.parametrize("table_name", ["mor_v2_pos", "mor_v3_dv"])
def test_java_written_deletes_leave_the_rows_java_counted(
    table_name: str, corpus_data_files: Callable[[str], list[DataFileSlice]], io, cache: DeleteFileCache
) -> None:
    data_files = corpus_data_files(table_name)
    expected_rows = corpus_query(table_name, "full_scan").row_count
    kinds = set()

    surviving = 0
    for data_file in data_files:
        deleted = load_deleted_positions(data_file, io=io, cache=cache)
        kinds.add(deleted.kind)
        assert deleted.positions.size == 0 or deleted.positions[-1] < data_file.record_count
        surviving += data_file.record_count - deleted.count

    assert surviving == expected_rows
    expected_kind = (
        DeletedPositionsKind.POSITION_DELETES if table_name == "mor_v2_pos" else DeletedPositionsKind.DELETION_VECTOR
    )
    assert expected_kind in kinds
    assert kinds <= {None, expected_kind}


def test_negative_positions_are_corrupt(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    delete_file = write_position_delete_file(tmp_path / "negative.parquet", [(DATA_A, -1), (DATA_A, 3)])

    with pytest.raises(CorruptFileError, match=r"negative\.parquet, row group 0: pos holds -1"):
        load_deleted_positions(data_file_slice(DATA_A, position_deletes=(delete_file,)), io=io, cache=cache)


def test_returned_positions_are_read_only(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    delete_file = write_position_delete_file(tmp_path / "pos.parquet", [(DATA_A, 1), (DATA_A, 2)])
    (dv,) = write_puffin_file(tmp_path / "dv.puffin", [(DATA_A, [7])])

    for data_file in (
        data_file_slice(DATA_A, position_deletes=(delete_file,)),
        data_file_slice(DATA_A, deletion_vector=dv),
        data_file_slice(DATA_A),
    ):
        positions = load_deleted_positions(data_file, io=io, cache=cache).positions
        with pytest.raises(ValueError, match="read-only"):
            positions[:1] = 0


def test_deletion_vector_of_another_data_file_is_refused(tmp_path: Path, io, cache: DeleteFileCache) -> None:
    (dv,) = write_puffin_file(tmp_path / "dv.puffin", [(DATA_B, [7])])

    with pytest.raises(EngineError, match=r"references .*part-b\.parquet, not the data file .*part-a\.parquet"):
        load_deleted_positions(data_file_slice(DATA_A, deletion_vector=dv), io=io, cache=cache)


def test_concurrent_data_files_share_one_read_of_each_row_group(
    tmp_path: Path, recording_io: RecordingFileIO, cache: DeleteFileCache
) -> None:
    paths = [f"file:/warehouse/db/t/data/part-{i:03d}.parquet" for i in range(8)]
    delete_file = write_position_delete_file(
        tmp_path / "pos.parquet", [(path, position) for path in paths for position in range(50)], row_group_size=100
    )
    results: dict[str, list[int]] = {}
    start = threading.Barrier(len(paths))

    def load(path: str) -> None:
        start.wait()
        results[path] = load_deleted_positions(
            data_file_slice(path, position_deletes=(delete_file,)), io=recording_io, cache=cache
        ).positions.tolist()

    threads = [threading.Thread(target=load, args=(path,)) for path in paths]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert results == {path: list(range(50)) for path in paths}
    # One footer read and one read per row group (4 of them), however many threads asked.
    assert len(recording_io.log.opened) == 1 + 4


def test_file_without_any_field_ids_is_read_by_the_spec_column_names(
    tmp_path: Path, io, cache: DeleteFileCache
) -> None:
    pq.write_table(
        pa.table({"file_path": [DATA_A, DATA_A], "pos": pa.array([6, 2], pa.int64())}), tmp_path / "n.parquet"
    )
    delete_file = write_position_delete_file(tmp_path / "unused.parquet", [])
    delete_file = type(delete_file)(str(tmp_path / "n.parquet"), 1, 2, 2)

    deleted = load_deleted_positions(data_file_slice(DATA_A, position_deletes=(delete_file,)), io=io, cache=cache)

    assert deleted.positions.tolist() == [2, 6]


def test_bytes_read_from_storage_are_counted_once_then_served_from_the_cache(
    tmp_path: Path, io, cache: DeleteFileCache
) -> None:
    from spark_jobs.engine.shared.metrics import ScanMetrics

    delete_file = write_position_delete_file(tmp_path / "pos.parquet", [(DATA_A, 1), (DATA_A, 2), (DATA_B, 3)])
    (dv,) = write_puffin_file(tmp_path / "dv.puffin", [(DATA_C, [7, 9])])
    metadata = pq.read_metadata(tmp_path / "pos.parquet")
    columns = metadata.row_group(0)
    expected = metadata.serialized_size + 8 + sum(columns.column(i).total_compressed_size for i in range(2))
    metrics = ScanMetrics()

    load_deleted_positions(
        data_file_slice(DATA_A, position_deletes=(delete_file,)), io=io, cache=cache, metrics=metrics
    )
    assert metrics.delete_bytes_read == expected
    load_deleted_positions(
        data_file_slice(DATA_B, position_deletes=(delete_file,)), io=io, cache=cache, metrics=metrics
    )
    assert metrics.delete_bytes_read == expected
    load_deleted_positions(data_file_slice(DATA_C, deletion_vector=dv), io=io, cache=cache, metrics=metrics)
    assert metrics.delete_bytes_read == expected + dv.content_size_in_bytes
