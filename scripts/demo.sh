#!/usr/bin/env bash
# README command 1: set everything up, then run the demo pipeline on the embedded default: a SQLite SQL catalog and a
# local warehouse under .demo/, Spark local[*], Airflow on SQLite, the DAG run with `airflow dags test`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/bootstrap.sh
source "$ROOT/scripts/bootstrap.sh"
DEMO="$ROOT/.demo"
mkdir -p "$DEMO/warehouse" "$DEMO/output"
export AIRFLOW_HOME="$DEMO/airflow"
export AIRFLOW__CORE__DAGS_FOLDER="$ROOT/dags"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[*]"}'
export ICEBERG_PROVIDER_CATALOG=demo ICEBERG_PROVIDER_NAMESPACE=demo ICEBERG_PROVIDER_OUTPUT_ROOT="$DEMO/output"
export PYICEBERG_CATALOG__DEMO__TYPE=sql
export PYICEBERG_CATALOG__DEMO__URI="sqlite:///$DEMO/catalog.db"
export PYICEBERG_CATALOG__DEMO__WAREHOUSE="file://$DEMO/warehouse"
echo "[demo] migrating the Airflow database in $AIRFLOW_HOME" >&2
airflow db migrate >"$DEMO/airflow-migrate.log" 2>&1 || { tail -20 "$DEMO/airflow-migrate.log" >&2; exit 1; }
if [ "${1:-}" = "ui" ]; then
  # `bash scripts/demo.sh ui`: the demo's Airflow (its DAG runs, task logs, assets) in a browser.
  echo "[demo] starting Airflow (airflow standalone) on http://localhost:8080; user admin, its password is printed" \
       "below and kept in $AIRFLOW_HOME/simple_auth_manager_passwords.json.generated; Ctrl-C stops it" >&2
  exec airflow standalone
fi
echo "[demo] running the demo DAG (airflow dags test iceberg_demo_pipeline); full log: $DEMO/dag-run.log" >&2
# Live progress: each task's start and end, each Spark job's phases and summary, then the report (printed once).
airflow dags test iceberg_demo_pipeline 2>&1 | tee "$DEMO/dag-run.log" | awk '
  /\[DAG TEST\] starting task_id=/ { match($0, /task_id=[^ ]+/); task = substr($0, RSTART + 8, RLENGTH - 8)
                                      printf "[demo] %s  %s ...\n", strftime("%H:%M:%S"), task; fflush(); next }
  /\[DAG TEST\] end task task_id=/  { match($0, /task_id=[^ ]+/); task = substr($0, RSTART + 8, RLENGTH - 8)
                                      printf "[demo] %s  %s done\n", strftime("%H:%M:%S"), task; fflush(); next }
  / INFO spark_jobs[.a-z_]*: /        { line = $0; sub(/^.* INFO spark_jobs[.a-z_]*: /, "", line); sub(/ +\[airflow\.task.*$/, "", line)
                                      printf "         %s\n", line; fflush(); next }
  /^[ ]*(=|Iceberg demo|  )/         { print; fflush() }
' || true
grep -q "Iceberg demo report" "$DEMO/dag-run.log" || { echo "[demo] the DAG run failed; see $DEMO/dag-run.log" >&2; exit 1; }
cat >&2 <<NEXT
[demo] next steps:
  - open the demo in the Airflow UI (its run, each task's log, the table's asset, the compaction report link):
      bash scripts/demo.sh ui
  - run the provider on your own Airflow, catalog and Spark cluster: docs/guide.md
NEXT
