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
echo "[demo] running the demo DAG (airflow dags test iceberg_demo_pipeline)" >&2
airflow dags test iceberg_demo_pipeline 2>&1 | tee "$DEMO/dag-run.log" | grep -E "^\s*(=|Iceberg demo|  )" || true
grep -q "Iceberg demo report" "$DEMO/dag-run.log" || { echo "[demo] the DAG run failed; see $DEMO/dag-run.log" >&2; exit 1; }
