"""Object-store reads: `sift scan` and `sift sql` on s3:// URLs, against a local S3 server.

Setup (module-scoped): ``moto_server`` (moto[server], from the test venv) on 127.0.0.1 and
scripts/s3proxy.py in front of it. The sift processes and boto3 talk to the proxy only
(``AWS_ENDPOINT_URL``), which counts the requests per method and per object, logs their
Range headers, and on demand adds latency or injects faults (503 SlowDown, closed
connections). Every address is 127.0.0.1.

Data: TPC-H lineitem SF 0.01 from conftest.py (``lineitem``: the table, its Parquet file
and its Sift file of 9 blocks), uploaded as

* ``single/lineitem.sift``: the Sift file as is;
* ``lineitem/part-{0,1,2}.sift``: the table cut into three runs of rows, 3 blocks each;
* ``sales/year=YYYY/h{1,2}.sift``: the rows by the year of l_shipdate (Hive partitions
  1992..1998) and its half (h1: January to June, h2: July to December), ~5 blocks each;
* ``wide/wide.sift``: many columns and blocks, a footer larger than the 64 KiB first read;
* ``mismatch/{a,b}.sift`` (column x utf8 in one, int64 in the other) and
  ``widen/{a,b}.sift`` (id int32 / int64, other columns missing in one of them);
* ``pq/lineitem.parquet`` (the Parquet file, 4 row groups) and
  ``pqparts/part-{0,1,2}.parquet`` (the three runs of rows, written by pyarrow with
  5,000-row row groups and a page index), read by Sift's Parquet scan.

Results over S3 are compared with the same command on the local file, with DuckDB (Q6)
and with pyarrow (Hive partitions).
"""

from __future__ import annotations

import csv
import datetime
import io
import json
import math
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from difftools import REPO, multiset_diff, same_value

PROXY_SCRIPT = REPO / "scripts" / "s3proxy.py"
BUCKET = "sift-test"
HOST = "127.0.0.1"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_REGION": "us-east-1",
}
START_TIMEOUT = 30.0

Q6_FILTER = ("l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' "
             "and l_discount between 0.05 and 0.07 and l_quantity < 24")
Q6_COLUMNS = "l_orderkey,l_linenumber,l_extendedprice,l_discount"
Q6_SQL = ("select sum(l_extendedprice * l_discount) as revenue from {table} "
          "where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' "
          "and l_discount between 0.05 and 0.07 and l_quantity < 24")

PART_BLOCK_ROWS = 7_000   # lineitem/part-*.sift: 3 blocks each
SALES_BLOCK_ROWS = 1_000  # sales/year=*/h*.sift: 4 to 6 blocks each
SALES_YEARS = range(1992, 1999)

FILES_RE = re.compile(r"scan: files (\d+) \(pruned (\d+), opened (\d+)\)")
BLOCKS_RE = re.compile(r"scan: blocks (\d+) \(pruned (\d+), no match (\d+)\)")
FETCHED_RE = re.compile(r"; (\d+) requests fetched (\d+) bytes")
CRASH_MARKERS = ("panicked", "RUST_BACKTRACE", "Traceback", "stack backtrace")


# --------------------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def no_proxy_opener() -> urllib.request.OpenerDirector:
    """urllib without the environment's HTTP proxies: every address here is local."""
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))


def stop_process(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def log_tail(path: Path, n: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


def start_moto(log: Path) -> tuple[subprocess.Popen, str]:
    exe = Path(sys.executable).parent / "moto_server"
    if not exe.is_file():
        pytest.fail(f"moto_server not found next to {sys.executable}: install "
                    "tests/python/requirements.txt (moto[server])", pytrace=False)
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(exe), "-H", HOST, "-p", str(port)],
                                stdout=out, stderr=subprocess.STDOUT)
    url = f"http://{HOST}:{port}"
    opener = no_proxy_opener()
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc.poll() is not None:
            pytest.fail(f"moto_server exited {proc.returncode}:\n{log_tail(log)}", pytrace=False)
        try:
            with opener.open(url + "/", timeout=2) as r:
                r.read()
            return proc, url
        except urllib.error.HTTPError:
            return proc, url  # it answers
        except OSError:
            if time.monotonic() > deadline:
                stop_process(proc)
                pytest.fail(f"moto_server did not answer at {url} within {START_TIMEOUT} s:\n"
                            f"{log_tail(log)}", pytrace=False)
            time.sleep(0.1)


