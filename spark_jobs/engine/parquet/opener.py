"""Read one data file slice: build its access plan through every pruning stage, then decode what survives.

``read_data_file`` is the executor's per-file entry point; ``DataFileOpener`` holds the read's settings and runs
each step below as a method of its own (DataFusion's ``ParquetOpener``), each timed into the counters
(``ScanMetrics``: footer, statistics, page index, bloom filters, deletes, decode):

1. Get the footer from the cache, or else with one ranged read: on an object store and without a row filter through
   a fragment opened with the manifest's file size (no HEAD request, ``data_file_input``); otherwise through the
   table's FileIO, which opens the file by path.
2. Start an access plan over the row groups; drop those whose first byte lies outside the slice's
   ``[start, start + length)`` (``row_groups_pruned_by_range``).
3. With a row filter: prune row groups by statistics, then rows and row groups by the page index, then row groups by
   bloom filters (``=``/IN): each stage reads only for the row groups the ones before left. On an object store the
   filter columns' index structures near the footer come in one request; in a file opened for the first time,
   bloom filters larger than ``BLOOM_WHOLE_READ_MAX_BYTES`` are probed by single 32-byte blocks, fetched
   concurrently (a file opened again reads them whole and keeps them with its cached footer).
4. Hand each row group its deleted positions (``np.searchsorted`` on the sorted positions; the plan keeps them as
   positions until a unit's mask is built); a row group whose selected rows are all deleted is skipped unread.
5. Per row group, drop the filter conjuncts its statistics prove true for every row (``predicates.must_match``),
   and turn each equality delete set whose rejected rows an earlier scan remembered (``rejected_rows_cache``) into
   deleted positions: its key columns are then not decoded.
6. Cut the scanned row groups into decoding units (``_read_units``): a row group with filter conjuncts left is a unit
   of its own; consecutive others with the same predicates (none, or equality delete sets only, which rarely drop a
   whole row group) form runs of up to ``RUN_MAX_COMPRESSED_BYTES``, decoded by one call. Units decode ahead on
   helper threads. Per unit: evaluate equality delete sets (remembering, per row group, the rows each rejects) and
   then filter conjuncts (cheapest first) on the surviving rows, reading each predicate's columns just before it
   runs (a run reads all its columns at once); read the other projected columns only when rows survive, and keep
   exactly those rows (deleted positions included). On an object store, a unit of one row group whose surviving rows
   lie in a few pages reads, of each other top-level primitive column, only those pages and its dictionary page
   (``page_selection``, through the offset index) when that is well under the column chunk.
7. Yield record batches of at most ``batch_size`` rows with the output fields in order, in read-schema types.

Counting: ``rows_deleted_by_position_deletes`` (or ``..._by_deletion_vectors``, per ``DeletedPositions.kind``)
counts deleted positions among rows the earlier stages kept; ``rows_deleted_by_equality_deletes`` counts rows that
were not position-deleted and that an equality delete set removed (equality deletes run before filter conjuncts so
this count does not depend on the filter, except through pruning).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.schema import Schema

from spark_jobs.engine.parquet.access_plan import AccessPlan
from spark_jobs.engine.parquet.bloom_filter import bloom_bytes, probe_block_ranges, prune_by_bloom_filters
from spark_jobs.engine.parquet.data_file_input import DataFileInput
from spark_jobs.engine.parquet.file_columns import LeafColumn, file_leaf_columns
from spark_jobs.engine.parquet.footer_cache import ParquetFooter, RangeReader, TailedStream, extend_tail
from spark_jobs.engine.parquet.name_mapping import (
    apply_name_mapping,
    has_field_ids,
    mapped_fields_only,
    parse_name_mapping,
)
from spark_jobs.engine.parquet.page_index import page_index_locations, prune_by_page_index
from spark_jobs.engine.parquet.page_selection import read_selected_rows
from spark_jobs.engine.parquet.predicates import (
    Constant,
    FilterNode,
    must_match,
    must_match_tree,
    referenced_field_ids,
    translate_filter,
)
from spark_jobs.engine.parquet.read_ahead import map_ahead
from spark_jobs.engine.parquet.rejected_rows_cache import FileRejectedRows
from spark_jobs.engine.parquet.row_filter import FilterConjunct, filter_conjuncts, surviving_rows
from spark_jobs.engine.parquet.row_group_filter import FieldStatistics, prune_by_statistics
from spark_jobs.engine.parquet.row_group_reader import FileColumnResolver, RowGroupColumns
from spark_jobs.engine.parquet.row_selection import select_rows
from spark_jobs.engine.parquet.schema_projection import file_schema_of, project_column
from spark_jobs.engine.planning.scan_context import ScanContext
from spark_jobs.engine.planning.scan_tasks import DataFileSlice
from spark_jobs.engine.shared.bounded_cache import BoundedCache
from spark_jobs.engine.shared.deleted_positions import NO_DELETED_POSITIONS, DeletedPositions, DeletedPositionsKind
from spark_jobs.engine.shared.metrics import ScanMetrics
from spark_jobs.engine.shared.row_predicate import PredicateKind, RowPredicate

# Consecutive row groups without filter conjuncts are decoded by one call, up to this many compressed bytes of the
# columns they need (one row group always): fewer, larger decoding calls, and bounded memory per call.
RUN_MAX_COMPRESSED_BYTES = 8 * 1024 * 1024
# On an object store, the bloom filters and page indexes of the filter's columns (written between the last data
# page and the footer) are read in one request when they begin at most this far before the footer's tail: a
# request costs about as much time as transferring this many bytes.
INDEX_PREFETCH_MAX_BYTES = 1024 * 1024
# On an object store, when the bloom filters ``=``/IN probes would consult in a file's scanned row groups are larger
# than this and the file is opened for the first time in the process, the probes read single 32-byte blocks
# (fetched concurrently, one request each) instead of the filters whole: a cold point lookup then reads bytes in
# proportion to its row groups, not to the filters' size. A hot file (footer cached) reads them whole, once, and
# keeps them with its footer, so later probes make no request.
BLOOM_WHOLE_READ_MAX_BYTES = 256 * 1024
# On an object store, a unit whose projected columns are at most this many compressed bytes reads them in the same
# request as the filter's columns: a second request would cost more than the bytes late materialization may save.
REMOTE_EAGER_MAX_BYTES = 1024 * 1024
# A decoding unit decodes its columns on Arrow's threads from this many uncompressed bytes (all its columns) on.
THREADED_DECODE_MIN_BYTES = 1024 * 1024
# Leaf columns and Iceberg schema derived from a file schema, shared by the files written with that schema.
_LAYOUTS = BoundedCache(16 * 1024 * 1024)


def read_data_file(
    data_file: DataFileSlice,
    context: ScanContext,
    *,
    deleted_positions: DeletedPositions = NO_DELETED_POSITIONS,
    row_predicates: Sequence[RowPredicate] = (),
    metrics: ScanMetrics,
) -> Iterator[pa.RecordBatch]:
    """Record batches of the slice's rows that match the scan's filter, minus deleted rows, projected by field id.

    ``context`` gives the read schema, the output fields, the row filter, the FileIO, the batch size and the table's
    name mapping (for files written without field ids); ``row_predicates`` are the equality delete sets.
    """
    return DataFileOpener(data_file, context, deleted_positions, row_predicates, metrics).read()


@dataclass
class OpenedFile:
    """A data file once its footer is known (step 1): the input, the footer, and how its columns map to fields."""

    source: DataFileInput
    footer: ParquetFooter
    cache_hit: bool
    resolver: FileColumnResolver
    field_statistics: FieldStatistics

    @property
    def metadata(self) -> pq.FileMetaData:
        """The file's Parquet metadata."""
        return self.footer.metadata


