"""The Python package `sift` (crates/sift-python), as a user calls it: writing from pyarrow,
pandas and Polars; scans with filters given as Sift's text and as pyarrow expressions,
checked against pyarrow's own filtering; datasets read by DuckDB and Polars with the
pushdown visible in the scan's statistics; SQL checked against DuckDB; zero-copy results;
errors as exceptions; Ctrl-C.

scripts/test.sh builds and installs the package into the test environment first.
"""

from __future__ import annotations

import _thread
import datetime
import decimal
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import sift
from difftools import comparable, multiset_diff


def same(a: pa.Table, b: pa.Table) -> bool:
    """Equal tables, NaN equal to NaN, whatever the chunking."""
    return a.schema == b.schema and comparable(a).equals(comparable(b))


def as_stored(t: pa.Table) -> pa.Table:
    """`t` as a Sift scan returns it: a column written as a dictionary comes back as its
    values (``read_dictionary`` asks for the dictionary)."""
    return t.cast(pa.schema([pa.field(f.name, f.type.value_type) if pa.types.is_dictionary(f.type)
                             else f for f in t.schema]))

ROWS = 20_000
BLOCK = 2_000


def _every_type(n: int) -> pa.Table:
    """One column of every type Sift stores, with nulls."""
    def nulls(values):
        return [None if i % 7 == 3 else v for i, v in enumerate(values)]

    ints = list(range(n))
    return pa.table({
        "i8": pa.array(nulls([i % 100 - 50 for i in ints]), pa.int8()),
        "i16": pa.array(nulls([i % 30000 for i in ints]), pa.int16()),
        "i32": pa.array(nulls(ints), pa.int32()),
        "i64": pa.array(nulls([i * 1_000_003 for i in ints]), pa.int64()),
        "u8": pa.array(nulls([i % 256 for i in ints]), pa.uint8()),
        "u16": pa.array(nulls([i % 65536 for i in ints]), pa.uint16()),
        "u32": pa.array(nulls([i * 7 for i in ints]), pa.uint32()),
        "u64": pa.array(nulls([2**63 + i for i in ints]), pa.uint64()),
        "f32": pa.array(nulls([i / 8 for i in ints]), pa.float32()),
        "f64": pa.array(nulls([i / 3 if i % 11 else float("nan") for i in ints]), pa.float64()),
        "b": pa.array(nulls([i % 3 == 0 for i in ints]), pa.bool_()),
        "s": pa.array(nulls([f"str{i % 97}" for i in ints]), pa.string()),
        "ls": pa.array(nulls([f"large{i % 13}" for i in ints]), pa.large_string()),
        "bin": pa.array(nulls([bytes([i % 256, 1]) for i in ints]), pa.binary()),
        "fsb": pa.array(nulls([bytes([i % 256] * 4) for i in ints]), pa.binary(4)),
        "d32": pa.array(nulls([datetime.date(2000, 1, 1) + datetime.timedelta(days=i % 9000)
                               for i in ints]), pa.date32()),
        "ts": pa.array(nulls([i * 1_000_000 for i in ints]), pa.timestamp("us")),
        "tstz": pa.array(nulls([i * 1_000 for i in ints]), pa.timestamp("ms", tz="UTC")),
        "t64": pa.array(nulls([i * 1000 for i in ints]), pa.time64("us")),
        "dur": pa.array(nulls([i for i in ints]), pa.duration("s")),
        "dec": pa.array(nulls([decimal.Decimal(i) / 100 for i in ints]), pa.decimal128(12, 2)),
        "dict": pa.array(nulls([f"cat{i % 5}" for i in ints])).dictionary_encode(),
    })


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A table of every type, as a Sift file (several blocks) and a Parquet file."""
    table = _every_type(ROWS)
    d = tmp_path_factory.mktemp("pkg")
    summary = sift.write(table, d / "t.sift", block_rows=BLOCK)
    assert summary["rows"] == ROWS and Path(summary["path"]).exists()
    pq.write_table(table, d / "t.parquet", row_group_size=5_000)
    return table, d / "t.sift", d / "t.parquet"


def test_round_trip_of_every_type_with_nulls(data):
    table, path, _ = data
    f = sift.open(path)
    assert f.num_rows == ROWS and f.num_blocks == ROWS // BLOCK
    assert f.schema == as_stored(table).schema
    assert same(f.to_table(), as_stored(table))
    assert same(pa.table(f), as_stored(table))  # through __arrow_c_stream__
    assert same(f.to_table(columns=["s", "i32"]), table.select(["s", "i32"]))
    dictionary = f.to_table(columns=["dict"], read_dictionary=["dict"]).column("dict")
    assert pa.types.is_dictionary(dictionary.type)
    assert dictionary.to_pylist() == table.column("dict").to_pylist()


def test_write_takes_pandas_polars_readers_and_dicts(tmp_path):
    expected = pa.table({"x": pa.array([1, None, 3], pa.int64()), "y": ["a", "b", None]})
    df = pd.DataFrame({"x": pd.array([1, None, 3], dtype="Int64"), "y": ["a", "b", None]})
    sources = {
        "pandas": df,
        "polars": pl.DataFrame({"x": [1, None, 3], "y": ["a", "b", None]}),
        "reader": pa.RecordBatchReader.from_batches(expected.schema, expected.to_batches()),
        "dict": {"x": [1, None, 3], "y": ["a", "b", None]},
        "batch": expected.to_batches()[0],
    }
    for name, source in sources.items():
        path = tmp_path / f"{name}.sift"
        sift.write(source, path)
        got = sift.open(path).to_table()
        assert got.column("x").to_pylist() == [1, None, 3], name
        assert got.column("y").to_pylist() == ["a", "b", None], name


def test_write_streams_a_reader_in_blocks(tmp_path):
    schema = pa.schema([("v", pa.int64())])
    batches = (pa.record_batch([pa.array(range(i * 1000, (i + 1) * 1000), pa.int64())],
                               schema=schema) for i in range(50))
    reader = pa.RecordBatchReader.from_batches(schema, batches)
    sift.write(reader, tmp_path / "s.sift", block_rows=10_000, threads=2)
    f = sift.open(tmp_path / "s.sift")
    assert f.num_blocks == 5
    assert f.to_table().column("v").to_pylist() == list(range(50_000))


def test_byteslice_columns_are_written_and_filter_like_pyarrow(tmp_path):
    import pyarrow.compute as pc
    n = 50_000
    table = pa.table({
        "key": pa.array([(i * 7919) % 1_000_003 for i in range(n)], pa.int64()),
        "other": pa.array([i % 1000 for i in range(n)], pa.int64()),
    })
    sift.write(table, tmp_path / "b.sift", byteslice=["key"])
    f = sift.open(tmp_path / "b.sift")
    encodings = {c["name"]: c["encoding"] for c in f.metadata["blocks"][0]["columns"]}
    assert encodings["key"].startswith("byteslice"), encodings
    assert not encodings["other"].startswith("byteslice"), encodings
    assert same(f.to_table(), table)
    got = f.to_table(filter=(pc.field("key") >= 1000) & (pc.field("key") < 50_000))
    want = table.filter((pc.field("key") >= 1000) & (pc.field("key") < 50_000))
    assert same(got, want)
    sift.convert(tmp_path / "b.sift", tmp_path / "c.sift", byteslice="other")
    encodings = {c["name"]: c["encoding"]
                 for c in sift.open(tmp_path / "c.sift").metadata["blocks"][0]["columns"]}
    assert encodings["other"].startswith("byteslice"), encodings
    with pytest.raises(sift.SiftError, match="'nope'"):
        sift.write(table, tmp_path / "x.sift", byteslice=["nope"])
    with pytest.raises(sift.SiftError, match="only applies to .sift output"):
        sift.write(table, tmp_path / "x.parquet", byteslice=["key"])
    assert not (tmp_path / "x.sift").exists()


def _nested_table(n: int) -> pa.Table:
    user = pa.array(
        [None if i % 10 == 3 else {"id": None if i % 13 == 5 else i * 7 % 1000,
                                   "name": f"user{i % 97}"} for i in range(n)],
        pa.struct([("id", pa.int64()), ("name", pa.string())]))
    words = ["red", "green", "blue", "amber"]
    tags = pa.array([None if i % 17 == 0 else [words[(i + j) % 4] for j in range(i % 5)]
                     for i in range(n)], pa.list_(pa.string()))
    counters = pa.array([None if i % 9 == 4 else [(f"c{j}", i * j) for j in range(i % 3)]
                         for i in range(n)], pa.map_(pa.string(), pa.int32()))
    points = pa.array([None if i % 11 == 2 else [i / 4, -i / 8] for i in range(n)],
                      pa.list_(pa.float64(), 2))
    nested = pa.array([[[i, None], []] if i % 2 else None for i in range(n)],
                      pa.large_list(pa.list_(pa.int32())))
    return pa.table({"id": pa.array(range(n), pa.int64()), "user": user, "tags": tags,
                     "counters": counters, "points": points, "nested": nested})


def test_nested_columns_round_trip_and_filter_like_pyarrow(tmp_path):
    table = _nested_table(5000)
    path = tmp_path / "nested.sift"
    sift.write(table, path, block_rows=1024)
    f = sift.open(path)
    assert f.schema == table.schema
    assert f.to_table().equals(table)
    # A struct's field is filtered like a column; nested columns come back at the rows.
    got = f.to_table(filter="user.id < 40 and id < 3000", columns=["id", "tags", "counters"])
    want = table.filter((pc.struct_field(pc.field("user"), "id") < 40) & (pc.field("id") < 3000))
    assert got.equals(want.select(["id", "tags", "counters"]))
    assert f.to_table(filter="tags is null").num_rows == table.filter(
        pc.field("tags").is_null()).num_rows
    # The same filter as a pyarrow expression on a nested field, pushed into the scan.
    expr = (pc.field("user", "id") < 40) & (pc.field("id") < 3000)
    got = f.to_table(filter=expr, columns=["id", "tags", "counters"])
    assert got.equals(want.select(["id", "tags", "counters"]))
    assert f.last_scan_stats["rows_matched"] == want.num_rows
    # Not all of it evaluated by Sift: pyarrow applies it again to the rows read.
    expr = pc.field("user", "id").is_null() | (pc.field("id") * 2 < 10)
    assert f.to_table(filter=expr).equals(table.filter(expr))
    # Through Parquet and back, the same table.
    pq.write_table(table, tmp_path / "nested.parquet")
    sift.convert(tmp_path / "nested.parquet", tmp_path / "again.sift")
    assert sift.open(tmp_path / "again.sift").to_table().equals(table)


def test_a_failed_write_leaves_nothing_and_keeps_the_old_file(tmp_path):
    path = tmp_path / "keep.sift"
    sift.write({"v": [1, 2, 3]}, path)
    before = path.read_bytes()
    schema = pa.schema([("v", pa.int64())])

    def failing():
        yield pa.record_batch([pa.array([9, 9], pa.int64())], schema=schema)
        raise ValueError("the source broke")

    with pytest.raises(Exception, match="the source broke"):
        sift.write(pa.RecordBatchReader.from_batches(schema, failing()), path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.sift"]


def test_convert_between_formats(data, tmp_path):
    table, path, parquet = data
    sift.convert(parquet, tmp_path / "c.sift", block_rows=4096)
    assert same(sift.open(tmp_path / "c.sift").to_table(), as_stored(table))
    sift.convert(path, tmp_path / "c.parquet", compression="snappy")
    # Converting keeps the types as written, dictionaries included.
    assert same(pq.read_table(tmp_path / "c.parquet"), table)
    csv = tmp_path / "c.csv"
    csv.write_text("a,b\n1,x\n2,y\n")
    summary = sift.convert(csv, tmp_path / "csv.sift", progress=False)
    assert summary["rows"] == 2
    assert sift.open(tmp_path / "csv.sift").to_table().column("b").to_pylist() == ["x", "y"]
    # The column the Sift file holds sorted is declared so in Parquet converted from it.
    sift.convert(tmp_path / "csv.sift", tmp_path / "csv.parquet", progress=False)
    group = pq.ParquetFile(tmp_path / "csv.parquet").metadata.row_group(0)
    assert [c.column_index for c in group.sorting_columns] == [0]
    with pytest.raises(sift.SiftError, match="same file"):
        sift.convert(path, path)
    with pytest.raises(sift.SiftError, match="compression only applies"):
        sift.convert(parquet, tmp_path / "x.sift", compression="zstd")


# Expressions pushed into Sift's scan whole; each result is checked against pyarrow's own
# filtering of the same table.
PUSHED = [
    pc.field("i32") < 5000,
    (pc.field("i32") >= 1000) & (pc.field("i32") < 1200),
    (pc.field("i8") == -50) | (pc.field("u8") > 250),
    ~(pc.field("i16") >= 100),
    pc.field("f64") > 6000.5,           # NaN rows are not greater in pyarrow
    pc.field("f64") <= 10.0,
    pc.field("f32") >= 2.5,
    pc.field("s") == "str5",
    pc.field("s").isin(["str1", "str2", "zzz"]),
    ~pc.field("s").isin(["str1"]),      # null rows are kept by pyarrow's negated is_in
    pc.field("ls") != "large3",
    pc.field("d32") >= pc.scalar(datetime.date(2010, 6, 1)),
    pc.field("dec") < pc.scalar(decimal.Decimal("12.34")),
    pc.field("dec") >= 150.25,
    pc.field("i64").is_null(),
    pc.field("i64").is_valid() & (pc.field("u64") > pc.scalar(pa.scalar(2**63 + 19_000, pa.uint64()))),
    pc.field("b"),
    pc.field("b") == False,  # noqa: E712
    pc.match_like(pc.field("s"), "str1%"),
    pc.starts_with(pc.field("s"), "str9"),
    pc.field("u32") > 3,
    pc.scalar(100) > pc.field("i32"),
    pc.field("i32") == pc.field("i32"),
    pc.field("dict") == "cat3",
]

# Expressions with parts Sift does not evaluate: applied by pyarrow after the scan.
RESIDUAL = [
    (pc.field("i32") < 3000) & (pc.field("i32") + 1 == 7),
    pc.field("f64").is_nan(),
    pc.match_like(pc.field("s"), "STR1%", ignore_case=True),
    (pc.field("i32") < 100) | (pc.field("ts") > pc.scalar(datetime.datetime(2000, 1, 1))),
    pc.field("ts") < pc.scalar(datetime.datetime(1970, 1, 1, 0, 5)),
]


@pytest.mark.parametrize("expr", PUSHED + RESIDUAL, ids=str)
@pytest.mark.parametrize("fmt", ["sift", "parquet"])
def test_expression_filters_match_pyarrow(data, expr, fmt):
    table, path, parquet = data
    f = sift.open(path if fmt == "sift" else parquet)
    scanner = f.scanner(columns=["i32", "s"], filter=expr, threads=2)
    got = scanner.to_table()
    expected = table.filter(expr).select(["i32", "s"])
    assert same(got, expected), f"{expr}: {got.num_rows} rows, pyarrow {expected.num_rows}"
    # Parquet files declare dictionary columns, which pyarrow filters.
    if any(expr.equals(e) for e in PUSHED) and not (fmt == "parquet" and "dict" in str(expr)):
        assert scanner.pushed_filter is not None
        assert scanner.stats["rows_matched"] == expected.num_rows


def test_pushed_expressions_prune_blocks(data):
    _, path, _ = data
    f = sift.open(path)
    got = f.to_table(filter=(pc.field("i32") >= 4000) & (pc.field("i32") < 4100))
    assert got.num_rows == 100 - sum(1 for i in range(4000, 4100) if i % 7 == 3)
    stats = f.last_scan_stats
    assert stats["blocks_pruned"] == ROWS // BLOCK - 1
    assert stats["rows_scanned"] == BLOCK


@pytest.mark.parametrize("text,expr", [
    ("i32 < 5000 and s = 'str5'", (pc.field("i32") < 5000) & (pc.field("s") == "str5")),
    ("d32 between date '2001-01-01' and date '2001-03-01'",
     (pc.field("d32") >= pc.scalar(datetime.date(2001, 1, 1)))
     & (pc.field("d32") <= pc.scalar(datetime.date(2001, 3, 1)))),
    ("dec >= 100.5 or i64 is null", (pc.field("dec") >= 100.5) | pc.field("i64").is_null()),
    ("s like 'str1%' and b = false", pc.match_like(pc.field("s"), "str1%") & ~pc.field("b")),
])
def test_filter_text_matches_pyarrow(data, text, expr):
    table, path, parquet = data
    for p in (path, parquet):
        got = sift.open(p).to_table(filter=text)
        assert same(got, as_stored(table).filter(expr) if p == path else table.filter(expr)), \
            (p, text)


def test_limit_columns_dictionary_and_readers(data):
    table, path, _ = data
    f = sift.open(path)
    stored = as_stored(table)
    assert same(f.to_table(limit=10), stored.slice(0, 10))
    limited = f.to_table(filter=(pc.field("i32") > 100) & (pc.field("i32") * 2 > 0), limit=5)
    assert same(limited, stored.filter(pc.field("i32") > 100).slice(0, 5))
    t = f.to_table(columns=["s"], read_dictionary=["s"])
    assert pa.types.is_dictionary(t.schema.field("s").type)
    assert t.column("s").cast(pa.string()).equals(table.column("s"))
    reader = f.to_reader(columns=["i32"], filter="i32 < 4500", batch_size=1000)
    assert isinstance(reader, pa.RecordBatchReader)
    sizes = [b.num_rows for b in reader]
    assert max(sizes) <= 1000
    assert sum(sizes) == table.filter(pc.field("i32") < 4500).num_rows
    assert f.to_pandas(columns=["i32"], limit=3)["i32"].tolist() == [0, 1, 2]
    batches = list(f.to_batches(columns=["s"], filter="i32 < 10"))
    assert pa.Table.from_batches(batches).column("s").to_pylist()[:2] == ["str0", "str1"]


def test_metadata_describes_blocks_and_zone_maps(data):
    table, path, parquet = data
    meta = sift.open(path).metadata
    assert meta["format"] == "sift" and meta["num_blocks"] == ROWS // BLOCK
    assert sum(b["rows"] for b in meta["blocks"]) == ROWS
    for b in meta["blocks"]:
        part = table.slice(b["index"] * BLOCK, BLOCK)
        cols = {c["name"]: c for c in b["columns"]}
        assert cols["i32"]["min"] == pc.min(part["i32"]).as_py()
        assert cols["i32"]["max"] == pc.max(part["i32"]).as_py()
        assert cols["i32"]["null_count"] == part["i32"].null_count
        assert cols["d32"]["min"] == pc.min(part["d32"]).as_py()
        assert cols["dec"]["max"] == pc.max(part["dec"]).as_py()
        assert cols["s"]["encoding"] and cols["s"]["stored_bytes"] > 0
    pmeta = sift.open(parquet).metadata
    assert pmeta["format"] == "parquet" and pmeta["num_blocks"] == 4
    assert pmeta["blocks"][0]["columns"][0]["encoding"] is None


def test_results_are_not_copied(data):
    _, path, _ = data
    f = sift.open(path)
    f.to_table(columns=["i64", "f64"])  # warm up pyarrow's lazily created objects
    before = pa.total_allocated_bytes()
    t = f.to_table(columns=["i64", "f64"])
    grown = pa.total_allocated_bytes() - before
    assert t.nbytes > 300_000
    # The buffers are Sift's, handed over through the C data interface: pyarrow's pool
    # allocated nothing for them.
    assert grown < t.nbytes / 100, f"pyarrow allocated {grown} bytes for {t.nbytes}"


@pytest.fixture(scope="module")
def lineitem_sift(lineitem, tmp_path_factory):
    path = tmp_path_factory.mktemp("li") / "lineitem.sift"
    sift.write(lineitem.table, path, block_rows=4096)
    return lineitem.table, path


Q6_DUCK = ("select sum(l_extendedprice * l_discount) from {t} "
           "where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' "
           "and l_discount between 0.05 and 0.07 and l_quantity < 24")


def test_duckdb_pushes_projection_and_filter_into_the_dataset(lineitem_sift):
    table, path = lineitem_sift
    ds = sift.dataset(path, blocks_per_fragment=4)
    lineitem_arrow = table  # noqa: F841 - DuckDB reads the local variable
    got = duckdb.sql(Q6_DUCK.format(t="ds")).fetchall()
    expected = duckdb.sql(Q6_DUCK.format(t="lineitem_arrow")).fetchall()
    assert got[0][0] == pytest.approx(expected[0][0], rel=1e-9)
    stats = ds.last_scan_stats
    # The filters DuckDB pushed ran in Sift's scan, which returned (and decoded) only the
    # rows that passed them, a fraction of the table.
    q6_rows = duckdb.sql(Q6_DUCK.format(t="lineitem_arrow").replace(
        "sum(l_extendedprice * l_discount)", "count(*)")).fetchall()[0][0]
    assert stats["rows_scanned"] == table.num_rows
    assert q6_rows <= stats["rows_matched"] < table.num_rows / 4
    assert stats["values_decoded"] < table.num_rows
    # Blocks are pruned by their zone maps (l_orderkey grows with the row number).
    keys = duckdb.sql("select sum(l_quantity) from ds where l_orderkey < 1000").fetchall()
    assert keys == duckdb.sql(
        "select sum(l_quantity) from lineitem_arrow where l_orderkey < 1000").fetchall()
    assert ds.last_scan_stats["blocks_pruned"] >= ds.last_scan_stats["blocks_total"] - 1 > 0


def test_polars_pushes_projection_and_filter_into_the_dataset(lineitem_sift):
    table, path = lineitem_sift
    ds = sift.dataset([path])
    got = (pl.scan_pyarrow_dataset(ds)
           .filter((pl.col("l_shipdate") >= datetime.date(1998, 9, 1)) & (pl.col("l_quantity") < 5))
           .select(["l_orderkey", "l_quantity"])
           .collect())
    expected = table.filter((pc.field("l_shipdate") >= pc.scalar(datetime.date(1998, 9, 1)))
                            & (pc.field("l_quantity") < 5)).select(["l_orderkey", "l_quantity"])
    assert sorted(got.rows()) == sorted(zip(*[c.to_pylist() for c in expected.columns]))
    stats = ds.last_scan_stats
    assert stats["rows_matched"] == expected.num_rows
    assert stats["values_decoded"] < table.num_rows / 10
    assert pl.scan_pyarrow_dataset(ds).filter(pl.col("l_orderkey") < 100).select(
        pl.len()).collect().item() == table.filter(pc.field("l_orderkey") < 100).num_rows
    assert ds.last_scan_stats["blocks_pruned"] > 0


def test_dataset_over_several_files_and_fragments(lineitem_sift, tmp_path):
    table, path = lineitem_sift
    half = table.num_rows // 2
    sift.write(table.slice(0, half), tmp_path / "a.sift")
    sift.write(table.slice(half), tmp_path / "b.sift")
    ds = sift.dataset(tmp_path)
    assert ds.count_rows() == table.num_rows
    assert ds.to_table(columns=["l_orderkey"]).column(0).equals(table.column("l_orderkey"))
    assert len(list(ds.get_fragments())) == 2
    assert ds.count_rows(filter=pc.field("l_quantity") < 10) == \
        table.filter(pc.field("l_quantity") < 10).num_rows
    assert ds.head(5, columns=["l_orderkey"]).num_rows == 5
    frags = list(sift.dataset(path, blocks_per_fragment=3).get_fragments())
    assert sum(f.count_rows() for f in frags) == table.num_rows
    # A Parquet file beside Sift files is not part of the directory's table.
    pq.write_table(pa.table({"x": [1]}), tmp_path / "other.parquet")
    assert sift.dataset(tmp_path).count_rows() == table.num_rows
    sift.write(pa.table({"x": [1]}), tmp_path / "other.sift")
    with pytest.raises(sift.SiftError, match="no column in common"):
        sift.dataset(tmp_path)
    (tmp_path / "other.sift").unlink()
    sift.write(pa.table({"l_orderkey": ["a"]}), tmp_path / "other.sift")
    with pytest.raises(sift.SiftError, match="column 'l_orderkey' is Int64 in one and Utf8"):
        sift.dataset(tmp_path)


def test_dataset_hive_partitions_and_unified_schemas(lineitem_sift, tmp_path):
    """A Hive tree's directories are columns; a filter on them reads only the files it
    keeps; a file lacking a column has nulls there, a narrower integer column widens.
    Results equal pyarrow's on the same rows, through DuckDB and Polars too."""
    table, _ = lineitem_sift
    year = pc.year(table["l_shipdate"])
    parts = []
    for y in (1995, 1996, None):
        rows = table.filter(pc.equal(year, y) if y else pc.equal(year, 1997))
        name = "__HIVE_DEFAULT_PARTITION__" if y is None else str(y)
        stored = rows
        if y is None:
            # The last file lacks l_comment and stores l_linenumber as int32.
            stored = rows.drop_columns(["l_comment"]).set_column(
                rows.schema.get_field_index("l_linenumber"), "l_linenumber",
                rows["l_linenumber"].cast(pa.int32()))
        (tmp_path / f"year={name}").mkdir()
        sift.write(stored, tmp_path / f"year={name}" / "part-0.sift", block_rows=4096)
        expected = rows.set_column(rows.schema.get_field_index("l_comment"), "l_comment",
                                   pa.nulls(rows.num_rows, pa.string()) if y is None
                                   else rows["l_comment"])
        parts.append(expected.append_column("year", pa.array([y] * rows.num_rows, pa.int64())))
    full = pa.concat_tables(parts)
    ds = sift.dataset(tmp_path)
    assert ds.schema.names == table.schema.names + ["year"]
    assert ds.schema.field("year").type == pa.int64()
    assert ds.schema.field("l_linenumber").type == table.schema.field("l_linenumber").type
    got = ds.to_table()
    assert not multiset_diff(got, full.cast(got.schema))
    exprs = [f.partition_expression for f in ds.get_fragments()]
    assert str(exprs[0]) == "(true and (year == 1995))", exprs

    # A partition filter: only the 1996 file is read.
    got = ds.to_table(columns=["l_orderkey", "year"], filter=pc.field("year") == 1996)
    want = full.filter(pc.field("year") == 1996).select(["l_orderkey", "year"])
    assert not multiset_diff(got, want)
    blocks_1996 = -(-parts[1].num_rows // 4096)
    assert ds.last_scan_stats["blocks_total"] == blocks_1996
    # Null partition values, and a filter on a column one file lacks.
    got = ds.to_table(columns=["l_orderkey"], filter="year is null and l_comment is null")
    assert got.num_rows == parts[2].num_rows
    got = ds.to_table(columns=["year"], filter=pc.field("l_comment").is_valid())
    assert set(got["year"].to_pylist()) == {1995, 1996}

    full_arrow = full  # noqa: F841 - DuckDB reads the local variable
    q = "select year, count(*), sum(l_quantity) from {t} where year >= 1996 or year is null " \
        "group by year order by year"
    assert duckdb.sql(q.format(t="ds")).fetchall() == duckdb.sql(
        q.format(t="full_arrow")).fetchall()
    got = (pl.scan_pyarrow_dataset(ds).filter(pl.col("year") == 1995)
           .select(pl.len()).collect().item())
    assert got == parts[0].num_rows
    with pytest.raises(sift.SiftError, match="no column 'nope' in the dataset"):
        ds.to_table(columns=["nope"])


def test_sql_matches_duckdb(lineitem_sift):
    table, path = lineitem_sift
    query = ("select l_returnflag, l_linestatus, count(*) as n, sum(l_quantity) as q "
             "from lineitem where l_shipdate <= date '1998-09-02' group by 1, 2 order by 1, 2")
    got = sift.sql(query, tables={"lineitem": path}, threads=2)
    lineitem = table  # noqa: F841 - DuckDB reads the local variable
    expected = duckdb.sql(query).to_arrow_table()
    assert got.num_rows == expected.num_rows
    for a, b in zip(got.to_pylist(), expected.to_pylist()):
        assert a["l_returnflag"] == b["l_returnflag"] and a["n"] == b["n"]
        assert a["q"] == pytest.approx(b["q"])
    direct = sift.sql(f"select count(*) as n from '{path}' where l_quantity < 24")
    assert direct.column("n")[0].as_py() == table.filter(pc.field("l_quantity") < 24).num_rows
    assert sift.sql("select count(*) as n from t", tables={"t": sift.open(path)}) \
        .column("n")[0].as_py() == table.num_rows


def test_errors_are_python_exceptions(data, tmp_path):
    _, path, _ = data
    with pytest.raises(FileNotFoundError, match="missing.sift"):
        sift.open(tmp_path / "missing.sift")
    truncated = tmp_path / "truncated.sift"
    truncated.write_bytes(path.read_bytes()[: 5000])
    with pytest.raises(sift.CorruptFileError, match="truncated.sift"):
        sift.open(truncated)
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"not parquet at all" * 10)
    with pytest.raises(sift.CorruptFileError):
        sift.open(garbage)
    f = sift.open(path)
    with pytest.raises(sift.FilterError, match="no column 'nope'"):
        f.to_table(filter="nope < 3")
    with pytest.raises(sift.FilterError, match="at column"):
        f.to_table(filter="i32 <")
    with pytest.raises(sift.FilterError):
        f.to_table(filter="s < 3")
    with pytest.raises(TypeError, match="filter must be"):
        f.to_table(filter=42)
    with pytest.raises(sift.UnsupportedTypeError, match="'span'"):
        spans = pa.array([pa.MonthDayNano([1, 2, 3])], pa.month_day_nano_interval())
        sift.write(pa.table({"span": spans}), tmp_path / "l.sift")
    assert not (tmp_path / "l.sift").exists()
    with pytest.raises(sift.SqlError, match="line 1, column"):
        sift.sql("select nope from t", tables={"t": path})
    with pytest.raises(sift.SqlError):
        sift.sql("selec 1")
    with pytest.raises(sift.SiftError):
        sift.write({"v": [1]}, tmp_path / "x.unknown")
    assert issubclass(sift.CorruptFileError, sift.SiftError)


