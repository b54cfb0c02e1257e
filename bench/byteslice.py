"""Filter scans on wide columns: codes stored as byte slices against the writer's default.

TPC-H lineitem (decimals as doubles, as bench/harness.py generates it) is converted twice
from the same Parquet input: with the writer's own choice of encodings, and with
`--byteslice` on the measured columns. For each column and each target selectivity, a
constant is taken from the column's sorted values so that `col < constant` keeps that
fraction of rows, and `sift bench scan FILE --columns col --filter "col < constant"`
times the scan on one thread in this process (every run opens the file anew and keeps
the selected values), first run and best of N both reported. Both files are scanned in
the same run, alternately, on the same core.

Results: bench/results/byteslice-sf{SF}.{md,json}.

    bench/byteslice.sh [--scale SF] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

import harness
import querydata

HERE = Path(__file__).resolve().parent
# Wide codes: keys (23 and 18 bits), a smaller key (14 bits), a price stored as decimal
# integers (ALP, 24 bits) and a date (12 bits).
COLUMNS = ("l_orderkey", "l_partkey", "l_suppkey", "l_extendedprice", "l_shipdate")
SELECTIVITIES = (0.001, 0.01, 0.1, 0.5)
# Returned instead of the filtered column to time the filter alone (3-bit codes, cheap to
# decode in either file).
NARROW = "l_linenumber"


def literal(value) -> str:
    """`value` in the filter language of `sift scan`."""
    if hasattr(value, "isoformat") and not isinstance(value, (int, float)):
        return f"date '{value.isoformat()}'"
    if isinstance(value, float):
        return repr(value)
    return str(int(value))


def sift(sift_bin: str, *args: str) -> str:
    done = subprocess.run([sift_bin, *args, "-q"], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"sift {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def column_info(sift_bin: str, path: Path) -> dict:
    """Per column: stored bytes and the encodings of its blocks (`sift inspect --json`)."""
    info = json.loads(sift(sift_bin, "inspect", str(path), "--json", "--no-decode"))
    out = {}
    for c in info["columns"]:
        encodings = ", ".join(f"{e['encoding']} ×{e['blocks']}" for e in c["encodings"])
        out[c["name"]] = {"bytes": c["stored_bytes"], "encodings": encodings}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--sift", required=True)
    ap.add_argument("--sift-missing-reason", default="")
    ap.add_argument("--data-dir", type=Path, default=HERE / "data")
    args = ap.parse_args()
    if args.sift == "none":
        sys.exit(f"byteslice: sift is not available ({args.sift_missing_reason})")

    ds, _ = querydata.prepare_lineitem(args.scale, args.data_dir)
    work = args.data_dir / f"sf{harness.scale_str(args.scale)}" / "byteslice"
    work.mkdir(parents=True, exist_ok=True)
    files = {"default": work / "lineitem.sift", "byteslice": work / "lineitem-byteslice.sift"}
    print("converting", file=sys.stderr)
    sift(args.sift, "convert", str(ds.input_parquet), str(files["default"]))
    sift(args.sift, "convert", str(ds.input_parquet), str(files["byteslice"]),
         "--byteslice", ",".join(COLUMNS))
    info = {k: column_info(args.sift, p) for k, p in files.items()}

    table = pq.read_table(ds.input_parquet, columns=list(COLUMNS))
    n = table.num_rows
    results = []
    for col in COLUMNS:
        values = table.column(col)
        ordered = pc.sort_indices(values)
        for target in SELECTIVITIES:
            constant = values[ordered[int(target * n)].as_py()].as_py()
            matched = pc.sum(pc.less(values, constant)).as_py() or 0
            flt = f"{col} < {literal(constant)}"
            row = {"column": col, "target": target, "selectivity": matched / n,
                   "filter": flt}
            for returned in (col, NARROW):
                for layout, path in files.items():
                    out = json.loads(sift(args.sift, "bench", "scan", str(path), "--columns",
                                          returned, "--filter", flt, "--runs", str(args.runs)))
                    if out["rows"] != matched:
                        raise RuntimeError(f"{layout} {flt}: {out['rows']} rows, "
                                           f"pyarrow {matched}")
                    key = layout if returned == col else f"{layout}_filter"
                    row[key] = {"best_ms": out["best_ms"], "first_ms": out["first_ms"]}
            print(f"{flt:48s} {row['selectivity']:8.4f} default {row['default']['best_ms']:7.2f} "
                  f"byteslice {row['byteslice']['best_ms']:7.2f} ms", file=sys.stderr)
            results.append(row)

    name = f"byteslice-sf{harness.scale_str(args.scale)}"
    out_dir = HERE / "results"
    (out_dir / f"{name}.json").write_text(json.dumps(
        {"rows": n, "runs": args.runs, "columns": info, "scans": results}, indent=1))
    lines = [
        f"# Filter scans with byte-sliced codes, TPC-H lineitem SF{harness.scale_str(args.scale)}"
        f" ({n:,} rows)",
        "",
        "`sift bench scan FILE --columns C --filter \"C < constant\"` on one thread, in process, "
        f"best of {args.runs} runs (first run in brackets); *default* is the file as the writer "
        "chooses its encodings, *byteslice* the same data converted with `--byteslice` on these "
        "columns. *Returning C*: the filtered column is decoded for the selected rows; "
        f"*filter only*: `{NARROW}` (3-bit codes, the same in both files) is returned "
        "instead, so the time is the filter's. Every row count equals pyarrow's.",
        "",
        "| column | default encoding | size | byteslice encoding | size |",
        "|---|---|---:|---|---:|",
    ]
    for col in COLUMNS:
        d, b = info["default"][col], info["byteslice"][col]
        lines.append(f"| {col} | {d['encodings']} | {d['bytes'] / 1e6:.1f} MB | "
                     f"{b['encodings']} | {b['bytes'] / 1e6:.1f} MB |")
    lines += ["", "| column | selectivity | returning C: default ms | byteslice ms | "
              "default / byteslice | filter only: default ms | byteslice ms | "
              "default / byteslice |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        cells = []
        for suffix in ("", "_filter"):
            d, b = r["default" + suffix], r["byteslice" + suffix]
            cells.append(f"{d['best_ms']:.2f} ({d['first_ms']:.1f}) | {b['best_ms']:.2f} "
                         f"({b['first_ms']:.1f}) | {d['best_ms'] / b['best_ms']:.2f}×")
        lines.append(f"| {r['column']} | {100 * r['selectivity']:.2f} % | {' | '.join(cells)} |")
    (out_dir / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
