"""README command 1 as a user runs it: ``bash scripts/demo.sh``, then ``bash scripts/demo.sh ui`` and a browser.

1. The demo runs the demo DAG (2,000 rows per batch) through Airflow's LocalExecutor: its console shows each task's
   start and end as they happen, at the times the tasks logged, the report, and where the HTML report is.
2. ``demo.sh ui`` serves Airflow on the port asked for, on 127.0.0.1 only, and prints the URL and the login.
3. Headless Chromium signs in with what was printed, opens every task of the run and finds its log, then follows
   the compact task's "Compaction report" link to the report the provider's plugin serves, and checks what it shows.
4. Ctrl-C stops every Airflow process the UI started.

The demo's own environment (no install: ``AIP_NO_INSTALL=1`` on this interpreter's virtualenv); one run per CI.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import psutil
import pytest

from tests.support.browser import Browser, browser_session, log_in_to_airflow, wait_for
from tests.support.services import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
DAG_ID = "iceberg_demo_pipeline"
TASKS = (
    "generate",
    "ingest_first",
    "ingest_second",
    "upsert",
    "delete",
    "read_current",
    "read_first_snapshot",
    "files_before_compaction",
    "compact",
    "report",
)
SPARK_TASKS = ("ingest_first", "ingest_second", "upsert", "delete", "read_current", "read_first_snapshot", "compact")
ROWS = 2000
START_LINE = re.compile(r"^\[demo\] (\d\d:\d\d:\d\d)  (\w+) \.\.\.$")
DONE_LINE = re.compile(r"^\[demo\] (\d\d:\d\d:\d\d)  (\w+) done \((\d+) s\)$")

pytestmark = [pytest.mark.spark, pytest.mark.airflow]


def demo_env(demo_dir: Path, port: int) -> dict[str, str]:
    """The user's environment: no Airflow or pyiceberg settings of the test session, this virtualenv as it is."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AIRFLOW", "PYICEBERG_", "ICEBERG_", "AIP_", "SPARK_", "PYSPARK_"))
    }
    env.update(
        {
            "AIP_VENV": sys.prefix,
            "AIP_NO_INSTALL": "1",
            "AIP_DEMO_DIR": str(demo_dir),
            "ICEBERG_DEMO_ROWS": str(ROWS),
            "AIRFLOW__API__PORT": str(port),
        }
    )
    return env


@dataclass
class Console:
    """A command's output lines as they arrive, with what was true of the run when each arrived."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    notes: dict[str, bool] = field(default_factory=dict)

    def read(self, on_line=None) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            if on_line is not None:
                on_line(self, self.lines[-1])

    def text(self) -> str:
        return "\n".join(self.lines)


def task_logs(demo_dir: Path) -> dict[str, Path]:
    """The run's task log files by task id (the first attempt)."""
    logs = demo_dir / "airflow" / "logs" / f"dag_id={DAG_ID}"
    return {path.parent.name.removeprefix("task_id="): path for path in logs.glob("run_id=*/task_id=*/attempt=1.log")}


