"""Parquet files of the scale benchmark, written by pyarrow: the tables' data files, the upsert batch, and the
position delete files of tables registered through Java's API (``scale_tables`` module doc).

The data files carry Iceberg field ids (1..7, the order of ``scale_tables.COLUMNS``) as Iceberg's writers do;
partitioned files leave out ``d``, which their directory (``d=2024-02-20``) holds, as a Hive layout does.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import scale_tables as st

_TIMESTAMP = pa.timestamp("us", tz="UTC")
_EPOCH = dt.date(1970, 1, 1)
POSITION_DELETE_SCHEMA = pa.schema(
    [
        pa.field("file_path", pa.string(), nullable=False, metadata={b"PARQUET:field_id": b"2147483546"}),
        pa.field("pos", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"2147483545"}),
    ]
)


def data_schema(partitioned: bool) -> pa.Schema:
    """The data files' Arrow schema with Iceberg field ids (no ``d`` in a partitioned layout)."""
    types = {
        "id": pa.int64(),
        "k": pa.int64(),
        "ts": _TIMESTAMP,
        "cat": pa.string(),
        "price": pa.float64(),
        "note": pa.string(),
        "d": pa.date32(),
    }
    fields = [
        pa.field(name, types[name], metadata={b"PARQUET:field_id": str(index + 1).encode()})
        for index, name in enumerate(st.COLUMNS)
        if not (partitioned and name == "d")
    ]
    return pa.schema(fields)


def rows_of(first_id: int, count: int, day: int, schema: pa.Schema) -> pa.Table:
    """``count`` generated rows from id ``first_id`` on day ``day`` (0-based), in ``schema``'s columns."""
    ids = list(range(first_id, first_id + count))
    day_start_us = (st.FIRST_DAY - _EPOCH).days * 86_400_000_000 + day * 86_400_000_000
    columns = {
        "id": ids,
        "k": [st.k_of(value) for value in ids],
        "ts": [day_start_us + (value % st.ROWS_PER_FILE) * 60_000_000 for value in ids],
        "cat": [st.CATEGORIES[(value * 31) % len(st.CATEGORIES)] for value in ids],
        "price": [((value * 2654435761) % 100_000_000) / 100.0 for value in ids],
        "note": [f"note-{value % 100_000}" for value in ids],
        "d": [(st.FIRST_DAY - _EPOCH).days + day] * count,
    }
    return pa.table([pa.array(columns[f.name], f.type) for f in schema], schema=schema)


def source_dir(data_dir: Path, files: int, partitioned: bool) -> Path:
    """Where the real data files of one size and layout live."""
    return data_dir / "source" / str(files) / ("p" if partitioned else "u")


def file_relative_path(index: int, files: int, partitioned: bool) -> str:
    """``[d=YYYY-MM-DD/]f-0000123.parquet``: file ``index``'s path under a source or commit directory."""
    name = f"f-{index:07d}.parquet"
    if not partitioned:
        return name
    return f"d={st.date_text(st.day_of_file(index, files))}/{name}"


def rows_of_files(first_file: int, count: int, files: int, schema: pa.Schema) -> pa.Table:
    """The rows of data files ``first_file .. first_file + count - 1`` of ``files`` (the values ``rows_of`` gives,
    computed by Arrow's kernels: a whole batch of files costs about what one file's rows cost in Python)."""
    per_file = st.ROWS_PER_FILE
    ids = pa.array(range(first_file * per_file, (first_file + count) * per_file), pa.int64())

    def mod(values: pa.Array, modulus: int) -> pa.Array:
        return pc.subtract(values, pc.multiply(pc.divide(values, modulus), modulus))

    file_index = pc.divide(ids, per_file)
    day = pc.divide(pc.multiply(file_index, st.DAYS), files)
    first_day = (st.FIRST_DAY - _EPOCH).days
    position = pc.subtract(ids, pc.multiply(file_index, per_file))
    columns = {
        "id": ids,
        "k": pc.add(pc.multiply(ids, 8), mod(pc.multiply(ids, 5), 8)),
        "ts": pc.cast(
            pc.add(pc.multiply(pc.add(day, first_day), 86_400_000_000), pc.multiply(position, 60_000_000)),
            _TIMESTAMP,
        ),
        "cat": pc.take(pa.array(st.CATEGORIES, pa.string()), mod(pc.multiply(ids, 31), len(st.CATEGORIES))),
        "price": pc.divide(pc.cast(mod(pc.multiply(ids, 2654435761), 100_000_000), pa.float64()), 100.0),
        "note": pc.binary_join_element_wise("note-", pc.cast(mod(ids, 100_000), pa.string()), ""),
        "d": pc.cast(pc.cast(pc.add(day, first_day), pa.int32()), pa.date32()),
    }
    return pa.table([columns[f.name] for f in schema], schema=schema)


