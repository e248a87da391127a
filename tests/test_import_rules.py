"""The package boundaries, checked on the source: every import statement of every module, read from its AST.

1. ``spark_jobs.engine`` imports neither pyspark nor airflow nor any other part of ``spark_jobs``.
2. The engine's subpackages form layers (``ENGINE_LAYERS``, in the order data flows): a module imports only from
   its own layer or the ones before it; the engine's root holds subpackages only.
3. pyspark is imported only by ``spark_jobs.spark``, the four entry points and ``job_support``; ``spark_jobs``
   never imports airflow; ``airflow_iceberg_provider`` and the example DAGs never import ``spark_jobs``, but for
   ``SHARED_WITH_AIRFLOW``: pyiceberg's model completed for format v3, which both sides need before they parse
   metadata, and the naming of a table's missing or damaged metadata files, which the jobs and the sensors report
   alike (pyiceberg alone, no Spark, no engine).
4. No import cycle between the modules of ``spark_jobs``.

Imports inside functions and under ``TYPE_CHECKING`` count like any other: a boundary holds for every line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

ENGINE = "spark_jobs.engine"
ENGINE_LAYERS = (
    "shared",
    "table",
    "planning",
    "parquet",
    "deletes",
    "read",
    "write",
    "commit",
    "ingest",
    "compaction",
    "maintenance",
    "jobs",
)
SHARED_WITH_AIRFLOW = ("spark_jobs.engine.shared.iceberg_model", "spark_jobs.engine.shared.damaged_metadata")
PYSPARK_MODULES = (
    "spark_jobs.spark",
    "spark_jobs.ingest",
    "spark_jobs.read",
    "spark_jobs.compact",
    "spark_jobs.maintain",
    "spark_jobs.job_support",
)


@dataclass(frozen=True)
class Import:
    """One imported module name, where it is imported."""

    importer: str
    target: str
    line: int

    def __str__(self) -> str:
        return f"{self.importer}:{self.line} imports {self.target}"


def module_name(root: Path, path: Path) -> str:
    """The dotted module name of ``path`` under ``root`` (a package's ``__init__`` is the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(root: Path, package: str) -> list[Import]:
    """Every import in every module of ``package`` under ``root``; ``from a import b`` names ``a.b`` if a module."""
    modules = {module_name(root, path): path for path in (root / package.replace(".", "/")).rglob("*.py")}
    known = set(modules) | {module_name(root, p) for p in root.rglob("*.py") if ".venv" not in p.parts}
    found = []
    for name, path in sorted(modules.items()):
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                found += [Import(name, alias.name, node.lineno) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in node.names:
                    candidate = f"{base}.{alias.name}"
                    found.append(Import(name, candidate if candidate in known else base, node.lineno))
    return found


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def engine_layer(name: str) -> int | None:
    """The layer index of an engine module, or None for the engine root."""
    parts = name.split(".")
    if len(parts) < 3:
        return None
    return ENGINE_LAYERS.index(parts[2]) if parts[2] in ENGINE_LAYERS else -1


def boundary_violations(root: Path) -> list[str]:
    """Every import that crosses a boundary of the module doc, as one readable line each."""
    problems = []
    spark_jobs = imports_of(root, "spark_jobs")
    for item in spark_jobs:
        if _within(item.target, "airflow"):
            problems.append(f"{item}: spark_jobs never imports airflow")
        if _within(item.target, "pyspark") and not any(_within(item.importer, m) for m in PYSPARK_MODULES):
            problems.append(f"{item}: only {', '.join(PYSPARK_MODULES)} import pyspark")
        if not _within(item.importer, ENGINE):
            continue
        if _within(item.target, "spark_jobs") and not _within(item.target, ENGINE):
            problems.append(f"{item}: the engine imports nothing of spark_jobs outside it")
        if not _within(item.target, ENGINE):
            continue
        importer_layer, target_layer = engine_layer(item.importer), engine_layer(item.target)
        if importer_layer is None or target_layer is None or -1 in (importer_layer, target_layer):
            problems.append(f"{item}: the engine's root holds only the subpackages {', '.join(ENGINE_LAYERS)}")
        elif target_layer > importer_layer:
            problems.append(f"{item}: {ENGINE_LAYERS[importer_layer]} may not import the later layer")
    problems += [
        f"{item}: {side} never imports spark_jobs"
        for side in ("airflow_iceberg_provider", "dags")
        for item in imports_of(root, side)
        if _within(item.target, "spark_jobs")
        and not (side == "airflow_iceberg_provider" and item.target in SHARED_WITH_AIRFLOW)
    ]
    engine_root = root / ENGINE.replace(".", "/")
    problems += [
        f"{path.relative_to(root)}: the engine's root holds only subpackages"
        for path in engine_root.glob("*.py")
        if path.name != "__init__.py"
    ]
    return problems + [f"import cycle: {' -> '.join(cycle)}" for cycle in import_cycles(spark_jobs)]


def import_cycles(imports: list[Import]) -> list[list[str]]:
    """One cycle (as a closed path of module names) per strongly connected group of mutually importing modules."""
    graph: dict[str, set[str]] = {}
    for item in imports:
        graph.setdefault(item.importer, set())
        if item.target != item.importer and _within(item.target, "spark_jobs"):
            graph[item.importer].add(item.target)
    cycles, state = [], dict.fromkeys(graph, 0)  # 0 unseen, 1 on the current path, 2 done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt, 2) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif state.get(nxt) == 0:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if state[start] == 0:
            visit(start, [start])
    return cycles


def test_the_project_keeps_every_boundary() -> None:
    assert boundary_violations(REPO_ROOT) == []


def test_every_engine_subpackage_is_a_named_layer() -> None:
    engine_root = REPO_ROOT / ENGINE.replace(".", "/")
    packages = sorted(p.parent.name for p in engine_root.glob("*/__init__.py"))
    assert packages == sorted(ENGINE_LAYERS)


def _write(root: Path, module: str, source: str) -> None:
    path = root / (module.replace(".", "/") + ".py")
    path.parent.mkdir(parents=True, exist_ok=True)
    for parent in path.relative_to(root).parents:
        if parent != Path(".") and not (root / parent / "__init__.py").exists():
            (root / parent / "__init__.py").write_text("")
    path.write_text(source)


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("spark_jobs.engine.table.catalog", "import pyspark.sql\n", "only spark_jobs.spark"),
        ("spark_jobs.engine.read.session", "def f():\n    from airflow import DAG\n", "never imports airflow"),
        ("spark_jobs.engine.table.catalog", "from spark_jobs.engine.read import session\n", "later layer"),
        ("spark_jobs.engine.planning.x", "from ..commit import committer\n", "later layer"),
        ("spark_jobs.engine.write.x", "from spark_jobs.spark import types\n", "outside it"),
        ("spark_jobs.engine.loose", "x = 1\n", "only subpackages"),
        ("airflow_iceberg_provider.hooks.x", "import spark_jobs.read\n", "never imports spark_jobs"),
        ("dags.demo", "def report():\n    from spark_jobs.engine.read import session\n", "dags never imports"),
        ("spark_jobs.spark.a", "from spark_jobs.spark import b\n", "import cycle"),
    ],
)
def test_a_crossed_boundary_is_reported(tmp_path: Path, module: str, source: str, expected: str) -> None:
    _write(tmp_path, "spark_jobs.engine.commit.committer", "")
    _write(tmp_path, "spark_jobs.engine.read.session", "")
    _write(tmp_path, "spark_jobs.spark.types", "")
    _write(tmp_path, "spark_jobs.spark.b", "import spark_jobs.spark.a\n")
    _write(tmp_path, "airflow_iceberg_provider.hooks.y", "")
    _write(tmp_path, "dags.other", "import airflow_iceberg_provider.hooks.y\n")
    assert boundary_violations(tmp_path) == []
    _write(tmp_path, module, source)
    problems = boundary_violations(tmp_path)
    assert problems, f"{module} crossing a boundary was not reported"
    assert any(expected in problem for problem in problems), problems
