"""File formats compared by bench/harness.py.

Each format knows how to write the reference table to a file and how to decode that file
back into a fully materialized pyarrow Table on one core.  To add a format, subclass
`Format` and append an instance to `all_formats()`; to add a measure (e.g. a scan query),
give the formats a method for it and register a function in harness.MEASURES.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
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


class FormatUnavailable(Exception):
    """The format cannot be measured on this machine (e.g. sift binary missing)."""


class Format:
    name = "?"          # label in the results table
    key = "?"           # short id for --formats
    ext = "bin"
    note = ""           # one line for the notes section of the report

    def path(self, ctx: Context) -> Path:
        stem = "lineitem" if self.key == self.ext else f"lineitem.{self.key}"
        return ctx.workdir / f"{stem}.{self.ext}"

    def version(self) -> str:
        return ""

    def prepare(self, ctx: Context) -> None:
        """Called once before write/decode (whether or not the file is written this run)."""

    def write(self, ctx: Context, path: Path) -> None:
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

    def decode(self, path):
        self._run(["cat", str(path), "--output", "none"])
        return None

    def read_back(self, ctx, path):
        back = ctx.workdir / "lineitem.sift-back.parquet"
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
                         "as string_view (GB/s still counts the reference's utf8 Arrow bytes; its "
                         "l_shipinstruct views point into the memory-mapped file, all other "
                         "buffers are decoded copies); "
                         "`vortex.set_worker_threads(0)`; both rows read the same file.")

    def path(self, ctx):
        # Both Vortex rows read the same file (the harness writes it once per run).
        return ctx.workdir / "lineitem.vortex"

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
    note = ("DuckDB decode = `con.sql('select * from lineitem').to_arrow_table()` on a "
            "read-only connection with `SET threads=1` (connection open included).")

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
            con.execute("CREATE TABLE lineitem AS SELECT * FROM ref")
            con.execute("CHECKPOINT")
        finally:
            con.close()

    def decode(self, path):
        import duckdb
        con = duckdb.connect(str(path), read_only=True, config={"threads": 1})
        try:
            return con.sql("SELECT * FROM lineitem").to_arrow_table()
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