def start_proxy(upstream: str, log: Path) -> tuple[subprocess.Popen, str]:
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, str(PROXY_SCRIPT), "--upstream", upstream,
             "--listen", f"{HOST}:0"],
            stdout=subprocess.PIPE, stderr=err, text=True,
        )
    # The first line says where it listens (a thread reads it, so a silent proxy cannot
    # hang the tests).
    lines: list[str] = []
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(proc.stdout.readline)
        try:
            lines.append(fut.result(timeout=START_TIMEOUT))
        except TimeoutError:
            stop_process(proc)
            pytest.fail(f"s3proxy.py printed nothing within {START_TIMEOUT} s:\n"
                        f"{log_tail(log)}", pytrace=False)
    m = re.fullmatch(r"listening on (http://127\.0\.0\.1:\d+)\n", lines[0])
    if not m:
        stop_process(proc)
        pytest.fail(f"s3proxy.py: unexpected first line {lines[0]!r}:\n{log_tail(log)}",
                    pytrace=False)
    return proc, m.group(1)


@dataclass
class Store:
    """The S3 server behind the proxy: the environment for sift, a boto3 client and the
    proxy's control endpoints."""

    url: str                  # the proxy
    env: dict[str, str]
    s3: object                # boto3 client
    sift_bin: Path
    opener: urllib.request.OpenerDirector = field(default_factory=no_proxy_opener)

    def _control(self, what: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}/__proxy/{what}", data=data,
                                     method="GET" if body is None else "POST")
        with self.opener.open(req, timeout=10) as r:
            return json.loads(r.read())

    def stats(self) -> dict:
        return self._control("stats")

    def log(self) -> list[dict]:
        return self._control("log")

    def reset(self) -> None:
        self._control("reset", {})

    def configure(self, latency_ms: float = 0, fail_every: int = 0) -> None:
        self._control("config", {"latency_ms": latency_ms, "fail_every": fail_every})

    def put(self, local: Path, key: str) -> None:
        self.s3.upload_file(str(local), BUCKET, key)

    def sift(self, *args: object, check: bool = True) -> subprocess.CompletedProcess:
        p = subprocess.run([str(self.sift_bin), "--quiet", *map(str, args)],
                           capture_output=True, text=True, timeout=120, env=self.env)
        if check and p.returncode != 0:
            cmd = " ".join(["sift", *map(str, args)])
            pytest.fail(f"`{cmd}` exited {p.returncode}:\n{p.stderr.strip()}", pytrace=False)
        return p

    def local_sift(self, *args: object) -> subprocess.CompletedProcess:
        """sift on local files (the same binary and environment)."""
        return self.sift(*args)


def sift_env(endpoint: str) -> dict[str, str]:
    """The environment of this process without its AWS settings and HTTP proxies, pointed
    at the local S3 endpoint."""
    drop = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "GOOGLE_", "AZURE_")) and k.upper() not in drop}
    env.update(CREDENTIALS)
    env.update({
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ALLOW_HTTP": "true",
        "AWS_EC2_METADATA_DISABLED": "true",
        "NO_PROXY": "127.0.0.1,localhost",
    })
    return env


@pytest.fixture(scope="module")
def store(sift_bin, tmp_path_factory):
    import boto3
    from botocore.config import Config

    logs = tmp_path_factory.mktemp("s3logs")
    moto = proxy = None
    try:
        moto, moto_url = start_moto(logs / "moto.log")
        proxy, proxy_url = start_proxy(moto_url, logs / "proxy.log")
        s3 = boto3.client(
            "s3", endpoint_url=proxy_url, region_name=CREDENTIALS["AWS_REGION"],
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            config=Config(proxies={}, retries={"max_attempts": 3}),
        )
        s3.create_bucket(Bucket=BUCKET)
        yield Store(proxy_url, sift_env(proxy_url), s3, sift_bin)
    finally:
        stop_process(proxy)
        stop_process(moto)


# --------------------------------------------------------------------------- helpers


def s3url(key: str) -> str:
    return f"s3://{BUCKET}/{key}"


def assert_clean_error(p: subprocess.CompletedProcess, *needles: str) -> None:
    """A failed run: nonzero exit, a message naming each needle, no crash output."""
    assert p.returncode != 0, f"expected a failure, got exit 0; stdout:\n{p.stdout[:2000]}"
    for marker in CRASH_MARKERS:
        assert marker not in p.stderr, f"crash output in stderr:\n{p.stderr}"
    for needle in needles:
        assert needle in p.stderr, f"{needle!r} not in the error:\n{p.stderr}"


def parse_stats(stderr: str) -> dict:
    out = {}
    if m := FILES_RE.search(stderr):
        out["files"], out["files_pruned"], out["files_opened"] = map(int, m.groups())
    m = BLOCKS_RE.search(stderr)
    assert m, f"no blocks line in --stats output:\n{stderr}"
    out["blocks"], out["blocks_pruned"], out["blocks_no_match"] = map(int, m.groups())
    if m := FETCHED_RE.search(stderr):
        out["requests"], out["fetched"] = map(int, m.groups())
    return out


