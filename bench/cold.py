#!/usr/bin/env python3
"""Cold against warm: TPC-H Q6 on lineitem as a whole `sift query q6` process, against the
same query warm inside one process.

    cold  = wall time of a whole `sift query q6 FILE --runs 1` process (open the file, verify
            the checksums of what Q6 reads, run it once, print, exit), minus the wall time of
            a whole `sift --version` process (start-up: loading and relocating the binary);
    warm  = best (and median) of runs 2…N of `sift query q6 FILE --runs N --json` in one
            process, the file opened once.

Both are measured on the same Sift file, in alternating rounds of --processes processes each,
with the page cache holding the file (nothing is read from disk).  How the page cache holds it
matters on Linux: a file is kept in folios whose size follows how it was written or read, and a
first scan maps the file with one fault per few small folios or one entry per 2 MiB folio.  So
the file is measured in three states:

  written    the file as `sift convert` left it, just written (a fresh conversion of
             tpchgen's lineitem.parquet);
  sift-read  its pages dropped from the page cache (posix_fadvise DONTNEED), then read back
             from storage by one `sift query q6` process (timed too: the query from storage);
  reread     its pages dropped, then read back sequentially by another program (read calls),
             as a copy or a backup would.

Run through bench/cold.sh (venv, release build).  Direct use:
    taskset -c 0 python bench/cold.py --scale 0.1 --sift ~/.cache/sift-target/release/sift
Results: bench/results/cold-sf{SF}.{md,json}.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
import sql  # noqa: E402  (tpchgen's Parquet files, shared with sql.sh)

log = harness.log


def wall_ms(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t) * 1e3


def evict(path: Path, read_back: bool) -> None:
    """Drops the file's pages from the page cache, then (`read_back`) reads it sequentially."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while read_back and os.read(fd, 16 << 20):
            pass
    finally:
        os.close(fd)


def huge_mapped_kb(sift: Path, path: Path) -> int | None:
    """How much of the file a process maps with 2 MiB entries after touching all of it
    (`FilePmdMapped` of its mapping), from a small helper process; None if unknown."""
    code = (
        "import mmap, os, re, sys\n"
        "p = sys.argv[1]; fd = os.open(p, os.O_RDONLY)\n"
        "m = mmap.mmap(fd, os.fstat(fd).st_size, prot=mmap.PROT_READ)\n"
        "s = sum(m[i] for i in range(0, len(m), 4096))\n"
        "smaps = open('/proc/self/smaps').read().split('\\n')\n"
        "name = os.path.realpath(p)\n"
        "for i, line in enumerate(smaps):\n"
        "    if line.endswith(name):\n"
        "        for l in smaps[i + 1:i + 30]:\n"
        "            if l.startswith('FilePmdMapped:'):\n"
        "                print(int(l.split()[1])); sys.exit(0)\n"
    )
    p = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    try:
        return int(p.stdout.strip())
    except ValueError:
        return None


def measure(sift: Path, path: Path, rounds: int, processes: int, warm_runs: int) -> dict:
    q6 = [str(sift), "query", "q6", str(path), "--runs", "1", "--quiet"]
    version = [str(sift), "--version"]
    wall_ms(version)  # the binary's own pages in the page cache
    per_round = []
    for r in range(rounds):
        whole = [wall_ms(q6) for _ in range(processes)]
        start = [wall_ms(version) for _ in range(processes)]
        p = subprocess.run([str(sift), "query", "q6", str(path), "--runs", str(warm_runs),
                            "--json"], capture_output=True, text=True, check=True)
        warm = harness.last_json(p.stdout)
        later = warm["runs_ms"][1:]
        row = {"whole_min": min(whole), "whole_median": statistics.median(whole),
               "startup_min": min(start), "startup_median": statistics.median(start),
               "first_in_process": warm["first_ms"], "open": warm["open_ms"],
               "warm_best": min(later), "warm_median": statistics.median(later)}
        row["cold_min"] = row["whole_min"] - row["startup_min"]
        row["cold_median"] = row["whole_median"] - row["startup_median"]
        per_round.append(row)
        log(f"  round {r + 1}: whole {row['whole_median']:.2f} ms, start-up "
            f"{row['startup_median']:.2f}, cold {row['cold_median']:.2f} (medians); warm best "
            f"{row['warm_best']:.2f}, median {row['warm_median']:.2f}")
    keys = per_round[0].keys()
    summary = {k: statistics.median(r[k] for r in per_round) for k in keys}
    summary["ratio_median"] = summary["cold_median"] / summary["warm_best"]
    summary["ratio_min"] = summary["cold_min"] / summary["warm_best"]
    return {"rounds": per_round, "summary": summary}


