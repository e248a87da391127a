"""Faulty catalogs for the fault-injection suite: real SQL catalogs (SQLite, PostgreSQL) with planned faults.

Each is configured by name through pyiceberg's environment configuration (``py-catalog-impl``), so the jobs load
it as they load any catalog. Tables get quick retry and status-check settings so a fault costs milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import faults

QUICK_RETRIES = {
    "format-version": "2",
    "commit.retry.num-retries": "2",
    "commit.retry.min-wait-ms": "1",
    "commit.status-check.num-retries": "2",
    "commit.status-check.min-wait-ms": "1",
}


def _configure(monkeypatch: pytest.MonkeyPatch, name: str, uri: str, warehouse: str) -> None:
    prefix = f"PYICEBERG_CATALOG__{name.upper()}__"
    monkeypatch.setenv(prefix + "PY_CATALOG_IMPL", faults.CATALOG_IMPL)
    monkeypatch.setenv(prefix + "URI", uri)
    monkeypatch.setenv(prefix + "WAREHOUSE", warehouse)


@pytest.fixture(scope="module")
def sqlite_faulty_catalog(tmp_path_factory) -> Iterator[str]:
    """The name of a faulty SQLite catalog with a local warehouse (module-wide)."""
    root = tmp_path_factory.mktemp("faulty-sqlite")
    (root / "warehouse").mkdir()
    with pytest.MonkeyPatch.context() as monkeypatch:
        _configure(monkeypatch, "faultysqlite", f"sqlite:///{root}/catalog.db", f"file://{root}/warehouse")
        yield "faultysqlite"


@pytest.fixture(scope="module")
def postgres_faulty_catalog(postgres, tmp_path_factory) -> Iterator[str]:
    """The name of a faulty PostgreSQL catalog with a local warehouse (module-wide)."""
    root = tmp_path_factory.mktemp("faulty-postgres")
    (root / "warehouse").mkdir()
    uri = postgres.create_database(f"faults_{root.name.replace('-', '_')}")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _configure(monkeypatch, "faultypg", uri, f"file://{root}/warehouse")
        yield "faultypg"


@pytest.fixture(params=["sqlite", "postgres"])
def faulty_catalog(request) -> str:
    """Each faulty catalog in turn (PostgreSQL started on demand)."""
    return request.getfixturevalue(f"{request.param}_faulty_catalog")


@pytest.fixture(autouse=True)
def no_faults() -> Iterator[None]:
    """Every test starts and ends without planned faults."""
    faults.reset_plan()
    yield
    faults.reset_plan()
