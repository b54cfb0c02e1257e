"""Tables of the end-to-end query benchmark (bench/queries.py) and their files.

Three tables, each stored in the same set of formats (Sift, Parquet zstd, Vortex, DuckDB):

- `lineitem`: TPC-H lineitem exactly as bench/harness.py prepares it (decimals as float64,
  dates as date32, strings as utf8), reusing the files harness.py already wrote.
- `lineitem_nulls`: lineitem with 12.5 % nulls, independently per column, in l_shipdate,
  l_discount, l_quantity and l_extendedprice (seeded, so every run and every format sees
  the same nulls).
- `micro`: the Parquet-Select paper's micro-benchmark table, 20 int64 columns c0..c19, each
  value uniform in 0..31 (bit width 5), seeded.

Files are cached under bench/data and rewritten only when stale: a format file older than
its table's input Parquet, or (Sift) older than the sift binary, since the Rust side and
its file layout change often.  Generated tables keep a small manifest of the parameters
they were made with, so changing a parameter regenerates them.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import harness
from formats import (Context, DuckDBFormat, Format, FormatUnavailable, ParquetFormat,
                     SiftFormat, VortexFormat)

NULLS_SEED = 20240605
NULLS_FRACTION = 0.125
NULLS_COLUMNS = ("l_shipdate", "l_discount", "l_quantity", "l_extendedprice")

MICRO_SEED = 20240606
MICRO_COLUMNS = 20
MICRO_MAX = 31          # values uniform in 0..MICRO_MAX (bit width 5)
MICRO_ROWS_SF1 = 6_000_000

# Format keys the query benchmark reads, in the order they are written.
FORMAT_KEYS = ("parquet-zstd", "vortex", "duckdb", "sift")


@dataclass
class TableFiles:
    """One benchmark table on disk: its input Parquet (what `sift convert` reads) and one
    file per format key (missing keys: the format could not be written, see `errors`)."""

    name: str                  # table name: file stems, DuckDB table name
    rows: int
    input_parquet: Path
    files: dict[str, Path] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)   # format key -> why unavailable
    description: str = ""


def _newer_or_equal(path: Path, *refs: float) -> bool:
    return path.exists() and all(path.stat().st_mtime >= r for r in refs)


def _write_atomic(fmt: Format, ctx: Context, path: Path) -> None:
    """Write through a temporary name so that a concurrent reader (or an interrupted run)
    never sees a half-written file."""
    tmp = path.with_name(f"{path.stem}.writing{path.suffix}")
    for p in (tmp, Path(str(tmp) + ".wal")):
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)
    fmt.prepare(ctx)
    fmt.write(ctx, tmp)
    tmp.replace(path)


def ensure_files(tf: TableFiles, workdir: Path, ref: Callable[[], pa.Table],
                 sift_bin: Path | None, sift_bin_mtime: float | None, sift_reason: str,
                 keys: tuple[str, ...] = FORMAT_KEYS) -> None:
    """Make sure every format file of `tf` exists and is fresh; `ref` builds the in-memory
    table (only called when some non-Sift file has to be written)."""
    formats = {"parquet-zstd": ParquetFormat("zstd"), "vortex": VortexFormat(),
               "duckdb": DuckDBFormat(), "sift": SiftFormat()}
    base = tf.input_parquet.stat().st_mtime
    table = None
    for key in keys:
        fmt = formats[key]
        ctx = Context(ref=None, input_parquet=tf.input_parquet, workdir=workdir,  # type: ignore[arg-type]
                      sift_bin=sift_bin, sift_missing_reason=sift_reason, table=tf.name)
        path = fmt.path(ctx)
        refs = [base]
        if key == "sift":
            if sift_bin is None or not sift_bin.is_file():
                tf.errors[key] = sift_reason or "sift binary not available"
                continue
            if sift_bin_mtime is not None:
                refs.append(sift_bin_mtime)
        if not _newer_or_equal(path, *refs):
            harness.log(f"writing {path}")
            if key != "sift" and table is None:
                table = ref()
            ctx.ref = table  # type: ignore[assignment]
            try:
                _write_atomic(fmt, ctx, path)
            except FormatUnavailable as e:
                tf.errors[key] = str(e)
                continue
            except Exception as e:
                tf.errors[key] = f"writing {path.name} failed: {type(e).__name__}: {e}"
                harness.log(tf.errors[key])
                continue
        tf.files[key] = path


def _manifest_ok(manifest: Path, params: dict, *files: Path) -> bool:
    if not manifest.exists() or not all(f.exists() for f in files):
        return False
    try:
        return json.loads(manifest.read_text()) == params
    except (OSError, ValueError):
        return False


def _write_input(table: pa.Table, path: Path, manifest: Path, params: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    tmp.replace(path)
    manifest.write_text(json.dumps(params, indent=1) + "\n")


# --------------------------------------------------------------------------- tables


def prepare_lineitem(scale: float, data_dir: Path):
    """harness.py's lineitem dataset (generated and cached by harness.prepare_lineitem)."""
    ds = harness.prepare_lineitem(scale, data_dir)
    tf = TableFiles("lineitem", ds.ref.num_rows, ds.input_parquet,
                    description=f"TPC-H lineitem SF{harness.scale_str(scale)} "
                                f"({ds.ref.num_rows:,} rows; {ds.types})")
    return ds, tf