@dataclass(frozen=True)
class Decoding:
    """What decoding one file's units shares (step 6): the file, its plan, the remembered rejections, and how to
    decode: on Arrow's threads, coalesced, by pages, or plainly."""

    opened: OpenedFile
    plan: AccessPlan
    rejected_rows: FileRejectedRows
    native_file: bool  # Arrow-native input: its ReadAt is thread-safe, so units may decode ahead on helper threads
    pre_buffer: bool  # coalesce a call's column chunk reads into few ranged reads (object stores only)
    read_at: RangeReader | None  # a filtered read's ranged reader for kept rows' pages (``page_selection``), or None
    row_group_bytes: dict[int, int]  # uncompressed bytes per scanned row group


class DataFileOpener:
    """The read of one data file slice, as DataFusion's ``ParquetOpener``: the read's settings (the slice, the
    scan's context, its deletes and counters), then one method per step of the module doc, each a stage over the
    one access plan. Each step adds its time to the counters (``ScanMetrics.timed``)."""

    def __init__(
        self,
        data_file: DataFileSlice,
        context: ScanContext,
        deleted_positions: DeletedPositions,
        row_predicates: Sequence[RowPredicate],
        metrics: ScanMetrics,
    ) -> None:
        self.data_file = data_file
        self.context = context
        self.deleted_positions = deleted_positions
        self.row_predicates = row_predicates
        self.metrics = metrics
        self.output_ids = list(context.output_field_ids)

    def read(self) -> Iterator[pa.RecordBatch]:
        """The steps of the module doc, in order; batches out."""
        filter_node = translate_filter(self.context.bound_filter)
        filtered = _is_filtering(filter_node)
        data_file = self.data_file
        with DataFileInput(self.context.io, data_file.path, data_file.file_size_in_bytes) as source:
            opened = self.open_footer(source, filtered)
            plan = self.start_access_plan(opened)
            if filtered:
                self.prune_by_metadata(opened, plan, filter_node)
            with self.metrics.timed("deletes"):
                if self.deleted_positions.count:
                    self.apply_deleted_positions(plan)
                predicates = self.predicates_per_row_group(opened, plan, filter_node)
            units = self.decoding_units(opened, plan, predicates)
            yield from self.decode(opened, plan, predicates, units, filtered)

    def open_footer(self, source: DataFileInput, filtered: bool) -> OpenedFile:
        """Step 1: the footer from the cache or one ranged read, and the file's columns resolved to fields."""
        with self.metrics.timed("footer"):
            footer, cache_hit, footer_bytes_read = source.footer(reads_index=filtered)
            self.metrics.files_opened += 1
            self.metrics.footer_cache_hits += int(cache_hit)
            self.metrics.bytes_read += footer_bytes_read
            leaves, file_schema = _file_layout(footer, self.context.name_mapping_json)
            resolver = FileColumnResolver(
                self.context.read_schema,
                file_schema,
                leaves,
                self.data_file.partition_constants,
                (self.data_file.first_row_id, self.data_file.data_sequence_number),
            )
            field_statistics = FieldStatistics(footer.metadata, resolver, leaves, self.context.read_schema)
        return OpenedFile(source, footer, cache_hit, resolver, field_statistics)

    def start_access_plan(self, opened: OpenedFile) -> AccessPlan:
        """Step 2: every row group scanned, then those whose first byte lies outside the slice skipped."""
        metadata = opened.metadata
        plan = AccessPlan([metadata.row_group(index).num_rows for index in range(metadata.num_row_groups)])
        self.metrics.row_groups_total += len(plan)
        _prune_by_range(plan, metadata, self.data_file, self.metrics)
        return plan

    def prune_by_metadata(self, opened: OpenedFile, plan: AccessPlan, filter_node: FilterNode) -> None:
        """Step 3: statistics, the page index, then bloom filters, each for the row groups the others left."""
        metrics, footer = self.metrics, opened.footer
        opened.resolver.top_level_ids(referenced_field_ids(filter_node))  # rejects fields inside lists or maps
        index_stream = TailedStream(lambda: opened.source.stream, footer)  # opens the file only to read beyond memory
        remote = not _is_local(self.data_file.path)
        # A file opened for the first time in this process has its large bloom filters probed block by block; once
        # it is hot (its footer cached), they are read whole and kept with the footer for later probes.
        block_probes = (
            remote and not opened.cache_hit and _reads_bloom_blocks(plan, filter_node, footer, opened.field_statistics)
        )
        if remote:
            with metrics.timed("page_index"):  # one request for the filter columns' index region
                metrics.bytes_read += _prefetch_index_region(
                    opened.source, footer, filter_node, opened.field_statistics, plan, whole_blooms=not block_probes
                )
        _prune_by_metadata(
            plan,
            filter_node,
            footer=footer,
            field_statistics=opened.field_statistics,
            stream=index_stream,
            metrics=metrics,
            fetch_bloom_blocks=block_probes,
        )
        metrics.bytes_read -= index_stream.bytes_from_tail  # the stages count what they read; these were free

    def apply_deleted_positions(self, plan: AccessPlan) -> None:
        """Step 4: each row group's deleted positions into the plan; a row group all deleted is skipped unread."""
        _select_undeleted_rows(plan, self.deleted_positions, self.metrics)

    def predicates_per_row_group(
        self, opened: OpenedFile, plan: AccessPlan, filter_node: FilterNode
    ) -> dict[int, list[RowPredicate]]:
        """Step 5: per scanned row group, the equality delete sets and the filter conjuncts its statistics do not
        prove; the rows an equality delete set is remembered to reject become deleted positions instead."""
        predicates_by_row_group = {
            row_group: _predicates_to_evaluate(filter_node, self.row_predicates, row_group, opened.field_statistics)
            for row_group in plan.scanned_row_groups()
        }
        if self.row_predicates:
            _apply_remembered_rejections(plan, predicates_by_row_group, self._rejected_rows(opened), self.metrics)
        return predicates_by_row_group

    def decoding_units(
        self, opened: OpenedFile, plan: AccessPlan, predicates: dict[int, list[RowPredicate]]
    ) -> list[list[int]]:
        """Step 6, the cut: the row groups still scanned, as units decoded by one call each (``_read_units``)."""
        scanned = [row_group for row_group in predicates if plan.should_scan(row_group)]
        return _read_units(scanned, predicates, opened.metadata, opened.resolver, self.output_ids)

    def decode(
        self,
        opened: OpenedFile,
        plan: AccessPlan,
        predicates: dict[int, list[RowPredicate]],
        units: list[list[int]],
        filtered: bool,
    ) -> Iterator[pa.RecordBatch]:
        """Steps 6 and 7: decode the units (ahead, on helper threads, for Arrow-native files), then batches out."""
        source, metrics = opened.source, self.metrics
        # Here, before any helper thread decodes, the stream is opened when decoding needs one.
        native_file = bool(units) and source.decodes_on_arrow_threads(opened.footer)
        # pre_buffer coalesces the column chunk reads of one call into few ranged reads: for object stores; on a
        # local disk it only adds a copy.
        pre_buffer = native_file and not _is_local(self.data_file.path)
        decoding = Decoding(
            opened=opened,
            plan=plan,
            rejected_rows=self._rejected_rows(opened),
            native_file=native_file,
            pre_buffer=pre_buffer,
            # On an object store, a filtered read of an open stream that reads ranges on any thread may read the
            # pages holding a few kept rows instead of whole column chunks (``page_selection``).
            read_at=getattr(source.stream, "read_at", None) if filtered and pre_buffer and source.is_open else None,
            row_group_bytes={rg: opened.metadata.row_group(rg).total_byte_size for unit in units for rg in unit},
        )

        def decode_unit(unit: list[int], unit_metrics: ScanMetrics) -> tuple[pa.Table | None, ScanMetrics]:
            with unit_metrics.timed("decode"):
                table = self.decode_unit(decoding, predicates[unit[0]], unit, unit_metrics)
            return table, unit_metrics

        # Decode the next units on helper threads while this one is consumed (each call has its own reader and
        # counters). Only Arrow-native files, whose ReadAt is thread-safe, are shared so.
        decoded: Generator[tuple[pa.Table | None, ScanMetrics], None, None]
        if len(units) > 1 and native_file:
            decoded = map_ahead(lambda unit: decode_unit(unit, ScanMetrics()), units)
        else:
            decoded = (decode_unit(unit, metrics) for unit in units)
        try:
            for table, unit_metrics in decoded:
                if unit_metrics is not metrics:
                    metrics.merge(unit_metrics)
                if table is None:
                    continue
                metrics.rows_out += table.num_rows
                yield from table.to_batches(max_chunksize=self.context.batch_size)
        finally:
            decoded.close()  # a consumer that stops early: let decoding threads finish before the file closes

    def decode_unit(
        self, decoding: Decoding, predicates: list[RowPredicate], unit: list[int], unit_metrics: ScanMetrics
    ) -> pa.Table | None:
        """One unit (module doc, step 6): its predicates on the rows the plan selects, then the output columns of
        the surviving rows; ``None`` when no row survives. Own reader and counters per call: units may decode on
        several threads."""
        opened, plan, output_ids = decoding.opened, decoding.plan, self.output_ids
        resolver, metadata = opened.resolver, opened.metadata
        # Arrow's threads (pre-buffering, parallel column decoding) are used for Arrow-native files only: with a
        # Python file object they may still hold it at interpreter exit and abort the process.
        parquet_file = opened.source.row_groups(opened.footer, pre_buffer=decoding.pre_buffer)
        # Arrow's threads cost more than they give on small units (a small file's single row group).
        unit_bytes = sum(decoding.row_group_bytes[row_group] for row_group in unit)
        threaded = decoding.native_file and unit_bytes >= THREADED_DECODE_MIN_BYTES
        columns = RowGroupColumns(parquet_file, unit, resolver, unit_metrics, self.data_file.path, use_threads=threaded)
        remote_and_small = decoding.pre_buffer and (
            sum(resolver.compressed_bytes(metadata.row_group(rg), output_ids) for rg in unit) <= REMOTE_EAGER_MAX_BYTES
        )
        if not _needs_late_materialization(predicates) or remote_and_small:
            # Nothing here is likely to drop the whole unit (or, on an object store, a second request would cost
            # more than the bytes late materialization may save): decode every column it needs in one call.
            columns.load([*output_ids, *resolver.top_level_ids(_field_ids_of(predicates))])
        row_counts = [plan.row_group_num_rows[row_group] for row_group in unit]

        def remember(predicate: RowPredicate, keep: np.ndarray) -> None:
            decoding.rejected_rows.remember(unit, row_counts, predicate, keep)

        keep = surviving_rows(
            columns, plan.run_selection(unit), predicates, resolver, unit_metrics, on_whole_mask=remember
        )
        if keep is not None and not keep.any():
            return None
        by_pages = (
            _read_kept_rows_by_pages(
                opened.footer,
                unit,
                keep,
                columns,
                output_ids=output_ids,
                read_at=decoding.read_at,
                metrics=unit_metrics,
            )
            if decoding.read_at is not None and keep is not None
            else {}
        )
        columns.load([field_id for field_id in output_ids if field_id not in by_pages])
        arrays = [by_pages[field_id] if field_id in by_pages else columns.columns[field_id] for field_id in output_ids]
        if keep is not None:
            arrays = [
                array if field_id in by_pages else select_rows(array, keep)
                for field_id, array in zip(output_ids, arrays, strict=True)
            ]
        return pa.Table.from_arrays(arrays, schema=self.context.output_schema)

    def _rejected_rows(self, opened: OpenedFile) -> FileRejectedRows:
        """The process's memory of the rows each equality delete set rejected in this file (by its identity)."""
        key = (self.data_file.path, self.data_file.file_size_in_bytes, hash(opened.footer.footer_bytes))
        return FileRejectedRows((*key, self.context.name_mapping_json))


