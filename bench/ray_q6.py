#!/usr/bin/env python3
"""TPC-H Q6 through Ray Data on a local cluster (2 CPUs): lineitem split into 8 files,
read by ``sift.ray.read_sift`` and by ``ray.data.read_parquet``, the same Ray pipeline on
both: Q6's filter as a Ray expression (pushed by Ray's optimizer into each source), the two
columns Q6 needs, and the revenue summed by Ray.

Reported: the first run and the best of --runs (each a fresh Dataset, timed around
``.sum()``), the revenue both compute, and what each Sift read task read (blocks, blocks
pruned by zone maps, bytes of column data), from running the tasks' scan on its own.

    python bench/ray_q6.py --data bench/data/tpch-sf1
Results: bench/results/object-store/ray-q6-sf{SF}.{md,json}
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import time
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

FILES = 8
Q6_TEXT = ("l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' and "
           "l_discount between 0.05 and 0.07 and l_quantity < 24")


def split(data: Path, out: Path) -> tuple[Path, Path]:
    """lineitem in 8 Sift files and 8 Parquet files of the same rows."""
    import sift

    sdir, pdir = out / "sift", out / "parquet"
    if (sdir / f"part-{FILES - 1}.sift").exists() and (pdir / f"part-{FILES - 1}.parquet").exists():
        return sdir, pdir
    sdir.mkdir(parents=True, exist_ok=True)
    pdir.mkdir(parents=True, exist_ok=True)
    table = pq.read_table(data / "parquet" / "lineitem.parquet")
    step = -(-table.num_rows // FILES)
    for i in range(FILES):
        part = table.slice(i * step, step)
        sift.write(part, sdir / f"part-{i}.sift")
        pq.write_table(part, pdir / f"part-{i}.parquet")
    return sdir, pdir


def q6(ds):
    from ray.data.expressions import col, lit

    dec = lambda s: lit(Decimal(s))  # noqa: E731
    expr = ((col("l_shipdate") >= lit(datetime.date(1994, 1, 1)))
            & (col("l_shipdate") < lit(datetime.date(1995, 1, 1)))
            & (col("l_discount") >= dec("0.05")) & (col("l_discount") <= dec("0.07"))
            & (col("l_quantity") < dec("24")))

    def revenue(b: pa.Table) -> pa.Table:
        return pa.table({"rev": pc.multiply(b["l_extendedprice"], b["l_discount"])})

    return (ds.filter(expr=expr).select_columns(["l_extendedprice", "l_discount"])
            .map_batches(revenue, batch_format="pyarrow").sum("rev"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="bench/data/tpch-sf1")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    data = Path(args.data)
    sdir, pdir = split(data, data / "ray-8")

    import ray
    import sift
    import sift.ray

    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, logging_level="ERROR")
    ray.data.DataContext.get_current().enable_progress_bars = False
    rows = []
    try:
        for engine, make in (("sift.ray.read_sift", lambda: sift.ray.read_sift(str(sdir))),
                             ("ray.data.read_parquet", lambda: ray.data.read_parquet(str(pdir)))):
            times, answer = [], None
            for _ in range(args.runs):
                start = time.perf_counter()
                answer = q6(make())
                times.append((time.perf_counter() - start) * 1e3)
            rows.append({"engine": engine, "runs_ms": times, "first_ms": times[0],
                         "best_ms": min(times), "revenue": str(answer)})
            print(engine, rows[-1])
        source = sift.ray.SiftDatasource(str(sdir), columns=["l_extendedprice", "l_discount"],
                                         filter=Q6_TEXT)
        tasks = []
        for t in source.get_read_tasks(FILES):
            (loc,) = t.metadata.input_files
            f = sift.open(loc)
            table, stats = sift.ray.read_fragment(loc, (0, f.num_rows),
                                                  ["l_extendedprice", "l_discount"], Q6_TEXT)
            tasks.append({"file": Path(loc).name, "rows_out": table.num_rows, **stats})
    finally:
        ray.shutdown()
    revs = {Decimal(r["revenue"]).quantize(Decimal("0.0001")) for r in rows}
    if len(revs) != 1:
        raise SystemExit(f"engines disagree: {revs}")
    scale = json.loads((data / "parquet" / "manifest.json").read_text()).get("scale", "?")
    out = Path(f"bench/results/object-store/ray-q6-sf{scale}")
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "cpus": os.cpu_count(), "runs": args.runs, "ray": ray.__version__}
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "engines": rows,
                                                    "sift_tasks": tasks}, indent=1))
    base = rows[0]["best_ms"]
    lines = [f"# TPC-H Q6 through Ray Data, lineitem SF{scale} in {FILES} files", "",
             f"{meta['date']}, Ray {meta['ray']}, `ray.init(num_cpus=2)`, {args.runs} runs; "
             "the same pipeline on both sources (filter and projection as Ray expressions, "
             "pushed into the source by Ray's optimizer; revenue summed by Ray).", "",
             "| source | first run | best run | best vs Sift |", "|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['engine']} | {r['first_ms']:.0f} ms | {r['best_ms']:.0f} ms | "
                     f"{r['best_ms'] / base:.2f}× |")
    lines += ["", f"Both return revenue {revs.pop()}.", "",
              "What each Sift read task reads (one task per file):", "",
              "| file | blocks | pruned by zone maps | rows scanned | rows out | bytes of column data |",
              "|---|---:|---:|---:|---:|---:|"]
    for t in tasks:
        lines.append(f"| {t['file']} | {t['blocks_total']} | {t['blocks_pruned']} | "
                     f"{t['rows_scanned']} | {t['rows_out']} | {t['bytes_read']} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
