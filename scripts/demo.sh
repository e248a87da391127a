#!/usr/bin/env bash
# README command 1: set everything up (the runtime dependencies only), then run the demo pipeline on the embedded
# default: a SQLite SQL catalog and a local warehouse under .demo/, Spark local[*], Airflow on SQLite with its
# LocalExecutor, so that every task runs in its own process and writes its log where the Airflow UI reads it.
#
#   bash scripts/demo.sh       run the demo DAG once (airflow dags test --use-executor), progress line by line
#   bash scripts/demo.sh ui    serve the demo's Airflow (API server and UI, scheduler, DAG processor, triggerer)
#                              on http://127.0.0.1:8080 until Ctrl-C; AIRFLOW__API__PORT / AIRFLOW__API__HOST change
#                              the port / the address it listens on
#
# ICEBERG_DEMO_ROWS sets the rows per generated batch (default 100000); AIP_DEMO_DIR the folder (default .demo/).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export AIP_EXTRAS=""
# shellcheck source=scripts/bootstrap.sh
source "$ROOT/scripts/bootstrap.sh"
DEMO="${AIP_DEMO_DIR:-$ROOT/.demo}"
DAG_ID=iceberg_demo_pipeline
mkdir -p "$DEMO/warehouse" "$DEMO/output" "$DEMO/logs"
export AIRFLOW_HOME="$DEMO/airflow"
export AIRFLOW__CORE__DAGS_FOLDER="$ROOT/dags"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__EXECUTOR=LocalExecutor
export AIRFLOW__LOGGING__BASE_LOG_FOLDER="$AIRFLOW_HOME/logs"
# Log in as admin with the password in this file (written below on the first run).
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="admin:admin"
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE="$AIRFLOW_HOME/demo-admin-password.json"
export AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[*]"}'
export ICEBERG_PROVIDER_CATALOG=demo ICEBERG_PROVIDER_NAMESPACE=demo ICEBERG_PROVIDER_OUTPUT_ROOT="$DEMO/output"
export ICEBERG_PROVIDER_REPORT_ROOT="$DEMO/output/reports"
export PYICEBERG_CATALOG__DEMO__TYPE=sql
export PYICEBERG_CATALOG__DEMO__URI="sqlite:///$DEMO/catalog.db"
export PYICEBERG_CATALOG__DEMO__WAREHOUSE="file://$DEMO/warehouse"
export PYTHONUNBUFFERED=1

echo "[demo] migrating the Airflow database in $AIRFLOW_HOME" >&2
airflow db migrate >"$DEMO/logs/airflow-migrate.log" 2>&1 || { tail -20 "$DEMO/logs/airflow-migrate.log" >&2; exit 1; }
if [ ! -s "$AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE" ]; then
  (umask 077; python -c 'import json, secrets; print(json.dumps({"admin": secrets.token_urlsafe(12)}))' \
    >"$AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE")
fi

# Airflow processes of this script: each in its own process group, stopped by its id when the script ends.
STARTED=()
start() {  # start NAME COMMAND...: run COMMAND in the background, its output in $DEMO/logs/NAME.log
  local name="$1"; shift
  setsid "$@" >"$DEMO/logs/$name.log" 2>&1 &
  STARTED+=("$!:$name")
}
stop_started() {
  local entry
  for entry in "${STARTED[@]}"; do kill -TERM -- "-${entry%%:*}" 2>/dev/null || true; done
  for entry in "${STARTED[@]}"; do
    for _ in $(seq 1 50); do kill -0 "${entry%%:*}" 2>/dev/null || break; sleep 0.2; done
    kill -KILL -- "-${entry%%:*}" 2>/dev/null || true
  done
  STARTED=()
}
trap stop_started EXIT
trap 'exit 130' INT TERM
api_ready() {  # api_ready PORT: wait until the API server answers on PORT, or fail with its log
  local port="$1" entry
  for _ in $(seq 1 300); do
    if python - "$port" <<'PY' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/api/v2/monitor/health", timeout=2)
PY
    then return 0; fi
    for entry in "${STARTED[@]}"; do
      kill -0 "${entry%%:*}" 2>/dev/null ||
        { echo "[demo] airflow ${entry#*:} stopped; its log, $DEMO/logs/${entry#*:}.log, ends:" >&2
          tail -20 "$DEMO/logs/${entry#*:}.log" >&2; return 1; }
    done
    sleep 1
  done
  echo "[demo] the API server did not answer on port $port in 300 s; see $DEMO/logs/api-server.log" >&2
  return 1
}

