"""Iceberg's own REST catalog test fixture, a second REST implementation beside SeaweedFS's, served on 127.0.0.1.

The Iceberg project publishes it on Maven Central as ``org.apache.iceberg:iceberg-open-api`` with classifier
``test-fixtures`` (main class ``org.apache.iceberg.rest.RESTCatalogServer``; the ``apache/iceberg-rest-fixture``
image runs the same class): a thin jar whose POM lists no dependencies, so its runtime classpath is spelled out here.

1. ``classpath``: a small POM naming the fixture, ``iceberg-core`` with its ``tests`` jar (the REST servlet and
   adapter), ``iceberg-aws`` and ``iceberg-aws-bundle`` (S3FileIO and the AWS SDK), Jetty 11, SQLite JDBC, Hadoop
   common (the fixture builds its catalog with a Hadoop ``Configuration``) and an SLF4J binding; ``mvn
   dependency:build-classpath`` (the plugin version ``java_env`` uses) resolves it from Maven Central into the local
   repository. The resolved classpath is kept under ``$AIP_CACHE_DIR`` (as ``java_env`` keeps its build) and
   resolved again when a jar is missing.
2. ``start``: ``tests/support/java/LoopbackRESTCatalogServer.java`` (run as a single-file source program) builds
   the fixture's backend catalog from its ``CATALOG_*`` environment (a JdbcCatalog on in-memory SQLite, warehouse
   and S3FileIO settings given here) and serves it on 127.0.0.1 only; the S3 keys go through the environment,
   never the command line, and the fixture's INFO line that prints the catalog properties is turned off.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.support import java_env, services

# 1.10.1: the newest 1.10 release whose modules all resolve from the Maven Central this project's CI reaches.
ICEBERG_VERSION = "1.10.1"
JETTY_VERSION = "11.0.25"  # the Jetty line Iceberg 1.10 builds the fixture with (jakarta.servlet)
HADOOP_VERSION = "3.4.1"
SQLITE_JDBC_VERSION = "3.50.3.0"
SLF4J_VERSION = "2.0.17"
MAIN_SOURCE = Path(__file__).resolve().parent / "java" / "LoopbackRESTCatalogServer.java"
# Hadoop common's dependencies the fixture never loads (Iceberg's own build excludes the same ones).
_HADOOP_EXCLUSIONS = (
    ("log4j", "*"),
    ("org.slf4j", "*"),
    ("ch.qos.reload4j", "*"),
    ("org.apache.avro", "avro"),
    ("com.google.guava", "*"),
    ("com.google.protobuf", "*"),
    ("org.apache.curator", "*"),
    ("org.apache.zookeeper", "*"),
    ("org.apache.kerby", "*"),
    ("org.apache.hadoop", "hadoop-auth"),
    ("org.apache.hadoop.thirdparty", "hadoop-shaded-protobuf_3_7"),
    ("org.eclipse.jetty", "*"),
)


class RestFixtureError(RuntimeError):
    """The fixture's classpath could not be resolved; the message carries Maven's output."""


def _dependency(group: str, artifact: str, version: str, classifier: str = "", exclusions: str = "") -> str:
    classifier_xml = f"<classifier>{classifier}</classifier>" if classifier else ""
    return (
        f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{version}</version>"
        f"{classifier_xml}{exclusions}</dependency>"
    )


def pom() -> str:
    """A POM whose runtime classpath is the fixture's (module doc, step 1)."""
    exclusions = "".join(
        f"<exclusion><groupId>{group}</groupId><artifactId>{artifact}</artifactId></exclusion>"
        for group, artifact in _HADOOP_EXCLUSIONS
    )
    iceberg = "org.apache.iceberg"
    dependencies = [
        _dependency(iceberg, "iceberg-open-api", ICEBERG_VERSION, "test-fixtures"),
        _dependency(iceberg, "iceberg-core", ICEBERG_VERSION),
        _dependency(iceberg, "iceberg-core", ICEBERG_VERSION, "tests"),
        _dependency(iceberg, "iceberg-aws", ICEBERG_VERSION),
        _dependency(iceberg, "iceberg-aws-bundle", ICEBERG_VERSION),
        _dependency("org.eclipse.jetty", "jetty-servlet", JETTY_VERSION),
        _dependency("org.xerial", "sqlite-jdbc", SQLITE_JDBC_VERSION),
        _dependency("org.slf4j", "slf4j-simple", SLF4J_VERSION),
        _dependency(
            "org.apache.hadoop", "hadoop-common", HADOOP_VERSION, exclusions=f"<exclusions>{exclusions}</exclusions>"
        ),
    ]
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>local.test</groupId><artifactId>iceberg-rest-fixture-classpath</artifactId><version>1</version>"
        f"<dependencies>{''.join(dependencies)}</dependencies></project>\n"
    )


