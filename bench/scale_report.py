"""The scale benchmark's cost-growth tables in Markdown, from one or more result files of ``scale_benchmark.py``.

Records of later files replace those of earlier ones with the same job, size, shape and case, so a part re-run
(``--jobs``, ``--sizes``, ``--shapes``) updates its rows and keeps the rest. Per job, one row per case and one
column per table size: the time of each side (medians of the rounds), ours / Java (median of per-round ratios), and
for planning the memory above the process's start.
"""

from __future__ import annotations

from typing import Any

import scale_tables as st

CASE_KEYS = ("snapshot", "filter")


def merged(reports: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every record, later reports winning on the same key; the tables of every report."""
    by_key: dict[tuple, dict[str, Any]] = {}
    tables: dict[str, Any] = {}
    for report in reports:
        tables.update(report.get("tables", {}))
        for stored in report.get("records", []):
            record = {**stored, "_date": report.get("date"), "_commit": report.get("engine_commit", {}).get("start")}
            by_key[_key(record)] = record
    return list(by_key.values()), tables


def _key(record: dict[str, Any]) -> tuple:
    return (record["job"], record["files"], record["shape"], *(record.get(key) for key in CASE_KEYS))


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"**{value:.2f}x**"


def _sizes(records: list[dict[str, Any]]) -> list[int]:
    return sorted({record["files"] for record in records})


def _grid(
    records: list[dict[str, Any]], cell: Any, case_columns: tuple[str, ...], title: str, legend: str
) -> list[str]:
    """One row per (shape, case), one column per size; ``cell(record)`` fills a cell."""
    if not records:
        return []
    sizes = _sizes(records)
    rows: dict[tuple, dict[int, dict[str, Any]]] = {}
    for record in records:
        key = (record["shape"], *(str(record.get(column, "")) for column in case_columns))
        rows.setdefault(key, {})[record["files"]] = record
    header = ["shape", *case_columns, *(st.size_label(size) for size in sizes)]
    lines = [f"### {title}", "", legend, "", "| " + " | ".join(header) + " |"]
    lines.append("|" + "---|" * (1 + len(case_columns)) + "---:|" * len(sizes))
    for key in sorted(rows, key=_row_order):
        cells = [cell(rows[key][size]) if size in rows[key] else "" for size in sizes]
        lines.append("| " + " | ".join([*key, *cells]) + " |")
    return [*lines, ""]


def _row_order(key: tuple) -> tuple:
    shape_order = [*st.SHAPES, "expire"]
    orders = {"base": 0, "deletes": 1, "point": 0, "partition": 1, "none": 2, "full": 3, "range_0.1pct": 4}
    return (
        shape_order.index(key[0]) if key[0] in shape_order else 99,
        *(orders.get(part, 9) for part in key[1:]),
    )


def _short(check: str, limit: int = 400) -> str:
    """A check as one readable line (a result that lists every snapshot id is cut)."""
    return check if len(check) <= limit else check[: limit - 1] + "…"


def _timing_cell(record: dict[str, Any]) -> str:
    summary = record["summary"]
    text = f"{_seconds(summary.get('java_s'))} / {_seconds(summary.get('ours_s'))}"
    if "pyiceberg_s" in summary:
        text += f" / {_seconds(summary.get('pyiceberg_s'))}"
    text += f" ({_ratio(summary.get('ratio'))}"
    if summary.get("cpu_ratio") is not None:
        text += f"; CPU {summary['cpu_ratio']:.2f}x"
    text += ")"
    for key, value in summary.items():  # other sides of ours, e.g. a planning mode: "ours_distributed_s"
        if key.startswith("ours_") and key.endswith("_s") and key not in ("ours_s", "ours_once_s"):
            text += f"; {key[5:-2]} {_seconds(value)}"
    if any("DIFFER" in check for check in record.get("checks", [])):
        text += " ⚠"
    return text


def _memory_cell(record: dict[str, Any]) -> str:
    runs = record["runs"]
    ours = runs.get("ours", [{}])[0]
    pyiceberg = runs.get("pyiceberg", [{}])[0]
    java = runs.get("java", [{}])[0]
    return (
        f"{ours.get('peak_above_start_mib', '-')} / {pyiceberg.get('peak_above_start_mib', '-')} / "
        f"{java.get('heap_peak_above_mib', '-')} ({java.get('heap_retained_above_mib', '-')})"
    )


def _first_plan_cell(record: dict[str, Any]) -> str:
    runs = record["runs"]
    ours = runs.get("ours", [{}])[0].get("seconds")
    pyiceberg = runs.get("pyiceberg", [{}])[0].get("seconds")
    return f"{_seconds(ours)} / {_seconds(pyiceberg)}"


def _profile_cell(record: dict[str, Any]) -> str:
    result = record["runs"]["ours"][0]
    seconds = result.get("seconds_under_profiler") or 0.0
    files = result.get("table_data_files") or 0
    manifests = result.get("manifests") or 0
    parts = result.get("parts_seconds", {})
    top = sorted(parts.items(), key=lambda kv: -kv[1])[:3]
    shares = ", ".join(f"{name} {100 * value / seconds:.0f}%" for name, value in top if seconds)
    per_file = f"{1e6 * seconds / files:.0f} µs/file" if files else ""
    per_manifest = f"{1e3 * seconds / manifests:.0f} ms/manifest" if manifests else ""
    return f"{_seconds(seconds)} s; {per_file}; {per_manifest}; {shares}"


def _sensor_cell(record: dict[str, Any]) -> str:
    """Java / ours warm (ours/Java; CPU) where Java's ``files`` table ran beside it; ours alone in older runs; the
    peak memory of ours once in a fresh process."""
    once = record["runs"].get("ours_once", [{}])[0]
    memory = f"{once.get('peak_above_start_mib', '-')} MiB"
    if "java_s" in record["summary"]:
        return f"{_timing_cell(record)}; {memory}"
    return f"{_seconds(record['summary'].get('ours_s'))} s warm; {memory}"


def _load_range(records: list[dict[str, Any]]) -> str:
    values = [float(load.split()[0]) for record in records for load in record.get("load", []) if load]
    return f"{min(values):.1f}-{max(values):.1f}" if values else "-"


def markdown(reports: list[dict[str, Any]]) -> str:
    """The report (module doc)."""
    records, tables = merged(reports)
    by_job: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_job.setdefault(record["job"], []).append(record)
    first = reports[-1] if reports else {}
    lines = ["# Production-size tables: planning and maintenance against Iceberg Java", ""]
    for report in reports:
        machine = report.get("machine", {})
        lines.append(
            f"- run {report.get('date')}: engine {report.get('engine_commit', {}).get('start')}, "
            f"nproc {machine.get('nproc')}, load {machine.get('loadavg_start')} -> {machine.get('loadavg_end')}; "
            f"`{report.get('command', '')}`"
        )
    versions = first.get("versions", {})
    if versions:
        lines.append(f"- versions: {versions}")
    lines += [
        "- The machine is shared (2 cores, other test runs): every job records the 1-minute load before and after "
        "it; the sides alternate in every round so that their ratio holds under the same load.",
        "",
        "## Tables",
        "",
        "| table | files | shape | how | data files | delete files | rows | data manifests (MiB) | delete manifests |",
        "|---|---:|---|---|---:|---:|---:|---|---:|",
    ]
    for name in sorted(tables, key=lambda n: (tables[n]["files"], n)):
        table = tables[name]
        lines.append(
            f"| {name} | {st.size_label(table['files'])} | {table['description']} | {table['how']} | "
            f"{table['data_files']:,} | {table['delete_files']:,} | {table['rows']:,} | "
            f"{table['data_manifests']} ({table['data_manifest_bytes'] / 2**20:.1f}) | {table['delete_manifests']} |"
        )
    lines.append("")
    plan = by_job.get("plan", [])
    lines += _grid(
        plan,
        _timing_cell,
        CASE_KEYS,
        "Warm planning, seconds (median of the rounds)",
        "Cell: Java `planTasks` / ours `open_read_session(...).tasks` / pyiceberg `plan_files()` (ours/Java, median "
        "of per-round ratios; CPU: the same ratio of the CPU seconds each process spent, all its threads, which "
        "holds under load where a single-threaded planner's wall time does not); ⚠: the sides planned different "
        f"files, tasks or deletes (see checks). Load {_load_range(plan)}.",
    )
    memory = by_job.get("memory", [])
    lines += _grid(
        memory,
        _memory_cell,
        CASE_KEYS,
        "Planning memory, MiB above the process's start",
        "Cell: ours peak RSS / pyiceberg peak RSS (each in a fresh process, after imports and the table load) / "
        "Java heap: peak of the heap pools during the plan, garbage included (heap retained after a full GC with "
        f"the tasks held), in its warm JVM. Load {_load_range(memory)}.",
    )
    lines += _grid(
        memory,
        _first_plan_cell,
        CASE_KEYS,
        "First plan in a fresh process, seconds",
        "Cell: ours / pyiceberg, the plan the memory row measured (nothing cached yet; the table already loaded).",
    )
    profile = by_job.get("profile", [])
    lines += _grid(
        profile,
        _profile_cell,
        CASE_KEYS,
        "Where our planning time goes (one warm plan under cProfile)",
        "Cell: seconds under the profiler (about 1.5-2x the plain time); per data file of the table; per manifest "
        "read; the three parts with the most own time (``scale_ours.PROFILE_PARTS``).",
    )
    cold = by_job.get("cold", [])
    lines += _grid(
        cold,
        _timing_cell,
        CASE_KEYS,
        "Cold read job: one spark-submit, count(*) and sum(price)",
        "Cell: Java (`scale_java_job.py aggregate`) / ours (`read.py --aggregate`), seconds from launch to exit "
        "(ours/Java); `local`, `distributed`: ours with that `--planning-mode` (`--cold-planning-modes`). "
        f"Load {_load_range(cold)}.",
    )
    maintenance = [record for job in ("compact", "orphans", "expire", "upsert") for record in by_job.get(job, [])]
    for record in maintenance:
        record["work"] = record["job"]
    lines += _grid(
        maintenance,
        _timing_cell,
        ("work",),
        "Maintenance and writes at scale",
        "Cell: Java / ours seconds (ours/Java). compact: warm planning, Java's `BinPackRewriteFilePlanner.plan()` "
        "against `plan_rewrite`; orphans: remove-orphan-files dry run, one spark-submit each; expire: "
        f"expire-snapshots of {st.EXPIRE_SNAPSHOTS:,} snapshots, one spark-submit each; upsert: "
        f"{st.UPSERT_MATCHED + st.UPSERT_NEW:,} keys, MERGE INTO against `ingest.py --mode upsert`, one "
        f"spark-submit each. Load {_load_range(maintenance)}.",
    )
    sensor = by_job.get("sensor", [])
    lines += _grid(
        sensor,
        _sensor_cell,
        ("snapshot",),
        "Compaction-needed sensor from manifests",
        "Cell: Java / ours warm seconds (ours/Java; CPU), median: Java sums the live files per partition and content "
        "from its `files` metadata table (files, rows, bytes, small and fragment files, the data files' sizes), ours "
        "is the sensor's `compaction_stats.assess`; then the peak RSS above start of ours in a fresh process. Cells "
        "with ours alone come from runs before Java's side existed.",
    )
    scans = by_job.get("scan", [])
    lines += _grid(
        scans,
        _timing_cell,
        CASE_KEYS,
        "Scans through Spark at 50M+ rows (warm sessions)",
        "Cell: Java count+sum through Iceberg's Spark source / ours `spark_jobs.read.aggregate` (ours/Java). "
        f"Load {_load_range(scans)}.",
    )
    checks = [
        f"- {record['job']} {st.table_name(record['files'], record['shape'])} "
        f"{' '.join(str(record.get(k)) for k in CASE_KEYS if record.get(k))}: {_short(check)}"
        for record in records
        for check in record.get("checks", [])
        if "DIFFER" in check or record["job"] in ("orphans", "expire", "upsert", "compact")
    ]
    if checks:
        lines += ["### Checks", "", *checks, ""]
    return "\n".join(lines) + "\n"