def _interrupted(fn, delay: float) -> str:
    """Runs `fn` with Ctrl-C (``_thread.interrupt_main``) `delay` seconds after it starts:
    ``"inside"`` when `fn` stopped with KeyboardInterrupt raised from Sift's native scan,
    ``"elsewhere"`` when raised between Python statements, ``"finished"`` when `fn` ended
    first (a late interrupt is absorbed here, so it cannot escape into the test)."""
    timer = threading.Timer(delay, _thread.interrupt_main)
    outcome = "finished"
    # A process started with SIGINT ignored (a background job of a shell without job
    # control) keeps it ignored, and then interrupt_main does nothing: Python's own handler
    # is put in place for the call, as in an interactive session.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer.start()
        try:
            fn()
        except KeyboardInterrupt:
            frames = traceback.extract_tb(sys.exc_info()[2])
            outcome = "inside" if frames[-1].line and "read_all" in frames[-1].line else "elsewhere"
        timer.join()
        for _ in range(10_000):  # let an interrupt set during join() be raised in here
            pass
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGINT, previous)
    return outcome


def test_ctrl_c_stops_a_long_scan(tmp_path):
    import numpy as np

    path = tmp_path / "big.sift"
    # Long enough (a tenth of a second in a debug build) that a whole scan's time dwarfs
    # the timer thread's lateness on a loaded machine, which has reached several ms.
    n = 8_000_000
    sift.write(pa.table({"v": pa.array(np.arange(n, dtype=np.int64))}), path, block_rows=1000)
    f = sift.open(path)
    # A whole scan's time, warm: a first scan in a fresh process can take several times
    # longer (new memory), and an interrupt timed from it would come after later scans end.
    whole = float("inf")
    for _ in range(3):
        start = time.monotonic()
        f.to_table(threads=1)
        whole = min(whole, time.monotonic() - start)
    outcomes = []
    for _ in range(10):
        start = time.monotonic()
        outcome = _interrupted(lambda: f.to_table(threads=1), whole / 4)
        outcomes.append(outcome)
        if outcome == "inside":
            # Stopped well before a whole scan's time.
            assert time.monotonic() - start < whole
            return
    pytest.fail(f"KeyboardInterrupt never came from inside the scan: {outcomes}")


def test_ctrl_c_stops_a_write_and_leaves_nothing(tmp_path):
    schema = pa.schema([("v", pa.int64())])

    def endless():
        # Endless unless the interrupt is lost: then the write ends after a minute and the
        # test fails on its outcome instead of hanging.
        i, deadline = 0, time.monotonic() + 60
        while time.monotonic() < deadline:
            yield pa.record_batch([pa.array(range(i, i + 10_000), pa.int64())], schema=schema)
            i += 10_000

    reader = pa.RecordBatchReader.from_batches(schema, endless())
    outcome = _interrupted(lambda: sift.write(reader, tmp_path / "w.sift"), 0.3)
    # An endless write ends only by the interrupt, raised as KeyboardInterrupt (whether it
    # came between batches or inside the Python generator producing them).
    assert outcome in ("inside", "elsewhere"), f"the write was not interrupted: {outcome}"
    assert list(tmp_path.iterdir()) == []


def test_the_readme_example_runs_as_written(tmp_path, monkeypatch, capsys):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("<!-- python-example")[1].split("```python\n")[1].split("```")[0]
    assert len(block.strip().splitlines()) == 5
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "id: [[1,3,5,7,9]]" in out and "n: [[500000,500000]]" in out
