"""The row schema of Spark's Kafka source, as a Spark ``StructType`` and as the Arrow schema Spark expects.

Spark's built-in source yields ``key binary, value binary, topic string, partition int, offset long,
timestamp timestamp, timestampType int`` and, with ``includeHeaders=true``, ``headers
array<struct<key: string, value: binary>>``. Python data sources may yield ``pyarrow.RecordBatch``es, which
Spark accepts only when their schema equals ``to_arrow_schema(schema, timezone="UTC")`` exactly.
"""
from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType


def spark_schema(include_headers: bool) -> StructType:
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
        fields.append(StructField("headers", ArrayType(header)))
    return StructType(fields)


@cache
def arrow_schema(include_headers: bool) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_schema(include_headers), timezone="UTC")