if [ "${1:-}" = "ui" ]; then
  PORT="${AIRFLOW__API__PORT:-8080}"
  HOST="${AIRFLOW__API__HOST:-127.0.0.1}"
  export AIRFLOW__API__PORT="$PORT" AIRFLOW__API__HOST="$HOST"
  export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="http://127.0.0.1:$PORT/execution/"
  if ! python -c 'import socket, sys; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1])))' "$PORT" \
      2>/dev/null; then
    echo "[demo] port $PORT is in use; choose another, e.g. AIRFLOW__API__PORT=8090 bash scripts/demo.sh ui" >&2
    exit 1
  fi
  echo "[demo] starting the demo's Airflow: API server and UI on $HOST:$PORT, scheduler, DAG processor," \
       "triggerer (their logs in $DEMO/logs/)" >&2
  start api-server airflow api-server
  start scheduler airflow scheduler
  start dag-processor airflow dag-processor
  start triggerer airflow triggerer
  api_ready "$PORT"
  password="$(python -c 'import json, sys; print(json.load(open(sys.argv[1]))["admin"])' \
    "$AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE")"
  where="listening on $HOST only"
  [ "$HOST" = "0.0.0.0" ] && where="listening on every address of this machine"
  cat >&2 <<READY
[demo] the demo's Airflow is up: open http://127.0.0.1:$PORT/ in a browser ($where)
[demo] log in as admin with the password $password (kept in $AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE)
[demo] Dags -> $DAG_ID -> its run -> a task: the Logs tab shows the task's log; the compact task's Details
       tab has the "Compaction report" link, which opens the report; Ctrl-C stops Airflow
READY
  ls "$AIRFLOW_HOME/logs/dag_id=$DAG_ID" >/dev/null 2>&1 ||
    echo "[demo] no demo run yet: run 'bash scripts/demo.sh' (in another shell, or before this)" >&2
  while true; do
    for entry in "${STARTED[@]}"; do
      if ! kill -0 "${entry%%:*}" 2>/dev/null; then
        echo "[demo] airflow ${entry#*:} stopped; its log, $DEMO/logs/${entry#*:}.log, ends:" >&2
        tail -20 "$DEMO/logs/${entry#*:}.log" >&2
        exit 1
      fi
    done
    sleep 2
  done
fi

# The run: an API server on a free loopback port serves the execution API the LocalExecutor's tasks report to.
RUN_PORT="$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export AIRFLOW__API__HOST=127.0.0.1 AIRFLOW__API__PORT="$RUN_PORT"
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="http://127.0.0.1:$RUN_PORT/execution/"
echo "[demo] starting Airflow's API server for the run's tasks (127.0.0.1:$RUN_PORT)" >&2
start api-server airflow api-server
api_ready "$RUN_PORT"
echo "[demo] running the demo DAG with Airflow's LocalExecutor (airflow dags test --use-executor $DAG_ID);" \
     "task logs in $AIRFLOW_HOME/logs, Airflow's output in $DEMO/logs/dag-run.log" >&2
since="$(date +%s)"
set +e
airflow dags test --use-executor "$DAG_ID" 2>&1 | tee "$DEMO/logs/dag-run.log" |
  python "$ROOT/scripts/demo_progress.py" --log-root "$AIRFLOW_HOME/logs" --dag-id "$DAG_ID" --since "$since"
status="${PIPESTATUS[0]}"
set -e
stop_started
if [ "$status" != 0 ]; then
  echo "[demo] the DAG run failed; each task's log is under $AIRFLOW_HOME/logs/dag_id=$DAG_ID/, Airflow's" \
       "output in $DEMO/logs/dag-run.log" >&2
  exit 1
fi
report="$(ls -t "$ICEBERG_PROVIDER_REPORT_ROOT/$DAG_ID"/*/compact.html 2>/dev/null | head -1 || true)"
cat >&2 <<NEXT
[demo] the compaction report: $report
[demo] next steps:
  - open the demo in the Airflow UI (its run, each task's log, the table's asset, the compaction report link):
      bash scripts/demo.sh ui
  - run the provider on your own Airflow, catalog and Spark cluster: docs/guide.md
NEXT
