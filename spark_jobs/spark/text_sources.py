"""CSV and JSON sources read strictly: a malformed row fails the ingest naming its file and line, unless a permissive
mode keeps or drops such rows and counts them.

Spark's parse modes, the job's ``--source-mode`` (``SOURCE_MODES``):

- ``failfast`` (the default): a malformed row fails the job, as Spark's FAILFAST mode does: a CSV row with fewer
  or more fields than the header, a field or JSON value that does not parse as its column's type, a line that is
  not JSON. The job names the file, the line and what was expected (``malformed_row_failure``).
- ``permissive``: malformed rows are kept, with nulls where a field is missing or does not parse (Spark's
  PERMISSIVE mode; a CSV row's extra fields are dropped), and counted.
- ``dropmalformed``: malformed rows are left out, and counted.

Steps (``read_text_source``):

0. Dates and timestamps parse with Spark's own parser alone: Spark 3.5's default time parser policy (``EXCEPTION``)
   fails the whole read with ``INCONSISTENT_BEHAVIOR_CROSS_VERSION`` on a value its pre-3.0 parser would have
   accepted leniently (``2024-13-45``), so the session is set to ``CORRECTED`` (Spark 4's default), where such a
   value is a malformed row like any other; a policy the session set itself (``LEGACY``) is kept.
1. The schema is inferred from every row (CSV: header names, types Spark infers; JSON: Spark's inference, with a
   malformed line noted in a corrupt-record column rather than failing). A column the table already has is read
   as the table's type instead (without ``--sql``, which makes its own columns), so a value the table cannot take
   (``x`` for a double, a decimal beyond its precision) is a malformed row of its file and line, not a whole column
   of the wrong type; nested and binary columns keep the inferred type.
2. The rows are read with that schema, so the types do not depend on the mode: ``failfast`` with Spark's FAILFAST;
   the other modes with PERMISSIVE and the corrupt-record column, which marks each malformed row. Those rows are
   counted by one more pass over the source (``malformed_rows``: the job's result), then kept without the column or
   dropped.
3. When the write fails on a malformed row (``failfast``), ``malformed_row_failure`` finds its line: the file Spark
   names (every source file in turn when it names none, as Spark 3.5), read line by line on the driver and parsed
   with Spark's ``from_csv``/``from_json`` and the same schema in PERMISSIVE mode, the first line marked malformed
   named with the reason (fields counted against the header, the value that is not its column's type).
"""

from __future__ import annotations

import csv
import json
import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any

from pyarrow import fs as pafs
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import AtomicType, BinaryType, DataType, StringType, StructField, StructType

from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.shared.storage import file_system, list_files
from spark_jobs.job_failures import exception_texts
from spark_jobs.spark.files import read_source as read_files

log = logging.getLogger(__name__)
SOURCE_MODES = ("failfast", "permissive", "dropmalformed")
DEFAULT_SOURCE_MODE = "failfast"
TEXT_FORMATS = ("csv", "json")
# The column that marks a malformed row (Spark's ``columnNameOfCorruptRecord``), named so no source column takes it.
MALFORMED_COLUMN = "_malformed_source_row"
# Spark's words for a row its parser refused, in any version (classes of 3.5 and 4.x; 3.5's inference has no class).
_MALFORMED_MARKERS = (
    "MALFORMED_RECORD_IN_PARSING",
    "MALFORMED_CSV_RECORD",
    "CANNOT_PARSE_JSON_FIELD",
    "Malformed records are detected",
    "BadRecordException",
)
_FAILED_READ_FILE = re.compile(r"\[FAILED_READ_FILE[.\w]*\][^\n]*?reading file (?P<path>\S+?)\.?(?:\s|$)")
TIME_PARSER_POLICY = "spark.sql.legacy.timeParserPolicy"
_LINES_PER_PASS = 50_000
_READ_CHUNK_BYTES = 8 * 1024 * 1024
_SHOWN_ROW = 60


@dataclass(frozen=True)
class TextSource:
    """A CSV or JSON source as read: its rows, how, the schema they were parsed with, the malformed rows counted."""

    frame: DataFrame
    uri: str
    source_format: str
    mode: str
    malformed_rows: int
    schema: StructType
    properties: Mapping[str, str]


def read_text_source(
    spark: SparkSession,
    uri: str,
    source_format: str,
    properties: Mapping[str, str],
    *,
    mode: str = DEFAULT_SOURCE_MODE,
    table_types: Mapping[str, DataType] | None = None,
    table: str | None = None,
) -> TextSource:
    """The rows of the CSV or JSON files at ``uri`` (module doc, steps 1-2), columns the table has read as
    ``table_types`` (its Spark types by column name); ``table`` names the table in messages."""
    if mode not in SOURCE_MODES:
        raise UserInputError(f"source mode {mode!r} is not one of {', '.join(SOURCE_MODES)}", argument="source_mode")
    storage = dict(properties)
    _parse_times_strictly(spark)
    schema = _with_table_types(_inferred_schema(spark, uri, source_format, storage), table_types or {})
    if not schema.fields and mode == "failfast":  # no row parsed at all, e.g. a Parquet file read as JSON
        unparsed = TextSource(spark.createDataFrame([], schema), uri, source_format, mode, 0, schema, storage)
        raise UserInputError(_malformed_row_reason(spark, unparsed, None, table), argument="source")
    frame, malformed = _parsed_rows(spark, uri, source_format, storage, schema=schema, mode=mode)
    return TextSource(frame, uri, source_format, mode, malformed, schema, storage)


