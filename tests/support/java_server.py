"""Iceberg Java behind a pipe: one Spark 3.5 session with the Iceberg runtime, answering JSON requests.

Runs in the Java environment's virtualenv (``java_env``), started by ``iceberg_java.IcebergJava``; it imports only
pyspark and the standard library. Protocol, one JSON object per line: requests on stdin, answers on the file
descriptor that was stdout when the process started (fd 1 is then pointed at stderr, so whatever the JVM prints
cannot corrupt an answer). An answer is ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": ..., "trace":
...}``. Operations:

- ``checksum`` (table, snapshot_id?, columns?): row count and the order-independent checksum of the rows Iceberg
  Java reads, computed in Spark SQL with the same tokens as ``tests/support/conformance.py``.
- ``arrow`` (table, path, snapshot_id?, columns?): the rows Iceberg Java reads, written to ``path`` as an Arrow IPC
  file (Spark's own Arrow conversion), for checks computed on the caller's side like every other reader's;
  ``columns`` may name Iceberg's metadata columns (``_file``, ``_pos``).
- ``sql`` (query): the rows of a Spark SQL statement, values as JSON (others as strings).
- ``puffin_blobs`` (path): the blobs of a Puffin file as Java's Puffin reader lists them, each read back whole.
- Through Iceberg's Java API, for what Spark cannot express (Spark 4.1 has no nanosecond timestamps, and no DDL for
  default values): ``create_table`` (table, schema and partition spec as Iceberg JSON, properties),
  ``add_column`` (table, name, type, default, write_default?: a column with defaults, ``UpdateSchema``),
  ``append_rows`` (table, rows as Iceberg single-value JSON objects keyed by field id: one data file per
  partition, written by Java's own Parquet writer, ``InternalData``, and appended), and ``generic_rows``
  (table, snapshot_id?, columns?: the rows ``IcebergGenerics`` reads, deletes applied, as single-value JSON).
"""

from __future__ import annotations

import json
import os
import sys
import traceback


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def spark_token(expr: str, data_type, depth: int = 0) -> str:
    """A Spark SQL expression giving the checksum token of ``expr`` (conformance.value_token's rules)."""
    from pyspark.sql import types as t

    def not_null(inner: str) -> str:
        return f"CASE WHEN {expr} IS NULL THEN 'N' ELSE {inner} END"

    if isinstance(data_type, t.BooleanType):
        return not_null(f"CASE WHEN {expr} THEN 'T' ELSE 'F' END")
    if isinstance(data_type, (t.ByteType, t.ShortType, t.IntegerType, t.LongType, t.DecimalType)):
        return not_null(f"cast({expr} AS STRING)")
    if isinstance(data_type, (t.FloatType, t.DoubleType)):
        bits = f"cast(reflect('java.lang.Double', 'doubleToLongBits', cast({expr} AS DOUBLE)) AS BIGINT)"
        return not_null(f"concat('f', lpad(hex({bits}), 16, '0'))")
    if isinstance(data_type, t.StringType):
        return not_null(f"concat('s', hex(encode({expr}, 'UTF-8')))")
    if isinstance(data_type, t.BinaryType):
        return not_null(f"concat('b', hex({expr}))")
    if isinstance(data_type, t.DateType):
        return not_null(f"concat('d', cast(unix_date({expr}) AS STRING))")
    if isinstance(data_type, t.TimestampType):
        return not_null(f"concat('t', cast(unix_micros({expr}) AS STRING))")
    if isinstance(data_type, t.TimestampNTZType):  # the session time zone is UTC
        return not_null(f"concat('t', cast(unix_micros(cast({expr} AS TIMESTAMP)) AS STRING))")
    if isinstance(data_type, t.StructType):
        parts = ", ".join(spark_token(f"{expr}.{_q(f.name)}", f.dataType, depth) for f in data_type.fields)
        return not_null(f"concat('{{', concat_ws('|', {parts}), '}}')")
    if isinstance(data_type, t.ArrayType):
        x = f"x{depth}"
        element = spark_token(x, data_type.elementType, depth + 1)
        return not_null(f"concat('[', array_join(transform({expr}, {x} -> {element}), '|'), ']')")
    if isinstance(data_type, t.MapType):
        x = f"x{depth}"
        key = spark_token(f"{x}.key", data_type.keyType, depth + 1)
        value = spark_token(f"{x}.value", data_type.valueType, depth + 1)
        entries = f"array_sort(transform(map_entries({expr}), {x} -> concat({key}, '=', {value})))"
        return not_null(f"concat('<', array_join({entries}, '|'), '>')")
    raise TypeError(f"no checksum token for Spark type {data_type}")