def write_source_files(
    data_dir: Path, files: int, partitioned: bool, log: Callable[[str], None] = print, mtime_days_ago: float = 10
) -> Path:
    """Write the data files of one size and layout once (a ``_SUCCESS`` marker says they are complete).

    Each file is written under a temporary name and renamed, so that a stopped run resumes where it was. Their
    modification time is set ``mtime_days_ago`` days back, so that orphan-file listings with a cutoff a day ago
    consider them without overriding either side's minimum-age rule.
    """
    root = source_dir(data_dir, files, partitioned)
    if (root / "_SUCCESS").exists():
        return root
    schema = data_schema(partitioned)
    started = time.monotonic()
    old = time.time() - mtime_days_ago * 86_400
    batch_files = 1_000
    for first in range(0, files, batch_files):
        count = min(batch_files, files - first)
        paths = [root / file_relative_path(index, files, partitioned) for index in range(first, first + count)]
        if all(path.exists() for path in paths):
            continue
        rows = rows_of_files(first, count, files, schema)
        for offset, path in enumerate(paths):
            if path.exists():
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(path.name + ".partial")
            chunk = rows.slice(offset * st.ROWS_PER_FILE, st.ROWS_PER_FILE)
            pq.write_table(chunk, partial, compression="zstd", row_group_size=st.ROWS_PER_FILE)
            os.utime(partial, (old, old))
            os.replace(partial, path)
        if first and first % 10_000 == 0:
            log(f"  {root}: {first:,} of {files:,} files ({time.monotonic() - started:.0f} s)")
    (root / "_SUCCESS").write_text("")
    return root


def write_upsert_batch(directory: Path, files: int) -> Path:
    """The upsert source: UPSERT_MATCHED existing ids with a new price and note, UPSERT_NEW new ids (one file)."""
    matched, new = st.upsert_ids(files)
    schema = data_schema(partitioned=False)
    directory.mkdir(parents=True, exist_ok=True)
    parts = []
    for row_id in matched + new:
        day = st.day_of_file(min(row_id // st.ROWS_PER_FILE, st.distinct_files(files) - 1), st.distinct_files(files))
        parts.append(rows_of(row_id, 1, day, schema))
    batch = pa.concat_tables(parts)
    prices = pa.array([((value * 7919) % 100_000_000) / 100.0 for value in batch.column("id").to_pylist()])
    notes = pa.array([f"upserted-{value}" for value in batch.column("id").to_pylist()])
    batch = batch.set_column(batch.schema.get_field_index("price"), schema.field("price"), prices)
    batch = batch.set_column(batch.schema.get_field_index("note"), schema.field("note"), notes)
    path = directory / "batch.parquet"
    pq.write_table(batch, path, compression="zstd")
    return path


def deleted_positions(first_id: int) -> list[int]:
    """Positions DELETE_PREDICATE deletes in a file whose first id is ``first_id`` (empty for most files)."""
    if (first_id // st.ROWS_PER_FILE) % st.DELETE_FILE_STRIDE:
        return []
    return [pos for pos in range(st.ROWS_PER_FILE) if (first_id + pos) % st.DELETE_ROW_STRIDE == 0]


def write_position_deletes(data_paths: list[tuple[str, int, str]], directory: Path) -> list[str]:
    """One file-scoped position delete file per data file that DELETE_PREDICATE touches.

    ``data_paths`` are (data file location, its first id, its partition path). Returns TSV lines for
    ``ScaleBench.registerPositionDeletes``: path, size, records, data file, lowest and highest position, partition.
    """
    directory.mkdir(parents=True, exist_ok=True)
    lines = []
    for index, (location, first_id, partition) in enumerate(data_paths):
        positions = deleted_positions(first_id)
        if not positions:
            continue
        path = directory / f"pos-delete-{index:07d}.parquet"
        table = pa.table(
            [pa.array([location] * len(positions), pa.string()), pa.array(positions, pa.int64())],
            schema=POSITION_DELETE_SCHEMA,
        )
        pq.write_table(table, path, compression="zstd")
        lines.append(
            "\t".join(
                [
                    f"file:{path}",
                    str(path.stat().st_size),
                    str(len(positions)),
                    location,
                    str(positions[0]),
                    str(positions[-1]),
                    partition,
                ]
            )
        )
    return lines
