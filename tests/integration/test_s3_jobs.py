"""Every job with the warehouse on S3 (SeaweedFS), through the REST catalog and the SQL catalog on PostgreSQL, on
Spark local and on the standalone master + worker; sources read from and outputs written to s3:// URIs.

The Spark that pip installs has no Hadoop S3 connector: these tests prove the jobs need none (sources and outputs
go through pyarrow on the executors, table files through pyiceberg's FileIO). The story each run tells is in
tests/support/s3_scenario.py. A slice of that story also runs through a second REST implementation, Iceberg's own
REST catalog test fixture (tests/support/iceberg_rest_fixture.py), with its warehouse on the same S3.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import iceberg_rest_fixture, object_store, s3_scenario
from tests.support.iceberg_rest_fixture import IcebergRestFixture
from tests.support.object_store import SeaweedFS
from tests.support.services import listening_addresses, spark_process_env

pytestmark = [pytest.mark.s3, pytest.mark.spark]


@pytest.mark.postgres
@pytest.mark.parametrize("catalog_fixture", ["s3_rest_catalog", "s3_sql_catalog"])
def test_every_job_on_local_spark(request, spark, seaweedfs: SeaweedFS, catalog_fixture: str) -> None:
    catalog = request.getfixturevalue(catalog_fixture)
    results = s3_scenario.run(catalog, f"local_{catalog}", seaweedfs.filesystem())
    assert set(results) == set(s3_scenario.JOB_STEPS)


# The slice of the story Iceberg's REST fixture runs: every ingest mode that writes deletes, reads by snapshot id and
# by tag (and the other time-travel forms of the reads step), compaction, snapshot expiry.
REST_FIXTURE_STEPS = ("append", "csv", "upsert", "delete", "reads", "compact", "expire")
REST_FIXTURE_WAREHOUSE = "s3://warehouse/iceberg-rest-fixture"


@pytest.fixture(scope="module")
def iceberg_rest_fixture_catalog(seaweedfs: SeaweedFS) -> Iterator[tuple[str, IcebergRestFixture]]:
    """Catalog ``javarest``: Iceberg's REST fixture on 127.0.0.1, its warehouse on SeaweedFS S3 (no auth)."""
    properties = seaweedfs.s3_properties()
    with iceberg_rest_fixture.running(REST_FIXTURE_WAREHOUSE, properties) as server:
        environment = object_store.catalog_env("javarest", {"type": "rest", "uri": server.uri, **properties})
        os.environ.update(environment)
        yield "javarest", server
        for key in environment:
            os.environ.pop(key, None)


def test_a_slice_of_the_jobs_through_iceberg_s_rest_fixture(
    spark, seaweedfs: SeaweedFS, iceberg_rest_fixture_catalog: tuple[str, IcebergRestFixture]
) -> None:
    from spark_jobs.engine.table.catalog import load_catalog

    catalog, server = iceberg_rest_fixture_catalog
    pid = server.managed.process.pid
    assert listening_addresses(pid) == {server.uri.removeprefix("http://")}
    assert seaweedfs.secret_key not in Path(f"/proc/{pid}/cmdline").read_bytes().decode()
    results = s3_scenario.run(catalog, "local_javarest", seaweedfs.filesystem(), REST_FIXTURE_STEPS)
    jobs = {job for step in REST_FIXTURE_STEPS for job in s3_scenario.jobs_of_step(step)}
    assert set(results) == jobs, sorted(results)
    table = load_catalog(catalog).load_table("local_javarest.events")
    # The table is the fixture's: created under its warehouse, its metadata written there by the Java server.
    assert table.metadata_location.startswith(f"{REST_FIXTURE_WAREHOUSE}/local_javarest/events/metadata/")
    assert table.snapshot_by_name("checkpoint") is not None


# The standalone cluster runs the same story per catalog, both in one driver process on the cluster.
@pytest.mark.postgres
@pytest.mark.standalone
def test_every_job_on_the_standalone_cluster(
    spark_standalone, seaweedfs: SeaweedFS, s3_rest_catalog: str, s3_sql_catalog: str
) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(__import__("pathlib").Path(__file__).resolve().parents[2])!r})
        from pyspark.sql import SparkSession
        from pyarrow import fs
        from tests.support import s3_scenario

        spark = (SparkSession.builder.master({spark_standalone.master_url!r}).appName("s3-matrix")
                 .config("spark.driver.host", "127.0.0.1").config("spark.ui.enabled", "false")
                 .config("spark.sql.shuffle.partitions", "2").getOrCreate())
        filesystem = fs.S3FileSystem(endpoint_override={seaweedfs.s3_endpoint!r}, scheme="http", region="us-east-1",
                                     access_key={seaweedfs.access_key!r}, secret_key=sys.stdin.readline().strip())
        for catalog in ({s3_rest_catalog!r}, {s3_sql_catalog!r}):
            results = s3_scenario.run(catalog, "standalone_" + catalog, filesystem)
            print("STEPS", catalog, ",".join(sorted(results)))
        spark.stop()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=seaweedfs.secret_key + "\n",
        env=spark_process_env(),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-6000:]
    for catalog in (s3_rest_catalog, s3_sql_catalog):
        assert f"STEPS {catalog} {','.join(sorted(s3_scenario.JOB_STEPS))}\n" in done.stdout, done.stdout[-2000:]
