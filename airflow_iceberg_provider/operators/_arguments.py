"""Checks of operator arguments given as literals, so a DAG with a bad value fails when it is parsed, not at run time.

A templated argument (one holding ``{{``) is known only once rendered: the job checks it then and exits 2, which
fails the task without retries. The choices here are the jobs' own (a test compares them with the jobs' parsers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_iceberg_provider.operators.spark_job import optional_text

READ_OUTPUT_FORMATS = ("parquet", "csv")
READ_WRITE_MODES = ("error", "overwrite")
INGEST_SOURCE_FORMATS = ("parquet", "csv", "json")
INGEST_DELETE_MODES = ("position", "equality")
INGEST_SOURCE_MODES = ("failfast", "permissive", "dropmalformed")
COMPACT_STRATEGIES = ("binpack", "sort")
REWRITE_JOB_ORDERS = ("bytes-asc", "bytes-desc", "files-asc", "files-desc", "none")


def literal(value: Any) -> str | None:
    """``value`` as text when it is given and not a template, else None."""
    text = optional_text(value)
    return None if text is None or "{{" in text else text


def check_choice(owner: str, parameter: str, value: Any, choices: Sequence[str]) -> None:
    """Refuse a literal ``value`` that is not one of ``choices``; ``owner`` names the operator and task."""
    text = literal(value)
    if text is not None and text not in choices:
        raise ValueError(f"{owner}: {parameter}={text!r} is not one of {', '.join(choices)}")


def check_integer(owner: str, parameter: str, value: Any, *, minimum: int | None = None) -> None:
    """Refuse a literal ``value`` that is not an integer (at least ``minimum`` when given)."""
    text = literal(value)
    if text is None:
        return
    try:
        number = int(text)
    except ValueError:
        raise ValueError(f"{owner}: {parameter}={text!r} is not an integer") from None
    if minimum is not None and number < minimum:
        raise ValueError(f"{owner}: {parameter}={number} must be at least {minimum}")


def check_at_most_one(owner: str, **given: Any) -> None:
    """Refuse more than one of ``given`` set as literals (a template may render empty: the job checks those)."""
    named = [name for name, value in given.items() if literal(value) is not None]
    if len(named) > 1:
        raise ValueError(f"{owner}: give at most one of {', '.join(given)}; got {', '.join(named)}")
