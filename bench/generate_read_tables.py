"""Generate the read benchmark's tables: the same N rows without deletes and with each kind of delete.

Shape (what a merge-on-read read must be fast on): columns ``id bigint, k bigint, ts timestamptz, category string,
qty int, price double, amount decimal(18,4), note string``; rows sorted on ``k`` and range-split into 8 Parquet
files (zstd, ~2 MiB row groups, page index, bloom filter on ``id``, Iceberg field ids in the Parquet schema);
``id`` is a random permutation, so only the bloom filter can prune a point lookup. 2% of the rows, spread over all
files, are deleted: by one position delete file per data file, by one equality delete file on ``id`` committed
at a higher sequence number, or (format v3) by one deletion vector per data file in a Puffin file, committed with
the table's upgrade to v3 (``iceberg_v3``). All four tables reference the same eight data files, so the floor (a
plain pyarrow read of those files) is the same for every table.

Every table is then checked: the engine's count and sum(price) for each benchmark query must equal a numpy
oracle's, computed from a plain pyarrow read of the data files with the delete files read back and applied.

    .venv/bin/python bench/generate_read_tables.py --rows 5000000
"""

from __future__ import annotations

import argparse
import io
import math
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.schema import Schema
from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
from pyiceberg.table.puffin import PuffinFile
from pyiceberg.types import DecimalType, DoubleType, IntegerType, LongType, NestedField, StringType, TimestamptzType

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_env import (
    CATALOG_NAME,
    DEFAULT_DATA_DIR,
    NAMESPACE,
    TABLES,
    Query,
    QueryExpectation,
    TablesDescription,
    benchmark_queries,
    configure_catalog,
    local_path,
)

FILES = 8
DELETE_FRACTION = 0.02
ROW_GROUP_BYTES = 2 * 1024 * 1024
BLOOM_FPP = 0.01
K_SPAN_PER_ROW = 10  # k is drawn from [0, 10 * N)
RANGE_FRACTION = 0.001
CATEGORIES = 24
NOTE_POOL = 4096
ID_FIELD_ID = 1
ICEBERG_FIELDS = (  # (field id, name, required) in table order; types are in iceberg_schema/arrow_schema
    (1, "id", True),
    (2, "k", True),
    (3, "ts", False),
    (4, "category", False),
    (5, "qty", False),
    (6, "price", False),
    (7, "amount", False),
    (8, "note", False),
)
ARROW_TYPES = {
    "id": pa.int64(),
    "k": pa.int64(),
    "ts": pa.timestamp("us", tz="UTC"),
    "category": pa.string(),
    "qty": pa.int32(),
    "price": pa.float64(),
    "amount": pa.decimal128(18, 4),
    "note": pa.string(),
}


def iceberg_schema() -> Schema:
    """The tables' Iceberg schema; field ids match the Parquet files' ``PARQUET:field_id``."""
    types = {
        "id": LongType(),
        "k": LongType(),
        "ts": TimestamptzType(),
        "category": StringType(),
        "qty": IntegerType(),
        "price": DoubleType(),
        "amount": DecimalType(18, 4),
        "note": StringType(),
    }
    return Schema(*(NestedField(fid, name, types[name], required=required) for fid, name, required in ICEBERG_FIELDS))


def arrow_schema() -> pa.Schema:
    """The data files' Arrow schema, with each field's Iceberg id in its metadata."""
    return pa.schema(
        pa.field(name, ARROW_TYPES[name], nullable=not required, metadata={b"PARQUET:field_id": str(fid).encode()})
        for fid, name, required in ICEBERG_FIELDS
    )


# ---------------------------------------------------------------------------------------------------------------
# Data


def make_rows(rows: int, rng: np.random.Generator) -> pa.Table:
    """N rows sorted on ``k``; every other column is independent of ``k`` (``id`` is a random permutation)."""
    k = np.sort(rng.integers(0, K_SPAN_PER_ROW * rows, rows, dtype=np.int64))
    qty = rng.integers(1, 100, rows, dtype=np.int32)
    price_cents = rng.integers(100, 100_000, rows, dtype=np.int64)
    ts_start = np.datetime64("2025-01-01T00:00:00", "us").astype(np.int64)
    ts = ts_start + rng.integers(0, 365 * 24 * 3600 * 1_000_000, rows, dtype=np.int64)
    categories = pa.array([f"category-{i:02d}" for i in range(CATEGORIES)])
    notes = pa.array([_note(i, rng) for i in range(NOTE_POOL)])
    columns = {
        "id": pa.array(rng.permutation(rows).astype(np.int64)),
        "k": pa.array(k),
        "ts": pa.array(ts).cast(pa.timestamp("us")).cast(ARROW_TYPES["ts"]),
        "category": categories.take(pa.array(rng.integers(0, CATEGORIES, rows))),
        "qty": pa.array(qty),
        "price": pa.array(price_cents / 100.0),
        # amount = qty * price exactly: unscaled value at scale 4 is qty * cents * 100
        "amount": _decimal128(qty.astype(np.int64) * price_cents * 100, ARROW_TYPES["amount"]),
        "note": notes.take(pa.array(rng.integers(0, NOTE_POOL, rows))),
    }
    return pa.table(list(columns.values()), schema=arrow_schema())