def reads_index_structures(context: ScanContext) -> bool:
    """Whether reading a file for this scan consults its bloom filters or page index (a row filter that is not
    always true): the footer is then read through a stream, with the file's tail (``data_file_input``)."""
    return _is_filtering(translate_filter(context.bound_filter))


def _is_filtering(filter_node: FilterNode) -> bool:
    return not (isinstance(filter_node, Constant) and filter_node.value)


def _file_layout(footer: ParquetFooter, name_mapping_json: str | None) -> tuple[list[LeafColumn], Schema]:
    """The file's leaf columns and Iceberg schema, derived once per cached footer (and name mapping).

    A file without field ids gets them from the table's name mapping, when the table has one. Files written with the
    same Parquet and Arrow schemas (the usual case: one writer, many files) share one derivation (``_LAYOUTS``).
    """
    key = ("layout", name_mapping_json)
    layout = footer.derived.get(key)
    if layout is None:
        arrow_schema = footer.metadata.schema.to_arrow_schema()
        # The Parquet schema's text names every leaf's physical and logical type and field id: two files whose Arrow
        # schemas agree may still store a column differently (a decimal as INT32 or as FIXED_LEN_BYTE_ARRAY), and
        # their statistics must be decoded by their own physical type.
        parquet_schema = str(footer.metadata.schema).partition("\n")[2]
        schema_key = (parquet_schema, arrow_schema.serialize().to_pybytes(), name_mapping_json)
        layout = _LAYOUTS.get(schema_key)
        if layout is None:
            mapping = parse_name_mapping(name_mapping_json)
            if mapping is not None and not has_field_ids(arrow_schema):
                arrow_schema = apply_name_mapping(arrow_schema, mapping, footer.path)
                file_schema = file_schema_of(mapped_fields_only(arrow_schema), footer.path)
            else:
                file_schema = file_schema_of(arrow_schema, footer.path)
            layout = (file_leaf_columns(footer.metadata.schema, arrow_schema), file_schema)
            # Weighed as a few times the serialized schema: leaf descriptions and the pydantic schema it derives.
            _LAYOUTS.put(schema_key, layout, 8 * (len(parquet_schema) + len(schema_key[1])))
        footer.derived[key] = layout
    return layout


