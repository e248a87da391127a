"""What every benchmark run records beside its figures: machine load, engine commit, a checksum of the rows."""

from __future__ import annotations

import hashlib
import io
import subprocess
from pathlib import Path

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