def _hash(expr: str) -> str:
    return f"cast(conv(substr(sha2({expr}, 256), 1, 16), 16, 10) AS DECIMAL(20,0))"


def frame_checksum(frame) -> dict:
    """Row count, checksum and per-column checksums of a DataFrame, computed in the JVM."""
    tokens = [spark_token(_q(f.name), f.dataType) for f in frame.schema.fields]
    row = f"concat_ws('|', {', '.join(tokens)})" if tokens else "''"
    # reflect() is nondeterministic to Spark: hash in a projection, then aggregate.
    hashed = frame.selectExpr(f"{_hash(row)} AS h", *(f"{_hash(tok)} AS c{i}" for i, tok in enumerate(tokens)))
    sums = hashed.selectExpr("count(1) AS n", "sum(h) AS h", *(f"sum(c{i}) AS c{i}" for i in range(len(tokens))))
    out = sums.first()
    mask = (1 << 64) - 1

    def fmt(value) -> str:
        return f"{int(value or 0) & mask:016x}"

    return {
        "rows": int(out["n"]),
        "checksum": fmt(out["h"]),
        "columns": {f.name: fmt(out[f"c{i}"]) for i, f in enumerate(frame.schema.fields)},
    }


class Server:
    """One Spark session with an Iceberg JdbcCatalog named ``config['catalog']``."""

    def __init__(self, config: dict) -> None:
        from pyspark.sql import SparkSession

        catalog = config["catalog"]
        prefix = f"spark.sql.catalog.{catalog}"
        builder = (
            SparkSession.builder.master("local[2]")
            .appName("iceberg-java-interop")
            .config("spark.jars", ",".join(config["jars"]))
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.memory", config.get("driver_memory", "1g"))
            .config("spark.ui.enabled", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
            .config(prefix, "org.apache.iceberg.spark.SparkCatalog")
            .config(f"{prefix}.catalog-impl", "org.apache.iceberg.jdbc.JdbcCatalog")
            .config(f"{prefix}.uri", config["jdbc_uri"])
            .config(f"{prefix}.warehouse", config["warehouse"])
            .config(f"{prefix}.jdbc.schema-version", "V1")
            # Our commits land between requests: never answer from a cached table.
            .config(f"{prefix}.cache-enabled", "false")
        )
        for key, value in config.get("jdbc_properties", {}).items():
            builder = builder.config(f"{prefix}.jdbc.{key}", value)
        for key, value in config.get("spark_conf", {}).items():
            builder = builder.config(key, value)
        self.catalog = catalog
        self.spark = builder.getOrCreate()
        self.spark.sparkContext.setLogLevel("WARN")

    def _jtable(self, table: str):
        jvm = self.spark._jvm
        return jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            self.spark._jsparkSession, f"{self.catalog}.{table}"
        )

    def _reader(self, snapshot_id: int | None):
        """A DataFrame reader of Iceberg tables, at a snapshot when given (Iceberg's option on Spark 3, Spark's
        ``versionAsOf`` on Spark 4, which refuses the other)."""
        reader = self.spark.read.format("iceberg")
        if snapshot_id is None:
            return reader
        option = "snapshot-id" if self.spark.version.startswith("3.") else "versionAsOf"
        return reader.option(option, str(snapshot_id))

    def checksum(self, table: str, snapshot_id: int | None = None, columns: list[str] | None = None) -> dict:
        reader = self._reader(snapshot_id)
        frame = reader.load(f"{self.catalog}.{table}")
        if columns is not None:
            frame = frame.select(*(_q(c) for c in columns))
        return frame_checksum(frame)

    def arrow(self, table: str, path: str, snapshot_id: int | None = None, columns: list[str] | None = None) -> int:
        """Write the rows Java reads to ``path`` as an Arrow IPC file; return the row count."""
        import pyarrow as pa

        reader = self._reader(snapshot_id)
        frame = reader.load(f"{self.catalog}.{table}")
        if columns is not None:
            frame = frame.select(*(_q(c) for c in columns))
        batches = frame._collect_as_arrow()
        result = pa.Table.from_batches(batches) if batches else _empty_arrow(frame)
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, result.schema) as writer:
            writer.write_table(result)
        return result.num_rows

    def sql(self, query: str) -> list[list]:
        return [[_jsonable(v) for v in row] for row in self.spark.sql(query).collect()]

    def puffin_blobs(self, path: str) -> list[dict]:
        jvm = self.spark._jvm
        input_file = jvm.org.apache.iceberg.Files.localInput(path.removeprefix("file:").removeprefix("//"))
        reader = jvm.org.apache.iceberg.puffin.Puffin.read(input_file).build()
        try:
            blobs = []
            for blob in reader.fileMetadata().blobs():
                blobs.append(
                    {
                        "type": blob.type(),
                        "fields": list(blob.inputFields()),
                        "snapshot_id": blob.snapshotId(),
                        "sequence_number": blob.sequenceNumber(),
                        "offset": blob.offset(),
                        "length": blob.length(),
                        "compression": blob.compressionCodec(),
                        "properties": dict(blob.properties()),
                    }
                )
            read = reader.readAll(reader.fileMetadata().blobs())
            iterator = read.iterator()
            lengths = []
            while iterator.hasNext():
                lengths.append(iterator.next().second().remaining())
            for blob, length in zip(blobs, lengths, strict=True):
                blob["bytes_read"] = length
            return blobs
        finally:
            reader.close()

    # ---------------------------------------------------------------------------------- Iceberg's Java API
    def _catalog(self):
        return self.spark._jsparkSession.sessionState().catalogManager().catalog(self.catalog).icebergCatalog()

    def _identifier(self, table: str):
        return self.spark._jvm.org.apache.iceberg.catalog.TableIdentifier.parse(table)

    def create_table(self, table: str, schema: str, spec: str | None = None, properties: dict | None = None) -> None:
        jvm = self.spark._jvm
        iceberg = jvm.org.apache.iceberg
        parsed = iceberg.SchemaParser.fromJson(schema)
        partition_spec = (
            iceberg.PartitionSpecParser.fromJson(parsed, spec) if spec else iceberg.PartitionSpec.unpartitioned()
        )
        props = jvm.java.util.HashMap()
        for key, value in (properties or {}).items():
            props.put(key, value)
        self._catalog().createTable(self._identifier(table), parsed, partition_spec, props)

    def add_column(self, table: str, name: str, type: str, default: str, write_default: str | None = None) -> None:
        """Add an optional column whose initial and write default are ``default`` (single-value JSON), then, when
        given, set its write default to ``write_default``."""
        iceberg = self.spark._jvm.org.apache.iceberg
        loaded = self._catalog().loadTable(self._identifier(table))
        column_type = iceberg.types.Types.fromPrimitiveString(type)

        def literal(text: str):
            value = iceberg.SingleValueParser.fromJson(column_type, text)  # py4j may box it narrower: converted back
            return iceberg.expressions.Expressions.lit(value).to(column_type)

        loaded.updateSchema().addColumn(name, column_type, None, literal(default)).commit()
        if write_default is not None:
            loaded.refresh()
            loaded.updateSchema().updateColumnDefault(name, literal(write_default)).commit()

    def append_rows(self, table: str, rows: list[dict]) -> int:
        """Write ``rows`` with Java's Parquet writer, one file per partition, and append them; the snapshot id."""
        iceberg = self.spark._jvm.org.apache.iceberg
        loaded = self._catalog().loadTable(self._identifier(table))
        struct = loaded.schema().asStruct()
        files = iceberg.io.OutputFileFactory.builderFor(loaded, 1, 1).format(iceberg.FileFormat.PARQUET).build()
        by_partition: dict[str, tuple] = {}
        for row in rows:
            record = iceberg.SingleValueParser.fromJson(struct, json.dumps(row))
            key = iceberg.PartitionKey(loaded.spec(), loaded.schema())
            key.partition(record)
            by_partition.setdefault(key.toString(), (key, []))[1].append(record)
        append = loaded.newAppend()
        for key, records in by_partition.values():
            output = files.newOutputFile(loaded.spec(), key).encryptingOutputFile()
            writer = iceberg.InternalData.write(iceberg.FileFormat.PARQUET, output).schema(loaded.schema()).build()
            for record in records:
                writer.add(record)
            writer.close()
            data_file = (
                iceberg.DataFiles.builder(loaded.spec())
                .withPath(output.location())
                .withFileSizeInBytes(writer.length())
                .withMetrics(writer.metrics())
                .withFormat(iceberg.FileFormat.PARQUET)
                .withPartition(key)
                .build()
            )
            append.appendFile(data_file)
        append.commit()
        return loaded.currentSnapshot().snapshotId()

    def generic_rows(self, table: str, snapshot_id: int | None = None, columns: list[str] | None = None) -> list:
        """The rows Java's generic reader returns, each a single-value JSON object keyed by field id."""
        iceberg = self.spark._jvm.org.apache.iceberg
        loaded = self._catalog().loadTable(self._identifier(table))
        scan = iceberg.data.IcebergGenerics.read(loaded)
        if snapshot_id is not None:
            scan = scan.useSnapshot(self.spark._jvm.java.lang.Long.parseLong(str(snapshot_id)))
        schema = loaded.schemas().get(loaded.snapshot(snapshot_id).schemaId()) if snapshot_id else loaded.schema()
        if columns is not None:
            scan = scan.select(self.spark._jvm.java.util.ArrayList(columns))
            schema = schema.select(self.spark._jvm.java.util.ArrayList(columns))
        struct = schema.asStruct()
        rows = []
        iterable = scan.build()
        try:
            iterator = iterable.iterator()
            while iterator.hasNext():
                internal = iceberg.data.InternalRecordWrapper(struct).wrap(iterator.next())
                rows.append(json.loads(iceberg.SingleValueParser.toJson(struct, internal)))
        finally:
            iterable.close()
        return rows


def _empty_arrow(frame):
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(frame.schema).empty_table()


def _jsonable(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "asDict"):
        return {k: _jsonable(v) for k, v in value.asDict().items()}
    return str(value)


def serve(config: dict) -> None:
    """Answer requests until stdin closes (module doc)."""
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # the JVM (started below) and any print() write to stderr from here on
    sys.stdout = sys.stderr
    try:
        server = Server(config)
        answers.write(json.dumps({"ok": True, "result": {"spark": server.spark.version}}) + "\n")
    except Exception as error:
        answers.write(json.dumps({"ok": False, "error": repr(error), "trace": traceback.format_exc()}) + "\n")
        return
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        op = request.pop("op")
        try:
            result = getattr(server, op)(**request)
            answer = {"ok": True, "result": result}
        except Exception as error:
            answer = {"ok": False, "error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()}
        answers.write(json.dumps(answer) + "\n")
    server.spark.stop()


if __name__ == "__main__":
    serve(json.loads(sys.argv[1]))
