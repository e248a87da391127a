"""Every reader of one table against the model: our reader, Iceberg Java and DuckDB, row count and checksums.

``Readers.check`` reads the table (at the current snapshot or a given one) with each engine, over the model's
columns in the model's order, and fails with one message listing every reader that disagrees with the model and
how (rows, table checksum, the columns whose checksums differ). Each reader reads the table once per check: asked
for Java's row positions, the check takes Java's ``_file`` and ``_pos`` from that same read.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any

from tests.support import duckdb_reader
from tests.support.iceberg_java import IcebergJava
from tests.support.table_model import TableModel, arrow_checksum

POSITION_COLUMNS = ("_file", "_pos")  # Iceberg's metadata columns: a row's data file and position in it


@dataclass
class Readers:
    """The three readers of the catalog ``catalog_name`` (the catalog Java's session opens too)."""

    catalog_name: str
    java: IcebergJava
    duckdb: Any  # a connection from duckdb_reader.connect()
    seconds: dict[str, float] = field(default_factory=dict)  # time spent per reader, for the cost of the suite

    def ours(self, identifier: str, columns: list[str], snapshot_id: int | None = None) -> dict:
        """What our reader (the read job's engine, in-process) returns."""
        from spark_jobs.engine.read.session import open_read_session
        from spark_jobs.engine.table.catalog import load_catalog

        session = open_read_session(load_catalog(self.catalog_name), identifier, snapshot_id=snapshot_id)
        return arrow_checksum(session.to_arrow(), columns)

    def iceberg_java(
        self, identifier: str, columns: list[str], snapshot_id: int | None = None, *, positions: bool = False
    ) -> dict:
        """What Iceberg Java (Spark 3.5, Iceberg runtime) returns; with ``positions``, also the rows' file positions.

        ``positions`` adds ``"alive"``: per data file, the ``_pos`` values of the rows Java returns.
        """
        extra = list(POSITION_COLUMNS) if positions else []
        table = self.java.read_arrow(identifier, snapshot_id=snapshot_id, columns=[*columns, *extra])
        result = arrow_checksum(table, columns)
        if positions:
            alive: dict[str, set[int]] = {}
            for path, position in zip(*(table.column(c).to_pylist() for c in POSITION_COLUMNS), strict=True):
                alive.setdefault(path, set()).add(position)
            result["alive"] = alive
        return result

    def duck(self, identifier: str, columns: list[str], snapshot_id: int | None = None) -> dict:
        """What DuckDB's ``iceberg_scan`` returns from the table's current metadata file (or at a snapshot)."""
        from spark_jobs.engine.table.catalog import load_catalog

        table = load_catalog(self.catalog_name).load_table(identifier)
        scanned = duckdb_reader.scan(self.duckdb, table.metadata_location, columns, snapshot_id=snapshot_id)
        return arrow_checksum(scanned, columns)

    def check(
        self,
        identifier: str,
        model: TableModel,
        *,
        snapshot_id: int | None = None,
        java_positions: bool = False,
        skip: frozenset[str] = frozenset(),
    ) -> dict[str, set[int]]:
        """Every reader returns the model's rows (module doc); with ``java_positions``, Java's live row positions.

        The positions are ``{data file path: positions of the rows Java returned}`` (empty unless asked for).
        ``skip`` names readers not asked (``"duckdb"`` where a known DuckDB bug would fail the read; the caller says
        which).
        """
        columns = list(model.schema.names)
        expected = model.checksum(snapshot_id)
        disagreements = []
        alive: dict[str, set[int]] = {}
        java = functools.partial(self.iceberg_java, positions=java_positions)
        for name, read in (("ours", self.ours), ("iceberg-java", java), ("duckdb", self.duck)):
            if name in skip:
                continue
            started = time.perf_counter()
            try:
                got = read(identifier, columns, snapshot_id)
                alive = got.pop("alive", alive)
            except Exception as error:  # one reader failing must not hide what the others return
                disagreements.append(f"{name}: failed: {str(error)[:2000]}")
                continue
            finally:
                self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started
            if got["rows"] != expected["rows"] or got["checksum"] != expected["checksum"]:
                columns_off = sorted(c for c in columns if got["columns"].get(c) != expected["columns"][c])
                disagreements.append(
                    f"{name}: {got['rows']} rows (model {expected['rows']}), checksum {got['checksum']} "
                    f"(model {expected['checksum']}), columns differing: {columns_off}"
                )
        at = f" at snapshot {snapshot_id}" if snapshot_id is not None else ""
        assert not disagreements, f"table {identifier}{at}:\n" + "\n".join(disagreements)
        return alive