def with_nulls(ref: pa.Table) -> pa.Table:
    """`ref` with NULLS_FRACTION nulls in each NULLS_COLUMNS column, one independent seeded
    mask per column (the seed is offset by the column's position so masks differ)."""
    cols, fields = [], []
    for i, (f, col) in enumerate(zip(ref.schema, ref.columns)):
        if f.name in NULLS_COLUMNS:
            rng = np.random.default_rng(NULLS_SEED + i)
            mask = pa.array(rng.random(len(col)) < NULLS_FRACTION)
            col = pc.if_else(mask, pa.scalar(None, f.type), col.combine_chunks())
            f = f.with_nullable(True)
        cols.append(col)
        fields.append(f)
    return pa.Table.from_arrays(cols, schema=pa.schema(fields)).combine_chunks()


def prepare_lineitem_nulls(scale: float, data_dir: Path, lineitem_ref: Callable[[], pa.Table]
                           ) -> TableFiles:
    d = data_dir / f"sf{harness.scale_str(scale)}"
    src = d / "lineitem.input.parquet"
    inp = d / "lineitem_nulls.input.parquet"
    manifest = d / "lineitem_nulls.input.json"
    st = src.stat()
    params = {"seed": NULLS_SEED, "fraction": NULLS_FRACTION, "columns": list(NULLS_COLUMNS),
              "source": src.name, "source_size": st.st_size, "numpy": np.__version__}
    if not _manifest_ok(manifest, params, inp) or inp.stat().st_mtime < st.st_mtime:
        harness.log(f"writing {inp}")
        _write_input(with_nulls(lineitem_ref()), inp, manifest, params)
    rows = pq.read_metadata(inp).num_rows
    return TableFiles("lineitem_nulls", rows, inp,
                      description=f"lineitem with {NULLS_FRACTION:.1%} nulls, independently "
                                  f"per column (seeded), in {', '.join(NULLS_COLUMNS)}")


def micro_table(rows: int) -> pa.Table:
    rng = np.random.default_rng(MICRO_SEED)
    cols = {f"c{i}": rng.integers(0, MICRO_MAX + 1, size=rows, dtype=np.int64)
            for i in range(MICRO_COLUMNS)}
    schema = pa.schema([pa.field(n, pa.int64(), nullable=False) for n in cols])
    return pa.Table.from_pydict(cols, schema=schema)


def prepare_micro(rows: int, data_dir: Path) -> tuple[TableFiles, Path]:
    """The micro table lives in its own directory per row count (it does not depend on the
    TPC-H scale, only on the number of rows)."""
    d = data_dir / f"micro-r{rows}"
    work = d / "formats"
    work.mkdir(parents=True, exist_ok=True)
    inp = d / "micro.input.parquet"
    manifest = d / "micro.input.json"
    params = {"seed": MICRO_SEED, "rows": rows, "columns": MICRO_COLUMNS, "max": MICRO_MAX,
              "numpy": np.__version__}
    if not _manifest_ok(manifest, params, inp):
        harness.log(f"writing {inp}")
        _write_input(micro_table(rows), inp, manifest, params)
    return TableFiles("micro", rows, inp,
                      description=f"{rows:,} rows × {MICRO_COLUMNS} int64 columns c0..c"
                                  f"{MICRO_COLUMNS - 1}, values uniform in 0..{MICRO_MAX} "
                                  f"(seeded)"), work
