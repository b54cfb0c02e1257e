"""File formats compared by bench/harness.py.

Each format knows how to write the reference table to a file, how to decode that file back
into a fully materialized pyarrow Table on one core, and (Sift, Parquet, Vortex) how many
bytes each column occupies in the file.  To add a format, subclass `Format` and append an
instance to `all_formats()`; to add a measure (e.g. a scan query), give the formats a method
for it and register a function in harness.MEASURES.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
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

    def path(self, ctx: Context) -> Path:
        stem = ctx.table if self.key == self.ext else f"{ctx.table}.{self.key}"
        return ctx.workdir / f"{stem}.{self.ext}"

    def version(self) -> str:
        return ""

    def prepare(self, ctx: Context) -> None:
        """Called once before write/decode (whether or not the file is written this run)."""

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

    def decode(self, path: Path) -> pa.Table | None:
        """Decode the whole file into Arrow; the timed operation.

        Returns the table, or None when decoding happens out of process (Sift)."""
        raise NotImplementedError

    def read_back(self, ctx: Context, path: Path) -> pa.Table:
        """Read the file into a pyarrow Table for the correctness check (untimed)."""
        t = self.decode(path)
        assert t is not None
        return t

    def size(self, path: Path) -> int:
        if path.is_dir():
            return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        return path.stat().st_size


# --------------------------------------------------------------------------- Sift


class SiftFormat(Format):
    name = "Sift"
    key = "sift"
    ext = "sift"
    note = ("Sift decode = wall time of the subprocess `sift cat FILE --output none`, which "
            "decodes every column of every block into Arrow arrays and discards them "
            "(includes process start-up and file open); correctness via "
            "`sift convert FILE back.parquet`.")

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

    def decode(self, path):
        self._run(["cat", str(path), "--output", "none"])
        return None

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

    def version(self):
        return f"pyarrow {pa.__version__}"

    def write(self, ctx, path):
        import pyarrow.orc as orc
        orc.write_table(ctx.ref, path, compression="zstd")

    def decode(self, path):
        import pyarrow.orc as orc
        # pyarrow's ORC reader has no use_threads flag; pa.set_cpu_count(1) applies.
        return orc.read_table(path)


# --------------------------------------------------------------------------- Vortex


class VortexFormat(Format):
    """Vortex (vortex-data), written with vortex.io.write(table, path), memory-mapped on read.

    Default row: `vortex.open(f, memory_map=True).to_arrow(schema=ref_schema).read_all()`,
    strings as utf8 like every other row.  `string_view=True`: Vortex's fastest full read,
    `vortex.open(f, memory_map=True).scan().read_all().to_arrow_table()`, which returns
    strings as string_view (its native layout)."""

    ext = "vortex"

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
                         "`vortex.set_worker_threads(0)`; both rows read the same file.")

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

    def prepare(self, ctx):
        import vortex
        vortex.set_worker_threads(0)
        self.schema = ctx.ref.schema

    def decode(self, path):
        import vortex
        f = vortex.open(str(path), memory_map=True)
        if self.string_view:
            return f.scan().read_all().to_arrow_table()
        return f.to_arrow(schema=self.schema).read_all()


# --------------------------------------------------------------------------- DuckDB


class DuckDBFormat(Format):
    name = "DuckDB native"
    key = "duckdb"
    ext = "duckdb"
    note = ("DuckDB decode = `con.sql('select * from <table>').to_arrow_table()` on a "
            "read-only connection with `SET threads=1` (connection open included).")

    def __init__(self):
        self.table = "lineitem"

    def prepare(self, ctx):
        self.table = ctx.table

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

    def decode(self, path):
        import duckdb
        con = duckdb.connect(str(path), read_only=True, config={"threads": 1})
        try:
            return con.sql(f'SELECT * FROM "{self.table}"').to_arrow_table()
        finally:
            con.close()


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
