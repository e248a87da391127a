"""What the side-by-side benchmark runs, shared by both runners (stdlib only: it is imported by two virtualenvs).

Iceberg Java (pyspark 3.5 + the Iceberg runtime jar) and our jobs (project venv) run in separate processes, each
driven over stdin/stdout by ``side_by_side.py``. Both sides must do the same work on the same tables, so the tables,
the generated rows, the queries, the upsert batch and the Spark settings are defined once here.

The tables live in the Java environment's catalog (``anchor``: a JdbcCatalog on SQLite that pyiceberg's SqlCatalog
opens too), namespace ``bench``, built by Java (``side_by_side_java.py build``):

- ``mor_pos`` (v2): ROWS rows of the columns below, 8 files range-partitioned and sorted on ``k``, row groups of
  2 MiB; then ``DELETE`` of 2% of the rows (merge-on-read: one position delete file per data file). Its first
  snapshot (before the delete) is the "no deletes" table.
- ``mor_eq`` (v2): the same data; the same rows deleted by one equality delete file on ``id``.
- ``mor_dv`` (v3): the same data; the same rows deleted by deletion vectors.
- ``small`` (v2): 2,000 files of 100 rows (10 appends).
- ``upsert`` (v2, merge-on-read): ROWS rows like ``mor_pos`` before its delete; the upsert target.
- a Parquet directory of ROWS generated rows (4 files), the source of the file ingest.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CATALOG = "anchor"
NAMESPACE = "bench"
ROWS = 5_000_000
DELETE_PERMILLE = 20  # 2% of the rows, chosen by a hash of the id
SMALL_FILES = 2_000
UPSERT_MATCHED = 50_000  # existing ids the upsert batch changes
UPSERT_NEW = 10_000  # ids it adds
RESULT_PREFIX = "@@side-by-side "  # a runner's reply line starts with this (Spark may print other lines)

COLUMNS_DDL = (
    "(id BIGINT NOT NULL, k BIGINT, ts TIMESTAMP, cat STRING, qty INT, price DOUBLE, amount DECIMAL(18,4), note STRING)"
)
# The generated rows as Spark SQL over ``spark.range``: the same in Spark 3.5 and 4 (xxhash64 is Spark's own).
GENERATED_COLUMNS = [
    "id",
    "id * 8 + pmod(xxhash64(id, 1), 8) AS k",
    "timestamp_micros(1704067200000000 + id * 1000) AS ts",
    "element_at(array('alpha','beta','gamma','delta','epsilon','zeta'), "
    "cast(pmod(xxhash64(id, 2), 6) AS INT) + 1) AS cat",
    "CASE WHEN pmod(xxhash64(id, 3), 50) = 0 THEN NULL ELSE cast(pmod(xxhash64(id, 4), 10000) AS INT) END AS qty",
    "pmod(xxhash64(id, 5), 100000000) / 100.0D AS price",
    "cast(cast(pmod(xxhash64(id, 6), 2000000000) - 1000000000 AS DECIMAL(18,0)) * 0.0001BD AS DECIMAL(18,4)) AS amount",
    "concat('note-', cast(pmod(xxhash64(id, 7), 1000000) AS STRING)) AS note",
]
DELETE_PREDICATE = f"pmod(xxhash64(id, 99), 1000) < {DELETE_PERMILLE}"
# The upsert batch: UPSERT_MATCHED existing ids spread over every data file (every ROWS // UPSERT_MATCHED-th id)
# with a new price and note, and UPSERT_NEW new ids after the last one.
UPSERT_CHANGED_COLUMNS = {
    "price": "pmod(xxhash64(id, 55), 100000000) / 100.0D AS price",
    "note": "concat('upserted-', cast(id AS STRING)) AS note",
}
# The checksum both sides' tables are compared by (computed by Java's reader, the reference).
CHECKSUM_SQL = (
    "SELECT count(*) AS n, sum(cast(xxhash64(id, k, ts, cat, qty, price, amount, note) AS DECIMAL(38,0))) AS h "
    "FROM {table}"
)

# Spark settings both sides run with (besides the Java side's catalog and jars).
SPARK_CONF = {
    "spark.master": "local[2]",
    "spark.driver.memory": "6g",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
}


def upsert_batch_select() -> list[str]:
    """The upsert batch's columns over ``spark.range(UPSERT_MATCHED + UPSERT_NEW)`` (named ``i``)."""
    stride = ROWS // UPSERT_MATCHED
    id_sql = f"CASE WHEN i < {UPSERT_MATCHED} THEN i * {stride} ELSE {ROWS} + i - {UPSERT_MATCHED} END"
    columns = []
    for column in GENERATED_COLUMNS:
        name = column.rsplit(" AS ", 1)[-1] if " AS " in column else column
        columns.append(UPSERT_CHANGED_COLUMNS.get(name, column))
    return [f"{id_sql} AS id", *columns[1:]]


