#!/usr/bin/env python3
"""Sift comparison harness: size and single-core full decode of TPC-H lineitem.

Run through bench/run.sh (sets up the venv, builds sift, pins to one core with taskset).
Direct use:  taskset -c 0 python bench/harness.py --scale 0.1 --sift target/release/sift

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
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
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
START_LOAD = os.getloadavg()[0]


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


def prepare_data(scale: float, data_dir: Path) -> tuple[pa.Table, Path, Path]:
    """Generate (cached) lineitem, return (reference table, input parquet, work dir)."""
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
    work = d / "formats"
    work.mkdir(exist_ok=True)
    return ref, inp, work


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


def measure_decode(fmt: Format, path: Path, ctx: Context, args) -> dict:
    """Single-core full decode to Arrow: one untimed warm-up, then --runs timed runs."""
    res: dict = {}
    out = fmt.decode(path)                     # warm-up: page cache + lazy init
    if out is not None and not args.no_verify:
        res["correct"] = compare(ctx.ref, out)
    del out
    if fmt.key == "sift" and not args.no_verify:
        res["correct"] = compare(ctx.ref, fmt.read_back(ctx, path))
    times = []
    for _ in range(args.runs):
        gc.collect()
        t0 = time.perf_counter()
        out = fmt.decode(path)
        t1 = time.perf_counter()
        del out
        times.append(t1 - t0)
    res["times"] = times
    res["best"] = min(times)
    res["median"] = statistics.median(times)
    return res


# name -> function(fmt, path, ctx, args) -> dict.  Order = execution order per format.
MEASURES = {
    "decode": measure_decode,
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


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def machine_info(formats: list[Format]) -> list[str]:
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
    sift_v = next((f.version() for f in formats if f.key == "sift"), "") or "n/a"
    try:
        rev = subprocess.run(["git", "-C", str(REPO_DIR), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip() or "none"
    except OSError:
        rev = "?"
    return [
        f"- CPU: {cpu_model()} ({os.cpu_count()} logical CPUs; this process pinned to "
        f"CPU {','.join(map(str, aff))})",
        f"- Kernel: {platform.system()} {platform.release()}; Python {platform.python_version()}",
        f"- pyarrow {pa.__version__}, duckdb {duckdb.__version__}, vortex-data {vx}, "
        f"numpy {numpy.__version__}",
        f"- sift: {sift_v} (repo HEAD {rev})",
        "- Load average (1 min) at start / end: {:.2f} / {:.2f} (> 1 means other processes "
        "competed for the CPUs)".format(START_LOAD, os.getloadavg()[0]),
        f"- Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
    ]


def fmt_num(x, spec):
    return "—" if x is None else format(x, spec)


def report(rows: list[Row], ref: pa.Table, args, formats) -> str:
    nb = ref.nbytes
    sf = scale_str(args.scale)
    out = [f"# Full decode, TPC-H lineitem SF{sf}", "",
           f"{ref.num_rows:,} rows, {ref.num_columns} columns (decimals as float64, strings "
           f"utf8, dates date32), Arrow in-memory size {nb / 1e6:.1f} MB "
           f"(reference `table.nbytes`).", "",
           "| format | size MB | ratio | decode best GB/s | decode median GB/s | best ms "
           "| median ms | correct? | write s |",
           "|---|---:|---:|---:|---:|---:|---:|---|---:|"]
    problems = []
    for r in rows:
        d = r.measures.get("decode", {})
        size_mb = r.size / 1e6 if r.size else None
        ratio = nb / r.size if r.size else None
        best, med = d.get("best"), d.get("median")
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
        out.append(
            f"| {r.fmt.name} | {fmt_num(size_mb, '.1f')} | "
            f"{fmt_num(ratio, '.2f')}{'×' if ratio else ''} | "
            f"{fmt_num(nb / best / 1e9 if best else None, '.2f')} | "
            f"{fmt_num(nb / med / 1e9 if med else None, '.2f')} | "
            f"{fmt_num(best * 1e3 if best else None, '.1f')} | "
            f"{fmt_num(med * 1e3 if med else None, '.1f')} | {correct} | "
            f"{fmt_num(r.write_s, '.2f')} |")
    if problems:
        out += ["", "**Problems:**", *problems]
    out += ["", "Notes:",
            f"- Single core: the whole harness runs under `taskset -c 0`; "
            f"`pa.set_cpu_count(1)`, `pa.set_io_thread_count(1)`, `use_threads=False` where "
            f"the reader has it; OMP/RAYON/TOKIO thread env vars = 1.",
            f"- Page cache warm: one untimed warm-up decode per format (also used for the "
            f"correctness check), then {args.runs} timed runs; best and median reported. "
            f"GB/s = Arrow bytes of the reference table ({nb:,} B) / decode seconds "
            f"(1 GB = 10^9 B, 1 MB = 10^6 B).",
            "- Ratio = Arrow in-memory bytes / file bytes. `correct?`: yes = read-back table "
            "equals the reference; yes* = equal after casting types / aligning nullability to "
            "the reference schema. `write s` = one untimed-quality write from the in-memory "
            "table (Sift: `sift convert` from the input Parquet, including reading it).",
            "- Parquet/ORC: pyarrow writer defaults plus the named compression; decode = "
            "`pq.read_table(f, use_threads=False)` / `pyarrow.orc.read_table(f)`."]
    out += [f"- {f.note}" for f in formats if f.note]
    out += ["", "Machine:", *machine_info(formats), ""]
    return "\n".join(out)


def raw_results(rows: list[Row], ref: pa.Table) -> dict:
    """Everything measured, for later analysis (results/decode-sf{SF}.json)."""
    return {
        "arrow_nbytes": ref.nbytes, "rows": ref.num_rows,
        "formats": [{"name": r.fmt.name, "key": r.fmt.key, "version": r.fmt.version(),
                     "size": r.size, "write_s": r.write_s, "error": r.error,
                     "measures": r.measures} for r in rows],
    }


def chart(rows: list[Row], ref: pa.Table, args, png: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nb = ref.nbytes
    names = [r.fmt.name for r in rows]
    ratio = [nb / r.size if r.size and not r.error else 0 for r in rows]
    best, med = [], []
    for r in rows:
        d = r.measures.get("decode", {})
        best.append(nb / d["best"] / 1e9 if d.get("best") else 0)
        med.append(nb / d["median"] / 1e9 if d.get("median") else 0)
    colors = ["tab:red" if r.fmt.key == "sift" else "tab:blue" for r in rows]
    y = range(len(rows))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 0.45 * len(rows) + 1.6), sharey=True)
    ax1.barh(y, ratio, color=colors)
    ax1.set_title("compression ratio (Arrow bytes / file bytes)")
    ax2.barh(y, best, color=colors)
    ax2.scatter(med, list(y), color="black", marker="|", s=200, zorder=3)
    ax2.set_title("single-core full decode to Arrow (GB/s)")
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    ax2.legend(handles=[Patch(color="gray", label="best"),
                        Line2D([], [], color="black", marker="|", ls="", ms=12,
                               label="median")], loc="lower right", fontsize=8)
    for ax, vals, spec in ((ax1, ratio, "{:.2f}×"), (ax2, best, "{:.2f}")):
        for i, v in enumerate(vals):
            ax.text(v, i, " " + (spec.format(v) if v else "failed"), va="center", fontsize=8)
        ax.set_xlim(0, max(vals + [1e-9]) * 1.25)
        ax.grid(axis="x", alpha=0.3)
    ax1.set_yticks(list(y))
    ax1.set_yticklabels(names)
    ax1.invert_yaxis()
    fig.suptitle(f"TPC-H lineitem SF{scale_str(args.scale)}: {ref.num_rows:,} rows, "
                 f"{nb / 1e6:.0f} MB as Arrow, 1 core, {cpu_model()}", fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def main() -> int:
    fmts_all = all_formats()
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per format (default 5)")
    ap.add_argument("--formats", default="",
                    help="comma list of format keys (default all): "
                         + ",".join(f.key for f in fmts_all))
    ap.add_argument("--sift", default=os.environ.get("SIFT_BIN", ""),
                    help="path to the sift binary (default $SIFT_BIN, else "
                         "${CARGO_TARGET_DIR:-<repo>/target}/release/sift; 'none' = skip)")
    ap.add_argument("--sift-missing-reason", default="",
                    help="why the sift binary is absent (set by run.sh on build failure)")
    ap.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data")
    ap.add_argument("--results-dir", type=Path, default=BENCH_DIR / "results")
    ap.add_argument("--no-verify", action="store_true", help="skip correctness checks")
    ap.add_argument("--no-chart", action="store_true")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be >= 1")

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

    sift_bin = None
    if args.sift.lower() != "none":
        target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO_DIR / "target")
        if not target.is_absolute():
            target = REPO_DIR / target
        sift_bin = Path(args.sift or target / "release" / "sift").resolve()
    ref, inp, work = prepare_data(args.scale, args.data_dir)
    log(f"reference: {ref.num_rows:,} rows, {ref.nbytes / 1e6:.1f} MB as Arrow")
    ctx = Context(ref=ref, input_parquet=inp, workdir=work, sift_bin=sift_bin,
                  sift_missing_reason=args.sift_missing_reason)

    rows, written = [], {}
    for fmt in formats:
        log(f"{fmt.name} ...")
        row = run_format(fmt, ctx, args, written)
        d = row.measures.get("decode", {})
        log(f"{fmt.name}: " + (row.error or d.get("error") or
                                f"size {row.size / 1e6:.1f} MB, best {d['best'] * 1e3:.1f} ms, "
                                f"median {d['median'] * 1e3:.1f} ms, "
                                f"correct: {d.get('correct', 'n/a')}"))
        rows.append(row)

    md = report(rows, ref, args, formats)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    stem = f"decode-sf{scale_str(args.scale)}"
    (args.results_dir / f"{stem}.md").write_text(md)
    print(md)
    (args.results_dir / f"{stem}.json").write_text(json.dumps(raw_results(rows, ref), indent=1))
    if not args.no_chart:
        chart(rows, ref, args, args.results_dir / f"{stem}.png")
    log(f"wrote {args.results_dir / stem}.md, .json and .png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
