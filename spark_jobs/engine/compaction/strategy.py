"""How a rewrite orders what it writes: bin-pack (as read), sort (a sort order) or z-order, as Iceberg Java chooses.

``resolve_strategy`` follows Java's ``rewrite_data_files`` procedure and its runners:

1. ``--strategy binpack`` (the default) takes no sort order; ``--strategy sort`` (or a ``--sort-order`` alone) sorts
   by the given order, else by the table's sort order; a table without one is refused ("Cannot sort data without a
   valid sort order, ..."). A ``zorder(...)`` order makes it a z-order rewrite.
2. Z-order columns must exist and have a z-order byte form; identity partition columns are dropped with a warning
   (their value is constant in a partition), and when none is left the rewrite is refused.
3. Options belong to a strategy, as Java's ``validOptions``: ``compression-factor`` and
   ``shuffle-partitions-per-file`` to sort and z-order, ``var-length-contribution`` and ``max-output-size`` to
   z-order. An option the chosen strategy does not take is refused with Java's message.
4. Files written by sort and z-order rewrites are marked with the table's sort order that equals the one used
   (z-order: none, id 0), as Java's ``SortOrderUtil.findTableSortOrder``; bin-pack leaves the writer's default.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pyiceberg.table import Table
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER_ID
from pyiceberg.transforms import IdentityTransform

from spark_jobs.engine.compaction.sort_keys import SortKeySpec
from spark_jobs.engine.compaction.sort_order_parsing import (
    bind_sort_order,
    describe_sort_order,
    parse_sort_order_text,
    table_sort_order_id,
)
from spark_jobs.engine.compaction.zorder import (
    DEFAULT_MAX_OUTPUT_SIZE,
    DEFAULT_VAR_LENGTH_CONTRIBUTION,
    check_zorder_type,
)
from spark_jobs.engine.shared.errors import UserInputError

log = logging.getLogger(__name__)

BINPACK, SORT, ZORDER = "binpack", "sort", "zorder"
STRATEGIES = (BINPACK, SORT)  # what --strategy takes; z-order is a sort with a zorder(...) order, as in Java
_JAVA_NAMES = {BINPACK: "BIN-PACK", SORT: "SORT", ZORDER: "Z-ORDER"}
DEFAULT_SHUFFLE_PARTITIONS_PER_FILE = 1
SHUFFLING_OPTIONS = ("compression-factor", "shuffle-partitions-per-file")
ZORDER_OPTIONS = ("var-length-contribution", "max-output-size")


@dataclass(frozen=True)
class RewriteStrategy:
    """The chosen strategy, its keys (sort and z-order) and what its written files are marked with."""

    name: str = BINPACK
    keys: SortKeySpec | None = None
    description: str = ""  # the order in words: "k DESC NULLS LAST" or "zorder(a, b)"
    output_sort_order_id: int | None = None  # None: the write context's (the table's default order)
    shuffle_partitions_per_file: int = DEFAULT_SHUFFLE_PARTITIONS_PER_FILE

    @property
    def is_shuffling(self) -> bool:
        """Sort and z-order rewrites range-partition and sort each group's rows (a shuffle)."""
        return self.name != BINPACK

    @property
    def java_name(self) -> str:
        """Java's description of the runner: BIN-PACK, SORT or Z-ORDER."""
        return _JAVA_NAMES[self.name]

    def as_dict(self) -> dict[str, object]:
        """The strategy for the job's JSON line."""
        described: dict[str, object] = {"strategy": self.name}
        if self.is_shuffling:
            described["sort_order"] = self.description
            described["output_sort_order_id"] = self.output_sort_order_id
            described["shuffle-partitions-per-file"] = self.shuffle_partitions_per_file
        if self.keys is not None and self.keys.zorder is not None:
            described["var-length-contribution"] = self.keys.zorder.var_length_contribution
            described["max-output-size"] = self.keys.zorder.max_output_size
        return described


BINPACK_STRATEGY = RewriteStrategy()


