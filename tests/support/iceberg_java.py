"""Iceberg Java as a reader for the tests and benchmarks: a client of ``java_server`` in the Java environment.

``IcebergJava`` starts one server process (one JVM, one Spark 3.5 session with the Iceberg runtime) whose
JdbcCatalog opens the same catalog database as our pyiceberg ``SqlCatalog`` (SQLite or PostgreSQL), so both sides
see the same tables; requests and answers are JSON lines (``java_server`` module doc). Use it as a context manager,
one per test module. On SQLite, Java runs with ``jdbc.init-catalog-tables=false``: the tables exist already
(pyiceberg creates them), and Iceberg's own check leaves a result set open that pins a read lock on the database
for the catalog's lifetime, which would make every commit of ours fail with "database is locked".
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pyarrow as pa

from tests.support.java_env import JavaEnv

SERVER = Path(__file__).resolve().with_name("java_server.py")


class JavaError(RuntimeError):
    """Iceberg Java failed a request (or did not start); the message carries Java's error and the log's tail."""


def jdbc_connection(sqlalchemy_uri: str) -> tuple[str, dict[str, str]]:
    """The JDBC URI and connection properties of a pyiceberg SQL catalog URI (SQLite or PostgreSQL)."""
    parts = urlsplit(sqlalchemy_uri)
    scheme = parts.scheme.split("+")[0]
    if scheme == "sqlite":
        path = sqlalchemy_uri.split(":///", 1)[1]
        # Our commits wait for Java's short read transactions instead of failing, and Java's for ours.
        return f"jdbc:sqlite:{path}", {"busy_timeout": "30000", "init-catalog-tables": "false"}
    if scheme == "postgresql":
        properties = {"user": unquote(parts.username or "postgres")}
        if parts.password:
            properties["password"] = unquote(parts.password)
        return f"jdbc:postgresql://{parts.hostname}:{parts.port or 5432}{parts.path}", properties
    raise ValueError(f"no JDBC mapping for catalog URI scheme {parts.scheme!r} (SQLite and PostgreSQL only)")


class IcebergJava:
    """One Iceberg Java session (module doc) on the catalog ``catalog`` at ``catalog_uri`` / ``warehouse``."""

    def __init__(
        self,
        env: JavaEnv,
        *,
        catalog: str,
        catalog_uri: str,
        warehouse: str,
        log_path: Path,
        driver_memory: str = "1g",
        spark_conf: dict[str, str] | None = None,
        start_timeout: float = 300.0,
        request_timeout: float = 600.0,
    ) -> None:
        jdbc_uri, jdbc_properties = jdbc_connection(catalog_uri)
        self.catalog = catalog
        self.log_path = log_path
        self.request_timeout = request_timeout
        config = {
            "catalog": catalog,
            "jdbc_uri": jdbc_uri,
            "jdbc_properties": jdbc_properties,
            "warehouse": warehouse,
            "jars": env.jars,
            "driver_memory": driver_memory,
            "spark_conf": spark_conf or {},
        }
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = log_path.open("ab")
        self._process = subprocess.Popen(
            [env.python, str(SERVER), json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env.process_env(),
            start_new_session=True,
            text=True,
        )
        started = self._answer(start_timeout, "starting Iceberg Java")
        self.spark_version = started["spark"]

    # ---------------------------------------------------------------------------------------------------- requests
    def checksum(self, table: str, *, snapshot_id: int | None = None, columns: list[str] | None = None) -> dict:
        """{"rows", "checksum", "columns"} of what Java reads from ``table`` (``ns.name``), optionally at a snapshot."""
        return self.call("checksum", table=table, snapshot_id=snapshot_id, columns=columns)

    def read_arrow(self, table: str, *, snapshot_id: int | None = None, columns: list[str] | None = None) -> pa.Table:
        """The rows Java reads from ``table``, as an Arrow table (through an IPC file in a temp dir)."""
        with tempfile.TemporaryDirectory(prefix="iceberg-java-") as folder:
            path = str(Path(folder) / "rows.arrow")
            self.call("arrow", table=table, path=path, snapshot_id=snapshot_id, columns=columns)
            with pa.memory_map(path) as source:
                return pa.ipc.open_file(source).read_all()

    def sql(self, query: str) -> list[list[Any]]:
        """The rows of a Spark SQL statement run by Java's Spark session (the catalog is ``self.catalog``)."""
        return self.call("sql", query=query)

    def puffin_blobs(self, path: str) -> list[dict]:
        """The blobs of a Puffin file as Java's Puffin reader lists (and reads) them."""
        return self.call("puffin_blobs", path=path)

    def call(self, op: str, **arguments: Any) -> Any:
        """Send one request and return its result; a failed request raises JavaError."""
        if self._process.poll() is not None:
            raise JavaError(f"Iceberg Java exited with code {self._process.returncode}; log {self.log_path}")
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self._process.stdin.flush()
        return self._answer(self.request_timeout, f"{op} {arguments}")

    def _answer(self, timeout: float, what: str) -> Any:
        assert self._process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._process.stdout, selectors.EVENT_READ)
            deadline = time.monotonic() + timeout
            while not selector.select(timeout=1.0):
                if self._process.poll() is not None or time.monotonic() > deadline:
                    state = "exited" if self._process.poll() is not None else f"gave no answer in {timeout:.0f}s"
                    raise JavaError(f"Iceberg Java {state} while {what}; log {self.log_path}:\n{self._log_tail()}")
        line = self._process.stdout.readline()
        if not line:
            raise JavaError(f"Iceberg Java closed its output while {what}; log {self.log_path}:\n{self._log_tail()}")
        answer = json.loads(line)
        if not answer["ok"]:
            raise JavaError(f"Iceberg Java failed {what}: {answer['error']}\n{answer.get('trace', '')[-3000:]}")
        return answer["result"]

    def _log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # ---------------------------------------------------------------------------------------------------- lifetime
    def close(self, timeout: float = 60.0) -> None:
        """Stop the session: close stdin (the server stops Spark and exits), then signal its process group."""
        if self._process.poll() is None:
            try:
                assert self._process.stdin is not None
                self._process.stdin.close()
                self._process.wait(timeout=timeout)
            except (OSError, subprocess.TimeoutExpired):
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    try:
                        os.killpg(self._process.pid, sig)
                        self._process.wait(timeout=15)
                        break
                    except (ProcessLookupError, subprocess.TimeoutExpired):
                        continue
        self._log.close()

    def __enter__(self) -> IcebergJava:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
