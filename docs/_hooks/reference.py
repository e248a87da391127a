"""MkDocs hook: argument tables generated from the code, so a page lists every argument the code takes.

A page holds a marker comment; the hook replaces it with a Markdown table when the site is built:

1. ``<!-- job-arguments: read -->``: every option of ``spark_jobs/read.py`` from its argparse parser (one table per
   subcommand for ``maintain``): flag, default, choices, help.
2. ``<!-- operator-arguments: airflow_iceberg_provider.operators.read.IcebergReadOperator -->``: every keyword of the
   class's ``__init__`` (and of its Iceberg base classes), with its type, default and its ``:param`` text from the
   docstrings. An argument without a ``:param`` text fails the build (``mkdocs build --strict`` in CI): a new
   argument cannot ship undocumented.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
from typing import Any

_MARKER = re.compile(r"<!-- (job-arguments|operator-arguments): ([\w.]+) -->")
_PARAM = re.compile(r":param (\w+):(.*?)(?=\n\s*:param |\n\s*:\w+|\Z)", re.S)
# Keywords every operator takes from Airflow or the Spark provider: documented there, linked once per page.
_UPSTREAM = {"args", "kwargs", "self"}


class MissingDocumentationError(Exception):
    """An argument the code takes has no text to show."""


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each marker of the page with its table."""

    def table(match: re.Match[str]) -> str:
        kind, name = match.groups()
        return job_arguments(name) if kind == "job-arguments" else operator_arguments(name)

    return _MARKER.sub(table, markdown)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def job_arguments(job: str) -> str:
    """The job's options as Markdown tables (one per subcommand when it has them)."""
    parser = importlib.import_module(f"spark_jobs.{job}").build_parser()
    sections = []
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if subcommands:
        for name, sub in subcommands[0].choices.items():
            sections.append(f"**`{name}`**\n\n{_options_table(sub)}")
        return "\n\n".join(sections)
    return _options_table(parser)


def _options_table(parser: argparse.ArgumentParser) -> str:
    rows = ["| argument | default | values | what |", "|---|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        flag = ", ".join(f"`{option}`" for option in action.option_strings) or f"`{action.dest}`"
        required = " (required)" if action.required else ""
        default = "" if action.default in (None, False, argparse.SUPPRESS) else f"`{action.default}`"
        values = ", ".join(f"`{choice}`" for choice in action.choices) if action.choices else ""
        if not action.help:
            raise MissingDocumentationError(f"spark_jobs/{parser.prog}: {flag} has no help text")
        rows.append(f"| {flag}{required} | {default} | {values} | {_cell(action.help)} |")
    return "\n".join(rows)


def _param_texts(cls: type) -> dict[str, str]:
    """``:param`` texts of ``cls`` and its bases, the class's own winning."""
    texts: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        own_doc = inspect.cleandoc(vars(klass).get("__doc__") or "")
        for name, text in _PARAM.findall(own_doc):
            texts[name] = text
    return texts


def operator_arguments(path: str) -> str:
    """The class's summary and its keyword arguments as a Markdown table (module doc, 2)."""
    module, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    texts = _param_texts(cls)
    rows = ["| argument | type | default | what |", "|---|---|---|---|"]
    seen: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("airflow_iceberg_provider") or "__init__" not in vars(klass):
            continue
        for parameter in inspect.signature(klass.__init__).parameters.values():
            if parameter.name in _UPSTREAM or parameter.name in seen:
                continue
            seen.add(parameter.name)
            if parameter.name not in texts:
                raise MissingDocumentationError(f"{path}: argument {parameter.name!r} has no :param text")
            default = "(required)" if parameter.default is inspect.Parameter.empty else f"`{parameter.default!r}`"
            annotation = _cell(parameter.annotation) if parameter.annotation is not inspect.Parameter.empty else ""
            rows.append(f"| `{parameter.name}` | `{annotation}` | {default} | {_cell(texts[parameter.name])} |")
    summary = (inspect.getdoc(cls) or "").split(":param", 1)[0].strip()
    return f"`{path}`\n\n{summary}\n\n" + "\n".join(rows)
