"""The phases of a commit at which the suite injects a fault, and what each must leave behind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Phase:
    """A fault plan and its required outcome: whether the change is in the table, and how the job ends."""

    name: str
    plan: dict[str, Any] = field(default_factory=dict)
    lands: bool = True
    ends: str = "ok"  # "ok", "error" (certainly not committed) or "unknown" (CommitOutcomeUnknownError)


PHASES = [
    Phase("manifest write", {"writes_failing": 1, "write_path_contains": "-m"}, lands=False, ends="error"),
    Phase("manifest list write", {"writes_failing": 1, "write_path_contains": "snap-"}, lands=False, ends="error"),
    Phase("catalog call before it is sent", {"commits_failing_before_send": 1}),
    Phase("catalog unreachable", {"commits_failing_before_send": 99}, lands=False, ends="unknown"),
    Phase("catalog call raising after it landed", {"commits_failing_after_landing": 1}),
    Phase("reload after a landed commit", {"reloads_failing_after_landing": 99}),
    Phase(
        "call raising after it landed, no reload",
        {"commits_failing_after_landing": 1, "reloads_failing_after_landing": 99},
        ends="unknown",
    ),
    Phase(
        "cleanup",
        {"writes_failing": 1, "write_path_contains": "snap-", "deletes_failing": True},
        lands=False,
        ends="error",
    ),
]
PHASE_IDS = [phase.name.replace(" ", "-") for phase in PHASES]
