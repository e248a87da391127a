"""Which files a plain Parquet reader matched by field id may read: the read's refusals and the per-file split."""

from __future__ import annotations

import pytest
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.expressions.parser import parse
from pyiceberg.schema import Schema
from pyiceberg.types import (
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimeType,
    UUIDType,
)

from spark_jobs.engine.planning.scan_context import ROW_POSITION, ScanContext
from spark_jobs.engine.planning.scan_tasks import DataFileSlice, PositionDeleteFile, ScanTask
from spark_jobs.engine.read.plain_files import PlainFile, plain_read_refusal, read_field_ids, split_plain_files

ID = NestedField(1, "id", LongType(), required=False)
NAME = NestedField(2, "name", StringType(), required=False)
QTY = NestedField(3, "qty", IntegerType(), required=False)
SCHEMA = Schema(ID, NAME, QTY, schema_id=0)


def context(schema: Schema, output: tuple[int, ...], row_filter: BooleanExpression | str | None = None) -> ScanContext:
    expression = parse(row_filter) if isinstance(row_filter, str) else (row_filter or AlwaysTrue())
    return ScanContext(read_schema_json=schema.model_dump_json(), output_field_ids=output, row_filter=expression)


def test_a_read_of_plain_types_with_one_schema_may_go_to_a_plain_reader() -> None:
    assert plain_read_refusal(context(SCHEMA, (1, 2), "qty > 3"), [SCHEMA]) is None
    assert read_field_ids(context(SCHEMA, (2,), "qty > 3 and id < 9")) == (2, 1, 3)


def test_renamed_and_added_columns_are_fine_without_a_filter_on_them() -> None:
    renamed = Schema(ID, NestedField(2, "label", StringType(), required=False), QTY, schema_id=1)
    assert plain_read_refusal(context(renamed, (1, 2, 3), "id > 4"), [SCHEMA, renamed]) is None


def test_a_filter_on_a_renamed_column_is_fine_when_no_other_field_had_its_names() -> None:
    # Files written as "name" lack "label": Spark's Parquet filter prunes nothing there; the rows are still filtered.
    renamed = Schema(ID, NestedField(2, "label", StringType(), required=False), QTY, schema_id=1)
    assert plain_read_refusal(context(renamed, (1,), "label = 'a'"), [SCHEMA, renamed]) is None


def test_a_required_top_level_column_is_fine() -> None:
    required = Schema(NestedField(1, "id", LongType(), required=True), NAME, schema_id=0)
    assert plain_read_refusal(context(required, (1, 2), "id > 1"), [required]) is None


@pytest.mark.parametrize(
    ("schemas", "output", "row_filter", "reason"),
    [
        # A filter column found by name: a name another field had (here "name" and "label" swapped).
        (
            [
                SCHEMA,
                Schema(
                    ID,
                    NestedField(2, "label", StringType(), required=False),
                    NestedField(3, "name", IntegerType(), required=False),
                    schema_id=1,
                ),
            ],
            (1,),
            "label = 'a'",
            "shares a name",
        ),
        (
            [SCHEMA, Schema(NestedField(4, "id", LongType(), required=False), NAME, QTY, schema_id=1)],
            (4,),
            "id = 1",
            "shares a name",
        ),
        (
            [SCHEMA, Schema(ID, NAME, NestedField(4, "QTY", IntegerType(), required=False), schema_id=1)],
            (1,),
            "QTY = 1",
            "shares a name",
        ),
        # int -> long: a plain reader need not promote it.
        (
            [SCHEMA, Schema(ID, NAME, NestedField(3, "qty", LongType(), required=False), schema_id=1)],
            (3,),
            None,
            "changed type",
        ),
        # A removed schema may have held other names or types.
        ([Schema(ID, NAME, QTY, schema_id=1)], (1,), None, "have gaps"),
        # Types a plain reader decodes otherwise, at any depth; defaults; metadata columns.
        ([Schema(ID, NestedField(5, "u", UUIDType(), required=False), schema_id=0)], (5,), None, "type uuid"),
        (
            [
                Schema(
                    ID,
                    NestedField(6, "s", StructType(NestedField(7, "t", TimeType(), required=False)), required=False),
                    schema_id=0,
                )
            ],
            (6,),
            None,
            "type time",
        ),
        (
            [Schema(ID, NestedField(8, "d", IntegerType(), required=False, initial_default=7), schema_id=0)],
            (8,),
            None,
            "initial default",
        ),
        ([Schema(ID, ROW_POSITION, schema_id=0)], (1, ROW_POSITION.field_id), None, "metadata column"),
        # Spark's file reader makes nested fields nullable; the engine keeps them required.
        (
            [
                Schema(
                    ID,
                    NestedField(6, "s", StructType(NestedField(7, "t", IntegerType(), required=True)), required=False),
                    schema_id=0,
                )
            ],
            (6,),
            None,
            "is required",
        ),
        (
            [
                Schema(
                    ID,
                    NestedField(8, "l", ListType(9, StringType(), element_required=True), required=False),
                    schema_id=0,
                )
            ],
            (8,),
            None,
            "is required",
        ),
    ],
)
def test_reads_a_plain_reader_could_get_wrong_are_refused(schemas, output, row_filter, reason) -> None:
    current = max(schemas, key=lambda s: s.schema_id)
    refusal = plain_read_refusal(context(current, output, row_filter), schemas)
    assert refusal is not None and reason in refusal