def row_group_start_offset(row_group: pq.RowGroupMetaData) -> int:
    """The first byte of a row group: its first column chunk's dictionary page, or else first data page."""
    first_chunk = row_group.column(0)
    offsets = [first_chunk.data_page_offset]
    if first_chunk.has_dictionary_page and first_chunk.dictionary_page_offset:
        offsets.append(first_chunk.dictionary_page_offset)
    return min(offsets)


def _prune_by_range(
    plan: AccessPlan, metadata: pq.FileMetaData, data_file: DataFileSlice, metrics: ScanMetrics
) -> None:
    if data_file.length <= 0 or data_file.is_whole_file:
        return  # length 0 (unset) and whole-file slices keep every row group
    end = data_file.start + data_file.length
    for row_group in list(plan.scanned_row_groups()):
        if not data_file.start <= row_group_start_offset(metadata.row_group(row_group)) < end:
            plan.skip(row_group)
            metrics.row_groups_pruned_by_range += 1


def _prune_by_metadata(
    plan: AccessPlan,
    filter_node: FilterNode,
    *,
    footer: ParquetFooter,
    field_statistics: FieldStatistics,
    stream: TailedStream,
    metrics: ScanMetrics,
    fetch_bloom_blocks: bool,
) -> None:
    """Statistics, then the page index, then bloom filters for the row groups still scanned (each stage reads only
    for those); with ``fetch_bloom_blocks``, the bloom blocks the probes need are fetched together first.
    """
    if isinstance(filter_node, Constant) and not filter_node.value:
        for row_group in list(plan.scanned_row_groups()):
            plan.skip(row_group)
            metrics.row_groups_pruned_by_statistics += 1
        return
    leaf_of_field = field_statistics.leaf_of_field
    with metrics.timed("statistics"):
        prune_by_statistics(
            plan, filter_node, field_statistics.bounds_of, metrics, field_statistics.variant_path_bounds
        )
    index_stream: Any = stream  # the index readers take any seekable stream
    with metrics.timed("page_index"):
        prune_by_page_index(
            plan, filter_node, footer=footer, leaf_of_field=leaf_of_field, stream=index_stream, metrics=metrics
        )
    with metrics.timed("bloom_filter"):
        if fetch_bloom_blocks:
            ranges = probe_block_ranges(plan, filter_node, metadata=footer.metadata, leaf_of_field=leaf_of_field)
            metrics.bytes_read += stream.fetch_ranges(ranges)
        prune_by_bloom_filters(
            plan,
            filter_node,
            metadata=footer.metadata,
            leaf_of_field=leaf_of_field,
            stream=index_stream,
            source=footer.path,
            metrics=metrics,
        )