def first_event_time(log: Path) -> str:
    """The local ``HH:MM:SS`` of a task log's first event."""
    event = json.loads(log.read_text().splitlines()[0])
    return datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).astimezone().strftime("%H:%M:%S")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Console]]:
    """``bash scripts/demo.sh`` run to its end; its directory and console."""
    demo_dir = tmp_path_factory.mktemp("demo")
    process = subprocess.Popen(
        ["bash", str(REPO_ROOT / "scripts" / "demo.sh")],
        cwd=REPO_ROOT,
        env=demo_env(demo_dir, free_port()),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    console = Console(process)

    def note_progress(console: Console, line: str) -> None:
        # Line by line: a task's end is on the console before the task two steps later has even started.
        if DONE_LINE.match(line) and " ingest_first done" in line:
            console.notes["ingest_first done before delete started"] = "delete" not in task_logs(demo_dir)

    try:
        console.read(note_progress)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 0, console.text()[-5000:]
    yield demo_dir, console


def test_the_console_shows_every_task_as_it_runs_at_its_own_times_then_the_report(demo) -> None:
    demo_dir, console = demo
    lines = console.lines
    starts = {m[2]: (index, m[1]) for index, line in enumerate(lines) if (m := START_LINE.match(line))}
    ends = {m[2]: index for index, line in enumerate(lines) if (m := DONE_LINE.match(line))}
    assert set(starts) == set(ends) == set(TASKS), console.text()
    logs = task_logs(demo_dir)
    for task in TASKS:
        assert starts[task][0] < ends[task], task
        assert starts[task][1] == first_event_time(logs[task]), task  # the time the task itself logged
    for earlier, later in (("generate", "ingest_first"), ("ingest_first", "ingest_second"), ("compact", "report")):
        assert ends[earlier] < starts[later][0], (earlier, later)
    assert console.notes == {"ingest_first done before delete started": True}
    text = console.text()
    # Each Spark job's own phases are on the console, indented with their time.
    assert re.search(r"^ {9}\d\d:\d\d:\d\d  (\[\w+\] )?Spark started in [\d.]+ s", text, re.MULTILINE), text
    # Two batches of 2,000, plus 20 new ids from the upsert, minus 40 deleted ids; the first snapshot has 2,000.
    assert re.search(r"rows at current snapshot\s+3,980\s", text), text
    assert re.search(r"rows at first snapshot\s+2,000\s", text), text
    assert re.search(r"rows after compaction\s+3,980\s", text), text
    report = re.search(r"^\[demo\] the compaction report: (\S+)$", text, re.MULTILINE)
    assert report and Path(report[1]).is_file() and Path(report[1]).is_relative_to(demo_dir), text
    assert "bash scripts/demo.sh ui" in text
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("demo", uri=f"sqlite:///{demo_dir}/catalog.db", warehouse=f"file://{demo_dir}/warehouse")
    assert catalog.load_table("demo.events").current_snapshot().summary.operation.value == "replace"


@dataclass
class DemoUi:
    """``demo.sh ui`` running: its URL and login as printed, its console, its process group."""

    process: subprocess.Popen[str]
    console: Console
    url: str
    user: str
    password: str


@pytest.fixture(scope="module")
def demo_ui(demo) -> Iterator[DemoUi]:
    demo_dir, _ = demo
    port = free_port()
    process = subprocess.Popen(
        ["bash", str(REPO_ROOT / "scripts" / "demo.sh"), "ui"],
        cwd=REPO_ROOT,
        env=demo_env(demo_dir, port),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    console = Console(process)
    reader = threading.Thread(target=console.read, daemon=True)
    reader.start()
    try:
        wait_for(lambda: "log in as" in console.text() or process.poll() is not None, 600, "demo.sh ui ready")
        text = console.text()
        up = re.search(r"open (http://\S+) in a browser \(listening on 127\.0\.0\.1 only\)", text)
        login = re.search(r"log in as (\w+) with the password (\S+) \(kept in ", text)
        assert up and login, text
        assert up[1] == f"http://127.0.0.1:{port}/", text
        yield DemoUi(process, console, up[1], login[1], login[2])
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)  # Ctrl-C
            try:
                process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def listening_addresses(port: int) -> set[str]:
    return {c.laddr.ip for c in psutil.net_connections("tcp") if c.status == "LISTEN" and c.laddr.port == port}


def test_the_ui_listens_on_loopback_at_the_printed_port(demo_ui: DemoUi) -> None:
    port = urllib.parse.urlsplit(demo_ui.url).port
    assert port is not None
    assert listening_addresses(port) == {"127.0.0.1"}
    assert "localhost:8080" not in demo_ui.console.text()


def open_task(browser: Browser, ui: DemoUi, run_id: str, task: str, tab: str = "") -> None:
    quoted = urllib.parse.quote(run_id, safe="")
    browser.open(f"{ui.url.rstrip('/')}/dags/{DAG_ID}/runs/{quoted}/tasks/{task}{tab}")


def test_a_browser_sees_every_tasks_log_and_opens_the_compaction_report(demo, demo_ui: DemoUi, tmp_path) -> None:
    demo_dir, _ = demo
    logs = task_logs(demo_dir)
    run_id = next(iter(logs.values())).parents[1].name.removeprefix("run_id=")
    with browser_session() as browser:
        log_in_to_airflow(browser, demo_ui.url, demo_ui.user, demo_ui.password)
        for task in TASKS:
            open_task(browser, demo_ui, run_id, task)
            # The log as the UI renders it: the task's first line and its last lines, read from the log file.
            events = [json.loads(line)["event"] for line in logs[task].read_text().splitlines()]
            expected = ["Spark-Submit cmd", '"status":"ok"'] if task in SPARK_TASKS else ["Done. Returned value"]
            if task == "report":
                expected.append("Iceberg demo report: demo.events in catalog demo")
            if task == "compact":
                expected.append("compaction report for demo.events")
            assert all(any(marker in event for event in events) for marker in expected), (task, events)
            try:
                wait_for(
                    lambda expected=expected: all(marker in browser.text_through_scrolling() for marker in expected),
                    90,
                    f"the log of {task}",
                )
            except TimeoutError:
                browser.screenshot(tmp_path / f"{task}.png")
                raise AssertionError(f"{task}: log not shown; page text:\n{browser.page_text()[:3000]}") from None
            assert "Log file not found" not in browser.page_text() and "Could not read" not in browser.page_text()

        open_task(browser, demo_ui, run_id, "compact", "/details")
        link = wait_for(lambda: browser.find_by_text("a", "Compaction report"), 90, "the Compaction report link")
        href = link.attribute("href") or ""
        assert href.startswith(f"{demo_ui.url}iceberg/reports/{DAG_ID}/"), href
        link.click()
        wait_for(lambda: "Compaction report: demo.events" in browser.title, 60, "the compaction report page")
        assert browser.url == href
        page = browser.page_text()
        rows = {line.split("\t")[0]: line.split("\t")[1:] for line in page.splitlines() if "\t" in line}
        assert rows["data files"] == ["6", "1"], page
        assert rows["delete files"] == ["2", "0"], page
        assert rows["data rows"] == ["4,120", "3,980"], page
        assert len(browser.find_all("svg")) == 2, page

    # Without a session, the same link asks a browser to log in first and an API client gets 401.
    request = urllib.request.Request(href, headers={"Accept": "text/html"})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    with pytest.raises(urllib.error.HTTPError) as redirect:
        urllib.request.build_opener(NoRedirect).open(request, timeout=30)
    assert redirect.value.code == 303 and "/login" in redirect.value.headers["location"]
    with pytest.raises(urllib.error.HTTPError) as unauthenticated:
        urllib.request.urlopen(href, timeout=30)
    assert unauthenticated.value.code == 401


def test_ctrl_c_stops_every_airflow_process_it_started(demo_ui: DemoUi) -> None:
    port = urllib.parse.urlsplit(demo_ui.url).port
    assert port is not None
    group = os.getpgid(demo_ui.process.pid)
    os.killpg(group, signal.SIGINT)
    demo_ui.process.wait(timeout=90)

    def left() -> list[int]:
        return [process.pid for process in psutil.process_iter() if _serves_port(process, port)]

    wait_for(lambda: not left() and not listening_addresses(port), 60, "every Airflow process gone")


def _serves_port(process: psutil.Process, port: int) -> bool:
    """Whether ``process`` is one of the UI's Airflow processes (they run with its ``AIRFLOW__API__PORT``)."""
    try:
        return process.environ().get("AIRFLOW__API__PORT") == str(port) and "airflow" in " ".join(process.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False
