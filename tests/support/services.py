"""Real services for the integration tests: PostgreSQL 15 and a Spark standalone master + worker on 127.0.0.1.

Each service is started on demand by a session fixture, runs as a child process whose PID we hold, and is stopped
by that PID at session end (and at interpreter exit, should the session die). A service that cannot start raises
``ServiceStartError`` with its log tail, so the tests that need it fail instead of being skipped.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

LOOPBACK = "127.0.0.1"


class ServiceStartError(RuntimeError):
    """A test service did not come up; the message carries the command and the tail of its log."""


def free_port() -> int:
    """An unused TCP port on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((LOOPBACK, port)) == 0


def _log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class ManagedProcess:
    """A child process started by the test setup and stopped by its PID (its whole process group)."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    stop_signal: int = signal.SIGTERM

    def stop(self, timeout: float = 20.0) -> None:
        """Stop the process group: ``stop_signal``, then SIGKILL after ``timeout`` seconds."""
        if self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, self.stop_signal)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=timeout)


def _start(
    name: str,
    argv: list[str],
    log_path: Path,
    *,
    env: dict[str, str] | None = None,
    user: str | None = None,
    stop_signal: int = signal.SIGTERM,
) -> ManagedProcess:
    log = log_path.open("ab")
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, user=user, start_new_session=True)
    managed = ManagedProcess(name, process, log_path, stop_signal)
    atexit.register(managed.stop)
    return managed


def _wait_until(what: str, ready: Callable[[], bool], managed: ManagedProcess, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if managed.process.poll() is not None:
            raise ServiceStartError(
                f"{what} exited with code {managed.process.returncode} before it was ready; log "
                f"{managed.log_path}:\n{_log_tail(managed.log_path)}"
            )
        if ready():
            return
        time.sleep(0.25)
    managed.stop()
    raise ServiceStartError(
        f"{what} was not ready after {timeout:.0f}s; log {managed.log_path}:\n{_log_tail(managed.log_path)}"
    )


# --------------------------------------------------------------------------------------------------------------------
# PostgreSQL


def postgres_bin_dir() -> Path:
    """The directory holding Debian's PostgreSQL server binaries (initdb, postgres), newest major first."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    for candidate in candidates:
        if (Path(candidate) / "initdb").exists():
            return Path(candidate)
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    raise ServiceStartError(
        "PostgreSQL server binaries not found (looked in /usr/lib/postgresql/*/bin and PATH); "
        "install them with: apt-get install -y postgresql"
    )


@dataclass
class PostgresServer:
    """A throwaway PostgreSQL cluster: data directory and socket in a temp dir, TCP on 127.0.0.1 only."""

    port: int
    base_dir: Path
    managed: ManagedProcess
    user: str = "postgres"
    argv: tuple[str, ...] = ()
    run_as: str | None = None

    def uri(self, database: str = "postgres", driver: str = "postgresql+psycopg2") -> str:
        """SQLAlchemy URI of ``database`` on this server."""
        return f"{driver}://{self.user}@{LOOPBACK}:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create ``name`` (if missing) and return its SQLAlchemy URI."""
        import psycopg2

        conn = psycopg2.connect(host=LOOPBACK, port=self.port, user=self.user, dbname="postgres")
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if cur.fetchone() is None:
                cur.execute(f'CREATE DATABASE "{name}"')
        conn.close()
        return self.uri(name)

    def stop(self) -> None:
        """Stop the server and remove its data directory."""
        self.managed.stop()
        shutil.rmtree(self.base_dir, ignore_errors=True)

    def halt(self) -> None:
        """Stop the server (fast shutdown: open sessions are ended), keeping its data for ``resume``."""
        self.managed.stop()

    def resume(self, timeout: float = 60.0) -> None:
        """Start the halted server again on the same data directory and port, and wait until it takes sessions."""
        log_path = self.base_dir / "postgres.log"
        self.managed = _start("postgres", list(self.argv), log_path, user=self.run_as, stop_signal=signal.SIGINT)
        _wait_until("PostgreSQL", lambda: _port_open(self.port), self.managed, timeout)
        _wait_for_sessions(self, timeout)


