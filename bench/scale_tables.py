"""What the scale benchmark builds and asks, shared by its processes (stdlib only: two virtualenvs import it).

Tables live in the Java environment's SQLite catalog (``anchor``, as in the side-by-side benchmark), namespace
``scale``, one per size and shape, named ``s<log10 size>_<shape>`` (``s5_u100``: 10^5 data files, unpartitioned,
100 manifests). Every data file holds ROWS_PER_FILE generated rows; file ``i`` holds ids
``i * ROWS_PER_FILE ..`` and the rows of day ``i * DAYS // files``, so ``k`` and ``d`` cluster by file as a table
written in time order does, and min/max metrics prune point and day filters.

- Up to 10^5 files (``REAL_MAX_FILES``) the files are real: pyarrow writes them once per size and layout under
  ``<data-dir>/source/``. The *seed* of a layout (``u100``, ``p100``) hard-links them into its own ``data/cNNN/``
  directories and Iceberg Java's ``add_files`` registers one directory per commit (each commit a whole number of
  days in the partitioned layout). Every other shape re-registers its seed's data files (hard-linked again into its
  own location, so that each table's location holds the files it references) through Java's API with the metrics
  ``add_files`` computed, in the shape's commits with its manifest-merge setting (``ScaleBench.appendCopies``: the
  ``newAppend`` that ``add_files`` itself commits through; reading 10^5 footers once per table took hours on the
  loaded machine). A merge-on-read ``DELETE`` by Java (DELETE_PREDICATE: 11 rows in every 20th file) then adds
  position delete files (deletion vectors in a v3 table) as the second snapshot.
- Above, the table is COPIES_ABOVE_REAL copies of the 10^5 seed's data files, registered the same way in the
  shape's commits, and the same rows deleted by position delete files that pyarrow writes and Java's API
  registers (``registerPositionDeletes``): a DELETE would read 5.5 * 10^8 rows.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass
from typing import Any

CATALOG = "anchor"
NAMESPACE = "scale"
ROWS_PER_FILE = 550
DAYS = 100
FIRST_DAY = dt.date(2024, 1, 1)
SIZES = (1_000, 10_000, 100_000, 1_000_000)
REAL_MAX_FILES = 100_000
COPIES_ABOVE_REAL = 10
SPLIT_SIZE = 128 * 1024 * 1024  # Iceberg's read.split.target-size default: both planners get it
DELETE_FILE_STRIDE = 20  # every 20th data file gets deletes: 5% of the files
DELETE_ROW_STRIDE = 50  # of those, every row whose id is a multiple of 50 (11 of 550)
DELETE_PREDICATE = f"pmod(id div {ROWS_PER_FILE}, {DELETE_FILE_STRIDE}) = 0 AND pmod(id, {DELETE_ROW_STRIDE}) = 0"
COLUMNS = ("id", "k", "ts", "cat", "price", "note", "d")  # field ids 1..7 in this order
COLUMNS_DDL = "(id BIGINT, k BIGINT, ts TIMESTAMP, cat STRING, price DOUBLE, note STRING, d DATE)"
CATEGORIES = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")
EXPIRE_SNAPSHOTS = 1_000
UPSERT_MATCHED = 5_000  # existing ids, spread evenly over the table
UPSERT_NEW = 5_000  # ids after the last one


@dataclass(frozen=True)
class Shape:
    """How a table's entries are laid out: partitioning, commits, manifest merging, format version."""

    name: str
    partitioned: bool
    commits: int
    merge: bool
    format_version: int = 2

    @property
    def layout(self) -> str:
        """``p`` (identity partitions on ``d``) or ``u`` (unpartitioned): the source files' layout."""
        return "p" if self.partitioned else "u"

    def properties(self) -> dict[str, str]:
        """Table properties: merge-on-read writes, and the manifest merging the shape asks for."""
        props = {
            "format-version": str(self.format_version),
            "write.delete.mode": "merge-on-read",
            "write.update.mode": "merge-on-read",
            "write.merge.mode": "merge-on-read",
            "commit.manifest-merge.enabled": str(self.merge).lower(),
        }
        if self.merge:
            props["commit.manifest.min-count-to-merge"] = "2"  # every commit merges into the existing manifest
        return props

    def describe(self) -> str:
        """The shape in words."""
        merged = "merge on" if self.merge else "merge off"
        part = f"identity partitions on d ({DAYS} days)" if self.partitioned else "unpartitioned"
        return f"{part}, {self.commits} add_files commits, {merged}, v{self.format_version}"


