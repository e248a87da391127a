"""What must hold after a fault: the table reads, its rows are the model's, every file written is accounted for.

A file under the table location that was not there before the faulty job is accounted for when the table's
metadata references it, a pending commit record lists it (or it is the record), or the job reported it by path
(in its error or its log).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from pyiceberg.table import Table

from spark_jobs.engine.commit.pending_commits import read_pending_records
from spark_jobs.engine.maintenance.reachable_files import normalize_location, reachable_locations
from spark_jobs.engine.read.session import open_read_session


def table_directory(table: Table) -> Path:
    """The table location as a local directory."""
    return Path(urlparse(table.metadata.location).path)


def files_under(table: Table) -> set[str]:
    """Every file under the table location, as normalized local paths."""
    return {normalize_location(str(path)) for path in table_directory(table).rglob("*") if path.is_file()}


def rows_by_id(catalog, identifier: str) -> dict[int, tuple]:
    """id -> the other columns, read with the project's merge-on-read reader (the table must read)."""
    data = open_read_session(catalog, identifier).to_arrow()
    columns = [name for name in data.column_names if name != "id"]
    ids = data.column("id").to_pylist()
    assert len(ids) == len(set(ids)), f"duplicate ids in {identifier}: {sorted(ids)}"
    others = [data.column(name).to_pylist() for name in columns]
    return {row_id: tuple(values[index] for values in others) for index, row_id in enumerate(ids)}


def recorded_files(table: Table) -> set[str]:
    """Files listed in the table's pending commit records, and the records themselves (normalized)."""
    listed: set[str] = set()
    for location, record in read_pending_records(table).items():
        listed.add(normalize_location(location))
        listed.update(normalize_location(path) for path in record.files)
    return listed


def unaccounted_files(table: Table, before: set[str], reported: str) -> set[str]:
    """New files under the table location that nothing references, no record lists and ``reported`` does not name."""
    table.refresh()
    referenced = reachable_locations(table.metadata, table.metadata_location, table.io)
    new = files_under(table) - before
    return {path for path in new - referenced - recorded_files(table) if path not in reported}


def unreferenced_new_files(table: Table, before: set[str]) -> set[str]:
    """New files under the table location that the table's metadata does not reference."""
    table.refresh()
    referenced = reachable_locations(table.metadata, table.metadata_location, table.io)
    return files_under(table) - before - referenced
