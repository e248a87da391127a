"""Airflow 3.3+: the snapshot watchers' poll loop as the triggerer's shared stream, in ack mode (``_catalog_watch``).

Imported only where ``airflow.triggers.shared_stream`` exists. The triggerer runs one producer per catalog: it
yields the catalog poller's events, and is told, per table (its advance lane), which of them every watcher stored
in the metadata database; those move the watchers' cursors in the state store, the others are broadcast again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Hashable, Sequence
from typing import Any

from airflow.triggers.shared_stream import AdvanceItem, SharedStreamProducer

from airflow_iceberg_provider.triggers._catalog_watch import CatalogKey, catalog_hook, poller_for

log = logging.getLogger(__name__)


class SnapshotStreamProducer(SharedStreamProducer):
    """The poll loop of one catalog's watchers, as a shared-stream producer."""

    def __init__(self, key: CatalogKey) -> None:
        self.key = key
        self.poller = poller_for(key)

    async def open_stream(self) -> AsyncIterator[tuple[Any, Any]]:
        """Poll every round (the shortest interval of the watchers); yield each event with its receipt."""
        hook = catalog_hook(self.key)
        log.info("poll loop for catalog %s started", self.key)
        while True:
            for event, receipt in await self.poller.poll(hook):
                yield event, receipt
            await asyncio.sleep(self.poller.round_seconds())

    def get_advance_lane(self, broker_payload: Any) -> Hashable:
        """One lane per table and branch: a slow table holds back no other table's cursor."""
        return (broker_payload[0], broker_payload[1])

    async def advance(self, batch: Sequence[AdvanceItem]) -> None:
        """Move the cursors of the events every watcher stored; broadcast the others again."""
        for item in batch:
            await self.poller.confirmed(item.broker_payload, item.outcome.is_clean)
