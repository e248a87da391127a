"""The conformance corpus: Iceberg tables written by Iceberg Java, and the order-independent checksum of its results.

The archive lives in ``tests/data/conformance``; Iceberg metadata holds absolute paths, so it is extracted to
``/tmp/iceberg-conformance`` (idempotent). ``table_checksum`` implements the checksum described in the corpus
README: one token per value, a row string per row, the sum of the rows' sha256 prefixes mod 2^64.
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import json
import math
import struct
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

ARCHIVE = Path(__file__).resolve().parents[1] / "data" / "conformance" / "iceberg-conformance-corpus.tar.gz"
EXTRACT_ROOT = Path("/tmp/iceberg-conformance")
CORPUS_DIR = EXTRACT_ROOT / "corpus"
CATALOG_NAME = "conformance"
NAMESPACE = "corpus"
EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH_NAIVE = dt.datetime(1970, 1, 1)
EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _archive_corpus_json() -> bytes:
    with tarfile.open(ARCHIVE, "r:gz") as tar:
        member = tar.extractfile("corpus/corpus.json")
        assert member is not None, f"{ARCHIVE} has no corpus/corpus.json"
        return member.read()


def extract_corpus() -> Path:
    """Extract the archive to /tmp/iceberg-conformance unless an identical corpus is already there."""
    marker = CORPUS_DIR / "corpus.json"
    if marker.exists() and marker.read_bytes() == _archive_corpus_json():
        return CORPUS_DIR
    EXTRACT_ROOT.mkdir(parents=True, exist_ok=True)
    with tarfile.open(ARCHIVE, "r:gz") as tar:
        tar.extractall(EXTRACT_ROOT, filter="data")
    return CORPUS_DIR


def catalog_properties() -> dict[str, str]:
    """pyiceberg SQL catalog properties of the extracted corpus."""
    return {
        "type": "sql",
        "uri": f"sqlite:///{CORPUS_DIR}/catalog.db",
        "warehouse": f"file://{CORPUS_DIR}/warehouse",
    }


@dataclass(frozen=True)
class ConformanceQuery:
    """One query of ``expected/<table>.json`` with the result Java computed."""

    table: str
    name: str
    select: list[str] | None
    where: str | None
    snapshot_id: int | None
    as_of_timestamp_ms: int | None
    resolves_to_snapshot_id: int | None
    result_columns: list[str]
    row_count: int
    checksum: str
    column_checksums: dict[str, str]

    @property
    def id(self) -> str:
        """A readable pytest id: ``table-query``."""
        return f"{self.table}-{self.name}"


def load_queries() -> list[ConformanceQuery]:
    """Every query of every table in the corpus (read from the archive, so collection needs no extraction)."""
    queries: list[ConformanceQuery] = []
    with tarfile.open(ARCHIVE, "r:gz") as tar:
        names = sorted(n for n in tar.getnames() if n.startswith("corpus/expected/") and n.endswith(".json"))
        for name in names:
            member = tar.extractfile(name)
            assert member is not None
            expected = json.load(member)
            for query in expected["queries"]:
                queries.append(
                    ConformanceQuery(
                        table=expected["table"],
                        name=query["name"],
                        select=query.get("select"),
                        where=query.get("where"),
                        snapshot_id=query.get("snapshot_id"),
                        as_of_timestamp_ms=query.get("as_of_timestamp_ms"),
                        resolves_to_snapshot_id=query.get("resolves_to_snapshot_id"),
                        result_columns=query["result_columns"],
                        row_count=query["row_count"],
                        checksum=query["checksum"],
                        column_checksums=query.get("column_checksums", {}),
                    )
                )
    return queries


# --------------------------------------------------------------------------------------------------------------------
# Checksum


def _float_token(value: float) -> str:
    if math.isnan(value):
        return "f7FF8000000000000"
    return "f" + struct.pack(">d", value).hex().upper()


def value_token(value: Any, arrow_type: pa.DataType) -> str:
    """The ASCII token of one value, as the corpus README defines it."""
    if value is None:
        return "N"
    if pa.types.is_boolean(arrow_type):
        return "T" if value else "F"
    if pa.types.is_integer(arrow_type):
        return str(int(value))
    if pa.types.is_floating(arrow_type):
        return _float_token(float(value))
    if pa.types.is_decimal(arrow_type):
        quantum = decimal.Decimal(1).scaleb(-arrow_type.scale)
        return format(decimal.Decimal(value).quantize(quantum), "f")
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "s" + value.encode("utf-8").hex().upper()
    if (
        pa.types.is_binary(arrow_type)
        or pa.types.is_large_binary(arrow_type)
        or pa.types.is_fixed_size_binary(arrow_type)
    ):
        return "b" + bytes(value).hex().upper()
    if pa.types.is_date(arrow_type):
        return f"d{(value - EPOCH_DATE).days}"
    if pa.types.is_timestamp(arrow_type):
        epoch = EPOCH_UTC if arrow_type.tz is not None else EPOCH_NAIVE
        delta = value - epoch
        return f"t{(delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds}"
    if pa.types.is_struct(arrow_type):
        parts = [
            value_token(value[arrow_type.field(i).name], arrow_type.field(i).type) for i in range(arrow_type.num_fields)
        ]
        return "{" + "|".join(parts) + "}"
    if pa.types.is_map(arrow_type):
        entries = sorted(
            f"{value_token(k, arrow_type.key_type)}={value_token(v, arrow_type.item_type)}" for k, v in value
        )
        return "<" + "|".join(entries) + ">"
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return "[" + "|".join(value_token(item, arrow_type.value_type) for item in value) + "]"
    if pa.types.is_time(arrow_type):
        return str((value.hour * 3600 + value.minute * 60 + value.second) * 1_000_000 + value.microsecond)
    raise TypeError(f"no checksum token defined for Arrow type {arrow_type}")


def _row_hash(row_string: str) -> int:
    return int.from_bytes(hashlib.sha256(row_string.encode("ascii")).digest()[:8], "big")


def table_checksum(table: pa.Table, columns: list[str]) -> tuple[str, dict[str, str]]:
    """The table checksum over ``columns`` (in that order) and the per-column checksums."""
    column_tokens = []
    for name in columns:
        column = table.column(name)
        column_tokens.append([value_token(v, column.type) for v in column.to_pylist()])
    total = 0
    per_column = dict.fromkeys(columns, 0)
    for row_index in range(table.num_rows):
        tokens = [tokens_of_column[row_index] for tokens_of_column in column_tokens]
        total += _row_hash("|".join(tokens))
        for name, token in zip(columns, tokens, strict=True):
            per_column[name] += _row_hash(token)
    mask = (1 << 64) - 1
    return f"{total & mask:016x}", {name: f"{value & mask:016x}" for name, value in per_column.items()}
