"""Shared settings of the read benchmark: where the data lives, the catalog name, and the tables' description.

The generator and the benchmark resolve the catalog the way jobs do, by name through pyiceberg's environment
configuration, so ``configure_catalog`` must run before any SparkSession exists (Spark's Python workers inherit
the environment the JVM started with).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
DEFAULT_DATA_DIR = BENCH_DIR / "data"
CATALOG_NAME = "bench"
NAMESPACE = "bench"
# One table per delete kind, all over the same eight data files.
TABLES = {
    "no_deletes": f"{NAMESPACE}.read_no_deletes",
    "position_deletes": f"{NAMESPACE}.read_position_deletes",
    "equality_deletes": f"{NAMESPACE}.read_equality_deletes",
    "deletion_vectors": f"{NAMESPACE}.read_deletion_vectors",
}
DESCRIPTION_FILE = "read_tables.json"


def configure_catalog(data_dir: Path, catalog_name: str = CATALOG_NAME) -> None:
    """Point ``catalog_name`` (SQLite catalog, local warehouse under ``data_dir``) at pyiceberg's env config."""
    data_dir = data_dir.resolve()
    prefix = f"PYICEBERG_CATALOG__{catalog_name.upper()}__"
    os.environ[prefix + "TYPE"] = "sql"
    os.environ[prefix + "URI"] = f"sqlite:///{data_dir}/catalog.db"
    os.environ[prefix + "WAREHOUSE"] = f"file://{data_dir}/warehouse"
    # A developer's ~/.pyiceberg.yaml must not change what the benchmark reads.
    os.environ["PYICEBERG_HOME"] = str(data_dir / "pyiceberg-home")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable


@dataclass
class QueryExpectation:
    """The oracle's answer to one query on one table: row count and sum(price)."""

    count: int
    sum_price: float


@dataclass
class TablesDescription:
    """What the generator produced, so the benchmark can build its queries and check every answer."""

    rows: int
    deleted_rows: int
    data_files: list[str]
    row_group_rows: int
    k_range: tuple[int, int]
    point_id: int
    tables: dict[str, str] = field(default_factory=dict)
    expected: dict[str, dict[str, QueryExpectation]] = field(default_factory=dict)

    def save(self, data_dir: Path) -> None:
        """Write the description next to the catalog."""
        (data_dir / DESCRIPTION_FILE).write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, data_dir: Path) -> TablesDescription:
        """Read the description the generator wrote (fails clearly if the tables were never generated)."""
        path = data_dir / DESCRIPTION_FILE
        if not path.exists():
            raise SystemExit(f"{path} not found: run bench/generate_read_tables.py first")
        raw = json.loads(path.read_text())
        raw["k_range"] = tuple(raw["k_range"])
        raw["expected"] = {
            table: {query: QueryExpectation(**value) for query, value in queries.items()}
            for table, queries in raw["expected"].items()
        }
        return cls(**raw)


def local_path(uri: str) -> str:
    """A ``file://`` URI as a plain local path (for pyarrow)."""
    return uri.removeprefix("file://")


@dataclass(frozen=True)
class Query:
    """One benchmark query: count(*) and sum(price) over the rows a filter keeps (no filter: the whole table)."""

    name: str
    row_filter: str | None  # pyiceberg row-filter syntax, for our engine and for pyiceberg
    filter_column: str | None  # the column the filter reads (for the floor's bytes and the full-scan reference)
    low: int | None = None  # filter_column >= low (range) or == low (point)
    high: int | None = None  # filter_column < high (range); None for a point lookup

    @property
    def columns(self) -> list[str]:
        """The columns a plain reader must read to answer the query."""
        return ["price"] if self.filter_column is None else [self.filter_column, "price"]

    def arrow_filter(self) -> Any:
        """The same predicate as a pyarrow dataset expression, for the floor (None: no filter)."""
        import pyarrow.compute as pc

        if self.filter_column is None:
            return None
        column = pc.field(self.filter_column)
        if self.high is None:
            return column == self.low
        return (column >= self.low) & (column < self.high)


def benchmark_queries(description: TablesDescription) -> list[Query]:
    """Whole table, a 0.1% range of ``k``, and a point lookup on ``id`` (the bloom-filtered column)."""
    low, high = description.k_range
    point = description.point_id
    return [
        Query("full", None, None),
        Query("range_0.1pct", f"k >= {low} and k < {high}", "k", low, high),
        Query("point", f"id = {point}", "id", point, None),
    ]
