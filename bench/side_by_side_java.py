"""The Iceberg Java side of the side-by-side benchmark: a warm Spark session with Iceberg's runtime, on request.

Runs in a Java environment's virtualenv (pyspark 3.5 + Iceberg 1.10's ``iceberg-spark-runtime``, or pyspark 4.1 +
Iceberg 1.12's), never in the project's. It reads one JSON request per line on stdin and answers each with one
line (``side_by_side_jobs.RESULT_PREFIX``) on stdout; everything else it prints goes to stderr. The orchestrator
passes the jars (Iceberg's Spark runtime and a SQLite JDBC driver) and the catalog file; Java's JdbcCatalog runs
with its tables created here, as Java would.

Requests (``op``): ``build`` (make missing tables), ``query``, ``ingest_generated``, ``ingest_parquet``, ``upsert``,
``rewrite``, ``checksum``, ``rollback``, ``snapshot``, ``drop``, ``spark_submit_args`` (for the cold runs), ``quit``.
Iceberg's cached tables are refreshed before every request that may follow a commit by the other side.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import side_by_side_jobs as sbs

# The DDL Iceberg 1.10's JdbcCatalog runs (schema version V1), run here so that Java can be told not to: its own
# initialization leaves a read lock on SQLite that fails a second catalog instance's commits.
CATALOG_DDL = [
    "CREATE TABLE IF NOT EXISTS iceberg_tables(catalog_name VARCHAR(255) NOT NULL,"
    "table_namespace VARCHAR(255) NOT NULL,table_name VARCHAR(255) NOT NULL,"
    "metadata_location VARCHAR(1000),previous_metadata_location VARCHAR(1000), "
    "iceberg_type VARCHAR(5),PRIMARY KEY (catalog_name, table_namespace, table_name))",
    "CREATE TABLE IF NOT EXISTS iceberg_namespace_properties(catalog_name VARCHAR(255) NOT NULL,"
    "namespace VARCHAR(255) NOT NULL,property_key VARCHAR(255),property_value VARCHAR(1000),"
    "PRIMARY KEY (catalog_name, namespace, property_key))",
]


# Spark's own time-travel read option: Iceberg's snapshot-id read option is gone in Iceberg 1.12 on Spark 4.1,
# Spark's versionAsOf works with both runtimes.
SNAPSHOT_OPTION = "versionAsOf"


def catalog_conf(catalog_db: Path, warehouse: Path) -> dict[str, str]:
    """Spark settings of the ``anchor`` JdbcCatalog on the SQLite file (also used by the cold spark-submits)."""
    prefix = f"spark.sql.catalog.{sbs.CATALOG}"
    return {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
        f"{prefix}.uri": f"jdbc:sqlite:{catalog_db}",
        f"{prefix}.jdbc.schema-version": "V1",
        f"{prefix}.jdbc.init-catalog-tables": "false",
        f"{prefix}.jdbc.busy_timeout": "60000",
        f"{prefix}.warehouse": f"file://{warehouse}",
        "spark.sql.defaultCatalog": sbs.CATALOG,
    }


def spark_session(jars: list[str], conf: dict[str, str], driver_memory: str) -> Any:
    """A local Spark 3.5 session with Iceberg's runtime and the benchmark's settings."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("side-by-side-java").config("spark.jars", ",".join(jars))
    for key, value in {**sbs.SPARK_CONF, "spark.driver.memory": driver_memory, **conf}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