def _filter_leaf_indexes(filter_node: FilterNode, field_statistics: FieldStatistics) -> set[int]:
    leaves = [field_statistics.leaf_of_field(field_id) for field_id in referenced_field_ids(filter_node)]
    return {leaf.index for leaf in leaves if leaf is not None}


def _reads_bloom_blocks(
    plan: AccessPlan, filter_node: FilterNode, footer: ParquetFooter, field_statistics: FieldStatistics
) -> bool:
    """Are the bloom filters the probes would consult in the scanned row groups too large to read whole?"""
    leaf_indexes = _filter_leaf_indexes(filter_node, field_statistics)
    size = bloom_bytes(plan, filter_node, metadata=footer.metadata, leaf_indexes=leaf_indexes)
    return size > BLOOM_WHOLE_READ_MAX_BYTES


def _prefetch_index_region(
    source: DataFileInput,
    footer: ParquetFooter,
    filter_node: FilterNode,
    field_statistics: FieldStatistics,
    plan: AccessPlan,
    *,
    whole_blooms: bool,
) -> int:
    """Read the index structures of the filter's columns in the scanned row groups in one request, when they lie
    close enough before the footer's tail; returns the bytes read (0 when nothing needed reading). Without
    ``whole_blooms`` (the probes read single blocks), bloom filters are left out.
    """
    leaf_indexes = _filter_leaf_indexes(filter_node, field_statistics)
    if not leaf_indexes:
        return 0
    metadata = footer.metadata
    locations = page_index_locations(footer)
    starts = []
    for row_group in plan.scanned_row_groups():
        for leaf_index in leaf_indexes:
            bloom_offset = metadata.row_group(row_group).column(leaf_index).bloom_filter_offset
            if bloom_offset and whole_blooms:
                starts.append(bloom_offset)
            location = locations[row_group][leaf_index] if row_group < len(locations) else None
            if location is not None and location.is_complete:
                starts += [location.column_index_offset, location.offset_index_offset]
    tail_start = footer.tail[0]
    start = min(starts, default=tail_start)
    if start >= tail_start or tail_start - start > INDEX_PREFETCH_MAX_BYTES:
        return 0
    return extend_tail(source.stream, footer, start)


