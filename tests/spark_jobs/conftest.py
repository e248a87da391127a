"""The Spark side's tests run on two Spark lines: the project's Spark 4 (every test) and Spark 3.5 (the tests marked
``spark35``, run by ``scripts/test.sh`` in the Java environment's virtualenv; README "Tests").

Modules of the Python data source import ``pyspark.sql.datasource``, which Spark 4 introduced: on Spark 3.5 they
are not collected (their tests are marked ``spark4``, so ``-m spark35`` would deselect them anyway).
"""

from __future__ import annotations

import pyspark

SPARK4_ONLY_MODULES = ["spark/test_source.py", "spark/test_filters.py"]

collect_ignore = SPARK4_ONLY_MODULES if int(pyspark.__version__.split(".")[0]) < 4 else []