def _note(index: int, rng: np.random.Generator) -> str:
    words = ("express", "gift", "fragile", "return", "bulk", "priority", "hold", "pickup", "insured", "repack")
    chosen = " ".join(words[i] for i in rng.integers(0, len(words), 4))
    return f"note {index:04d}: {chosen}"


def _decimal128(unscaled: np.ndarray, decimal_type: pa.DataType) -> pa.Array:
    """A decimal128 array from int64 unscaled values (16-byte little-endian two's complement)."""
    words = np.empty((len(unscaled), 2), dtype=np.int64)
    words[:, 0] = unscaled
    words[:, 1] = unscaled >> 63
    return pa.Array.from_buffers(decimal_type, len(unscaled), [None, pa.py_buffer(words.tobytes())])


def row_group_rows_for(table: pa.Table, target_bytes: int) -> int:
    """Rows per row group so that a row group's compressed size is about ``target_bytes``."""
    sample = table.slice(0, min(len(table), 200_000))
    buffer = io.BytesIO()
    pq.write_table(sample, buffer, compression="zstd", row_group_size=len(sample))
    column_bytes = sum(
        pq.ParquetFile(io.BytesIO(buffer.getvalue())).metadata.row_group(0).column(i).total_compressed_size
        for i in range(sample.num_columns)
    )
    return max(1024, int(target_bytes / (column_bytes / len(sample))))


def write_data_files(table: pa.Table, files_dir: Path, row_group_rows: int, files: int = FILES) -> list[Path]:
    """Split the ``k``-sorted rows into ``files`` contiguous ranges and write one Parquet file per range."""
    files_dir.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, len(table), files + 1).astype(np.int64)
    paths = []
    for index in range(files):
        path = files_dir / f"data-{index:02d}.parquet"
        pq.write_table(
            table.slice(bounds[index], bounds[index + 1] - bounds[index]),
            path,
            compression="zstd",
            row_group_size=row_group_rows,
            write_page_index=True,
            bloom_filter_options={"id": {"ndv": row_group_rows, "fpp": BLOOM_FPP}},
        )
        paths.append(path)
    return paths


@dataclass
class DeletedRows:
    """The deleted rows, as (data file index, position in that file) and as their ids."""

    file_index: np.ndarray
    position: np.ndarray
    ids: np.ndarray

    def positions_in(self, file_index: int) -> np.ndarray:
        """The deleted positions of one data file."""
        return self.position[self.file_index == file_index]


def choose_deletes(table: pa.Table, rows_per_file: list[int], rng: np.random.Generator) -> DeletedRows:
    """DELETE_FRACTION of all rows, uniformly at random, so every data file has deletes."""
    total = len(table)
    chosen = np.sort(rng.choice(total, size=int(total * DELETE_FRACTION), replace=False))
    starts = np.concatenate([[0], np.cumsum(rows_per_file)[:-1]])
    file_index = np.searchsorted(starts, chosen, side="right") - 1
    ids = table.column("id").to_numpy()[chosen]
    return DeletedRows(file_index=file_index, position=chosen - starts[file_index], ids=ids)


# ---------------------------------------------------------------------------------------------------------------
# Tables


