"""The job's side of the contract (``job_contract``), read from spark-submit's merged output line by line.

Every ``spark_jobs`` entry point prints one JSON object as the last line of stdout on success, and one line
``error: <reason>`` on failure (exit code 2 for bad input, another otherwise). spark-submit merges the job's stdout
and stderr, and the JVM may print after either, so the reader keeps the last line of each kind, not the last line.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from airflow_iceberg_provider.job_contract import ERROR_PREFIX

_TAIL_LINES = 20


@dataclass
class JobOutput:
    """What one job run printed that the operator needs: its result object, its error reason, a short tail."""

    result: dict[str, Any] | None = None
    error_reason: str | None = None
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=_TAIL_LINES))

    def add_line(self, line: str) -> None:
        """Take one output line (already stripped of its newline)."""
        text = line.strip()
        if not text:
            return
        self.tail.append(text)
        if text.startswith(ERROR_PREFIX):
            self.error_reason = text[len(ERROR_PREFIX) :].strip()
        elif text.startswith("{") and text.endswith("}"):
            try:
                parsed = json.loads(text)
            except ValueError:
                return
            if isinstance(parsed, dict):
                self.result = parsed
