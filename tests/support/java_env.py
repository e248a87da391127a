"""Iceberg Java beside our engine: official Iceberg runtimes on their Spark, each in a virtualenv of its own.

Our package runs on the project's Spark (``pyproject.toml``); Iceberg Java runs on the Spark its runtime is built
for, so each Java generation gets a virtualenv of its own (``JAVA_GENERATIONS``): Iceberg 1.10.2 on Spark 3.5.9
(the default, ``1.10``) and Iceberg 1.12.0 on Spark 4.1.4 (``1.12``: format v3's new types, written by Spark 4.1;
there is no 1.12 runtime for Spark 4.2). The Spark 4.1 venv also runs our own jobs' Spark 4.1 test pass. Each is
built once per machine under ``$AIP_CACHE_DIR`` (default ``~/.cache/airflow-iceberg-provider``), in a folder named
after what it holds, so a version change builds a new one beside the old:

1. ``mvn`` (Debian's ``maven``, installed with apt-get when run as root and missing) copies the official
   ``org.apache.iceberg:iceberg-spark-runtime-<spark>_<scala>`` and the SQLite and PostgreSQL JDBC drivers from
   Maven Central into ``jars/`` (``dependency:copy``); Spark gets them through ``spark.jars``.
2. ``python -m venv venv`` and pip install the generation's ``pyspark`` with the Spark-side dependencies of
   ``pyproject.toml`` (Airflow and the project's own pyspark left out) and its test extra, so the venv also runs
   the project's Spark-side tests with the repository on ``PYTHONPATH`` (``run``).
3. ``env.json`` records the paths; written last, it marks a finished build (an unfinished one starts over).
   A file lock serializes concurrent builds.

A third venv holds Spark 4.3 alone (``spark4.3``: no Iceberg runtime supports it yet) for our jobs' Spark 4.3 pass.

CLI (from the repository root): ``python -m tests.support.java_env [--env 1.10|1.12|spark4.3] build|info|run --
CMD...`` (``--env all build`` builds every one). ``run`` executes ``CMD`` with the venv first on ``PATH``, the
repository on ``PYTHONPATH`` and Spark's Python set to the venv's.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.50.3.0"
POSTGRES_JDBC = "org.postgresql:postgresql:42.7.7"
# A dependency plugin recent enough to copy a single artifact without a project (Maven's default is 2.8).
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
# Packages a Java venv does not get from pyproject.toml (Airflow runs beside Spark, not in it; DuckDB as an interop
# reader runs from the project's venv; DuckDB itself and its avro extension, which decode manifests, it gets).
_LEFT_OUT = ("apache-airflow", "pyspark", "duckdb-extension-iceberg", "duckdb-extension-httpfs")


@dataclass(frozen=True)
class JavaGeneration:
    """One Iceberg Java release on the Spark its runtime is built for (no release: a Spark-only venv)."""

    name: str
    spark_version: str
    iceberg_version: str = ""
    scala_version: str = "2.13"

    @property
    def runtime(self) -> str | None:
        """The Maven coordinates of the official Iceberg Spark runtime (None for a Spark-only venv)."""
        if not self.iceberg_version:
            return None
        spark_line = ".".join(self.spark_version.split(".")[:2])
        return f"org.apache.iceberg:iceberg-spark-runtime-{spark_line}_{self.scala_version}:{self.iceberg_version}"

    @property
    def artifacts(self) -> tuple[str, ...]:
        """Everything ``mvn`` copies into ``jars/`` (nothing for a Spark-only venv)."""
        return (self.runtime, SQLITE_JDBC, POSTGRES_JDBC) if self.runtime else ()


JAVA_GENERATIONS = {
    "1.10": JavaGeneration("1.10", spark_version="3.5.9", iceberg_version="1.10.2", scala_version="2.12"),
    "1.12": JavaGeneration("1.12", spark_version="4.1.4", iceberg_version="1.12.0"),
    # Our jobs' Spark 4.3 pass: no Iceberg Java runtime supports Spark 4.3 yet.
    "spark4.3": JavaGeneration("spark4.3", spark_version="4.3.0"),
}
DEFAULT_GENERATION = "1.10"
# The default generation's versions (the Spark 3.5 pass and the interop suite's first Java reader).
SPARK_VERSION = JAVA_GENERATIONS[DEFAULT_GENERATION].spark_version
ICEBERG_VERSION = JAVA_GENERATIONS[DEFAULT_GENERATION].iceberg_version


class JavaEnvError(RuntimeError):
    """The Java environment could not be built; the message names the step and carries its output."""


@dataclass(frozen=True)
class JavaEnv:
    """A built environment: its folder, the venv's interpreter and the jars Spark loads."""

    root: str
    python: str
    jars: list[str]
    spark_version: str
    iceberg_version: str

    @property
    def iceberg_runtime_jar(self) -> str:
        """The Iceberg Spark runtime jar (a Spark-only venv has none)."""
        found = [jar for jar in self.jars if "iceberg-spark-runtime" in jar]
        if not found:
            raise JavaEnvError(f"the environment {self.root} holds Spark {self.spark_version} without Iceberg Java")
        return found[0]

    def process_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """Environment for a process of this venv: its bin first, the repository importable, its Python for Spark."""
        env = dict(os.environ if base is None else base)
        venv_bin = str(Path(self.python).parent)
        env["PATH"] = venv_bin + os.pathsep + env.get("PATH", "")
        env["VIRTUAL_ENV"] = str(Path(venv_bin).parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
        env["PYSPARK_PYTHON"] = self.python
        env["PYSPARK_DRIVER_PYTHON"] = self.python
        env.pop("SPARK_HOME", None)  # the other venv's Spark must not be picked up
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        return env


def cache_dir() -> Path:
    """Where built environments live (``$AIP_CACHE_DIR`` or ``~/.cache/airflow-iceberg-provider``)."""
    configured = os.environ.get("AIP_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "airflow-iceberg-provider"


def generation(name: str | None = None) -> JavaGeneration:
    """The Java generation ``name`` (``1.10``, ``1.12``), or the default one."""
    try:
        return JAVA_GENERATIONS[name or DEFAULT_GENERATION]
    except KeyError:
        raise JavaEnvError(f"no Java generation {name!r}; known: {', '.join(JAVA_GENERATIONS)}") from None


def venv_requirements(name: str | None = None) -> list[str]:
    """The generation's pyspark plus pyproject's dependencies and test extra, without Airflow and our pyspark."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    kept = [req for req in wanted if not req.lower().startswith(_LEFT_OUT)]
    return [f"pyspark=={generation(name).spark_version}", *kept]


def env_root(name: str | None = None) -> Path:
    """A generation's folder: named by Spark and Iceberg versions and a digest of everything installed."""
    java = generation(name)
    installed = [list(java.artifacts), venv_requirements(name), list(sys.version_info[:2])]
    digest = hashlib.sha256(json.dumps(installed).encode()).hexdigest()
    held = f"iceberg{java.iceberg_version}" if java.iceberg_version else "no-iceberg"
    return cache_dir() / f"iceberg-java-spark{java.spark_version}-{held}-{digest[:10]}"


def load(name: str | None = None) -> JavaEnv | None:
    """The built environment, or None when it has not been built (or a build did not finish)."""
    stamp = env_root(name) / "env.json"
    if not stamp.exists():
        return None
    env = JavaEnv(**json.loads(stamp.read_text()))
    if not Path(env.python).exists() or not all(Path(jar).exists() for jar in env.jars):
        return None
    return env


def ensure(name: str | None = None, log: Callable[[str], None] | None = None) -> JavaEnv:
    """Generation ``name``'s environment (default 1.10), built first when missing (module doc); safe to call from
    concurrent processes."""
    env = load(name)
    if env is not None:
        return env
    root = env_root(name)
    root.parent.mkdir(parents=True, exist_ok=True)
    with _locked(root.parent / (root.name + ".lock")):
        env = load(name)
        if env is not None:
            return env
        say = log or (lambda message: print(f"[java-env] {message}", file=sys.stderr, flush=True))
        return _build(generation(name), root, say)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(step: str, argv: list[str], **kwargs) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip().splitlines()
        raise JavaEnvError(f"{step} failed (exit {done.returncode}): {' '.join(argv)}\n" + "\n".join(output[-30:]))


def _maven() -> str:
    found = shutil.which("mvn")
    if found:
        return found
    if os.geteuid() != 0:
        raise JavaEnvError("Maven is needed to fetch the Iceberg runtime: run 'sudo apt-get install -y maven'")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    _run("apt-get update", ["apt-get", "update", "-qq"], env=env)
    _run("installing maven", ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "maven"], env=env)
    found = shutil.which("mvn")
    if not found:
        raise JavaEnvError("apt-get installed maven but mvn is not on PATH")
    return found


def _build(java: JavaGeneration, root: Path, log: Callable[[str], None]) -> JavaEnv:
    started = time.monotonic()
    shutil.rmtree(root, ignore_errors=True)  # an unfinished build (no env.json) starts over
    jars_dir = root / "jars"
    jars_dir.mkdir(parents=True)
    mvn = _maven() if java.artifacts else ""
    for artifact in java.artifacts:
        log(f"fetching {artifact} with mvn")
        _run(
            f"mvn dependency:copy {artifact}",
            [mvn, "-B", "-q", f"{DEPENDENCY_PLUGIN}:copy", f"-Dartifact={artifact}", f"-DoutputDirectory={jars_dir}"],
            cwd=root,
        )
    log(f"creating the Spark {java.spark_version} virtualenv (pip install; a few minutes the first time)")
    _run("python -m venv", [sys.executable, "-m", "venv", str(root / "venv")])
    pip = [str(root / "venv" / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    _run("pip install", [*pip, "install", *venv_requirements(java.name)])
    jars = sorted(str(root / "jars" / jar.name) for jar in jars_dir.iterdir() if jar.suffix == ".jar")
    env = JavaEnv(
        root=str(root),
        python=str(root / "venv" / "bin" / "python"),
        jars=jars,
        spark_version=java.spark_version,
        iceberg_version=java.iceberg_version,
    )
    (root / "env.json").write_text(json.dumps(asdict(env), indent=1))
    log(f"ready in {time.monotonic() - started:.0f}s: {root}")
    return env


def main(argv: list[str] | None = None) -> int:
    """CLI: build an environment (or all), print it as JSON, or run a command in it."""
    parser = argparse.ArgumentParser(prog="python -m tests.support.java_env", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--env",
        default=DEFAULT_GENERATION,
        choices=[*JAVA_GENERATIONS, "all"],
        help="the environment: an Iceberg Java generation or spark4.3 (default %(default)s; 'all' with build only)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build the environment unless it is there; print its folder")
    sub.add_parser("info", help="print the environment as JSON (building it first when missing)")
    run = sub.add_parser("run", help="run a command with the venv's python/pyspark and the repository importable")
    run.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.env == "all" and args.command != "build":
        parser.error("--env all goes with build only")
    names = list(JAVA_GENERATIONS) if args.env == "all" else [args.env]
    try:
        envs = [ensure(name) for name in names]
    except JavaEnvError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.command == "build":
        print("\n".join(env.root for env in envs))
        return 0
    env = envs[0]
    if args.command == "info":
        print(json.dumps({**asdict(env), "process_env_pythonpath": str(REPO_ROOT)}, indent=1))
        return 0
    command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not command:
        parser.error("run needs a command, e.g. run -- python -m pytest tests/spark_jobs")
    return subprocess.call(command, env=env.process_env())


if __name__ == "__main__":
    sys.exit(main())