class JavaRunner:
    """One warm Spark session with Iceberg Java, answering the orchestrator's requests."""

    def __init__(self, jars: list[str], catalog_db: Path, warehouse: Path, extra_conf: dict, memory: str) -> None:
        import sqlite3

        catalog_db.parent.mkdir(parents=True, exist_ok=True)
        warehouse.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(catalog_db) as connection:
            for ddl in CATALOG_DDL:
                connection.execute(ddl)
        self.jars = jars
        self.conf = {**catalog_conf(catalog_db, warehouse), **extra_conf}
        self.spark = spark_session(jars, self.conf, memory)
        self.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {sbs.CATALOG}.{sbs.NAMESPACE}")

    # ---------------------------------------------------------------- helpers
    def fq(self, table: str) -> str:
        """The table's name in Spark SQL."""
        return f"{sbs.CATALOG}.{sbs.NAMESPACE}.{table}"

    def sql(self, text: str) -> Any:
        """Run Spark SQL."""
        return self.spark.sql(text)

    def refresh(self, table: str) -> None:
        """Drop Iceberg's cached copy of ``table`` (the other side may have committed since)."""
        self.sql(f"REFRESH TABLE {self.fq(table)}")

    def exists(self, table: str) -> bool:
        """Whether the table exists in the catalog."""
        return bool(self.spark.catalog.tableExists(self.fq(table)))

    def generated(self, low: int, high: int, partitions: int | None = None) -> Any:
        """Generated rows with ids ``low`` .. ``high - 1``."""
        frame = self.spark.range(low, high, 1, partitions) if partitions else self.spark.range(low, high)
        return frame.selectExpr(*sbs.GENERATED_COLUMNS)

    def create(self, table: str, format_version: int) -> None:
        """A fresh merge-on-read table with the benchmark's columns and 2 MiB row groups."""
        self.sql(f"DROP TABLE IF EXISTS {self.fq(table)} PURGE")
        self.sql(
            f"CREATE TABLE {self.fq(table)} {sbs.COLUMNS_DDL} USING iceberg TBLPROPERTIES ("
            f"'format-version'='{format_version}', 'write.delete.mode'='merge-on-read', "
            "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read', "
            "'write.parquet.row-group-size-bytes'='2097152')"
        )

    def load_sorted(self, table: str, rows: int) -> None:
        """``rows`` generated rows as 8 files range-partitioned and sorted on ``k``."""
        self.generated(0, rows).repartitionByRange(8, "k").sortWithinPartitions("k").writeTo(self.fq(table)).append()

    def jvm_table(self, table: str) -> Any:
        """``org.apache.iceberg.Table`` of ``table`` through the Spark catalog (py4j)."""
        return self.spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            self.spark._jsparkSession, self.fq(table)
        )

    def current_snapshot(self, table: str) -> int | None:
        """The table's current snapshot id, as the catalog has it now."""
        jtable = self.jvm_table(table)
        jtable.refresh()
        current = jtable.currentSnapshot()
        return int(current.snapshotId()) if current is not None else None

    # ---------------------------------------------------------------- requests
    def build(self, request: dict[str, Any]) -> dict[str, Any]:
        """Make every missing benchmark table (module doc of side_by_side_jobs); report what exists."""
        rows = int(request.get("rows", sbs.ROWS))
        made = []
        for table, version in (("mor_pos", 2), ("mor_dv", 3)):
            if not self.exists(table):
                self.create(table, version)
                self.load_sorted(table, rows)
                self.sql(f"DELETE FROM {self.fq(table)} WHERE {sbs.DELETE_PREDICATE}")
                made.append(table)
        if not self.exists("mor_eq"):
            self.create("mor_eq", 2)
            self.load_sorted("mor_eq", rows)
            self.add_equality_deletes("mor_eq", rows)
            made.append("mor_eq")
        if not self.exists("upsert"):
            self.create("upsert", 2)
            self.load_sorted("upsert", rows)
            made.append("upsert")
        if not self.exists("small"):
            self.sql(f"DROP TABLE IF EXISTS {self.fq('small')} PURGE")
            self.sql(
                f"CREATE TABLE {self.fq('small')} {sbs.COLUMNS_DDL} USING iceberg TBLPROPERTIES ('format-version'='2')"
            )
            per_commit = sbs.SMALL_FILES // 10
            for index in range(10):
                low = index * per_commit * 100
                self.generated(low, low + per_commit * 100).repartition(per_commit).writeTo(self.fq("small")).append()
            made.append("small")
        source = Path(request["parquet_source"])
        if not (source / "_SUCCESS").exists():
            self.generated(0, rows, 4).write.mode("overwrite").parquet(str(source))
            made.append(str(source))
        first = self.sql(
            f"SELECT snapshot_id FROM {self.fq('mor_pos')}.snapshots ORDER BY committed_at LIMIT 1"
        ).first()[0]
        files = {
            table: [
                row.asDict()
                for row in self.sql(
                    f"SELECT content, count(*) AS files, sum(record_count) AS records, "
                    f"sum(file_size_in_bytes) AS bytes FROM {self.fq(table)}.files GROUP BY 1 ORDER BY 1"
                ).collect()
            ]
            for table in ("mor_pos", "mor_eq", "mor_dv", "small", "upsert")
        }
        versions = {
            "spark": self.spark.version,
            "java": self.spark._jvm.System.getProperty("java.version"),
            "iceberg_java": self.sql(f"SELECT {sbs.CATALOG}.system.iceberg_version()").first()[0],
            "jars": [Path(jar).name for jar in self.jars],
        }
        return {"made": made, "mor_pos_first_snapshot": first, "files": files, "versions": versions}

    def add_equality_deletes(self, table: str, rows: int) -> None:
        """One equality delete file on ``id`` (the DELETE_PREDICATE rows), written by pyarrow, committed by Java."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        ids = sorted(r[0] for r in self.spark.range(0, rows).where(sbs.DELETE_PREDICATE).select("id").collect())
        jvm, gateway = self.spark._jvm, self.spark.sparkContext._gateway
        jtable = self.jvm_table(table)
        field_id = jtable.schema().findField("id").fieldId()
        location = jtable.locationProvider().newDataLocation(f"eq-delete-{uuid.uuid4()}.parquet")
        local = location.removeprefix("file:")
        arrow_field = pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": str(field_id).encode()})
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}, schema=pa.schema([arrow_field])), local)
        field_ids = gateway.new_array(jvm.int, 1)
        field_ids[0] = field_id
        delete_file = (
            jvm.org.apache.iceberg.FileMetadata.deleteFileBuilder(jtable.spec())
            .ofEqualityDeletes(field_ids)
            .withPath(location)
            .withFormat("parquet")
            .withFileSizeInBytes(os.path.getsize(local))
            .withRecordCount(len(ids))
            .build()
        )
        jtable.newRowDelta().addDeletes(delete_file).commit()
        self.refresh(table)

    def query(self, request: dict[str, Any]) -> dict[str, Any]:
        """count(*) and sum(price), as a user writes it against Iceberg's Spark source."""
        reader = self.spark.read.format("iceberg")
        if request.get("snapshot_id"):
            reader = reader.option(SNAPSHOT_OPTION, str(request["snapshot_id"]))
        frame = reader.load(self.fq(request["table"]))
        if request.get("where"):
            frame = frame.where(request["where"])
        row = frame.selectExpr("count(*) AS n", "sum(price) AS s").first()
        return {"count": row["n"], "sum_price": row["s"]}

    def ingest_generated(self, request: dict[str, Any]) -> dict[str, Any]:
        """INSERT of generated rows into the (fresh) table."""
        self.generated(0, int(request["rows"])).writeTo(self.fq(request["table"])).append()
        return {}

    def ingest_parquet(self, request: dict[str, Any]) -> dict[str, Any]:
        """INSERT of the Parquet source's rows into the (fresh) table."""
        self.spark.read.parquet(request["source"]).writeTo(self.fq(request["table"])).append()
        return {}

    def upsert(self, request: dict[str, Any]) -> dict[str, Any]:
        """MERGE INTO the table (merge-on-read) from the upsert batch."""
        batch = self.spark.range(0, sbs.UPSERT_MATCHED + sbs.UPSERT_NEW).withColumnRenamed("id", "i")
        batch.selectExpr(*sbs.upsert_batch_select()).createOrReplaceTempView("upsert_batch")
        self.sql(
            f"MERGE INTO {self.fq(request['table'])} t USING upsert_batch s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
        return {}

    def rewrite(self, request: dict[str, Any]) -> dict[str, Any]:
        """``rewrite_data_files`` with the given options."""
        options = ", ".join(f"'{key}', '{value}'" for key, value in request["options"].items())
        row = self.sql(
            f"CALL {sbs.CATALOG}.system.rewrite_data_files(table => '{sbs.NAMESPACE}.{request['table']}', "
            f"options => map({options}))"
        ).first()
        return {key: value for key, value in row.asDict().items()}

    def checksum(self, request: dict[str, Any]) -> dict[str, Any]:
        """Row count and the order-independent checksum of the table (Java's reader), at a snapshot if given."""
        self.refresh(request["table"])
        reader = self.spark.read.format("iceberg")
        if request.get("snapshot_id"):
            reader = reader.option(SNAPSHOT_OPTION, str(request["snapshot_id"]))
        reader.load(self.fq(request["table"])).createOrReplaceTempView("checksum_source")
        row = self.sql(sbs.CHECKSUM_SQL.format(table="checksum_source")).first()
        return {"count": row["n"], "checksum": str(row["h"])}

    def rollback(self, request: dict[str, Any]) -> dict[str, Any]:
        """Make ``snapshot_id`` the table's current snapshot again (undoes a timed commit)."""
        self.sql(
            f"CALL {sbs.CATALOG}.system.rollback_to_snapshot('{sbs.NAMESPACE}.{request['table']}', "
            f"{int(request['snapshot_id'])})"
        ).collect()
        return {}

    def snapshot(self, request: dict[str, Any]) -> dict[str, Any]:
        """The table's current snapshot id."""
        return {"snapshot_id": self.current_snapshot(request["table"])}

    def create_table(self, request: dict[str, Any]) -> dict[str, Any]:
        """A fresh, empty v2 table with the benchmark's columns (an ingest target)."""
        table = request["table"]
        self.sql(f"DROP TABLE IF EXISTS {self.fq(table)} PURGE")
        self.sql(f"CREATE TABLE {self.fq(table)} {sbs.COLUMNS_DDL} USING iceberg TBLPROPERTIES ('format-version'='2')")
        return {}

    def drop(self, request: dict[str, Any]) -> dict[str, Any]:
        """Drop and purge a table."""
        self.sql(f"DROP TABLE IF EXISTS {self.fq(request['table'])} PURGE")
        return {}

    def spark_submit_args(self, request: dict[str, Any]) -> dict[str, Any]:
        """The jars and confs a cold ``spark-submit`` of a Java job needs (the same catalog as this session)."""
        return {"jars": ",".join(self.jars), "conf": self.conf}


TIMED = {"query", "ingest_generated", "ingest_parquet", "upsert", "rewrite"}
REFRESH_FIRST = {"upsert", "rewrite", "snapshot", "rollback"}  # tables the other side may have changed


def serve(runner: JavaRunner) -> None:
    """Answer requests until ``quit`` or end of input."""
    spark_context = runner.spark.sparkContext
    tracker = spark_context.statusTracker()
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        op = request["op"]
        if op == "quit":
            break
        try:
            if op in REFRESH_FIRST and request.get("table"):
                runner.refresh(request["table"])
            group = f"req-{uuid.uuid4().hex[:8]}"
            spark_context.setJobGroup(group, op)
            cpu_before = sbs.process_tree_cpu_seconds(os.getpid())
            started = time.perf_counter()
            result = getattr(runner, op)(request)
            seconds = time.perf_counter() - started
            cpu = sbs.process_tree_cpu_seconds(os.getpid()) - cpu_before
            jobs = list(tracker.getJobIdsForGroup(group))
            stages = [stage for job in jobs if (info := tracker.getJobInfo(job)) for stage in info.stageIds]
            tasks = sum(info.numTasks for stage in stages if (info := tracker.getStageInfo(stage)))
            spark_context.setJobGroup("idle", "idle")
            reply = sbs.Reply(True, round(seconds, 4), round(cpu, 3), result, len(jobs), len(stages), tasks)
            if op not in TIMED:
                reply.seconds = round(seconds, 4)
        except Exception as error:  # the orchestrator decides what a failure means
            traceback.print_exc()
            reply = sbs.Reply(False, error=f"{type(error).__name__}: {error}")
        sbs.write_reply(reply)


def main() -> None:
    """Start the session and serve requests."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jars", required=True, help="comma-separated jars: Iceberg's Spark runtime, SQLite JDBC")
    parser.add_argument("--catalog-db", type=Path, required=True)
    parser.add_argument("--warehouse", type=Path, required=True)
    parser.add_argument("--conf", default="{}", help="extra Spark settings as a JSON object")
    parser.add_argument("--driver-memory", default=sbs.SPARK_CONF["spark.driver.memory"])
    args = parser.parse_args()
    sbs.divert_stdout()
    started = time.perf_counter()
    runner = JavaRunner(
        args.jars.split(","), args.catalog_db, args.warehouse, json.loads(args.conf), args.driver_memory
    )
    sbs.write_reply(sbs.Reply(True, round(time.perf_counter() - started, 3), result={"ready": True}))
    serve(runner)
    runner.spark.stop()


if __name__ == "__main__":
    main()
