"""File formats compared by bench/harness.py.

Each format knows how to write the reference table to a file, how to read that file back
on one core (`read`: the whole table materialised as a pyarrow Table, or streamed batch by
batch), and (Sift, Parquet, Vortex) how many bytes each column occupies in the file.  To add
a format, subclass `Format` and append an instance to `all_formats()`; to add a measure
(e.g. a scan query), give the formats a method for it and register a function in
harness.MEASURES.

Run as a script, `python formats.py first-read KEY FILE --table T --schema S [--stream]`
reads FILE once in this fresh process and prints {"ms": float, "rows": int, "imported": [...]}:
the first-read time of a Python engine, measured like `sift bench read`'s first run (modules
imported and the reader set up before the timer starts; `imported` lists any module the read
still imported while timed, which the harness refuses).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


@dataclass
class Context:
    """What a format may need to write its file."""

    ref: pa.Table            # normalized reference table (in memory)
    input_parquet: Path      # the same table as Parquet (input for `sift convert`)
    workdir: Path            # where format files go
    sift_bin: Path | None    # sift CLI, or None when it is not available
    sift_missing_reason: str = ""
    table: str = "lineitem"  # table name: file stems, DuckDB table name
    arrow_ipc: Path | None = None  # the same table as an uncompressed Arrow IPC file
    cache: dict = field(default_factory=dict)  # results shared by formats reading one file


class FormatUnavailable(Exception):
    """The format cannot be measured on this machine (e.g. sift binary missing)."""


class Format:
    name = "?"          # label in the results table
    key = "?"           # short id for --formats
    ext = "bin"
    note = ""           # one line for the notes section of the report
    modules: tuple[str, ...] = ()   # imported before a first read is timed

    def path(self, ctx: Context) -> Path:
        stem = ctx.table if self.key == self.ext else f"{ctx.table}.{self.key}"
        return ctx.workdir / f"{stem}.{self.ext}"

    def version(self) -> str:
        return ""

    def prepare(self, ctx: Context) -> None:
        """Called once before write/decode (whether or not the file is written this run)."""
        self.setup(ctx.table, None if ctx.ref is None else ctx.ref.schema)

    def setup(self, table: str, schema: pa.Schema | None) -> None:
        """What reading needs besides the file: the table name and the reference schema
        (None when only writing from another file, as bench/querydata.py does for Sift)."""

    def write(self, ctx: Context, path: Path) -> None:
        raise NotImplementedError

    def compress(self, ctx: Context, path: Path) -> None:
        """Write the reference table from Arrow to `path`; the timed compression operation.

        Default: `write` (from the in-memory table).  Sift: `sift convert` of the Arrow IPC
        file."""
        self.write(ctx, path)

    def column_sizes(self, ctx: Context, path: Path) -> tuple[dict[str, int], dict[str, str]]:
        """Bytes each column occupies in the file, and an optional per-column detail
        (e.g. encodings).  Raises NotImplementedError when the format cannot tell."""
        raise NotImplementedError

    def decode(self, path: Path) -> pa.Table:
        """Open the file and decode all of it into one in-memory Arrow table."""
        raise NotImplementedError

    def stream(self, path: Path) -> int:
        """Open the file and decode all of it batch by batch, dropping each batch; returns
        the number of rows."""
        raise NotImplementedError

    def read(self, path: Path, stream: bool) -> tuple[pa.Table | int, float]:
        """The timed operation: (the table, or the row count when streaming; seconds).  The
        table is still alive when the clock stops, so freeing it is not timed."""
        t0 = time.perf_counter()
        out = self.stream(path) if stream else self.decode(path)
        return out, time.perf_counter() - t0

    def read_back(self, ctx: Context, path: Path) -> pa.Table:
        """Read the file into a pyarrow Table for the correctness check (untimed)."""
        return self.decode(path)

    def size(self, path: Path) -> int:
        if path.is_dir():
            return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        return path.stat().st_size


# --------------------------------------------------------------------------- Sift


class SiftFormat(Format):
    name = "Sift"
    key = "sift"
    ext = "sift"
    note = ("Sift read = `sift bench read FILE --runs N+1 --mode materialize|stream`: in one "
            "fresh process, N+1 runs, each opening the file anew, verifying every segment "
            "checksum and "
            "decoding every column of every block into Arrow record batches (materialise: "
            "all kept until the run's clock stops; stream: each dropped), timed by sift "
            "itself; its first run is the first read, the other N give best and median. "
            "Correctness via `sift convert FILE back.parquet`.")

    def __init__(self):
        self.bin: Path | None = None
        self.origin: dict | None = None      # where the binary was copied from (harness)
        self.startup_s: float | None = None  # `sift --version` wall time, best of 5

    def startup_time(self) -> float | None:
        """Process start-up cost: best of 5 runs of `sift --version`."""
        import time
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            p = subprocess.run([str(self.bin), "--version"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            times.append(time.perf_counter() - t0)
            if p.returncode != 0:
                return None
        return min(times)

    def _bin(self, ctx: Context | None = None) -> Path:
        if ctx is not None:
            if ctx.sift_bin is None or not ctx.sift_bin.is_file():
                raise FormatUnavailable(ctx.sift_missing_reason
                                        or f"sift binary not found at {ctx.sift_bin}")
            self.bin = ctx.sift_bin
        if self.bin is None:
            raise FormatUnavailable("sift binary not set")
        return self.bin

    def _run(self, args: list[str]) -> None:
        p = subprocess.run([str(self.bin), *args], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            tail = (p.stderr or "").strip().splitlines()[-3:]
            raise RuntimeError(f"`sift {' '.join(args)}` exited {p.returncode}: "
                               + " | ".join(tail))

    def version(self) -> str:
        if self.bin is None:
            return ""
        try:
            p = subprocess.run([str(self.bin), "--version"], capture_output=True, text=True,
                               timeout=10)
            return p.stdout.strip() if p.returncode == 0 else ""
        except Exception:
            return ""

    def write(self, ctx, path):
        self._bin(ctx)
        self._run(["convert", str(ctx.input_parquet), str(path)])
        if not path.exists():
            raise RuntimeError(f"`sift convert` exited 0 but wrote no {path.name}")

    def compress(self, ctx, path):
        self._bin(ctx)
        if ctx.arrow_ipc is None:
            raise FormatUnavailable("no Arrow IPC input file")
        self._run(["convert", str(ctx.arrow_ipc), str(path)])
        if not path.exists():
            raise RuntimeError(f"`sift convert` exited 0 but wrote no {path.name}")

    def inspect(self, path: Path) -> dict:
        """`sift inspect FILE --json --no-decode`, parsed."""
        p = subprocess.run([str(self.bin), "inspect", str(path), "--json", "--no-decode",
                            "--quiet"], capture_output=True, text=True)
        if p.returncode != 0:
            tail = (p.stderr or "").strip().splitlines()[-3:]
            raise RuntimeError(f"`sift inspect --json` exited {p.returncode}: "
                               + " | ".join(tail))
        return json.loads(p.stdout)

    def column_sizes(self, ctx, path):
        self._bin(ctx)
        info = self.inspect(path)
        sizes, details = {}, {}
        for c in info["columns"]:
            sizes[c["name"]] = int(c["stored_bytes"])
            details[c["name"]] = self.summarize_encodings(c.get("encodings") or [])
        return sizes, details

    @staticmethod
    def summarize_encodings(encs: list[dict]) -> str:
        """'for12×5, for11×1'; dictionaries of different sizes merged as dict[92–100](...)."""
        import re
        groups: dict[str, list] = {}
        for e in encs:
            m = re.match(r"dict\[(\d+)\]", e["encoding"])
            key = "dict[*]" + e["encoding"][m.end():] if m else e["encoding"]
            g = groups.setdefault(key, [0, []])
            g[0] += int(e.get("blocks", 0))
            if m:
                g[1].append(int(m.group(1)))
        parts = []
        for key, (blocks, ns) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
            if ns:
                lo, hi = min(ns), max(ns)
                key = key.replace("[*]", f"[{lo}]" if lo == hi else f"[{lo}–{hi}]", 1)
            parts.append(f"{key}×{blocks}" if len(groups) > 1 else key)
        return ", ".join(parts)

    BENCH_READ_KEYS = ("rows", "arrow_bytes", "runs_ms", "first_ms", "best_ms", "median_ms")

    def bench_read(self, path: Path, runs: int, stream: bool) -> dict:
        """`sift bench read FILE --runs RUNS --mode materialize|stream`, its JSON checked."""
        mode = "stream" if stream else "materialize"
        args = ["bench", "read", str(path), "--runs", str(runs), "--mode", mode, "--quiet"]
        p = subprocess.run([str(self.bin), *args], capture_output=True, text=True,
                           timeout=3600)
        if p.returncode != 0:
            tail = (p.stderr or "").strip().splitlines()[-3:]
            raise RuntimeError(f"`sift {' '.join(args)}` exited {p.returncode}: "
                               + " | ".join(tail))
        try:
            out = json.loads(p.stdout)
        except ValueError as e:
            raise RuntimeError(f"`sift bench read` printed no JSON object ({e}): "
                               f"{p.stdout[:200]!r}") from None
        missing = [k for k in self.BENCH_READ_KEYS if k not in out]
        if missing:
            raise RuntimeError(f"`sift bench read` output lacks {', '.join(missing)}")
        if out.get("mode", mode) != mode:
            raise RuntimeError(f"`sift bench read` ran in mode {out['mode']!r}, not {mode!r}")
        if len(out["runs_ms"]) != runs:
            raise RuntimeError(f"`sift bench read --runs {runs}` reported "
                               f"{len(out['runs_ms'])} runs")
        return out

    def read_back(self, ctx, path):
        back = ctx.workdir / f"{ctx.table}.sift-back.parquet"
        if back.exists():
            back.unlink()
        self._run(["convert", str(path), str(back)])
        if not back.exists():
            raise RuntimeError(f"`sift convert {path.name} {back.name}` exited 0 but wrote "
                               "no file")
        try:
            return pq.read_table(back, use_threads=False)
        finally:
            back.unlink(missing_ok=True)


# --------------------------------------------------------------------------- Parquet


class ParquetFormat(Format):
    ext = "parquet"
    modules = ("pyarrow.dataset",)   # pq.read_table imports it (and pandas) on first use

    def __init__(self, compression: str):
        self.compression = compression
        self.key = f"parquet-{compression}"
        self.name = f"Parquet {compression}"

    def version(self):
        return f"pyarrow {pa.__version__}"

    def write(self, ctx, path):
        pq.write_table(ctx.ref, path, compression=self.compression)

    def decode(self, path):
        return pq.read_table(path, use_threads=False)

    def stream(self, path):
        rows = 0
        with pq.ParquetFile(path) as f:
            for batch in f.iter_batches(batch_size=65536, use_threads=False):
                rows += batch.num_rows
        return rows

    def column_sizes(self, ctx, path):
        """Sum over row groups of each column chunk's total_compressed_size (dictionary and
        data pages with their headers; footer statistics / page indexes not included)."""
        md = pq.ParquetFile(path).metadata
        sizes: dict[str, int] = defaultdict(int)
        for rg in range(md.num_row_groups):
            g = md.row_group(rg)
            for c in range(g.num_columns):
                cc = g.column(c)
                sizes[cc.path_in_schema.split(".")[0]] += cc.total_compressed_size
        return dict(sizes), {}


# --------------------------------------------------------------------------- ORC


class OrcFormat(Format):
    name = "ORC zstd"
    key = "orc-zstd"
    ext = "orc"
    modules = ("pyarrow.orc",)

    def version(self):
        return f"pyarrow {pa.__version__}"

    def write(self, ctx, path):
        import pyarrow.orc as orc
        orc.write_table(ctx.ref, path, compression="zstd")

    def decode(self, path):
        import pyarrow.orc as orc
        # pyarrow's ORC reader has no use_threads flag; pa.set_cpu_count(1) applies.
        return orc.read_table(path)

    def stream(self, path):
        import pyarrow.orc as orc
        f = orc.ORCFile(str(path))
        return sum(f.read_stripe(i).num_rows for i in range(f.nstripes))


# --------------------------------------------------------------------------- Vortex


class VortexFormat(Format):
    """Vortex (vortex-data), written with vortex.io.write(table, path), memory-mapped on read.

    Default row: `vortex.open(f, memory_map=True).to_arrow(schema=ref_schema).read_all()`,
    strings as utf8 like every other row.  `string_view=True`: Vortex's fastest full read,
    `vortex.open(f, memory_map=True).scan().read_all().to_arrow_table()`, which returns
    strings as string_view (its native layout)."""

    ext = "vortex"
    modules = ("vortex",)

    def __init__(self, string_view: bool = False):
        self.string_view = string_view
        self.key = "vortex-view" if string_view else "vortex"
        self.name = "Vortex (string_view)" if string_view else "Vortex"
        self.schema: pa.Schema | None = None
        if not string_view:
            self.note = ("Vortex decode = `vortex.open(f, memory_map=True).to_arrow(schema="
                         "ref_schema).read_all()` (strings as utf8, like the reference); "
                         "`Vortex (string_view)` = `vortex.open(f, memory_map=True).scan()"
                         ".read_all().to_arrow_table()`, Vortex's fastest full read, strings "
                         "as string_view (GB/s still counts the reference's utf8 Arrow bytes; "
                         "string views may point into the memory-mapped file, e.g. for "
                         "lineitem's l_shipinstruct, other buffers are decoded copies); "
                         "stream: the record batch reader of `to_arrow(schema=ref_schema)` "
                         "(string_view row: `to_arrow()`), each batch dropped; "
                         "`vortex.set_worker_threads(0)`; both rows read the same file, "
                         "opened anew (no footer or segment cache kept) every run.")

    def path(self, ctx):
        # Both Vortex rows read the same file (the harness writes it once per run).
        return ctx.workdir / f"{ctx.table}.vortex"

    def column_sizes(self, ctx, path):
        """`vx segments FILE` (the CLI shipped with vortex-data): per column, the sum of the
        byte lengths of all its segments (data chunks, dictionary values and codes, zone
        maps) in the file itself."""
        vx = Path(sys.executable).parent / "vx"
        exe = str(vx) if vx.is_file() else (shutil.which("vx") or "vx")
        p = subprocess.run([exe, "segments", str(path)], capture_output=True, text=True)
        if p.returncode != 0:
            tail = (p.stderr or "").strip().splitlines()[-3:]
            raise RuntimeError(f"`vx segments` exited {p.returncode}: " + " | ".join(tail))
        info = json.loads(p.stdout)
        sizes = {c["name"]: sum(int(s["byte_length"]) for s in c["segments"])
                 for c in info["columns"]}
        return sizes, {}

    def version(self):
        import vortex
        return f"vortex-data {getattr(vortex, '__version__', '?')}"

    def write(self, ctx, path):
        import vortex
        import vortex.io
        vortex.set_worker_threads(0)
        vortex.io.write(ctx.ref, str(path))

    def setup(self, table, schema):
        import vortex
        vortex.set_worker_threads(0)
        self.schema = schema

    def decode(self, path):
        import vortex
        f = vortex.open(str(path), memory_map=True)
        if self.string_view:
            return f.scan().read_all().to_arrow_table()
        return f.to_arrow(schema=self.schema).read_all()

    def stream(self, path):
        import vortex
        f = vortex.open(str(path), memory_map=True)
        reader = f.to_arrow() if self.string_view else f.to_arrow(schema=self.schema)
        return sum(batch.num_rows for batch in reader)


# --------------------------------------------------------------------------- DuckDB


class DuckDBFormat(Format):
    name = "DuckDB native"
    key = "duckdb"
    ext = "duckdb"
    modules = ("duckdb",)
    note = ("DuckDB read = per run: open a read-only connection to the file with "
            "`threads=1` (timed: DuckDB reads its catalog and block metadata anew), "
            "`PREPARE read_all AS SELECT * FROM <table>` (not timed: planning excluded), "
            "`con.sql('EXECUTE read_all').to_arrow_table()` (stream: `.to_arrow_reader(65536)`, "
            "each batch dropped), close (timed).")

    def __init__(self):
        self.table = "lineitem"

    def setup(self, table, schema):
        self.table = table

    def version(self):
        import duckdb
        return f"duckdb {duckdb.__version__}"

    def write(self, ctx, path):
        import duckdb
        for p in (path, Path(str(path) + ".wal")):
            p.unlink(missing_ok=True)
        con = duckdb.connect(str(path))
        try:
            con.execute("SET threads=1")
            ref = ctx.ref  # noqa: F841  (referenced by name in the SQL below)
            con.execute(f'CREATE TABLE "{ctx.table}" AS SELECT * FROM ref')
            con.execute("CHECKPOINT")
        finally:
            con.close()

    def read(self, path, stream):
        import duckdb
        t0 = time.perf_counter()
        con = duckdb.connect(str(path), read_only=True, config={"threads": 1})
        try:
            t1 = time.perf_counter()
            con.execute(f'PREPARE read_all AS SELECT * FROM "{self.table}"')
            t2 = time.perf_counter()
            rel = con.sql("EXECUTE read_all")
            if stream:
                out = sum(b.num_rows for b in rel.to_arrow_reader(65536))
            else:
                out = rel.to_arrow_table()
        finally:
            con.close()
        return out, time.perf_counter() - t2 + (t1 - t0)

    def decode(self, path):
        return self.read(path, False)[0]


def all_formats() -> list[Format]:
    """All formats, in the fixed order used for every run and report."""
    return [
        SiftFormat(),
        ParquetFormat("snappy"),
        ParquetFormat("zstd"),
        VortexFormat(),
        VortexFormat(string_view=True),
        DuckDBFormat(),
        OrcFormat(),
    ]


def first_read_main(argv: list[str]) -> int:
    """`first-read KEY FILE --table T --schema S [--stream]`: see the module docstring."""
    ap = argparse.ArgumentParser(prog="formats.py first-read")
    ap.add_argument("key")
    ap.add_argument("file", type=Path)
    ap.add_argument("--table", required=True)
    ap.add_argument("--schema", type=Path, required=True,
                    help="the reference schema, serialized by pa.Schema.serialize()")
    ap.add_argument("--stream", action="store_true")
    args = ap.parse_args(argv)
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    fmt = next((f for f in all_formats() if f.key == args.key), None)
    if fmt is None:
        ap.error(f"unknown format {args.key}")
    for m in fmt.modules:
        importlib.import_module(m)
    fmt.setup(args.table, pa.ipc.read_schema(pa.py_buffer(args.schema.read_bytes())))
    before = set(sys.modules)
    out, seconds = fmt.read(args.file, args.stream)
    rows = out if isinstance(out, int) else out.num_rows
    # Modules the read imported lie inside the timed region: listed so that they can be
    # added to `modules`.
    print(json.dumps({"ms": seconds * 1e3, "rows": rows,
                      "imported": sorted(set(sys.modules) - before)}))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] != ["first-read"]:
        sys.exit("usage: formats.py first-read KEY FILE --table T --schema S [--stream]")
    # One thread everywhere, as in the harness process this is started from.
    for _var in ("OMP_NUM_THREADS", "ARROW_IO_THREADS", "RAYON_NUM_THREADS",
                 "TOKIO_WORKER_THREADS"):
        os.environ.setdefault(_var, "1")
    sys.exit(first_read_main(sys.argv[2:]))
