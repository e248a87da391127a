"""Names Airflow moved between the releases the provider supports (3.1 to 3.3), imported from where each has them.

Airflow 3.2 moved the task exceptions to ``airflow.sdk.exceptions`` (3.3 keeps deprecated aliases in
``airflow.exceptions``) and the configuration to ``airflow.sdk.conf``; Airflow 3.1 has them in
``airflow.exceptions`` and ``airflow.configuration`` only.
"""

from __future__ import annotations

try:  # Airflow 3.2+
    from airflow.sdk.exceptions import (
        AirflowException,
        AirflowFailException,
        AirflowNotFoundException,
        AirflowSensorTimeout,
        AirflowSkipException,
    )
except ImportError:  # Airflow 3.1
    from airflow.exceptions import (  # type: ignore[assignment, no-redef, attr-defined, unused-ignore]
        AirflowException,
        AirflowFailException,
        AirflowNotFoundException,
        AirflowSensorTimeout,
        AirflowSkipException,
    )

try:  # Airflow 3.2+
    from airflow.sdk import conf
except ImportError:  # Airflow 3.1
    from airflow.configuration import conf  # type: ignore[assignment, no-redef, unused-ignore]

__all__ = [
    "AirflowException",
    "AirflowFailException",
    "AirflowNotFoundException",
    "AirflowSensorTimeout",
    "AirflowSkipException",
    "conf",
]
