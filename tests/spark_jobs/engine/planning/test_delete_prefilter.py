"""Position deletes and deletion vectors scoped to a data file the scan does not read are left out; others stay."""

from __future__ import annotations

import pyarrow as pa

from spark_jobs.engine.planning.delete_index import DELETE_FILE_PATH_FIELD_ID
from spark_jobs.engine.planning.delete_prefilter import rows_that_may_apply
from spark_jobs.engine.table.manifest_columns import ManifestColumns

BOUNDS = pa.map_(pa.int32(), pa.binary())


def _deletes(rows: list[tuple[int, str | None, bytes | None, bytes | None]]) -> ManifestColumns:
    """Delete entries of (content, referenced_data_file, lower and upper bound of the file_path column)."""
    return ManifestColumns(
        "deletes.avro",
        0,
        pa.table(
            {
                "content": pa.array([content for content, *_ in rows], pa.int32()),
                "referenced_data_file": pa.array([referenced for _, referenced, _, _ in rows], pa.string()),
                "lower_bounds": pa.array(
                    [
                        None if lower is None else [(DELETE_FILE_PATH_FIELD_ID, lower), (7, b"x")]
                        for *_, lower, _ in rows
                    ],
                    BOUNDS,
                ),
                "upper_bounds": pa.array(
                    [None if upper is None else [(DELETE_FILE_PATH_FIELD_ID, upper)] for *_, upper in rows], BOUNDS
                ),
            }
        ),
    )


def test_deletes_scoped_to_a_file_the_scan_reads_or_unscoped_or_equality_stay_in_order() -> None:
    deletes = _deletes(
        [
            (1, "s3://b/read.parquet", None, None),  # referenced, read
            (1, "s3://b/other.parquet", None, None),  # referenced, not read
            (1, None, b"s3://b/read.parquet", b"s3://b/read.parquet"),  # equal path bounds, read
            (1, None, b"s3://b/other.parquet", b"s3://b/other.parquet"),  # equal path bounds, not read
            (1, None, b"s3://b/a.parquet", b"s3://b/z.parquet"),  # several files: kept
            (1, None, None, None),  # no bounds: kept
            (2, None, None, None),  # equality deletes: kept
            (1, "s3://b/other.parquet", b"s3://b/read.parquet", b"s3://b/read.parquet"),  # referenced wins
        ]
    )
    kept = rows_that_may_apply(deletes, pa.array(["s3://b/read.parquet", "s3://b/third.parquet"]))
    assert kept.tolist() == [0, 2, 4, 5, 6]


def test_no_position_deletes_keeps_every_row() -> None:
    deletes = _deletes([(2, None, None, None), (2, None, None, None)])
    assert rows_that_may_apply(deletes, pa.array([], pa.string())).tolist() == [0, 1]


def test_no_data_file_read_leaves_out_every_scoped_delete() -> None:
    deletes = _deletes([(1, "s3://b/x.parquet", None, None), (1, None, b"s3://b/y", b"s3://b/y")])
    assert rows_that_may_apply(deletes, pa.array([], pa.string())).tolist() == []
