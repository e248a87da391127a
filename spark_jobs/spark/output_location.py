"""Where a read job's ``--output`` is: ``engine/jobs/export_location.py`` (standard library only), under its
former name for the Spark side's callers."""

from __future__ import annotations

from spark_jobs.engine.jobs.export_location import local_path, staging_location

__all__ = ["local_path", "staging_location"]