def test_a_table_with_a_name_mapping_is_refused() -> None:
    refusal = plain_read_refusal(context(SCHEMA, (1,)), [SCHEMA], name_mapping='[{"field-id": 1, "names": ["id"]}]')
    assert refusal is not None and "name mapping" in refusal


def data_file(
    path: str, *, start: int = 0, length: int = 100, deletes: bool = False, constants: dict[int, object] | None = None
) -> DataFileSlice:
    position_deletes = (PositionDeleteFile("pos.parquet", 10, 1, 2),) if deletes else ()
    return DataFileSlice(
        path,
        100,
        10,
        0,
        partition_constants=constants or {},
        start=start,
        length=length,
        position_deletes=position_deletes,
    )


def test_whole_delete_free_files_go_plain_and_the_rest_stay_in_their_tasks() -> None:
    tasks = [
        ScanTask((data_file("a.parquet"), data_file("b.parquet", deletes=True))),
        ScanTask((data_file("c.parquet", length=60), data_file("d[1].parquet"))),
        ScanTask((data_file("c.parquet", start=60, length=40), data_file("e.parquet", length=50))),
    ]
    plain, left = split_plain_files(tasks)
    # c is covered by its two slices; e only half (the rest was not planned); d's path would be globbed.
    assert plain == [PlainFile("a.parquet", 100, 10), PlainFile("c.parquet", 100, 10)]
    assert [[s.path for s in task.slices] for task in left] == [["b.parquet"], ["d[1].parquet"], ["e.parquet"]]


def test_without_plain_files_the_tasks_are_left_as_they_are() -> None:
    tasks = [ScanTask((data_file("b.parquet", deletes=True),))]
    assert split_plain_files(tasks) == ([], tasks)


def test_paths_with_a_colon_after_the_scheme_stay_with_the_engine() -> None:
    paths = ["s3://b/t/ts=10:00/a.parquet", "file:/t/ts=10:00/b.parquet", "/t/c:d.parquet", "s3://b:9000/t/ok.parquet"]
    plain, _left = split_plain_files([ScanTask(tuple(data_file(path) for path in [*paths, "file:/t/ok.parquet"]))])
    assert [f.path for f in plain] == ["s3://b:9000/t/ok.parquet", "file:/t/ok.parquet"]


def test_names_spark_would_skip_stay_with_the_engine() -> None:
    tasks = [
        ScanTask((data_file("s3://b/t/data/_hidden.parquet"), data_file("/t/.x.parquet"), data_file("/t/ok.parquet")))
    ]
    plain, left = split_plain_files(tasks)
    assert [f.path for f in plain] == ["/t/ok.parquet"]
    assert [s.path for s in left[0].slices] == ["s3://b/t/data/_hidden.parquet", "/t/.x.parquet"]


def test_plain_files_keep_the_identity_partition_values_of_the_fields_read() -> None:
    tasks = [ScanTask((data_file("a.parquet", constants={2: "x", 5: 3}), data_file("b.parquet", constants={2: None})))]
    plain, left = split_plain_files(tasks, (1, 2))
    assert plain == [PlainFile("a.parquet", 100, 10, ((2, "x"),)), PlainFile("b.parquet", 100, 10, ((2, None),))]
    assert left == []
