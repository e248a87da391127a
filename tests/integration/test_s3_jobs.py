"""Every job with the warehouse on S3 (SeaweedFS), through the REST catalog and the SQL catalog on PostgreSQL, on
Spark local and on the standalone master + worker; sources read from and outputs written to s3:// URIs.

The Spark that pip installs has no Hadoop S3 connector: these tests prove the jobs need none (sources and outputs
go through pyarrow on the executors, table files through pyiceberg's FileIO). The story each run tells is in
tests/support/s3_scenario.py.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.support import s3_scenario
from tests.support.object_store import SeaweedFS
from tests.support.services import spark_process_env

pytestmark = [pytest.mark.s3, pytest.mark.spark]


@pytest.mark.postgres
@pytest.mark.parametrize("catalog_fixture", ["s3_rest_catalog", "s3_sql_catalog"])
def test_every_job_on_local_spark(request, spark, seaweedfs: SeaweedFS, catalog_fixture: str) -> None:
    catalog = request.getfixturevalue(catalog_fixture)
    results = s3_scenario.run(catalog, f"local_{catalog}", seaweedfs.filesystem())
    assert set(results) == set(s3_scenario.JOB_STEPS)


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
