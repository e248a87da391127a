#!/usr/bin/env bash
# README command 2: set everything up, then lint and format-check (ruff), type-check (mypy) and run the whole test suite (pytest:
# real Spark, PostgreSQL and Airflow).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Debian packages the tests need: PostgreSQL's server binaries for the PostgreSQL fixture; headless Chromium and its
# WebDriver for the test that looks at the demo's Airflow UI in a browser (tests/support/browser.py).
missing=()
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  missing+=(postgresql)
fi
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  else
    echo "[setup] error: the tests need Debian packages: run 'sudo apt-get install -y ${missing[*]}'" >&2; exit 1
  fi
fi
# shellcheck source=scripts/bootstrap.sh
source "$ROOT/scripts/bootstrap.sh"
cd "$ROOT"
# Iceberg Java for the interop tests: Spark 3.5 and the official Iceberg runtime (Maven Central, through mvn) in a
# second virtualenv, built once per machine under ~/.cache/airflow-iceberg-provider.
python -m tests.support.java_env build >/dev/null
ruff check .
# The formatter's check: a file ruff would reformat fails the run (`ruff format .` fixes it; .pre-commit-config.yaml
# runs both ruff hooks and mypy before each commit).
ruff format --check .
mypy
# The documentation site (mkdocs.yml): strict, so a broken link, a page left out of the nav or an argument of a job
# or operator without its text fails the run; built into a temporary folder and thrown away.
docs_site="$(mktemp -d)"
mkdocs build --strict --quiet --site-dir "$docs_site"
rm -rf "$docs_site"
# The object store and Spark write the tests' data under the temp dir; a nearly full disk shows up later as failed
# uploads, so the free space is printed first.
echo "[test] free disk under ${TMPDIR:-/tmp}: $(df -h --output=avail "${TMPDIR:-/tmp}" | tail -1 | tr -d ' ')"
# The whole suite (no arguments): first the Spark job tests marked spark35 on Spark 3.5 (the Java environment's
# pyspark 3.5), then a representative set (marked spark_lines, tests/spark_jobs/conftest.py) on Spark 4.1 (the
# Iceberg 1.12 environment's pyspark) and on Spark 4.3 (a venv of pyspark 4.3 alone), then everything on the
# project's Spark 4.2 (docs/development.md "Tests" says which and why), with the Airflow-side set on Airflow 3.1 before
# it. All must pass.
other_passes_failed=()
if [ "$#" -eq 0 ]; then
  echo "[test] the Spark job tests on Spark 3.5 (-m spark35)"
  python -m tests.support.java_env run -- python -m pytest -m spark35 tests/spark_jobs ||
    other_passes_failed+=("Spark 3.5 (exit $?)")
  for line in 1.12:4.1 spark4.3:4.3; do  # the java_env environment : its Spark line
    env="${line%%:*}" spark="${line#*:}"
    echo "[test] the representative Spark job tests on Spark $spark (-m spark_lines)"
    python -m tests.support.java_env --env "$env" run -- python -m pytest -m spark_lines tests/spark_jobs ||
      other_passes_failed+=("Spark $spark (exit $?)")
  done
  # The Airflow-side tests' representative set (AIRFLOW_31_TESTS) on the oldest Airflow the provider supports, in
  # a venv of its own built once per machine (tests/support/airflow_env_31.py).
  echo "[test] the Airflow-side tests on Airflow 3.1"
  python -m tests.support.airflow_env_31 tests || other_passes_failed+=("Airflow 3.1 (exit $?)")
  echo "[test] the whole suite on Spark 4.2"
fi
status=0
python -m pytest "$@" || status=$?
if [ "${#other_passes_failed[@]}" -ne 0 ]; then
  echo "[test] FAILED: the pass(es) on ${other_passes_failed[*]} (their summaries are above the Spark 4.2 pass)" >&2
  exit 1
fi
exit "$status"