def create_tables(data_uris: list[str], deleted: DeletedRows, data_dir: Path) -> None:
    """Create the four tables over the same data files; commit each table's delete files in a second snapshot."""
    from iceberg_deletes import commit_delete_files, write_equality_delete_file, write_position_delete_file
    from iceberg_v3 import commit_deletion_vectors_upgrading_to_v3, write_deletion_vectors
    from pyiceberg.catalog import load_catalog
    from pyiceberg.io.pyarrow import parquet_file_to_data_file
    from pyiceberg.table.sorting import SortField, SortOrder
    from pyiceberg.transforms import IdentityTransform

    catalog = load_catalog(CATALOG_NAME)
    catalog.create_namespace_if_not_exists(NAMESPACE)
    sort_order = SortOrder(SortField(source_id=2, transform=IdentityTransform()))
    for kind, identifier in TABLES.items():
        table = catalog.create_table(
            identifier, schema=iceberg_schema(), sort_order=sort_order, properties={"format-version": "2"}
        )
        data_files = [parquet_file_to_data_file(table.io, table.metadata, uri) for uri in data_uris]
        with table.transaction() as transaction, transaction.update_snapshot().fast_append() as append:
            for data_file in data_files:
                append.append_data_file(data_file)
        table = catalog.load_table(identifier)
        deletes_dir = data_dir / "deletes" / kind
        if kind == "position_deletes":
            deletes_dir.mkdir(parents=True)
            delete_files = [
                write_position_delete_file(deletes_dir / f"pos-{i:02d}.parquet", uri, deleted.positions_in(i))
                for i, uri in enumerate(data_uris)
            ]
            commit_delete_files(table, delete_files)
        elif kind == "equality_deletes":
            deletes_dir.mkdir(parents=True)
            delete_file = write_equality_delete_file(deletes_dir / "eq-id.parquet", "id", ID_FIELD_ID, deleted.ids)
            commit_delete_files(table, [delete_file])
        elif kind == "deletion_vectors":
            deletes_dir.mkdir(parents=True)
            positions = {uri: deleted.positions_in(i) for i, uri in enumerate(data_uris)}
            dv_files = write_deletion_vectors(deletes_dir / "dv.puffin", positions)
            commit_deletion_vectors_upgrading_to_v3(catalog, identifier, table, dv_files)


# ---------------------------------------------------------------------------------------------------------------
# Verification


def oracle_masks(data_uris: list[str], data_dir: Path) -> dict[str, list[np.ndarray]]:
    """Per table kind, per data file, which rows are live: the delete files read back and applied with numpy."""
    ids = [pq.read_table(local_path(uri), columns=["id"]).column("id").to_numpy() for uri in data_uris]
    masks: dict[str, list[np.ndarray]] = {"no_deletes": [np.ones(len(file_ids), bool) for file_ids in ids]}
    position_masks = [np.ones(len(file_ids), bool) for file_ids in ids]
    index_of = {uri: i for i, uri in enumerate(data_uris)}
    for path in sorted((data_dir / "deletes" / "position_deletes").glob("*.parquet")):
        deletes = pq.read_table(path)
        for uri, positions in _group_positions(deletes).items():
            position_masks[index_of[uri]][positions] = False
    masks["position_deletes"] = position_masks
    deleted_ids = pq.read_table(data_dir / "deletes" / "equality_deletes" / "eq-id.parquet").column("id").to_numpy()
    masks["equality_deletes"] = [~np.isin(file_ids, deleted_ids) for file_ids in ids]
    # Deletion vectors read back with pyiceberg's own Puffin reader (independent of the engine's).
    puffin = PuffinFile((data_dir / "deletes" / "deletion_vectors" / "dv.puffin").read_bytes())
    dv_masks = [np.ones(len(file_ids), bool) for file_ids in ids]
    for vector in deletion_vectors_from_puffin_file(puffin):
        dv_masks[index_of[vector.referenced_data_file]][vector.to_vector().to_numpy()] = False
    masks["deletion_vectors"] = dv_masks
    return masks


def _group_positions(deletes: pa.Table) -> dict[str, np.ndarray]:
    paths = deletes.column("file_path").to_numpy(zero_copy_only=False)
    positions = deletes.column("pos").to_numpy()
    return {uri: positions[paths == uri] for uri in np.unique(paths)}


def oracle_answers(
    data_uris: list[str], masks: dict[str, list[np.ndarray]], queries: list[Query]
) -> dict[str, dict[str, QueryExpectation]]:
    """count(*) and sum(price) of every query on every table, from a plain pyarrow read and the live-row masks."""
    columns = [pq.read_table(local_path(uri), columns=["id", "k", "price"]) for uri in data_uris]
    answers: dict[str, dict[str, QueryExpectation]] = {}
    for kind, kind_masks in masks.items():
        answers[kind] = {}
        for query in queries:
            count, total = 0, 0.0
            for data, live in zip(columns, kind_masks, strict=True):
                keep = live & _query_mask(data, query)
                count += int(keep.sum())
                total += float(data.column("price").to_numpy()[keep].sum())
            answers[kind][query.name] = QueryExpectation(count=count, sum_price=total)
    return answers