def report(results: dict, args, sift_desc: tuple) -> str:
    version, built, rev, _ = sift_desc
    lines = [f"# Cold against warm: Q6 on lineitem SF{harness.scale_str(args.scale)}", "",
             "Generated by `bench/cold.sh`. One core (`taskset -c 0`), page cache holding the "
             "file. *cold* = a whole `sift query q6 FILE --runs 1` process (open, checksums of "
             "what Q6 reads, one run, exit) minus a whole `sift --version` process (start-up); "
             "*warm* = runs 2…N of `sift query q6 --runs N` in one process. Each figure is the "
             f"median over {args.rounds} alternating rounds of {args.processes} processes "
             "(the process columns: each round's median process, or its fastest for *min*).",
             "",
             "| page cache state | 2 MiB-mapped | whole process ms | start-up ms | cold ms "
             "(min) | first run in-process ms | warm best ms | warm median ms | cold / warm "
             "best | (min) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for state, res in results.items():
        s = res["summary"]
        huge = res.get("huge_mapped_kb")
        huge_s = "?" if huge is None else f"{huge / 1024:.0f} of {res['file_mb']:.0f} MB"
        lines.append(f"| {state} | {huge_s} | {s['whole_median']:.2f} | "
                     f"{s['startup_median']:.2f} | {s['cold_median']:.2f} "
                     f"({s['cold_min']:.2f}) | {s['first_in_process']:.2f} | "
                     f"{s['warm_best']:.2f} | {s['warm_median']:.2f} | "
                     f"**{s['ratio_median']:.2f}×** | {s['ratio_min']:.2f}× |")
    storage = results.get("sift-read", {}).get("from_storage_ms")
    lines += ["", "States: *written* = the file just written by `sift convert`; *sift-read* = "
              "its pages dropped from the page cache (`posix_fadvise(DONTNEED)`), then read "
              "from storage by one `sift query q6` process"
              + (f" (that process: {storage:.1f} ms)" if storage is not None else "")
              + "; *reread* = its pages dropped, then read back sequentially with `read` "
              "calls. *2 MiB-mapped* = how much of the file a process that touches all of it "
              "maps with 2 MiB page-table entries (`FilePmdMapped`, taken after the state's "
              "rounds; in *sift-read* that process reads from storage what Q6 did not).", "",
              "## Machine", "",
              f"- CPU: {harness.cpu_model()} ({os.cpu_count()} logical CPUs)",
              f"- Kernel: {os.uname().sysname} {os.uname().release}",
              f"- sift: {version}{built} (repo HEAD {rev})",
              f"- Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}"]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--processes", type=int, default=30, help="processes per round and kind")
    ap.add_argument("--warm-runs", type=int, default=21)
    ap.add_argument("--sift", default="")
    ap.add_argument("--sift-missing-reason", default="")
    ap.add_argument("--data-dir", type=Path, default=harness.BENCH_DIR / "data")
    ap.add_argument("--results-dir", type=Path, default=harness.BENCH_DIR / "results")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sift, origin, missing = harness.sift_binary(
            args.sift, harness.REPO_DIR / "target" / "release" / "sift",
            args.sift_missing_reason, Path(tmp))
        if sift is None:
            log(f"cannot measure: {missing}")
            return 1
        base = args.data_dir / f"tpch-sf{harness.scale_str(args.scale)}"
        pq = sql.generate_parquet(args.scale, base) / "lineitem.parquet"
        work = args.data_dir / f"cold-sf{harness.scale_str(args.scale)}"
        work.mkdir(parents=True, exist_ok=True)
        path = work / "lineitem.sift"
        log(f"sift convert {pq.name} {path}")
        path.unlink(missing_ok=True)
        subprocess.run([str(sift), "convert", str(pq), str(path), "--quiet"], check=True)
        file_mb = path.stat().st_size / 1e6
        results = {}
        for state in ("written", "sift-read", "reread"):
            from_storage = None
            if state != "written":
                evict(path, read_back=state == "reread")
            if state == "sift-read":
                from_storage = wall_ms([str(sift), "query", "q6", str(path), "--runs", "1",
                                        "--quiet"])
            log(f"{state}:" + (f" first process from storage {from_storage:.1f} ms"
                               if from_storage is not None else ""))
            res = measure(sift, path, args.rounds, args.processes, args.warm_runs)
            res["from_storage_ms"] = from_storage
            res["huge_mapped_kb"] = huge_mapped_kb(sift, path)
            res["file_mb"] = file_mb
            results[state] = res
        desc = harness.sift_provenance(sift, origin)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    stem = args.results_dir / f"cold-sf{harness.scale_str(args.scale)}"
    md = report(results, args, desc)
    stem.with_suffix(".md").write_text(md)
    stem.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
