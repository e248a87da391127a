"""The ingest's source as a DataFrame: files read by Spark (or pyarrow for an object store Spark's JVM lacks), and
an optional ``--sql`` query over them, checked to read nothing else.

1. ``read_source`` reads the files (CSV and JSON strictly or permissively as ``--source-mode`` says, with a header
   and inferred types, ``text_sources``) and, with ``--sql``, registers them as the temporary view ``source`` and
   runs the query; the plan is resolved at once, so a bad path or query is bad input naming ``--source`` or
   ``--sql``.
2. ``check_query_over_source`` parses the query with Spark's own parser and refuses anything but one query that
   reads the view ``source`` (and its own CTEs): a statement, several statements, another table or path, a
   table-valued function, or a reflection call (``reflect``/``java_method``).
3. ``explain_source_failure``: for a write that failed on the source, the file and line of a malformed CSV or JSON
   row (``text_sources``), or the Parquet source file Spark's reader failed on when Spark did not name it (3.5).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.job_failures import classify, exception_texts
from spark_jobs.spark.text_sources import (
    DEFAULT_SOURCE_MODE,
    TEXT_FORMATS,
    TextSource,
    malformed_row_failure,
    read_text_source,
)

SOURCE_VIEW = "source"


@dataclass(frozen=True)
class SourceRequest:
    """The job's source arguments: ``--source``, ``--source-format``, ``--sql``, ``--source-mode``, and the
    catalog's storage properties (object stores read through pyarrow)."""

    uri: str
    source_format: str
    sql: str | None
    mode: str
    storage_properties: dict[str, str]


@dataclass(frozen=True)
class SourceRead:
    """The source's rows, and for CSV and JSON how they were parsed (``text``: mode, schema, malformed rows)."""

    frame: DataFrame
    text: TextSource | None = None

    @property
    def malformed_rows(self) -> int:
        """Malformed rows the source mode kept or dropped (0 for Parquet and in failfast mode)."""
        return self.text.malformed_rows if self.text else 0


def read_source(
    spark: SparkSession,
    uri: str,
    source_format: str,
    sql: str | None,
    storage_properties: dict[str, str] | None = None,
    *,
    mode: str = DEFAULT_SOURCE_MODE,
    table_types: Mapping[str, Any] | None = None,
    table: str | None = None,
) -> SourceRead:
    """The source rows (a missing path or a bad query is a usage error naming ``--source`` or ``--sql``).

    Object-store URIs are read through pyarrow with ``storage_properties`` (the catalog's) unless Spark's JVM has a
    Hadoop file system for them (``spark_jobs.spark.files``). CSV and JSON are read as ``mode`` says, columns the
    table has as ``table_types`` (``text_sources``).
    """
    from pyspark.errors import AnalysisException

    from spark_jobs.spark.files import read_source as read_files

    text = None
    try:
        if source_format in TEXT_FORMATS:
            text = read_text_source(
                spark, uri, source_format, storage_properties or {}, mode=mode, table_types=table_types, table=table
            )
            frame = text.frame
        else:
            frame = read_files(spark, uri, source_format, storage_properties or {}, {})
        frame.schema  # noqa: B018 - resolve the plan now, so a bad path fails here
    except AnalysisException as error:
        raise UserInputError(
            f"cannot read source {uri} ({source_format}): {_first_line(error)}", argument="source"
        ) from error
    if sql:
        check_query_over_source(spark, sql)
        frame.createOrReplaceTempView(SOURCE_VIEW)
        try:
            frame = spark.sql(sql)
            frame.schema  # noqa: B018 - resolve the plan now, so a bad query fails here
        except AnalysisException as error:
            raise UserInputError(f"--sql {_shown(sql)!r}: {_first_line(error)}", argument="sql") from error
    return SourceRead(frame, text)


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _shown(sql: str) -> str:
    shown = " ".join(sql.split())
    return shown if len(shown) <= 60 else shown[:57] + "..."


def explain_source_failure(
    spark: SparkSession, error: Exception, read: SourceRead | None, *, table: str, request: SourceRequest
) -> str | None:
    """The one-line reason naming the source file (and line) a failed write could not read, or None (step 3)."""
    if read is not None and read.text is not None:
        return malformed_row_failure(spark, error, read.text, table)
    unreadable = unreadable_source_file(error, request.uri, request.source_format, request.storage_properties)
    return f"table {table}: {unreadable}" if unreadable else None


def unreadable_source_file(
    error: Exception, uri: str, source_format: str, storage_properties: dict[str, str]
) -> str | None:
    """The source file Spark's Parquet reader failed on, named, when ``error`` is such a failure naming no file.

    Spark 4 names the file (``FAILED_READ_FILE``, turned into bad input by ``job_support``); Spark 3.5 says only
    "corrupted file", so the source files' footers are read here to find the one at fault.
    """
    if source_format != "parquet" or classify(error, "ingest").bad_input:
        return None
    if not any("org.apache.parquet" in text for text in exception_texts(error)):
        return None
    from spark_jobs.spark.files import unreadable_parquet_source

    return unreadable_parquet_source(uri, storage_properties)


def check_query_over_source(spark: SparkSession, sql: str) -> None:
    """Refuse ``sql`` unless it is one query that reads the view ``source`` only (module doc)."""
    shown = _shown(sql)
    try:
        parser = spark._jsparkSession.sessionState().sqlParser()
        plan = parser.parseQuery(sql)
        parser.parsePlan(sql)  # the whole text is that one query (Spark 3.5's parseQuery ignores what follows it)
    except Exception as error:  # Spark's ParseException, through py4j
        reason = next((line.strip() for line in str(error).splitlines() if line.strip()), "does not parse")
        raise UserInputError(
            f"--sql {shown!r} is not one query over the view '{SOURCE_VIEW}': {reason[:120]}"
        ) from None
    tree = str(plan.treeString())
    names = {name.strip().lower() for match in _CTE.finditer(tree) for name in match[1].split(",")}
    allowed = names | {SOURCE_VIEW}
    for match in _RELATION.finditer(tree):
        parts = [part.strip() for part in match[1].split(",")]
        if len(parts) != 1 or parts[0].lower() not in allowed:
            raise UserInputError(f"--sql {shown!r} may read only the view '{SOURCE_VIEW}', not {'.'.join(parts)}")
    refused = _TABLE_FUNCTION.search(tree) or _REFLECTION.search(tree)
    if refused:
        raise UserInputError(
            f"--sql {shown!r} may read only the view '{SOURCE_VIEW}': {refused[1]}(...) is not allowed"
        )


_CTE = re.compile(r"CTE \[([^\]]*)\]")
_RELATION = re.compile(r"UnresolvedRelation \[([^\]]*)\]")
_TABLE_FUNCTION = re.compile(r"UnresolvedTableValuedFunction \[([^\]]*)\]")
_REFLECTION = re.compile(r"'((?:try_)?reflect|java_method)\(", re.IGNORECASE)
