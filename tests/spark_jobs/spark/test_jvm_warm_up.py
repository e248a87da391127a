"""The JVM warm-up beside a starting SparkContext: done when the JVM is reachable, skipped quietly otherwise."""

from __future__ import annotations

import threading

import pytest
from py4j.protocol import Py4JError
from pyspark import SparkContext

from spark_jobs.spark import jvm_warm_up

pytestmark = pytest.mark.spark35


@pytest.mark.spark
def test_the_warm_up_initialises_scala_reflection_in_the_driver_s_jvm(spark) -> None:
    assert jvm_warm_up.warm_up_jvm(wait_seconds=1.0) is True
    assert spark.range(3).count() == 3


def test_without_a_gateway_the_warm_up_gives_up_after_its_wait(monkeypatch) -> None:
    monkeypatch.setattr(SparkContext, "_jvm", None)
    assert jvm_warm_up.warm_up_jvm(wait_seconds=0.05) is False


def test_the_warm_up_waits_for_the_gateway_a_starting_context_opens(monkeypatch) -> None:
    calls: list[object] = []

    class Universe:
        def universe(self) -> None:
            calls.append("universe")

    class CurrentThread:
        def getContextClassLoader(self) -> str:  # noqa: N802 - the JVM's name
            return "loader"

    class JavaClass:
        @staticmethod
        def forName(name: str, initialize: bool, loader: str) -> None:  # noqa: N802 - the JVM's name
            calls.append((name, initialize, loader))

    class Jvm:
        class scala:  # noqa: N801 - py4j's view of the JVM's packages
            class reflect:  # noqa: N801
                class runtime:  # noqa: N801
                    package = Universe()

        class java:  # noqa: N801
            class lang:  # noqa: N801
                Class = JavaClass

                class Thread:
                    @staticmethod
                    def currentThread() -> CurrentThread:  # noqa: N802 - the JVM's name
                        return CurrentThread()

    monkeypatch.setattr(SparkContext, "_jvm", None)
    threading.Timer(0.1, lambda: setattr(SparkContext, "_jvm", Jvm())).start()
    assert jvm_warm_up.warm_up_jvm(wait_seconds=5.0) is True
    assert calls == ["universe", *((name, True, "loader") for name in jvm_warm_up.WARM_CLASSES)]


def test_a_failing_warm_up_is_ignored(monkeypatch) -> None:
    class BrokenJvm:
        def __getattr__(self, name: str) -> None:
            raise Py4JError("gateway closed")

    monkeypatch.setattr(SparkContext, "_jvm", BrokenJvm())
    assert jvm_warm_up.warm_up_jvm(wait_seconds=0.05) is False