def _parse_times_strictly(spark: SparkSession) -> None:
    """Spark's time parser policy ``CORRECTED`` unless the session chose another than the default (step 0)."""
    if (spark.conf.get(TIME_PARSER_POLICY, None) or "EXCEPTION").upper() == "EXCEPTION":
        spark.conf.set(TIME_PARSER_POLICY, "CORRECTED")


def _text_options(source_format: str) -> dict[str, str]:
    """Spark reader options every text read takes: the CSV header, the corrupt-record column's name."""
    options = {"columnNameOfCorruptRecord": MALFORMED_COLUMN}
    if source_format == "csv":
        options["header"] = "true"
    return options


def _inferred_schema(spark: SparkSession, uri: str, source_format: str, storage: dict[str, str]) -> StructType:
    """The columns and types Spark infers from every row, without the corrupt-record column (step 1)."""
    options = {**_text_options(source_format), "mode": "PERMISSIVE"}
    if source_format == "csv":
        options["inferSchema"] = "true"
    inferred = read_files(spark, uri, source_format, storage, options).schema
    return StructType([field for field in inferred.fields if field.name != MALFORMED_COLUMN])


def _with_table_types(inferred: StructType, table_types: Mapping[str, DataType]) -> StructType:
    """``inferred`` with the table's type for each column the table has and a text parser reads (step 1)."""
    fields = []
    for field in inferred.fields:
        wanted = table_types.get(field.name)
        parsable = isinstance(wanted, AtomicType) and not isinstance(wanted, BinaryType)
        fields.append(StructField(field.name, wanted if parsable and wanted is not None else field.dataType, True))
    return StructType(fields)


def table_types_of(catalog_name: str, identifier: str) -> dict[str, DataType] | None:
    """The Spark types of the table's columns by name, or None when the table does not exist yet."""
    from spark_jobs.engine.shared.errors import TableNotFoundError
    from spark_jobs.engine.table.catalog import load_catalog, load_table
    from spark_jobs.spark.types import spark_types_of

    try:
        table = load_table(load_catalog(catalog_name), identifier)
    except TableNotFoundError:
        return None
    return dict(spark_types_of(table.schema()))


def _parsed_rows(
    spark: SparkSession, uri: str, source_format: str, storage: dict[str, str], *, schema: StructType, mode: str
) -> tuple[DataFrame, int]:
    """The rows parsed with ``schema`` in ``mode``, and how many were malformed (step 2)."""
    options = _text_options(source_format)
    if mode == "failfast":
        return read_files(spark, uri, source_format, storage, {**options, "mode": "FAILFAST"}, schema=schema), 0
    marked = StructType([*schema.fields, StructField(MALFORMED_COLUMN, StringType(), True)])
    rows = read_files(spark, uri, source_format, storage, {**options, "mode": "PERMISSIVE"}, schema=marked)
    malformed = _count_malformed(rows, schema)
    if malformed:
        what = "kept, nulls where fields are missing or do not parse" if mode == "permissive" else "left out"
        log.warning("source %s: %d malformed row(s) %s (--source-mode %s)", uri, malformed, what, mode)
    kept = rows if mode == "permissive" else rows.where(F.col(MALFORMED_COLUMN).isNull())
    return kept.drop(MALFORMED_COLUMN), malformed


def _count_malformed(rows: DataFrame, schema: StructType) -> int:
    """Rows the corrupt-record column marks; the filter also names every column, since Spark refuses a raw CSV or
    JSON query that reads the corrupt-record column alone."""
    every_column = F.concat_ws("", *(F.col(f"`{field.name}`").cast("string") for field in schema.fields), F.lit(""))
    marked = F.col(MALFORMED_COLUMN).isNotNull() & (F.length(every_column) >= 0)
    return int(rows.where(marked).count())


def malformed_row_failure(spark: SparkSession, error: BaseException, source: TextSource, table: str) -> str | None:
    """The line naming the source file, line and reason of the malformed row a failed write met (step 3), or None
    when ``error`` is not Spark's parser refusing a row."""
    texts = exception_texts(error)
    if not any(marker in text for text in texts for marker in _MALFORMED_MARKERS):
        return None
    named = next((m["path"] for text in texts for m in [_FAILED_READ_FILE.search(text)] if m), None)
    return _malformed_row_reason(spark, source, named, table)