def resolve_strategy(
    table: Table,
    strategy: str | None,
    sort_order: str | None,
    *,
    compression_factor: float | None = None,
    shuffle_partitions_per_file: int | None = None,
    var_length_contribution: int | None = None,
    max_output_size: int | None = None,
) -> RewriteStrategy:
    """The strategy of a rewrite of ``table`` (module doc); bad combinations are UserInputErrors."""
    name = ".".join(table.name())
    if strategy is not None and strategy not in STRATEGIES:
        raise UserInputError(f"unsupported strategy: {strategy}. Only binpack or sort is supported")
    if strategy == BINPACK or (strategy is None and sort_order is None):
        if sort_order is not None:
            raise UserInputError(
                f"--sort-order {sort_order!r} needs --strategy sort: Cannot set rewrite mode, it has already been set "
                "to BIN-PACK"
            )
        _refuse_options(
            BINPACK, compression_factor, shuffle_partitions_per_file, var_length_contribution, max_output_size
        )
        return BINPACK_STRATEGY
    per_file = (
        DEFAULT_SHUFFLE_PARTITIONS_PER_FILE if shuffle_partitions_per_file is None else shuffle_partitions_per_file
    )
    if per_file <= 0:
        raise UserInputError(f"'shuffle-partitions-per-file' is set to {per_file} but must be > 0")
    schema = table.schema()
    if sort_order is None:
        _refuse_options(SORT, None, None, var_length_contribution, max_output_size)
        order = table.sort_order()
        if order.is_unsorted:
            raise UserInputError(
                f"Cannot sort data without a valid sort order, table '{name}' is unsorted and no sort order is "
                "provided (give --sort-order, or set the table's sort order)"
            )
        return RewriteStrategy(
            SORT,
            SortKeySpec.for_sort_order(schema, order),
            describe_sort_order(order, schema),
            order.order_id,
            per_file,
        )
    parsed = parse_sort_order_text(sort_order)
    if not parsed.is_zorder:
        _refuse_options(SORT, None, None, var_length_contribution, max_output_size)
        order = bind_sort_order(name, schema, parsed.terms)
        output_id = table_sort_order_id(table.metadata.sort_orders, order)
        if output_id == UNSORTED_SORT_ORDER_ID:
            log.warning(
                "sort order %s of table %s is none of the table's sort orders; rewritten files are not marked as "
                "sorted in the manifests",
                sort_order,
                name,
            )
        return RewriteStrategy(
            SORT, SortKeySpec.for_sort_order(schema, order), describe_sort_order(order, schema), output_id, per_file
        )
    return _zorder_strategy(table, parsed.zorder_columns, per_file, var_length_contribution, max_output_size)


def _zorder_strategy(
    table: Table,
    columns: tuple[str, ...],
    per_file: int,
    var_length_contribution: int | None,
    max_output_size: int | None,
) -> RewriteStrategy:
    """A z-order rewrite over ``columns`` (module doc, step 2), with Java's option checks."""
    name = ".".join(table.name())
    var_length = DEFAULT_VAR_LENGTH_CONTRIBUTION if var_length_contribution is None else var_length_contribution
    if var_length <= 0:
        raise UserInputError(
            "Cannot use less than 1 byte for variable length types with ZOrder, 'var-length-contribution' was set "
            f"to {var_length}"
        )
    max_size = DEFAULT_MAX_OUTPUT_SIZE if max_output_size is None else max_output_size
    if max_size <= 0:
        raise UserInputError(
            f"Cannot have the interleaved ZOrder value use less than 1 byte, 'max-output-size' was set to {max_size}"
        )
    schema = table.schema()
    identity_sources = {f.source_id for f in table.spec().fields if isinstance(f.transform, IdentityTransform)}
    source_ids: list[int] = []
    for column in columns:
        try:
            field = schema.find_field(column, case_sensitive=True)
        except ValueError:
            raise UserInputError(
                f"table {name}: Cannot find column '{column}' in table schema (case sensitive = true): "
                f"{', '.join(schema.column_names)}"
            ) from None
        check_zorder_type(name, column, field.field_type)
        if field.field_id in identity_sources:
            log.warning(
                "z-order of table %s: ignoring '%s' as its values are constant within a partition", name, column
            )
            continue
        source_ids.append(field.field_id)
    if not source_ids:
        raise UserInputError(
            f"table {name}: Cannot ZOrder, all columns provided were identity partition columns and cannot be used"
        )
    keys = SortKeySpec.for_zorder(
        schema, tuple(source_ids), var_length_contribution=var_length, max_output_size=max_size
    )
    used = ", ".join(schema.find_column_name(source_id) or str(source_id) for source_id in source_ids)
    return RewriteStrategy(ZORDER, keys, f"zorder({used})", UNSORTED_SORT_ORDER_ID, per_file)


def _refuse_options(
    strategy: str,
    compression_factor: float | None,
    shuffle_partitions_per_file: int | None,
    var_length_contribution: int | None,
    max_output_size: int | None,
) -> None:
    """Java's "Cannot use options [...], they are not supported by the action or the rewriter X"."""
    given = {
        "compression-factor": compression_factor,
        "shuffle-partitions-per-file": shuffle_partitions_per_file,
        "var-length-contribution": var_length_contribution,
        "max-output-size": max_output_size,
    }
    refused = [option for option, value in given.items() if value is not None]
    if refused:
        raise UserInputError(
            f"Cannot use options {refused}, they are not supported by the action or the rewriter "
            f"{_JAVA_NAMES[strategy]}"
        )
