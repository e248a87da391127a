"""Extra links on the provider's tasks: the Spark UI, the Spark driver's log, a compaction's report.

Each link's URL is stored in the task's XCom (under the link's ``xcom_key``) while the task runs, which is where
Airflow 3 reads extra links from; a link the deployment does not have (no YARN tracking URL, say) is never stored
and its button stays empty. Where each comes from:
- Spark UI: the job's ``Spark UI <url>`` log line (the driver's web UI, live while the job runs), or Spark's own
  ``started at <url>`` line when Spark logs at INFO;
- Spark driver log: YARN's ``tracking URL: <url>`` line that spark-submit prints in cluster deploy mode (in client
  mode the driver's log is the task's log);
- compaction report: the report the compaction operator writes, served by the provider's plugin in the Airflow API
  server (``/iceberg/reports/...``, on the UI's own origin) when it is under the report root, else its http(s) URL.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk import Context
    from airflow.sdk.types import TaskInstanceKey

_SPARK_UI_LINES = (re.compile(r"\bSpark UI:? (https?://\S+)"), re.compile(r"\bSparkUI\b.*started at (https?://\S+)"))
_YARN_TRACKING_URL = re.compile(r"\btracking URL: (https?://\S+)")


class _StoredLink(BaseOperatorLink):
    """A link whose URL the task stores in its XCom while it runs."""

    name: ClassVar[str] = ""

    def get_link(self, operator: Any, *, ti_key: TaskInstanceKey) -> str:
        """The stored URL, or ``""`` when the task stored none."""
        from airflow.sdk.execution_time.xcom import XCom

        value = XCom.get_value(ti_key=ti_key, key=self.xcom_key)
        return str(value) if value else ""

    def store(self, context: Context, url: str) -> None:
        """Store ``url`` for this link on the running task instance (no-op without one, e.g. ``execute({})``)."""
        ti = context.get("ti") if context else None
        if ti is not None:
            ti.xcom_push(key=self.xcom_key, value=url)


class SparkUiLink(_StoredLink):
    """The Spark driver's web UI."""

    name = "Spark UI"


class SparkDriverLogLink(_StoredLink):
    """The Spark driver's log on the cluster (YARN's tracking page)."""

    name = "Spark driver log"


class CompactionReportLink(_StoredLink):
    """The compaction report the task wrote."""

    name = "Compaction report"


def spark_link_in(line: str) -> tuple[type[_StoredLink], str] | None:
    """The link a spark-submit output line announces, if any: (link class, URL)."""
    for pattern in _SPARK_UI_LINES:
        if found := pattern.search(line):
            return SparkUiLink, found.group(1)
    if found := _YARN_TRACKING_URL.search(line):
        return SparkDriverLogLink, found.group(1)
    return None