def _select_undeleted_rows(plan: AccessPlan, deleted_positions: DeletedPositions, metrics: ScanMetrics) -> None:
    positions = deleted_positions.positions
    for row_group in list(plan.scanned_row_groups()):
        first_row = plan.row_group_first_rows[row_group]
        row_count = plan.row_group_num_rows[row_group]
        low, high = np.searchsorted(positions, [first_row, first_row + row_count])
        if low == high:
            continue
        removed = plan.delete_rows(row_group, positions[low:high] - first_row)
        if deleted_positions.kind is DeletedPositionsKind.DELETION_VECTOR:
            metrics.rows_deleted_by_deletion_vectors += removed
        else:
            metrics.rows_deleted_by_position_deletes += removed


def _apply_remembered_rejections(
    plan: AccessPlan,
    predicates_by_row_group: dict[int, list[RowPredicate]],
    rejected_rows: FileRejectedRows,
    metrics: ScanMetrics,
) -> None:
    """Apply the rows a predicate is remembered to reject as deleted positions, and drop it from that row group.

    A row group whose equality delete sets are all remembered then decodes no key column.
    """
    for row_group, predicates in predicates_by_row_group.items():
        remaining: list[RowPredicate] = []
        for predicate in predicates:
            positions = rejected_rows.recall(row_group, predicate)
            if positions is None:
                remaining.append(predicate)
                continue
            removed = plan.delete_rows(row_group, positions.astype(np.int64))
            if predicate.kind is PredicateKind.EQUALITY_DELETE:
                metrics.rows_deleted_by_equality_deletes += removed
            else:
                metrics.rows_pruned_by_late_materialization += removed
            metrics.row_groups_with_remembered_rejections += 1
        predicates_by_row_group[row_group] = remaining


