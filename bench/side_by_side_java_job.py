"""A one-shot Iceberg Java job for ``spark-submit`` (the Java side of the side-by-side benchmark's cold runs).

Run by the Java environment's ``spark-submit`` with the Iceberg runtime jars and the catalog's ``--conf`` options,
as an Airflow task would run a job: one JVM, one query, then exit.

    spark-submit ... side_by_side_java_job.py read --table anchor.bench.T --columns price [--where SQL] --output DIR
    spark-submit ... side_by_side_java_job.py aggregate --table anchor.bench.T [--where SQL]
    spark-submit ... side_by_side_java_job.py sql --statement "INSERT INTO ..." [--statement ...]
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    """Run the job; the last stdout line is a JSON object with its seconds (after the session started)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    read = commands.add_parser("read")
    read.add_argument("--table", required=True)
    read.add_argument("--columns", required=True)
    read.add_argument("--where")
    read.add_argument("--output", required=True)
    aggregate = commands.add_parser("aggregate")  # count(*) and sum(price), printed
    aggregate.add_argument("--table", required=True)
    aggregate.add_argument("--where")
    sql = commands.add_parser("sql")
    sql.add_argument("--statement", action="append", required=True)
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    started = time.perf_counter()
    spark = SparkSession.builder.appName(f"side-by-side-java-{args.command}").getOrCreate()
    session_seconds = time.perf_counter() - started
    started = time.perf_counter()
    answer = {}
    if args.command == "aggregate":
        frame = spark.read.format("iceberg").load(args.table)
        if args.where:
            frame = frame.where(args.where)
        row = frame.selectExpr("count(*) AS n", "sum(price) AS s").first()
        answer = {"count": row["n"], "sum_price": row["s"]}
    elif args.command == "read":
        frame = spark.read.format("iceberg").load(args.table)
        if args.where:
            frame = frame.where(args.where)
        frame.select(*[c.strip() for c in args.columns.split(",")]).write.mode("overwrite").parquet(args.output)
    else:
        for statement in args.statement:
            spark.sql(statement).collect()
    job_seconds = time.perf_counter() - started
    spark.stop()
    seconds = {"session": round(session_seconds, 3), "job": round(job_seconds, 3)}
    print(json.dumps({"status": "ok", **answer, "seconds": seconds}))


if __name__ == "__main__":
    main()
