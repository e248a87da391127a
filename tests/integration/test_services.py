"""The service fixtures start real processes that work: PostgreSQL as an Iceberg catalog, a Spark cluster."""

from __future__ import annotations

import pyarrow as pa
import pytest


@pytest.mark.postgres
def test_postgres_serves_an_iceberg_sql_catalog(postgres, tmp_path) -> None:
    import psycopg2
    from pyiceberg.catalog.sql import SqlCatalog

    conn = psycopg2.connect(host="127.0.0.1", port=postgres.port, user="postgres", dbname="postgres")
    with conn.cursor() as cur:
        cur.execute("SHOW server_version")
        assert cur.fetchone()[0].split(".")[0] == "15"
    conn.close()

    uri = postgres.create_database("catalog_services_test")
    catalog = SqlCatalog("svc", uri=uri, warehouse=f"file://{tmp_path}")
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    reloaded = SqlCatalog("svc", uri=uri, warehouse=f"file://{tmp_path}").load_table("ns.t")
    assert sorted(reloaded.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]


@pytest.mark.standalone
def test_spark_standalone_runs_a_job_on_its_worker(spark_standalone) -> None:
    import subprocess
    import sys
    import textwrap
    import time

    deadline = time.monotonic() + 60  # the status page can be slow to answer on a loaded machine
    while spark_standalone.alive_workers() != 1 and time.monotonic() < deadline:
        time.sleep(1)
    assert spark_standalone.alive_workers() == 1
    script = textwrap.dedent(
        f"""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.master("{spark_standalone.master_url}").appName("svc-test")\\
            .config("spark.driver.host", "127.0.0.1").config("spark.ui.enabled", "false").getOrCreate()
        rdd = spark.sparkContext.parallelize(range(1000), 4)
        import socket
        print("RESULT", rdd.map(lambda x: x * 2).sum(), spark.sparkContext.master)
        spark.stop()
        """
    )
    from tests.support.services import spark_process_env

    done = subprocess.run(
        [sys.executable, "-c", script],
        env=spark_process_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"RESULT 999000 {spark_standalone.master_url}" in done.stdout