def _root() -> Path:
    digest = hashlib.sha256(pom().encode()).hexdigest()[:10]
    return java_env.cache_dir() / f"iceberg-rest-fixture-{ICEBERG_VERSION}-{digest}"


def _cached_classpath(root: Path) -> str | None:
    stamp = root / "classpath.txt"
    if not stamp.exists():
        return None
    classpath = stamp.read_text().strip()
    return classpath if all(Path(jar).exists() for jar in classpath.split(os.pathsep)) else None


def classpath() -> str:
    """The fixture's runtime classpath, resolved with ``mvn`` the first time (safe from concurrent processes)."""
    root = _root()
    cached = _cached_classpath(root)
    if cached:
        return cached
    root.mkdir(parents=True, exist_ok=True)
    with (root / "resolve.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cached = _cached_classpath(root)
        if cached:
            return cached
        (root / "pom.xml").write_text(pom())
        output = root / "classpath.tmp"
        goal = f"{java_env.DEPENDENCY_PLUGIN}:build-classpath"
        argv = [java_env._maven(), "-B", "-q", goal, f"-Dmdep.outputFile={output}"]
        done = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-30:])
            raise RestFixtureError(f"resolving Iceberg's REST fixture failed (exit {done.returncode}):\n{tail}")
        output.replace(root / "classpath.txt")
        return (root / "classpath.txt").read_text().strip()


@dataclass
class IcebergRestFixture:
    """A running fixture: its URI and the process serving it."""

    uri: str
    base_dir: Path
    managed: services.ManagedProcess

    def stop(self) -> None:
        """Stop the server and remove its folder (log, SQLite-free: the catalog lived in memory)."""
        self.managed.stop()
        shutil.rmtree(self.base_dir, ignore_errors=True)


def fixture_env(port: int, warehouse: str, s3_properties: Mapping[str, str]) -> dict[str, str]:
    """The fixture's ``CATALOG_*`` environment: port, warehouse, S3FileIO on the given endpoint and keys."""
    properties = {
        "rest.port": str(port),
        "warehouse": warehouse,
        "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        "client.region": s3_properties["s3.region"],
        **{key: value for key, value in s3_properties.items() if key != "s3.region"},
    }
    # The fixture's rule, reversed: CATALOG_ + upper case, '-' -> '__', '.' -> '_'.
    return {"CATALOG_" + key.replace("-", "__").replace(".", "_").upper(): value for key, value in properties.items()}


def start(warehouse: str, s3_properties: Mapping[str, str], timeout: float = 120.0) -> IcebergRestFixture:
    """Start the fixture on a free loopback port with its warehouse at ``warehouse``; ready once it answers."""
    java = shutil.which("java")
    if java is None:
        raise RestFixtureError("java is not on PATH (the Spark tests need it too)")
    jars = classpath()
    port = services.free_port()
    base_dir = Path(tempfile.mkdtemp(prefix="aip-rest-fixture-"))
    env = {**os.environ, **fixture_env(port, warehouse, s3_properties)}
    argv = [
        java,
        "-Dorg.slf4j.simpleLogger.log.org.apache.iceberg.rest.RESTCatalogServer=warn",
        "-cp",
        jars,
        str(MAIN_SOURCE),
    ]
    managed = services._start("iceberg-rest-fixture", argv, base_dir / "server.log", env=env)
    server = IcebergRestFixture(f"http://{services.LOOPBACK}:{port}", base_dir, managed)
    try:
        services._wait_until("Iceberg REST fixture", lambda: _answers(server.uri), managed, timeout)
    except services.ServiceStartError:
        server.stop()
        raise
    return server


def _answers(uri: str) -> bool:
    with contextlib.suppress(OSError), urllib.request.urlopen(f"{uri}/v1/config", timeout=5) as reply:
        return bool(reply.status == 200)
    return False


@contextlib.contextmanager
def running(warehouse: str, s3_properties: Mapping[str, str]) -> Iterator[IcebergRestFixture]:
    """The fixture for the length of a ``with`` block."""
    server = start(warehouse, s3_properties)
    try:
        yield server
    finally:
        server.stop()