def _malformed_row_reason(spark: SparkSession, source: TextSource, named: str | None, table: str | None) -> str:
    """The line naming the first malformed row of the source (in file ``named`` when Spark named one)."""
    try:
        found = _first_malformed_line(spark, source, named)
    except Exception as locate_error:  # the file could not be read again: say what Spark said
        log.warning("could not find the malformed row of %s: %s", named or source.uri, locate_error)
        found = None
    lead = f"table {table}: " if table else ""
    what = f"malformed {source.source_format.upper()} row"
    expected = "--source-mode permissive keeps malformed rows, dropmalformed leaves them out (counted either way)"
    if found is None:
        where = f"source file {named}" if named else f"source {source.uri}"
        return f"{lead}{where} holds a {what}; {expected}"
    file_uri, line_number, line, detail = found
    return f"{lead}source file {file_uri}, line {line_number}: {what} {_shown_row(line)}: {detail}; {expected}"


def _first_malformed_line(
    spark: SparkSession, source: TextSource, named: str | None
) -> tuple[str, int, str, str] | None:
    """(file URI, line number, line, what is wrong) of the first malformed row (step 4), or None."""
    candidates = list_files(source.uri, source.properties)
    if named is not None:
        matching = [f for f in candidates if named.endswith(f.path) or f.uri == named]
        candidates = matching or candidates
    filesystem, _ = file_system(source.uri, source.properties)
    for candidate in candidates:
        found = _malformed_in_file(spark, source, _numbered_lines(filesystem, candidate.path))
        if found is not None:
            line_number, line, detail = found
            return candidate.uri, line_number, line, detail
    return None


def _numbered_lines(filesystem: pafs.FileSystem, path: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of every line of a text file (compression by extension), undecodable bytes replaced."""
    number, remainder = 0, b""
    with filesystem.open_input_stream(path, compression="detect") as stream:
        while chunk := stream.read(_READ_CHUNK_BYTES):
            *lines, remainder = (remainder + chunk).split(b"\n")
            for line in lines:
                number += 1
                yield number, line.removesuffix(b"\r").decode("utf-8", errors="replace")
    if remainder:
        yield number + 1, remainder.removesuffix(b"\r").decode("utf-8", errors="replace")


def _malformed_in_file(
    spark: SparkSession, source: TextSource, lines: Iterator[tuple[int, str]]
) -> tuple[int, str, str] | None:
    """The first line Spark's parser marks malformed, with the reason, reading ``_LINES_PER_PASS`` lines at a time."""
    schema = source.schema
    marked = StructType([*schema.fields, StructField(MALFORMED_COLUMN, StringType(), True)])
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": MALFORMED_COLUMN}
    parse = F.from_csv if source.source_format == "csv" else F.from_json
    skip_header = source.source_format == "csv"
    while True:
        chunk = [(n, line) for n, line in islice(lines, _LINES_PER_PASS) if line.strip()]
        if skip_header and chunk and chunk[0][0] == 1:
            chunk = chunk[1:]
        skip_header = False
        if not chunk:
            return None
        frame = spark.createDataFrame(chunk, "line long, value string")
        parsed = frame.select("line", "value", parse(F.col("value"), marked.simpleString(), options).alias("row"))
        first = parsed.where(F.col(f"row.{MALFORMED_COLUMN}").isNotNull()).orderBy("line").limit(1).collect()
        if first:
            row = first[0]
            return (
                int(row["line"]),
                row["value"],
                _what_is_wrong(source.source_format, row["value"], row["row"], schema),
            )


def _what_is_wrong(source_format: str, line: str, parsed: Row | None, schema: StructType) -> str:
    """Why a row is malformed, against what was expected: the field count, or the value not of its column's type."""
    names = [field.name for field in schema.fields]
    values = parsed.asDict() if parsed is not None else {}
    if source_format == "csv":
        fields = next(csv.reader([line], escapechar="\\"), [])
        if len(fields) != len(names):
            shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
            return f"{len(fields)} field(s), expected {len(names)} ({shown})"
        raw: dict[str, Any] = dict(zip(names, fields, strict=True))
    else:
        try:
            document = json.loads(line)
        except json.JSONDecodeError as error:
            return f"not valid JSON ({error.msg} at column {error.colno})"
        if not isinstance(document, dict):
            return f"a JSON {type(document).__name__}, expected an object"
        raw = {name: document.get(name) for name in names}
    for field in schema.fields:
        given = raw.get(field.name)
        if given not in (None, "") and values.get(field.name) is None:
            return f"column {field.name!r} is {given!r}, expected {field.dataType.simpleString()}"
    return "Spark's parser refused it"


def _shown_row(line: str) -> str:
    """The row quoted for the message, control characters escaped, at most ``_SHOWN_ROW`` characters."""
    shown = repr(line)
    return shown if len(shown) <= _SHOWN_ROW else shown[: _SHOWN_ROW - 4] + "...'"
