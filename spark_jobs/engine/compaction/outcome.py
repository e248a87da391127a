"""What a compaction's rewrite did: its commits, the groups committed and failed, rows, waves, counters, seconds."""

from __future__ import annotations

from dataclasses import dataclass, field

from spark_jobs.engine.commit.committer import CommitResult
from spark_jobs.engine.shared.metrics import ScanMetrics


@dataclass
class RewriteOutcome:
    """What a rewrite committed, batch by batch, and the counters of its reads."""

    commits: list[CommitResult] = field(default_factory=list)
    committed_groups: list[int] = field(default_factory=list)
    failed_groups: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    removed_delete_files: int = 0
    rows_written: int = 0
    waves: int = 0  # Spark jobs run to rewrite groups, one per wave
    counters: ScanMetrics = field(default_factory=ScanMetrics)
    seconds: dict[str, float] = field(default_factory=lambda: {"rewrite": 0.0, "commit": 0.0})
