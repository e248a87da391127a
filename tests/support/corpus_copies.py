"""Writable copies of conformance corpus tables: new metadata in a temp dir over the corpus's own data files.

The copy's metadata file is the corpus table's current one with ``location`` moved to a temp dir, registered in
another catalog. Everything a job writes (data files, manifests, metadata) then lands in the temp dir, while the
corpus's manifests and data files are only read, so /tmp/iceberg-conformance is never changed.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from urllib.parse import urlparse

from pyiceberg.catalog import Catalog
from pyiceberg.table import Table

from tests.support.conformance import CORPUS_DIR, NAMESPACE, extract_corpus


def register_corpus_copy(catalog: Catalog, corpus_table: str, directory: Path, namespace: str | None = None) -> Table:
    """Register ``corpus.<corpus_table>`` in ``catalog`` as ``<namespace>.<corpus_table>`` located in ``directory``."""
    extract_corpus()
    from pyiceberg.catalog import load_catalog

    from tests.support.conformance import catalog_properties

    source = load_catalog("conformance", **catalog_properties()).load_table(f"{NAMESPACE}.{corpus_table}")
    source_metadata = Path(urlparse(source.metadata_location).path)
    assert source_metadata.is_relative_to(CORPUS_DIR), source_metadata
    document = json.loads(source_metadata.read_text())
    location = directory / corpus_table
    (location / "metadata").mkdir(parents=True)
    document["location"] = f"file://{location}"
    for key in ("write.data.path", "write.metadata.path", "write.object-storage.path"):
        assert key not in document.get("properties", {}), f"{corpus_table} sets {key}"
    copied = location / "metadata" / f"00000-{uuid.uuid4()}.metadata.json"
    copied.write_text(json.dumps(document))
    namespace = namespace or f"copy_{uuid.uuid4().hex[:12]}"
    catalog.create_namespace_if_not_exists(namespace)
    return catalog.register_table(f"{namespace}.{corpus_table}", f"file://{copied}")