def _query_mask(data: pa.Table, query: Query) -> np.ndarray:
    if query.filter_column is None:
        return np.ones(len(data), bool)
    values = data.column(query.filter_column).to_numpy()
    if query.high is None:
        return values == query.low
    return (values >= query.low) & (values < query.high)


def verify_with_engine(expected: dict[str, dict[str, QueryExpectation]], queries: list[Query]) -> None:
    """The engine's answer to every query on every table must match the oracle's (sums to 1e-9 relative)."""
    from spark_jobs.engine.read.session import open_read_session

    for kind, identifier in TABLES.items():
        for query in queries:
            result = open_read_session(CATALOG_NAME, identifier, columns=["price"], row_filter=query.row_filter)
            table = result.to_arrow()
            count, total = table.num_rows, pc.sum(table.column("price")).as_py() or 0.0
            want = expected[kind][query.name]
            ok = count == want.count and math.isclose(total, want.sum_price, rel_tol=1e-9, abs_tol=1e-6)
            print(
                f"verify {kind:17s} {query.name:13s} count={count} sum={total:.2f} "
                f"oracle count={want.count} sum={want.sum_price:.2f} {'ok' if ok else 'MISMATCH'}"
            )
            if not ok:
                raise SystemExit(f"engine disagrees with the oracle on {identifier} {query.name}")


# ---------------------------------------------------------------------------------------------------------------


def reset_data_dir(data_dir: Path) -> None:
    """Remove what an earlier run generated (catalog, warehouse, data and delete files) under ``data_dir``."""
    for name in ("catalog.db", "warehouse", "files", "deletes", "pyiceberg-home", "read_tables.json"):
        path = data_dir / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "warehouse").mkdir()


def pick_point_id(table: pa.Table, deleted: DeletedRows, rng: np.random.Generator) -> int:
    """An id that exists and is not deleted, so the point lookup returns exactly one row."""
    deleted_ids = set(deleted.ids.tolist())
    ids = table.column("id").to_numpy()
    while True:
        candidate = int(ids[rng.integers(0, len(ids))])
        if candidate not in deleted_ids:
            return candidate


def k_range(rows: int) -> tuple[int, int]:
    """A RANGE_FRACTION slice of k's domain in the middle of the table (it falls inside one data file)."""
    span = K_SPAN_PER_ROW * rows
    low = int(span * 0.4321)
    return low, low + int(span * RANGE_FRACTION)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options: row count, output directory, seed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000, help="rows in each table (default 5,000,000)")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="catalog, warehouse and files")
    parser.add_argument("--seed", type=int, default=20261122)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Generate, register, and verify the four tables; write the description the benchmark reads."""
    args = parse_args(argv)
    data_dir: Path = args.data_dir.resolve()
    configure_catalog(data_dir)
    reset_data_dir(data_dir)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()

    rows = make_rows(args.rows, rng)
    row_group_rows = row_group_rows_for(rows, ROW_GROUP_BYTES)
    paths = write_data_files(rows, data_dir / "files", row_group_rows)
    data_uris = [f"file://{path}" for path in paths]
    rows_per_file = [pq.ParquetFile(path).metadata.num_rows for path in paths]
    deleted = choose_deletes(rows, rows_per_file, rng)
    print(
        f"wrote {len(paths)} data files, {args.rows} rows, {row_group_rows} rows per row group, "
        f"{sum(p.stat().st_size for p in paths) / 2**20:.1f} MiB; {len(deleted.ids)} rows to delete "
        f"({time.perf_counter() - started:.1f}s)"
    )

    create_tables(data_uris, deleted, data_dir)
    description = TablesDescription(
        rows=args.rows,
        deleted_rows=len(deleted.ids),
        data_files=data_uris,
        row_group_rows=row_group_rows,
        k_range=k_range(args.rows),
        point_id=pick_point_id(rows, deleted, rng),
        tables=dict(TABLES),
    )
    queries = benchmark_queries(description)
    description.expected = oracle_answers(data_uris, oracle_masks(data_uris, data_dir), queries)
    for kind in ("position_deletes", "equality_deletes", "deletion_vectors"):
        if description.expected[kind]["full"].count != args.rows - len(deleted.ids):
            raise SystemExit(f"{kind}: oracle count is not rows minus deleted rows")
    verify_with_engine(description.expected, queries)
    description.save(data_dir)
    print(f"generated and verified in {time.perf_counter() - started:.1f}s; description in {data_dir}")


if __name__ == "__main__":
    main()
