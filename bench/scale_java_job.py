"""A one-shot Iceberg Java job for ``spark-submit``: the Java side of the scale benchmark's cold runs.

Run by the Java environment's ``spark-submit`` with Iceberg's runtime jar and the catalog's ``--conf`` options, as an
Airflow task runs a job: one JVM, one piece of work, then exit. The last stdout line is one JSON object.

    spark-submit ... scale_java_job.py aggregate --table anchor.scale.T [--where SQL] [--snapshot-id N]
    spark-submit ... scale_java_job.py sql --statement "CALL ..." [--statement ...]
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    """Run the job and print its answer with the seconds after the session started."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    aggregate = commands.add_parser("aggregate", help="count(*) and sum(price), printed")
    aggregate.add_argument("--table", required=True)
    aggregate.add_argument("--where")
    aggregate.add_argument("--snapshot-id", type=int)
    sql = commands.add_parser("sql", help="statements; the rows of the last one are summarized")
    sql.add_argument("--statement", action="append", required=True)
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    started = time.perf_counter()
    spark = SparkSession.builder.appName(f"scale-java-{args.command}").getOrCreate()
    session_seconds = time.perf_counter() - started
    started = time.perf_counter()
    answer: dict = {}
    if args.command == "aggregate":
        reader = spark.read.format("iceberg")
        if args.snapshot_id:
            reader = reader.option("snapshot-id", str(args.snapshot_id))
        frame = reader.load(args.table)
        if args.where:
            frame = frame.where(args.where)
        row = frame.selectExpr("count(*) AS n", "sum(price) AS s").first()
        answer = {"count": row["n"], "sum_price": row["s"]}
    else:
        rows = []
        for statement in args.statement:
            rows = spark.sql(statement).collect()
        answer = {"rows": len(rows), "first_row": rows[0].asDict() if rows else None}
    job_seconds = time.perf_counter() - started
    spark.stop()
    print(
        json.dumps({"status": "ok", **answer, "seconds": {"session": session_seconds, "job": job_seconds}}, default=str)
    )


if __name__ == "__main__":
    main()
