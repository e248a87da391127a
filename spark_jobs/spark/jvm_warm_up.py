"""Load, on a JVM thread of its own, what a new SparkSession spends seconds loading, while the SparkContext starts.

Spark 4's SparkSession constructor runs every ``SparkSessionExtensionsProvider`` on the classpath; the one of
spark-mllib (``InternalFunctionRegistration``) builds Scala UDFs, which initialises Scala runtime reflection, and
registers functions, which builds Spark's table of built-in functions (``FunctionRegistry``, hundreds of expression
classes): about two seconds of class loading on one thread, after the SparkContext is up. Started on a second
thread when the driver's JVM is reachable, that loading runs beside the SparkContext's own start instead:

1. Wait (``GATEWAY_WAIT_SECONDS`` at most) for the py4j gateway the starting SparkContext opens or finds.
2. Through a py4j connection of this thread, initialise Scala runtime reflection (a lazy value: if it fails,
   nothing is left half-built) and then the built-in function table (a static table that reads no configuration;
   the session constructor builds it before any session is active either).
3. Log any failure at debug level and stop: the session loads what it needs itself.

Nothing here changes what the session does or holds; only when the JVM loads the classes.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

log = logging.getLogger(__name__)
GATEWAY_WAIT_SECONDS = 30.0
_POLL_SECONDS = 0.01
# Initialised in this order (step 2); a class the JVM lacks (another Spark line) ends the warm-up, nothing else.
WARM_CLASSES = ("org.apache.spark.sql.catalyst.analysis.FunctionRegistry$",)


def start_jvm_warm_up() -> threading.Thread:
    """Start warming the driver's JVM on a daemon thread (module doc); returns the thread."""
    thread = threading.Thread(target=warm_up_jvm, name="spark-jvm-warm-up", daemon=True)
    thread.start()
    return thread


def warm_up_jvm(wait_seconds: float = GATEWAY_WAIT_SECONDS) -> bool:
    """Initialise what a SparkSession's constructor needs in the driver's JVM once it is reachable; whether done."""
    started = time.perf_counter()
    jvm = _driver_jvm(wait_seconds)
    if jvm is None:
        log.debug("JVM warm-up skipped: no Spark gateway within %.0f s", wait_seconds)
        return False
    try:
        jvm.scala.reflect.runtime.package.universe()
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        for name in WARM_CLASSES:
            jvm.java.lang.Class.forName(name, True, loader)
    except Exception as error:  # py4j errors, a JVM without Scala reflection: the session loads it itself
        log.debug("JVM warm-up skipped: %s", error)
        return False
    log.debug("JVM warm-up done in %.2f s", time.perf_counter() - started)
    return True


def _driver_jvm(wait_seconds: float) -> Any:
    """The py4j view of the driver's JVM once a SparkContext's start has reached it, else None after the wait."""
    from pyspark import SparkContext

    deadline = time.monotonic() + wait_seconds
    while True:
        jvm = SparkContext._jvm
        if jvm is not None:
            return jvm
        if time.monotonic() >= deadline:
            return None
        time.sleep(_POLL_SECONDS)
