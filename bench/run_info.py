"""What every benchmark run records beside its figures: machine load, engine commit, a checksum of the rows."""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import io
import os
import platform
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

REPO_ROOT = Path(__file__).resolve().parent.parent


def load_average() -> str:
    """The first three fields of /proc/loadavg (1, 5 and 15 minutes)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def engine_commit() -> str:
    """The repository's HEAD commit, with ``+dirty`` when spark_jobs/ has uncommitted changes."""
    head = _git("rev-parse", "--short", "HEAD")
    return head + ("+dirty" if _git("status", "--porcelain", "--", "spark_jobs") else "")


def _git(*args: str) -> str:
    """Output of a git command in the repository."""
    done = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip()


def rows_checksum(rows: pa.Table) -> str:
    """sha256 (first 16 hex digits) of ``rows`` as uncompressed Parquet with fixed settings.

    Equal tables (same schema, same rows in the same order) give equal checksums; callers sort and cast first.
    """
    buffer = io.BytesIO()
    pq.write_table(rows, buffer, compression="none", row_group_size=1_000_000, write_statistics=False)
    return hashlib.sha256(buffer.getvalue()).hexdigest()[:16]


@dataclass(frozen=True)
class RunStart:
    """The machine load and engine commit when a run started (taken before any work)."""

    loadavg: str = field(default_factory=load_average)
    commit: str = field(default_factory=engine_commit)

    def header(self, arguments: argparse.Namespace) -> dict[str, Any]:
        """The report fields every benchmark writes first: date, machine, engine commit, arguments."""
        return {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="minutes"),
            "machine": {
                "nproc": os.cpu_count(),
                "loadavg_start": self.loadavg,
                "loadavg_end": load_average(),
                "python": platform.python_version(),
                "spark": "local[2]",
            },
            "engine_commit": {"start": self.commit, "end": engine_commit()},
            "arguments": {key: str(value) for key, value in vars(arguments).items()},
        }
