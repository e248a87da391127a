"""Catalog access through pyiceberg's configuration, and table lookup errors that say what exists."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from spark_jobs.engine.shared.errors import TableNotFoundError, UserInputError
from spark_jobs.engine.table.catalog import load_catalog, load_table


def test_load_catalog_reads_environment_variables_set_after_import(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PYICEBERG_CATALOG__ENVCAT__TYPE", "sql")
    monkeypatch.setenv("PYICEBERG_CATALOG__ENVCAT__URI", f"sqlite:///{tmp_path}/catalog.db")
    monkeypatch.setenv("PYICEBERG_CATALOG__ENVCAT__WAREHOUSE", f"file://{tmp_path}")

    catalog = load_catalog("envcat")
    catalog.create_namespace("ns")
    catalog.create_table("ns.t", schema=pa.schema([("id", pa.int64())]))

    assert catalog.name == "envcat"
    assert load_table(load_catalog("envcat"), "ns.t").name() == ("ns", "t")


def test_load_catalog_without_configuration_names_the_variable_to_set():
    with pytest.raises(UserInputError, match=r"'nowhere' is not configured: set PYICEBERG_CATALOG__NOWHERE__URI"):
        load_catalog("nowhere")


def test_load_table_returns_the_table(conformance_catalog):
    table = load_table(conformance_catalog, "corpus.v1_cow")
    assert table.name() == ("corpus", "v1_cow")
    assert table.format_version == 1


def test_unknown_table_lists_the_tables_of_its_namespace(conformance_catalog):
    with pytest.raises(TableNotFoundError) as error:
        load_table(conformance_catalog, "corpus.no_such_table")
    message = str(error.value)
    assert "'corpus.no_such_table'" in message
    assert "'conformance'" in message
    assert "corpus.mor_v2_pos" in message
    assert "corpus.v2_eq_deletes_part" in message


def test_unknown_namespace_lists_the_namespaces(conformance_catalog):
    with pytest.raises(TableNotFoundError, match=r"namespace 'elsewhere' does not exist; namespaces: corpus$"):
        load_table(conformance_catalog, "elsewhere.mor_v2_pos")


def test_identifier_without_namespace_is_rejected(conformance_catalog):
    with pytest.raises(UserInputError, match="needs a namespace"):
        load_table(conformance_catalog, "mor_v2_pos")
