"""Row-filter predicates pyiceberg's expressions lack: a typed comparison on a variant path, and a box test on a
geometry or geography column, as pyiceberg predicates (unbound and bound) so every visitor of its trees carries them.

1. ``VariantPathCondition`` / ``SpatialCondition`` say what is tested (path, type, operation, literals; the box);
   each has its negation, so ``rewrite_not`` pushes NOT into them (SQL's rule: a NULL operand makes both false).
2. ``VariantPathPredicate`` and ``SpatialPredicate`` are pyiceberg ``UnboundPredicate``s; binding checks the
   column's type (a variant; a geometry or geography) and gives their ``Bound...`` forms, which name the field.
3. ``not_true`` gives, by column name, the rows where a bound one is false or NULL (what an overwrite by filter
   keeps): the negation, or the path's value (the geo value) NULL.
4. A partition transform never has these columns as its source (the spec allows none), so pyiceberg's inclusive
   projection keeps files by them; metrics, row-group statistics and rows evaluate them where the engine does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pydantic import ConfigDict
from pyiceberg.expressions import BooleanExpression, BoundPredicate, BoundTerm, IsNull, Or, Reference, UnboundPredicate
from pyiceberg.schema import Schema
from pyiceberg.types import GeographyType, GeometryType

from spark_jobs.engine.shared.geo_boxes import Box
from spark_jobs.engine.shared.iceberg_model import is_variant
from spark_jobs.engine.shared.variant_paths import NEGATED, ExtractionType, PathSegment, normalized_path


@dataclass(frozen=True)
class VariantPathCondition:
    """``variant_get(column, path, type) <operation> literals`` (literals already parsed as the type)."""

    path_text: str
    path: tuple[PathSegment, ...]
    value_type: ExtractionType
    operation: str  # eq, ne, lt, le, gt, ge, in, not_in, is_null, not_null
    literals: tuple[Any, ...] = ()

    @property
    def bound_key(self) -> str | None:
        """The key of this path in the spec's variant bounds (None for a path with an array index)."""
        return normalized_path(self.path)

    def negated(self) -> VariantPathCondition:
        """The condition true exactly where this one is false on a non-NULL value."""
        return replace(self, operation=NEGATED[self.operation])

    def describe(self, column: str) -> str:
        """The condition as a filter would spell it."""
        subject = f"variant_get({column}, '{self.path_text}', '{self.value_type.name}')"
        if self.operation in ("is_null", "not_null"):
            return f"{subject} IS {'NOT ' if self.operation == 'not_null' else ''}NULL"
        if self.operation in ("in", "not_in"):
            listed = ", ".join(repr(value) for value in self.literals)
            return f"{subject} {'NOT ' if self.operation == 'not_in' else ''}IN ({listed})"
        symbol = {"eq": "=", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[self.operation]
        return f"{subject} {symbol} {self.literals[0]!r}"


@dataclass(frozen=True)
class SpatialCondition:
    """``st_intersects(column, envelope)`` (``intersects``) or ``st_disjoint`` (its negation)."""

    box: Box
    intersects: bool = True

    def negated(self) -> SpatialCondition:
        """Disjoint for intersects and the other way round."""
        return replace(self, intersects=not self.intersects)

    def describe(self, column: str) -> str:
        """The condition as a filter would spell it."""
        box = self.box
        name = "st_intersects" if self.intersects else "st_disjoint"
        return f"{name}({column}, st_makeenvelope({box.xmin}, {box.ymin}, {box.xmax}, {box.ymax}))"


class _ByCondition:
    """Negation, equality and text of a predicate by its condition and column (module doc, step 2)."""

    term: Any
    condition: Any

    def column_name(self) -> str:
        """The name of the column tested."""
        raise NotImplementedError

    def __invert__(self) -> Any:
        """The negated condition on the same column."""
        return type(self)(term=self.term, condition=self.condition.negated())  # type: ignore[call-arg]

    def __eq__(self, other: object) -> bool:
        """Same column and condition."""
        return type(other) is type(self) and (self.term, self.condition) == (other.term, other.condition)

    def __hash__(self) -> int:
        """By what it spells."""
        return hash((type(self).__name__, repr(self)))

    def __repr__(self) -> str:
        """The condition as a filter spells it."""
        return str(self.condition.describe(self.column_name()))

    def __str__(self) -> str:
        """The condition as a filter spells it."""
        return repr(self)


class _UnboundCondition(_ByCondition, UnboundPredicate):
    """A condition on a column by name."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    condition: Any

    def __init__(self, term: Any, condition: Any, **_: Any) -> None:
        super().__init__(term, condition=condition)

    def column_name(self) -> str:
        """The column's name as the filter gives it."""
        return str(self.term.name)  # type: ignore[attr-defined]


class _BoundCondition(_ByCondition, BoundPredicate):
    """A condition on a bound field."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    condition: Any

    def __init__(self, term: BoundTerm, condition: Any, **_: Any) -> None:
        super().__init__(term, condition=condition)

    def column_name(self) -> str:
        """The bound field's name."""
        return str(self.term.ref().field.name)


class VariantPathPredicate(_UnboundCondition):
    """A comparison on a variant path, by column name."""

    condition: VariantPathCondition

    def bind(self, schema: Schema, case_sensitive: bool = True) -> BooleanExpression:
        """Bound to a variant column; ValueError for a column of another type."""
        bound = self.term.bind(schema, case_sensitive)
        field = bound.ref().field
        if not is_variant(field.field_type):
            raise ValueError(f"variant_get needs a variant column; {field.name} is {field.field_type}")
        return BoundVariantPathPredicate(term=bound, condition=self.condition)

    @property
    def as_bound(self) -> type[BoundPredicate]:
        """The bound form."""
        return BoundVariantPathPredicate


class BoundVariantPathPredicate(_BoundCondition):
    """A comparison on a variant path of a bound variant field."""

    condition: VariantPathCondition

    @property
    def as_unbound(self) -> type[UnboundPredicate]:
        """The unbound form."""
        return VariantPathPredicate

    def not_true(self, column: str) -> BooleanExpression:
        """The rows where this is false or NULL, on ``column``: the negation, or the path's value NULL."""
        negated = VariantPathPredicate(term=Reference(column), condition=self.condition.negated())
        if self.condition.operation in ("is_null", "not_null"):
            return negated
        return Or(
            negated,
            VariantPathPredicate(term=Reference(column), condition=replace(self.condition, operation="is_null")),
        )


class SpatialPredicate(_UnboundCondition):
    """A box test on a geometry or geography column, by column name."""

    condition: SpatialCondition

    def bind(self, schema: Schema, case_sensitive: bool = True) -> BooleanExpression:
        """Bound to a geo column; ValueError for another type, or a box that wraps on a geometry."""
        bound = self.term.bind(schema, case_sensitive)
        field = bound.ref().field
        if not isinstance(field.field_type, GeometryType | GeographyType):
            raise ValueError(
                f"st_intersects/st_disjoint need a geometry or geography column; {field.name} is {field.field_type}"
            )
        box = self.condition.box
        if isinstance(field.field_type, GeometryType) and box.xmin > box.xmax:
            raise ValueError(
                f"the envelope's xmin {box.xmin} exceeds its xmax {box.xmax}: only a geography's box may wrap "
                f"the antimeridian, and {field.name} is a geometry"
            )
        return BoundSpatialPredicate(term=bound, condition=self.condition)

    @property
    def as_bound(self) -> type[BoundPredicate]:
        """The bound form."""
        return BoundSpatialPredicate


class BoundSpatialPredicate(_BoundCondition):
    """A box test on a bound geometry or geography field."""

    condition: SpatialCondition

    @property
    def as_unbound(self) -> type[UnboundPredicate]:
        """The unbound form."""
        return SpatialPredicate

    @property
    def is_geography(self) -> bool:
        """True for a geography column (x ranges may wrap the antimeridian)."""
        return isinstance(self.term.ref().field.field_type, GeographyType)

    def not_true(self, column: str) -> BooleanExpression:
        """The rows where this is false or NULL, on ``column``: the negated test, or the value NULL."""
        is_null = IsNull(Reference(column))  # type: ignore[call-arg]
        return Or(SpatialPredicate(term=Reference(column), condition=self.condition.negated()), is_null)


EXTENDED_BOUND_PREDICATES = (BoundVariantPathPredicate, BoundSpatialPredicate)
