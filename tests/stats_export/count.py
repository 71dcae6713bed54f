"""Counts the scans in a `qrtag stats --export` Parquet file per key,
device and country with DuckDB and with chDB, and prints them as JSON:
{"duckdb": {"key": {...}, "device": {...}, "country": {...}}, "chdb": {...}}.
"""

import json
import sys

import chdb
import duckdb

path = sys.argv[1]
quoted = path.replace("'", "''")


def by_duckdb(column):
    rows = duckdb.sql(
        f"SELECT {column}, count(*) FROM read_parquet('{quoted}') WHERE scan GROUP BY {column}"
    ).fetchall()
    return {value: n for value, n in rows}


def by_chdb(column):
    text = str(
        chdb.query(
            f"SELECT {column} AS value, count() AS n FROM file('{quoted}', Parquet) WHERE scan GROUP BY {column}",
            "JSONEachRow",
        )
    )
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return {r["value"]: int(r["n"]) for r in rows}


columns = ["key", "device", "country"]
print(json.dumps({
    "duckdb": {c: by_duckdb(c) for c in columns},
    "chdb": {c: by_chdb(c) for c in columns},
}))