def _read_units(
    scanned: list[int],
    predicates_by_row_group: dict[int, list[RowPredicate]],
    metadata: pq.FileMetaData,
    resolver: FileColumnResolver,
    output_top_level_ids: list[int],
) -> list[list[int]]:
    """The scanned row groups cut into units decoded by one call each, in file order.

    A row group with filter conjuncts left to evaluate is a unit of its own (late materialization). Consecutive
    others with the same predicates (none, or equality delete sets only) form runs of up to
    ``RUN_MAX_COMPRESSED_BYTES`` of the columns they need: one decoding call per run costs less than one per row group.
    """
    units: list[list[int]] = []
    run: list[int] = []
    run_bytes = 0
    for row_group in scanned:
        predicates = predicates_by_row_group[row_group]
        if _needs_late_materialization(predicates):
            if run:
                units.append(run)
                run, run_bytes = [], 0
            units.append([row_group])
            continue
        needed = {*output_top_level_ids, *resolver.top_level_ids(_field_ids_of(predicates))}
        row_group_bytes = resolver.compressed_bytes(metadata.row_group(row_group), needed)
        same_predicates = not run or predicates_by_row_group[run[0]] == predicates
        if run and (run_bytes + row_group_bytes > RUN_MAX_COMPRESSED_BYTES or not same_predicates):
            units.append(run)
            run, run_bytes = [], 0
        run.append(row_group)
        run_bytes += row_group_bytes
    if run:
        units.append(run)
    return units