@dataclass(frozen=True)
class Query:
    """A count(*) + sum(price) query over a table, optionally at a snapshot and filtered by a range of ``k``."""

    name: str
    table: str
    k_range: tuple[int, int] | None = None  # inclusive bounds of k
    at_first_snapshot: bool = False  # the table before its deletes ("no deletes")

    def where_sql(self) -> str | None:
        """The filter in Spark SQL (None: the whole table)."""
        if self.k_range is None:
            return None
        return f"k BETWEEN {self.k_range[0]} AND {self.k_range[1]}"

    def row_filter(self) -> str | None:
        """The filter in pyiceberg's row-filter syntax (our engine's)."""
        if self.k_range is None:
            return None
        return f"k >= {self.k_range[0]} and k <= {self.k_range[1]}"


def range_bounds(rows: int = ROWS) -> tuple[int, int]:
    """The 0.1% slice of ``k`` (its domain is 0 .. rows * 8) in the middle of the table: one row group."""
    low = (rows // 2) * 8
    return low, low + rows * 8 // 1000


def queries(rows: int = ROWS) -> list[Query]:
    """Full scan and 0.1% range of each of the four tables."""
    tables = [("none", "mor_pos", True), ("pos", "mor_pos", False), ("eq", "mor_eq", False), ("dv", "mor_dv", False)]
    out = []
    for label, table, first in tables:
        out.append(Query(f"scan_full_{label}", table, None, first))
        out.append(Query(f"scan_range_{label}", table, range_bounds(rows), first))
    return out


@dataclass
class Reply:
    """One runner's answer to one request: seconds of the timed part and what it returned."""

    ok: bool
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # the runner's process tree: Python driver, JVM and Python workers
    result: dict[str, Any] = field(default_factory=dict)
    spark_jobs: int = 0
    spark_stages: int = 0
    spark_tasks: int = 0
    error: str | None = None

    def line(self) -> str:
        """The reply as the one line the orchestrator reads."""
        return RESULT_PREFIX + json.dumps(asdict(self), default=str)


def write_reply(reply: Reply) -> None:
    """Send a reply on the real stdout (file descriptor 1), whatever Python's sys.stdout points at."""
    os.write(REPLY_FD, (reply.line() + "\n").encode())


REPLY_FD = 1


def divert_stdout() -> None:
    """Keep fd 1 for replies only: everything else printed to stdout (Spark, py4j, the engine) goes to stderr."""
    global REPLY_FD  # noqa: PLW0603 - one process-wide descriptor, set once at start
    REPLY_FD = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr


def process_tree_cpu_seconds(root_pid: int) -> float:
    """CPU seconds of ``root_pid`` and every live process below it, with the children they reaped."""
    ticks = os.sysconf("SC_CLK_TCK")
    parent_of: dict[int, int] = {}
    cpu_of: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        parent_of[pid] = int(fields[1])
        # utime, stime, cutime, cstime are fields 14-17 of stat (here offset by the two fields cut off).
        cpu_of[pid] = sum(int(value) for value in fields[11:15]) / ticks
    total, stack = 0.0, [root_pid]
    children: dict[int, list[int]] = {}
    for pid, parent in parent_of.items():
        children.setdefault(parent, []).append(pid)
    while stack:
        pid = stack.pop()
        total += cpu_of.get(pid, 0.0)
        stack.extend(children.get(pid, []))
    return total
