"""Shared fixtures of the DuckDB differential tests (test_queries.py, test_scan_filters.py,
test_sql_random.py).

* ``sift_bin``: the sift binary, found as in test_parquet_testing.py (``SIFT_BIN``, else
  ``${CARGO_TARGET_DIR:-<repo>/target}/debug/sift``).
* ``duck``: an in-memory DuckDB connection (time zone UTC, so that timestamp literals
  compared with ``timestamp with time zone`` columns mean UTC, as in Sift).
* ``lineitem``: TPC-H lineitem SF 0.01 from tpchgen-cli, prepared as bench/harness.py
  prepares it (decimals as float64, dates date32, strings utf8), as Parquet (several row
  groups) and as Sift (several blocks, not aligned with the row groups).

Helpers are in difftools.py.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from difftools import DataFiles, default_bin, find_tool, normalize, write_files

TPCH_SCALE = "0.01"
LINEITEM_ROW_GROUP = 20_000   # lineitem SF 0.01 has 60,175 rows: 4 row groups
LINEITEM_BLOCK_ROWS = 7_000   # 9 Sift blocks


@pytest.fixture(scope="session")
def sift_bin() -> Path:
    path = Path(os.environ.get("SIFT_BIN", default_bin()))
    if not path.is_file():
        pytest.fail(f"sift binary not found at {path}; run `cargo build -p sift-cli` or set "
                    "SIFT_BIN")
    return path


@pytest.fixture(scope="session")
def duck():
    import duckdb

    con = duckdb.connect(config={"threads": 2})
    con.execute("set TimeZone = 'UTC'")
    yield con
    con.close()


@pytest.fixture(scope="session")
def lineitem_table(tmp_path_factory) -> pa.Table:
    gen = tmp_path_factory.mktemp("tpchgen")
    subprocess.run(
        [find_tool("tpchgen-cli"), "parquet", "-s", TPCH_SCALE, "--tables", "lineitem",
         "-o", str(gen), "--quiet"],
        check=True, timeout=300,
    )
    return normalize(pq.read_table(gen / "lineitem.parquet"))


@pytest.fixture(scope="session")
def lineitem(lineitem_table, sift_bin, tmp_path_factory) -> DataFiles:
    files = write_files(sift_bin, lineitem_table, tmp_path_factory.mktemp("lineitem"),
                        "lineitem", LINEITEM_ROW_GROUP, LINEITEM_BLOCK_ROWS)
    assert files.table.num_rows > 3 * LINEITEM_BLOCK_ROWS
    return files
