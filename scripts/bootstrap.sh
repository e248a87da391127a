#!/usr/bin/env bash
# Sets up everything the project needs on a Debian/Ubuntu machine with Python 3.11+ and git:
# Java 17+ (installed when run as root), a virtualenv in .venv, and the package with the extras in AIP_EXTRAS
# (scripts/test.sh: "test", its test dependencies; scripts/demo.sh: "", the runtime dependencies only).
# Sourced by scripts/demo.sh and scripts/test.sh; safe to run again (reinstalls only when pyproject.toml changed or
# an extra is asked for that is not installed).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${AIP_VENV:-$ROOT/.venv}"
log() { printf '[setup] %s\n' "$*" >&2; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }
as_root() { [ "$(id -u)" = 0 ]; }
apt_install() {
  as_root || return 1
  if [ -z "${AIP_APT_UPDATED:-}" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    export AIP_APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

# 1. Python 3.11+
PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      PYTHON="$(command -v "$candidate")"; break
    fi
  done
fi
[ -n "$PYTHON" ] || die "Python 3.11 or newer is required (found none on PATH); install it, e.g. apt-get install python3"

# 2. Java 17+ for Spark
java_major() {
  java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ]; then
  if as_root; then
    log "installing a Java runtime (17 or newer) for Spark"
    apt_install openjdk-17-jre-headless || apt_install default-jre-headless || die "could not install a Java runtime"
  else
    die "Spark needs Java 17+: run 'sudo apt-get install -y openjdk-17-jre-headless' (or rerun this as root)"
  fi
fi
[ "$(java_major)" -ge 17 ] || die "Spark needs Java 17+, found Java $(java_major): install openjdk-17-jre-headless"

# 3. Virtualenv
if [ ! -x "$VENV/bin/python" ]; then
  log "creating virtualenv $VENV with $PYTHON"
  if ! "$PYTHON" -m venv "$VENV" 2>/dev/null; then
    rm -rf "$VENV"
    pyver="$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
    apt_install "python${pyver}-venv" || apt_install python3-venv ||
      die "python -m venv failed: run 'sudo apt-get install -y python3-venv' (or rerun this as root)"
    "$PYTHON" -m venv "$VENV"
  fi
fi

# 4. The package and its dependencies (again only when pyproject.toml changed or a missing extra is asked for).
# The stamp holds the pyproject.toml hash and the extras installed with it ("<hash> test" or "<hash> ").
EXTRAS="${AIP_EXTRAS-test}"
stamp="$VENV/.aip-installed"
want="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
installed="$(cat "$stamp" 2>/dev/null || true)"
# AIP_NO_INSTALL=1 uses the virtualenv as it is (a test that runs the demo inside an environment already set up).
if [ "${AIP_NO_INSTALL:-}" = 1 ]; then
  [ -x "$VENV/bin/airflow" ] || die "AIP_NO_INSTALL=1 but $VENV has no airflow: install the package first"
elif [ "${installed%% *}" != "$want" ] || { [ -n "$EXTRAS" ] && [ "$installed" != "$want $EXTRAS" ]; }; then
  spec="$ROOT"; what="runtime dependencies"
  if [ -n "$EXTRAS" ]; then spec="$ROOT[$EXTRAS]"; what="runtime and $EXTRAS dependencies"; fi
  log "installing the package and its $what into $VENV (a few minutes the first time)"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$spec" >&2
  echo "$want $EXTRAS" > "$stamp"
fi

export PATH="$VENV/bin:$PATH"
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export PYSPARK_PYTHON="$VENV/bin/python"
export PYSPARK_DRIVER_PYTHON="$VENV/bin/python"
log "ready: $("$VENV/bin/python" --version), Java $(java_major), venv $VENV"