def object_gets(log: list[dict]) -> dict[str, list[dict]]:
    """The logged GETs of objects (not bucket listings), by key."""
    prefix = f"/{BUCKET}/"
    out: dict[str, list[dict]] = {}
    for e in log:
        if e["method"] == "GET" and e["path"].startswith(prefix):
            out.setdefault(e["path"][len(prefix):], []).append(e)
    return out


def is_suffix_read(e: dict) -> bool:
    return (e.get("range") or "").startswith("bytes=-")


def byte_range(e: dict) -> tuple[int, int]:
    """A logged request's Range header `bytes=a-b` as [a, b + 1)."""
    m = re.fullmatch(r"bytes=(\d+)-(\d+)", e["range"] or "")
    assert m, f"not a bounded byte range: {e}"
    return int(m.group(1)), int(m.group(2)) + 1


def footer_len(path: Path) -> int:
    """The footer length recorded in a Sift file's 24-byte trailer (first 8 bytes, LE)."""
    with open(path, "rb") as f:
        f.seek(-24, os.SEEK_END)
        trailer = f.read(24)
    assert trailer[16:24] == b"SIFTDATA", path
    return int.from_bytes(trailer[0:8], "little")


def convert_all(sift_bin: Path, jobs: list[tuple[pa.Table, Path, int]]) -> None:
    """Writes each table as Parquet next to its .sift path, then converts it (in
    parallel)."""
    def one(job):
        table, sift, block_rows = job
        sift.parent.mkdir(parents=True, exist_ok=True)
        parquet = sift.with_suffix(".parquet")
        pq.write_table(table, parquet)
        p = subprocess.run([str(sift_bin), "--quiet", "convert", str(parquet), str(sift),
                            "--block-rows", str(block_rows), "--threads", "1"],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, f"sift convert {parquet}: {p.stderr}"
        parquet.unlink()

    with ThreadPoolExecutor(min(8, os.cpu_count() or 2)) as pool:
        list(pool.map(one, jobs))


def read_csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def sql_value(p: subprocess.CompletedProcess) -> float:
    rows = read_csv_rows(p.stdout)
    assert len(rows) == 2 and len(rows[0]) == 1, f"unexpected SQL output:\n{p.stdout}"
    return float(rows[1][0])


# --------------------------------------------------------------------------- data


@dataclass
class Sales:
    local: Path                      # the local tree (same layout as under sales/)
    parts: dict[str, pa.Table]       # key below sales/ -> rows (without `year`)
    table: pa.Table                  # all rows, with the int64 `year` column

    def blocks(self, key: str) -> int:
        return math.ceil(self.parts[key].num_rows / SALES_BLOCK_ROWS)


@pytest.fixture(scope="module")
def lineitem_parts(store, lineitem, sift_bin, tmp_path_factory) -> list[str]:
    """lineitem as three objects of contiguous rows (in key order = row order)."""
    out = tmp_path_factory.mktemp("parts")
    t = lineitem.table
    cut = [0, 20_000, 40_000, t.num_rows]
    jobs = [(t.slice(a, b - a), out / f"part-{i}.sift", PART_BLOCK_ROWS)
            for i, (a, b) in enumerate(zip(cut, cut[1:]))]
    convert_all(sift_bin, jobs)
    keys = []
    for _, path, _ in jobs:
        keys.append(f"lineitem/{path.name}")
        store.put(path, keys[-1])
    store.put(lineitem.sift, "single/lineitem.sift")
    return keys


@pytest.fixture(scope="module")
def sales(store, lineitem, sift_bin, tmp_path_factory) -> Sales:
    root = tmp_path_factory.mktemp("sales")
    t = lineitem.table
    year = pc.year(t["l_shipdate"])
    month = pc.month(t["l_shipdate"])
    parts, jobs = {}, []
    for y in SALES_YEARS:
        for half, keep in (("h1", pc.less_equal(month, 6)), ("h2", pc.greater(month, 6))):
            rows = t.filter(pc.and_(pc.equal(year, y), keep))
            assert rows.num_rows > 2 * SALES_BLOCK_ROWS, (y, half, rows.num_rows)
            key = f"year={y}/{half}.sift"
            parts[key] = rows
            jobs.append((rows, root / key, SALES_BLOCK_ROWS))
    convert_all(sift_bin, jobs)
    for key in parts:
        store.put(root / key, f"sales/{key}")
    tables = [rows.append_column("year", pa.array([int(key[5:9])] * rows.num_rows, pa.int64()))
              for key, rows in parts.items()]
    return Sales(root, parts, pa.concat_tables(tables))


# --------------------------------------------------------------------------- a. results


def test_scan_prefix_and_glob_equal_local(store, lineitem, lineitem_parts):
    local = store.local_sift("scan", lineitem.sift, "-f", Q6_FILTER, "-c", Q6_COLUMNS,
                             "-o", "csv")
    assert len(read_csv_rows(local.stdout)) > 100
    for url in (s3url("lineitem/"), s3url("lineitem/*.sift"), s3url("lineitem")):
        got = store.sift("scan", url, "-f", Q6_FILTER, "-c", Q6_COLUMNS, "-o", "csv")
        # Same rows in the same order: the objects are the file's rows in key order.
        assert got.stdout == local.stdout, url


def test_store_options_override_environment(store, lineitem, lineitem_parts):
    """--store-option aws_endpoint beats AWS_ENDPOINT_URL (here a closed local port)."""
    local = store.local_sift("scan", lineitem.sift, "-n", "5", "-c", Q6_COLUMNS, "-o", "csv")
    env = dict(store.env, AWS_ENDPOINT_URL=f"http://{HOST}:1", AWS_ALLOW_HTTP="false")
    args = ["scan", s3url("lineitem/"), "-n", "5", "-c", Q6_COLUMNS, "-o", "csv",
            "--store-option", f"aws_endpoint={store.url}",
            "--store-option", "aws_allow_http=true"]
    p = subprocess.run([str(store.sift_bin), "--quiet", *args], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout == local.stdout
    p = store.sift("scan", s3url("lineitem/"), "--store-option", "bogus=1", check=False)
    assert_clean_error(p, "'bogus'")


def test_scan_all_columns_equal_local(store, lineitem, lineitem_parts, tmp_path):
    got = store.sift("scan", s3url("lineitem/"), "--out", tmp_path / "s3.parquet")
    diff = multiset_diff(pq.read_table(tmp_path / "s3.parquet"), lineitem.table)
    assert not diff, diff


def test_sql_q6_equals_local_and_duckdb(store, lineitem, lineitem_parts, duck):
    expected = duck.execute(Q6_SQL.format(table=f"read_parquet('{lineitem.parquet}')")
                            ).fetchone()[0]
    local = sql_value(store.sift("sql", Q6_SQL.format(table=f"'{lineitem.sift}'"),
                                 "-o", "csv"))
    assert same_value(expected, local), (local, expected)
    for url in (s3url("lineitem/*.sift"), s3url("lineitem/"), s3url("single/lineitem.sift")):
        got = sql_value(store.sift("sql", Q6_SQL.format(table=f"'{url}'"), "-o", "csv"))
        assert same_value(local, got), (url, got, local)


# --------------------------------------------------------------------------- b. footer cost


def test_footer_one_request(store, lineitem, lineitem_parts):
    assert footer_len(lineitem.sift) + 24 < 64 * 1024
    url = s3url("single/lineitem.sift")
    for args in (("-n", "0"), ("-f", "l_quantity > 1000")):
        store.reset()
        p = store.sift("scan", url, *args, "-o", "csv", "--stats")
        assert p.stdout.splitlines()[0].startswith("l_orderkey,"), p.stdout
        assert len(p.stdout.splitlines()) == 1, p.stdout
        stats = store.stats()
        assert stats["methods"] == {"GET": 1}, (args, stats)
        (e,) = store.log()
        assert e["path"] == f"/{BUCKET}/single/lineitem.sift" and is_suffix_read(e), e
    assert parse_stats(p.stderr)["blocks_pruned"] == 9


def test_large_footer_two_requests(store, sift_bin, tmp_path):
    cols = 150
    n = 24_000
    table = pa.table({f"c{i:03d}": pa.array(range(i, i + n), pa.int64()) for i in range(cols)})
    path = tmp_path / "wide.sift"
    convert_all(sift_bin, [(table, path, 1_000)])
    flen = footer_len(path)
    assert flen > 64 * 1024, f"footer of {flen} bytes: make the table wider"
    store.put(path, "wide/wide.sift")
    url = s3url("wide/wide.sift")
    for args in (("-n", "0"), ("-f", "c000 < 0")):
        store.reset()
        p = store.sift("scan", url, *args, "-c", "c000,c149", "-o", "csv")
        assert p.stdout.splitlines() == ["c000,c149"], p.stdout
        # A suffix read of 64 KiB, then the rest of the footer.
        assert store.stats()["methods"] == {"GET": 2}, (args, store.log())
        assert is_suffix_read(store.log()[0]), store.log()
    # The footer is whole: a row from the last block comes back right.
    p = store.sift("scan", url, "-f", f"c000 = {n - 1}", "-c", "c000,c149", "-o", "csv")
    assert p.stdout.splitlines() == ["c000,c149", f"{n - 1},{n - 1 + 149}"]


# --------------------------------------------------------------------------- c. Hive


def expected_sales(sales: Sales, mask, columns: list[str]) -> pa.Table:
    return sales.table.filter(mask).select(columns)


def test_hive_partition_pruning(store, sales, tmp_path):
    cols = ["l_orderkey", "l_linenumber", "l_quantity", "l_shipdate", "year"]
    filt = "year = 1995 and l_quantity < 10"
    store.reset()
    out = tmp_path / "got.parquet"
    p = store.sift("scan", s3url("sales/"), "-f", filt, "-c", ",".join(cols), "--out", out,
                   "--stats")
    got = pq.read_table(out)
    assert got.schema.field("year").type == pa.int64()
    t = sales.table
    expected = expected_sales(sales, pc.and_(pc.equal(t["year"], 1995),
                                             pc.less(t["l_quantity"], 10)), cols)
    assert expected.num_rows > 0
    diff = multiset_diff(got, expected)
    assert not diff, diff

    stats = parse_stats(p.stderr)
    kept = {"year=1995/h1.sift", "year=1995/h2.sift"}
    assert (stats["files"], stats["files_pruned"], stats["files_opened"]) == \
        (len(sales.parts), len(sales.parts) - 2, 2), p.stderr
    assert stats["blocks"] == sum(sales.blocks(k) for k in kept), p.stderr

    # The proxy saw the listing and GETs of the two kept objects only: each one footer
    # read, and the chunk reads the scan reports.
    log = store.log()
    gets = object_gets(log)
    assert set(gets) == {f"sales/{k}" for k in kept}, sorted(gets)
    assert {e["method"] for e in log} == {"GET"}, log
    for key, es in gets.items():
        assert sum(map(is_suffix_read, es)) == 1, (key, es)
    chunk_reads = [e for es in gets.values() for e in es if not is_suffix_read(e)]
    assert stats.get("requests", 0) == len(chunk_reads), (p.stderr, chunk_reads)
    assert stats.get("fetched", 0) == sum(e["bytes"] for e in chunk_reads), p.stderr

    # The same tree on the local disk gives the same rows.
    out_local = tmp_path / "local.parquet"
    store.local_sift("scan", sales.local, "-f", filt, "-c", ",".join(cols), "--out", out_local)
    diff = multiset_diff(pq.read_table(out_local), expected)
    assert not diff, diff


def test_hive_zone_maps_skip_files_chunks(store, sales, tmp_path):
    """No partition predicate: every file is opened, but those whose blocks' l_shipdate
    ranges rule the filter out are read no further than their footer."""
    cols = ["l_orderkey", "l_shipdate", "year"]
    store.reset()
    out = tmp_path / "got.parquet"
    p = store.sift("scan", s3url("sales/"), "-f", "l_shipdate < date '1992-03-01'",
                   "-c", ",".join(cols), "--out", out, "--stats")
    t = sales.table
    expected = expected_sales(sales, pc.less(t["l_shipdate"],
                                             pa.scalar(datetime.date(1992, 3, 1))), cols)
    assert expected.num_rows > 0
    diff = multiset_diff(pq.read_table(out), expected)
    assert not diff, diff

    stats = parse_stats(p.stderr)
    n = len(sales.parts)
    assert (stats["files"], stats["files_pruned"], stats["files_opened"]) == (n, 0, n)
    ruled_out = [k for k in sales.parts if k != "year=1992/h1.sift"]
    assert stats["blocks"] == sum(map(sales.blocks, sales.parts))
    assert stats["blocks_pruned"] >= sum(map(sales.blocks, ruled_out)), p.stderr
    gets = object_gets(store.log())
    assert set(gets) == {f"sales/{k}" for k in sales.parts}
    for key in ruled_out:
        es = gets[f"sales/{key}"]
        assert len(es) == 1 and is_suffix_read(es[0]), (key, es)
    assert len(gets["sales/year=1992/h1.sift"]) >= 2


def test_hive_partition_and_zone_maps(store, sales, tmp_path):
    """The partition filter keeps two files; the date range rules out every block of one
    of them, which is opened (footer) and not read."""
    cols = ["l_orderkey", "l_shipdate", "year"]
    store.reset()
    out = tmp_path / "got.parquet"
    p = store.sift("scan", s3url("sales/"), "-f",
                   "year = 1996 and l_shipdate < date '1996-03-01'",
                   "-c", ",".join(cols), "--out", out, "--stats")
    t = sales.table
    expected = expected_sales(
        sales, pc.and_(pc.equal(t["year"], 1996),
                       pc.less(t["l_shipdate"], pa.scalar(datetime.date(1996, 3, 1)))), cols)
    assert expected.num_rows > 0
    diff = multiset_diff(pq.read_table(out), expected)
    assert not diff, diff
    stats = parse_stats(p.stderr)
    assert (stats["files_pruned"], stats["files_opened"]) == (len(sales.parts) - 2, 2)
    assert stats["blocks_pruned"] >= sales.blocks("year=1996/h2.sift"), p.stderr
    gets = object_gets(store.log())
    assert set(gets) == {"sales/year=1996/h1.sift", "sales/year=1996/h2.sift"}
    h2 = gets["sales/year=1996/h2.sift"]
    assert len(h2) == 1 and is_suffix_read(h2[0]), h2


def test_sql_on_hive_tree(store, sales):
    """SQL tables have the partition columns; a filter on them keeps the files it can
    hold rows of: the others are opened (their footer read, to unify the schema) and not
    read further."""
    t = sales.table
    url = s3url("sales/")
    p = store.sift("sql", f"select year, count(*) as n from '{url}' group by year "
                   "order by year", "-o", "csv")
    counts = t.group_by("year").aggregate([("year", "count")]).sort_by("year")
    assert read_csv_rows(p.stdout)[1:] == [
        [str(y), str(n)] for y, n in zip(counts["year"].to_pylist(),
                                          counts["year_count"].to_pylist())]

    store.reset()
    p = store.sift("sql", f"select count(*) as n, sum(l_orderkey) as s from '{url}' "
                   "where year = 1995 and l_quantity < 10", "-o", "csv")
    kept = pc.and_(pc.equal(t["year"], 1995), pc.less(t["l_quantity"], 10))
    rows = t.filter(kept)
    assert rows.num_rows > 0
    assert read_csv_rows(p.stdout)[1:] == [
        [str(rows.num_rows), str(pc.sum(rows["l_orderkey"]).as_py())]]
    gets = object_gets(store.log())
    for key in sales.parts:
        es = gets[f"sales/{key}"]
        if key.startswith("year=1995/"):
            assert len(es) >= 2, (key, es)
        else:
            assert len(es) == 1 and is_suffix_read(es[0]), (key, es)


# --------------------------------------------------------------------------- d. schemas


@pytest.fixture(scope="module")
def schema_objects(store, sift_bin, tmp_path_factory):
    d = tmp_path_factory.mktemp("schemas")
    jobs = [
        (pa.table({"id": pa.array([1, 2], pa.int64()), "x": pa.array(["a", "b"])}),
         d / "mismatch" / "a.sift", 1000),
        (pa.table({"id": pa.array([3, 4], pa.int64()), "x": pa.array([5, 6], pa.int64())}),
         d / "mismatch" / "b.sift", 1000),
        (pa.table({"id": pa.array([1, 2], pa.int32()), "v": pa.array(["a", "b"])}),
         d / "widen" / "a.sift", 1000),
        (pa.table({"id": pa.array([3, 4], pa.int64()), "w": pa.array([1.5, 2.5])}),
         d / "widen" / "b.sift", 1000),
    ]
    convert_all(sift_bin, jobs)
    for _, path, _ in jobs:
        store.put(path, f"{path.parent.name}/{path.name}")


def test_schema_mismatch_names_both_files(store, schema_objects):
    p = store.sift("scan", s3url("mismatch/"), check=False)
    assert_clean_error(p, "cannot be one dataset", "'x'", s3url("mismatch/a.sift"),
                       s3url("mismatch/b.sift"))
    p = store.sift("sql", f"select * from '{s3url('mismatch/')}'", check=False)
    assert_clean_error(p, s3url("mismatch/a.sift"), s3url("mismatch/b.sift"))


def test_schema_widening_and_missing_columns(store, schema_objects, tmp_path):
    out = tmp_path / "got.parquet"
    store.sift("scan", s3url("widen/"), "--out", out)
    got = pq.read_table(out)
    assert got.schema.field("id").type == pa.int64()
    expected = pa.table({
        "id": pa.array([1, 2, 3, 4], pa.int64()),
        "v": pa.array(["a", "b", None, None]),
        "w": pa.array([None, None, 1.5, 2.5]),
    })
    diff = multiset_diff(got.select(["id", "v", "w"]), expected)
    assert not diff, diff


# --------------------------------------------------------------------------- e. faults


@pytest.mark.parametrize("latency_ms,fail_every", [(0, 3), (20, 4)])
def test_faults_are_retried(store, lineitem, lineitem_parts, latency_ms, fail_every):
    local_scan = store.local_sift("scan", lineitem.sift, "-f", Q6_FILTER, "-c", Q6_COLUMNS,
                                  "-o", "csv")
    local_sql = sql_value(store.sift("sql", Q6_SQL.format(table=f"'{lineitem.sift}'"),
                                     "-o", "csv"))
    store.reset()
    store.configure(latency_ms=latency_ms, fail_every=fail_every)
    try:
        retried = 0
        for url in (s3url("lineitem/"), s3url("single/lineitem.sift")):
            got = store.sift("scan", url, "-f", Q6_FILTER, "-c", Q6_COLUMNS, "-o", "csv",
                             "--stats")
            assert got.stdout == local_scan.stdout, url
            # The client counts the failed attempts it retried.
            m = re.search(r"(\d+) failed and were retried", got.stderr)
            assert m, got.stderr
            retried += int(m.group(1))
        got = sql_value(store.sift(
            "sql", Q6_SQL.format(table=f"'{s3url('lineitem/*.sift')}'"), "-o", "csv"))
        assert same_value(local_sql, got), (got, local_sql)
        stats = store.stats()
    finally:
        store.configure(latency_ms=0, fail_every=0)
    assert stats["faults_503"] > 0 and stats["faults_closed"] > 0, stats
    assert stats["upstream_errors"] == 0, stats
    assert retried > 0


# --------------------------------------------------------------------------- f. missing


@pytest.mark.parametrize("cmd", ["scan", "sql"])
@pytest.mark.parametrize("key", ["nope.sift", "nope/", "nope/*.sift"])
def test_missing_object_or_prefix(store, key, cmd):
    url = s3url(key)
    args = ["scan", url] if cmd == "scan" else ["sql", f"select count(*) from '{url}'"]
    p = store.sift(*args, check=False)
    assert_clean_error(p, url)


# --------------------------------------------------------------------------- request plans


def test_chunk_requests_do_not_overlap(store, lineitem, lineitem_parts):
    size = lineitem.sift.stat().st_size
    store.reset()
    store.sift("scan", s3url("single/lineitem.sift"), "-c", "l_orderkey", "-o", "none",
               "--threads", "4")
    ranges = sorted(byte_range(e) for e in store.log() if not is_suffix_read(e))
    overlaps = [(a, b) for a, b in zip(ranges, ranges[1:]) if b[0] < a[1]]
    fetched = sum(e - s for s, e in ranges)
    assert not overlaps and fetched <= size, (
        f"{len(ranges)} chunk requests fetched {fetched} bytes of a {size}-byte object; "
        f"overlapping: {overlaps}")


def test_a_limit_fetches_little_more_than_it_reads(store, lineitem, lineitem_parts):
    # The first block holds the 5 rows; the window of a scan with a limit starts at one
    # block, so one chunk request serves the scan, and its counters are reported.
    store.reset()
    p = store.sift("scan", s3url("single/lineitem.sift"), "-c", "l_orderkey", "-n", "5",
                   "-o", "none", "--stats", "--threads", "1")
    chunk_reads = [e for e in store.log() if not is_suffix_read(e)]
    assert len(chunk_reads) == 1, chunk_reads
    assert "matched 5," in p.stderr and "1 requests fetched" in p.stderr, p.stderr


# --------------------------------------------------------------------------- Parquet objects


@pytest.fixture(scope="module")
def parquet_objects(store, lineitem, tmp_path_factory) -> list[str]:
    out = tmp_path_factory.mktemp("pqparts")
    t = lineitem.table
    cut = [0, 20_000, 40_000, t.num_rows]
    keys = []
    for i, (a, b) in enumerate(zip(cut, cut[1:])):
        path = out / f"part-{i}.parquet"
        pq.write_table(t.slice(a, b - a), path, row_group_size=5_000, write_page_index=True)
        keys.append(f"pqparts/{path.name}")
        store.put(path, keys[-1])
    store.put(lineitem.parquet, "pq/lineitem.parquet")
    return keys


def test_parquet_objects_equal_local_and_duckdb(store, lineitem, parquet_objects, duck):
    local = store.local_sift("scan", lineitem.parquet, "-f", Q6_FILTER, "-c", Q6_COLUMNS,
                             "-o", "csv")
    assert len(read_csv_rows(local.stdout)) > 100
    for url in (s3url("pq/lineitem.parquet"), s3url("pqparts/"),
                s3url("pqparts/*.parquet")):
        got = store.sift("scan", url, "-f", Q6_FILTER, "-c", Q6_COLUMNS, "-o", "csv",
                         "--threads", "2")
        assert got.stdout == local.stdout, url
    expected = duck.execute(Q6_SQL.format(table=f"read_parquet('{lineitem.parquet}')")
                            ).fetchone()[0]
    for url in (s3url("pq/lineitem.parquet"), s3url("pqparts/*.parquet")):
        got = sql_value(store.sift("sql", Q6_SQL.format(table=f"'{url}'"), "-o", "csv"))
        assert same_value(expected, got), (url, got, expected)


def test_parquet_object_requests(store, lineitem, parquet_objects):
    """Opening reads the footer (and page index) with the first request; a scan fetches
    only the column chunks of the projected and filtered columns in the row groups the
    statistics keep, each byte once."""
    url = s3url("pqparts/part-2.parquet")
    store.reset()
    p = store.sift("scan", url, "-f", "l_orderkey < 0", "-o", "csv", "--stats")
    assert len(p.stdout.splitlines()) == 1, p.stdout
    assert store.stats()["methods"] == {"GET": 1}, [(e["method"], e["range"]) for e in store.log()]
    assert is_suffix_read(store.log()[0])
    assert parse_stats(p.stderr)["blocks_pruned"] == 5

    # l_quantity is not sorted, so every row group is read, but only the chunks of two
    # columns: requests start and end at those chunks, cover them all, fetch each byte
    # once, and merge chunks only across gaps of at most 1 MiB.
    store.reset()
    p = store.sift("scan", s3url("pq/lineitem.parquet"), "-f", "l_quantity < 2",
                   "-c", "l_orderkey", "-o", "none", "--stats", "--threads", "2")
    ranges = sorted(byte_range(e) for e in store.log() if not is_suffix_read(e))
    meta = pq.ParquetFile(lineitem.parquet).metadata
    assert meta.schema.column(4).name == "l_quantity"
    chunks = []
    for g in range(meta.num_row_groups):
        for c in (0, 4):
            col = meta.row_group(g).column(c)
            start = col.dictionary_page_offset or col.data_page_offset
            chunks.append((start, start + col.total_compressed_size))
    chunks.sort()
    overlaps = [(a, b) for a, b in zip(ranges, ranges[1:]) if b[0] < a[1]]
    assert not overlaps, ranges
    starts, ends = {s for s, _ in chunks}, {e for _, e in chunks}
    for s, e in ranges:
        assert s in starts and e in ends, ((s, e), chunks)
        inside = [c for c in chunks if s <= c[0] and c[1] <= e]
        gaps = [b[0] - a[1] for a, b in zip(inside, inside[1:])]
        assert max(gaps, default=0) <= 1 << 20, ((s, e), inside)
    assert all(any(s <= c[0] and c[1] <= e for s, e in ranges) for c in chunks), (ranges, chunks)
    assert parse_stats(p.stderr)["requests"] == len(ranges), (p.stderr, ranges)

    # Rows from the last object only: the others' row groups are ruled out by statistics.
    last_key = lineitem.table["l_orderkey"][-1].as_py()
    store.reset()
    p = store.sift("scan", s3url("pqparts/"), "-f", f"l_orderkey >= {last_key}",
                   "-c", "l_orderkey", "-o", "csv")
    assert {r[0] for r in read_csv_rows(p.stdout)[1:]} == {str(last_key)}
    gets = object_gets(store.log())
    for key in parquet_objects[:2]:
        assert len(gets[key]) == 1 and is_suffix_read(gets[key][0]), gets[key]


def test_python_reads_parquet_objects(store, lineitem, parquet_objects):
    import sift

    options = python_options(store)
    columns = Q6_COLUMNS.split(",")
    want = sift.open(lineitem.parquet).to_table(columns, Q6_FILTER)
    got = sift.open(s3url("pq/lineitem.parquet"), storage_options=options)
    assert got.to_table(columns, Q6_FILTER).equals(want)
    ds = sift.dataset(s3url("pqparts/"), storage_options=options)
    assert len(ds.files) == 3
    key = [("l_orderkey", "ascending"), ("l_linenumber", "ascending")]
    assert ds.to_table(columns, Q6_FILTER).sort_by(key).equals(want.sort_by(key))


# --------------------------------------------------------------------------- Python and Ray


def python_options(store) -> dict[str, str]:
    """The store's settings as explicit options (this process's environment has none)."""
    return {"aws_endpoint": store.url, "aws_access_key_id": "test",
            "aws_secret_access_key": "test", "aws_region": "us-east-1",
            "aws_allow_http": "true"}


def test_python_package_reads_objects(store, lineitem, lineitem_parts):
    import sift

    options = python_options(store)
    columns = Q6_COLUMNS.split(",")
    want = sift.open(lineitem.sift).to_table(columns, Q6_FILTER)
    f = sift.open(s3url("single/lineitem.sift"), storage_options=options)
    assert f.path == s3url("single/lineitem.sift")
    assert f.to_table(columns, Q6_FILTER).equals(want)
    ds = sift.dataset(s3url("lineitem/"), storage_options=options)
    assert len(ds.files) == 3 and all(p.startswith("s3://") for p in ds.files)
    assert ds.to_table(columns, Q6_FILTER).sort_by("l_orderkey").equals(
        want.sort_by("l_orderkey"))


def test_ray_reads_objects(store, lineitem, lineitem_parts):
    import ray
    import sift
    import sift.ray

    options = python_options(store)
    columns = Q6_COLUMNS.split(",")
    want = sift.open(lineitem.sift).to_table(columns, Q6_FILTER)
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, logging_level="ERROR")
    try:
        ds = sift.ray.read_sift(s3url("lineitem/"), columns=columns, filter=Q6_FILTER,
                                storage_options=options)
        got = pa.concat_tables(ray.get(ds.to_arrow_refs()))
    finally:
        ray.shutdown()
    key = [("l_orderkey", "ascending"), ("l_linenumber", "ascending")]
    assert got.sort_by(key).equals(want.sort_by(key))