def start_postgres(timeout: float = 60.0) -> PostgresServer:
    """initdb a fresh cluster (as user ``postgres`` when run as root: initdb refuses root) and start it."""
    bin_dir = postgres_bin_dir()
    run_as = "postgres" if os.geteuid() == 0 else None
    base_dir = Path(tempfile.mkdtemp(prefix="aip-postgres-"))
    data_dir, socket_dir = base_dir / "data", base_dir / "socket"
    socket_dir.mkdir()
    if run_as:
        account = pwd.getpwnam(run_as)
        for path in (base_dir, socket_dir):
            os.chown(path, account.pw_uid, account.pw_gid)
    init = subprocess.run(
        [str(bin_dir / "initdb"), "-D", str(data_dir), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"],
        capture_output=True,
        text=True,
        user=run_as,
        check=False,
    )
    if init.returncode != 0:
        raise ServiceStartError(f"initdb failed ({init.returncode}): {init.stderr.strip() or init.stdout.strip()}")
    port = free_port()
    log_path = base_dir / "postgres.log"
    if run_as:
        os.chown(base_dir, account.pw_uid, account.pw_gid)
    argv = [
        str(bin_dir / "postgres"),
        "-D",
        str(data_dir),
        "-p",
        str(port),
        "-h",
        LOOPBACK,
        "-k",
        str(socket_dir),
        "-c",
        "fsync=off",
        "-c",
        "synchronous_commit=off",
        "-c",
        "full_page_writes=off",
    ]
    # SIGINT is PostgreSQL's fast shutdown: it ends open sessions (pooled catalog connections) instead of waiting.
    managed = _start("postgres", argv, log_path, user=run_as, stop_signal=signal.SIGINT)
    _wait_until("PostgreSQL", lambda: _port_open(port), managed, timeout)
    server = PostgresServer(port=port, base_dir=base_dir, managed=managed, argv=tuple(argv), run_as=run_as)
    try:
        _wait_for_sessions(server, timeout)
    except ServiceStartError:
        server.stop()
        raise
    return server


def _wait_for_sessions(server: PostgresServer, timeout: float) -> None:
    """Wait until the server takes a session (its port opens slightly before it does)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            server.create_database("postgres")
            return
        except Exception as exc:  # psycopg2.OperationalError while starting up
            if time.monotonic() > deadline:
                raise ServiceStartError(f"PostgreSQL on port {server.port} refused connections: {exc}") from exc
            time.sleep(0.25)


# --------------------------------------------------------------------------------------------------------------------
# Spark standalone


def spark_home() -> Path:
    """SPARK_HOME of the pip-installed pyspark (it ships bin/spark-class and the jars)."""
    import pyspark

    return Path(pyspark.__file__).parent


def spark_process_env() -> dict[str, str]:
    """Environment for Spark processes: loopback only, this interpreter on the Python side."""
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP=LOOPBACK,
        SPARK_LOCAL_HOSTNAME="localhost",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    return env


@dataclass
class SparkStandalone:
    """A Spark standalone master and one worker on 127.0.0.1."""

    master_url: str
    master_ui_port: int
    base_dir: Path
    processes: list[ManagedProcess] = field(default_factory=list)

    @property
    def worker_pid(self) -> int:
        """PID of the worker JVM (the executors it launches are its children)."""
        return self.processes[-1].process.pid

    def alive_workers(self) -> int:
        """How many workers the master reports ALIVE (from its JSON status page)."""
        try:
            with urllib.request.urlopen(f"http://{LOOPBACK}:{self.master_ui_port}/json/", timeout=10) as response:
                status = json.load(response)
        except OSError:
            return 0
        return int(status.get("aliveworkers", 0))

    def stop(self) -> None:
        """Stop the worker, then the master, and remove the work directory."""
        for managed in reversed(self.processes):
            managed.stop()
        shutil.rmtree(self.base_dir, ignore_errors=True)


def start_spark_standalone(
    *, worker_cores: int = 2, worker_memory: str = "2g", timeout: float = 180.0
) -> SparkStandalone:
    """Start ``Master`` and ``Worker`` through ``bin/spark-class`` (pip's pyspark has no start-master.sh)."""
    home = spark_home()
    spark_class = str(home / "bin" / "spark-class")
    base_dir = Path(tempfile.mkdtemp(prefix="aip-spark-"))
    env = spark_process_env()
    master_port, master_ui_port, worker_ui_port = free_port(), free_port(), free_port()
    cluster = SparkStandalone(f"spark://{LOOPBACK}:{master_port}", master_ui_port, base_dir)
    master = _start(
        "spark-master",
        [
            spark_class,
            "org.apache.spark.deploy.master.Master",
            "--host",
            LOOPBACK,
            "--port",
            str(master_port),
            "--webui-port",
            str(master_ui_port),
        ],
        base_dir / "master.log",
        env=env,
    )
    cluster.processes.append(master)
    try:
        _wait_until("Spark master", lambda: _port_open(master_port) and _port_open(master_ui_port), master, timeout)
        worker = _start(
            "spark-worker",
            [
                spark_class,
                "org.apache.spark.deploy.worker.Worker",
                cluster.master_url,
                "--host",
                LOOPBACK,
                "--cores",
                str(worker_cores),
                "--memory",
                worker_memory,
                "--webui-port",
                str(worker_ui_port),
                "--work-dir",
                str(base_dir / "work"),
            ],
            base_dir / "worker.log",
            env=env,
        )
        cluster.processes.append(worker)
        _wait_until("Spark worker registration", lambda: cluster.alive_workers() >= 1, worker, timeout)
    except ServiceStartError:
        cluster.stop()
        raise
    return cluster


# ::ffff:0:0/96 as /proc/net/tcp6 prints it (four 32-bit words, each in host byte order).
_IPV4_MAPPED = "0000000000000000FFFF0000"


def listening_addresses(pid: int) -> set[str]:
    """The local addresses (``ip:port``) of the TCP sockets process ``pid`` listens on, from /proc (an IPv4-mapped
    IPv6 address, as a JVM listens on 127.0.0.1, as its IPv4 address; other IPv6 addresses in /proc's hex)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    addresses = set()
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            hex_ip, hex_port = fields[1].split(":")
            assert len(hex_ip) == width
            if width == 32 and hex_ip.startswith(_IPV4_MAPPED):
                hex_ip = hex_ip[len(_IPV4_MAPPED) :]
            ip = ".".join(str(int(hex_ip[i : i + 2], 16)) for i in (6, 4, 2, 0)) if len(hex_ip) == 8 else hex_ip
            addresses.add(f"{ip}:{int(hex_port, 16)}")
    return addresses