SHAPES = {
    shape.name: shape
    for shape in (
        Shape("u1", False, 10, True),  # 10 commits merged into one manifest
        Shape("u10", False, 10, False),
        Shape("u100", False, 100, False),
        Shape("p1", True, 10, True),
        Shape("p10", True, 10, False),
        Shape("p100", True, 100, False),  # one commit per day
        Shape("u1v3", False, 10, True, 3),  # deletion vectors for the deletes
    )
}


def seed_shape(shape: str) -> str:
    """The shape whose table ``add_files`` builds for ``shape``'s layout (the others re-register its files)."""
    return "p100" if SHAPES[shape].partitioned else "u100"


def size_label(files: int) -> str:
    """``10^5`` for 100000."""
    exponent = len(str(files)) - 1
    return f"10^{exponent}" if files == 10**exponent else f"{files:,}"


def table_name(files: int, shape: str) -> str:
    """``s5_u100`` for 10^5 files of shape u100."""
    exponent = len(str(files)) - 1
    return f"s{exponent}_{shape}" if files == 10**exponent else f"n{files}_{shape}"


def expire_table_name(files: int) -> str:
    """The table with EXPIRE_SNAPSHOTS snapshots over ``files`` data files."""
    return table_name(files, "expire")


def distinct_files(files: int) -> int:
    """How many files of distinct rows a table of ``files`` holds (copies above REAL_MAX_FILES repeat them)."""
    return min(files, REAL_MAX_FILES)


def day_of_file(index: int, files: int) -> int:
    """The day (0-based) whose rows file ``index`` of ``files`` holds."""
    return index * DAYS // files


def k_of(row_id: int) -> int:
    """The ``k`` value of a row id (ascending with the id, unique)."""
    return row_id * 8 + (row_id * 5) % 8


def date_text(day: int) -> str:
    """ISO date of a 0-based day."""
    return (FIRST_DAY + dt.timedelta(days=day)).isoformat()


@dataclass(frozen=True)
class Filter:
    """One of the planning filters in the three syntaxes the sides take."""

    name: str
    row_filter: str | None  # pyiceberg's syntax (ours, pyiceberg)
    where_sql: str | None  # Spark SQL (Java's cold job and scans)
    java: tuple[str, str, Any] | None  # (Expressions method, column, literal) for Iceberg Java's TableScan


def filters(files: int) -> list[Filter]:
    """Point filter on ``k`` (one file; one per copy above 10^5), day filter on the partition column ``d`` (1% of
    the files), no filter."""
    point_id = (distinct_files(files) // 2 + 7) * ROWS_PER_FILE + 123
    point_k = k_of(point_id)
    day = date_text(DAYS // 2)
    return [
        Filter("point", f"k = {point_k}", f"k = {point_k}", ("equal", "k", point_k)),
        Filter("partition", f"d = '{day}'", f"d = DATE '{day}'", ("equal", "d", day)),
        Filter("none", None, None, None),
    ]


def range_filter(files: int) -> Filter:
    """A 0.1% range of ``k`` in the middle of the table (for the scans at 50M+ rows)."""
    rows = distinct_files(files) * ROWS_PER_FILE
    low = k_of(rows // 2)
    high = k_of(rows // 2 + rows // 1000)
    return Filter(
        "range_0.1pct", f"k >= {low} and k < {high}", f"k >= {low} AND k < {high}", ("range", "k", [low, high])
    )


def upsert_ids(files: int) -> tuple[list[int], list[int]]:
    """The upsert batch's existing ids (spread evenly) and new ids (after the last)."""
    rows = distinct_files(files) * ROWS_PER_FILE
    stride = rows // UPSERT_MATCHED
    return [index * stride + 3 for index in range(UPSERT_MATCHED)], [rows + index for index in range(UPSERT_NEW)]


@dataclass
class BuiltTable:
    """What the build made (kept in ``<data-dir>/tables.json``): how, what it holds, and its snapshots."""

    name: str
    files: int
    shape: str
    how: str  # add_files of real files, or copies registered through Java's API
    description: str
    location: str
    base_snapshot: int
    delete_snapshot: int | None
    data_files: int
    delete_files: int
    rows: int
    data_manifests: int
    delete_manifests: int
    data_manifest_bytes: int
    seconds: dict[str, float]
    java_versions: dict[str, str]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)