def _needs_late_materialization(predicates: Sequence[RowPredicate]) -> bool:
    """True when a filter conjunct is left: it may reject whole row groups, so read its columns first."""
    return any(predicate.kind is not PredicateKind.EQUALITY_DELETE for predicate in predicates)


def _field_ids_of(predicates: Sequence[RowPredicate]) -> set[int]:
    return {field_id for predicate in predicates for field_id in predicate.field_ids}


def _is_local(path: str) -> bool:
    """True for a path on the local file system (no scheme, or ``file:``)."""
    return "://" not in path or path.startswith("file:")


def _read_kept_rows_by_pages(
    footer: ParquetFooter,
    unit: list[int],
    keep: np.ndarray,
    columns: RowGroupColumns,
    *,
    output_ids: list[int],
    read_at: RangeReader,
    metrics: ScanMetrics,
) -> dict[int, Any]:
    """The kept rows of the unit's output columns not decoded yet, projected, for those whose pages can serve them
    (``page_selection``: a single row group, top-level primitive columns with an offset index, pages much smaller
    than the chunk); the others are left to whole-chunk decoding."""
    if len(unit) != 1:
        return {}
    resolver = columns.resolver
    leaves: dict[int, LeafColumn] = {}
    for field_id in output_ids:
        file_leaves = resolver.leaves_by_top_level_id.get(field_id, [])
        if field_id in columns.columns or field_id not in resolver.file_fields or len(file_leaves) != 1:
            continue
        if resolver.file_fields[field_id].field_type.is_primitive:
            leaves[field_id] = file_leaves[0]
    if not leaves:
        return {}
    values, bytes_read = read_selected_rows(footer, unit[0], leaves, np.flatnonzero(keep), read_at)
    metrics.bytes_read += bytes_read
    read_schema = resolver.read_schema
    return {
        field_id: project_column(
            read_schema.find_field(field_id), resolver.file_fields[field_id], column, len(column), footer.path
        )
        for field_id, column in values.items()
    }


def _predicates_to_evaluate(
    filter_node: FilterNode,
    row_predicates: Sequence[RowPredicate],
    row_group: int,
    field_statistics: FieldStatistics,
) -> list[RowPredicate]:
    """The row predicates plus the filter conjuncts the row group's statistics do not prove for every row."""

    def proven(conjunct: FilterConjunct) -> bool:
        return must_match_tree(
            conjunct.node,
            lambda predicate: must_match(predicate, field_statistics.bounds_of(row_group, predicate.field_id)),
        )

    return [*row_predicates, *(conjunct for conjunct in filter_conjuncts(filter_node) if not proven(conjunct))]


__all__ = ["DataFileOpener", "read_data_file", "reads_index_structures", "row_group_start_offset"]
