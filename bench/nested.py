#!/usr/bin/env python3
"""Nested data: GitHub-events-like records (structs, lists of structs, lists of strings,
maps) generated with realistic distributions, stored as Sift, Parquet zstd and Vortex, and
a selective filter on a struct's field with a list column projected, through Sift, pyarrow
(Parquet) and DuckDB (Parquet).

The events (seeded, so every run builds the same table):

- `id` (sequential), `created_at` (timestamp, increasing with jitter), `type` (15 event
  types, Zipf-distributed: PushEvent most common), `public` (99 % true);
- `actor` struct: `id` (Zipf over 200k users), `login` (derived from the id), `bot` flag;
- `repo` struct: `id` (Zipf over 50k repositories), `name` (`org/repo`);
- `payload` struct: `action` (null unless the event type has one), `ref` (branch for pushes),
  `size` (commits in a push), `commits` (list of structs `sha` (40 hex digits), `message`
  (3-12 words from a 2k-word vocabulary), `distinct`; pushes only, 1-20 commits, geometric),
  `labels` (list of strings; issue events only, 0-5 of 40 labels);
- `headers` map of string to string (2-4 HTTP-like headers per event).

Sizes: `sift.write` (writer defaults), `pq.write_table(compression="zstd")` (pyarrow
defaults otherwise) and `vortex.io.write`. The Sift file is read back and compared with the
table.

The scan: `repo.id = R and type = 'PushEvent'` (R a repository of about 0.1 % of the events)
returning `id`, `created_at` and `payload.commits`, materialised as an Arrow table by every
engine, one thread, in process: Sift (`sift.open(f).to_table(filter=..., columns=...)`;
its scan statistics give the values decoded), pyarrow (`pq.read_table(filters=...,
columns=...)` on the Parquet zstd file), DuckDB (a prepared statement over `read_parquet`
of the same file, planned once, untimed; `.to_arrow_table()`). First run and best of N are
reported; every result is checked equal to the table filtered by pyarrow compute.

Also measured: each list stored as its lengths (as Sift stores it) against Dremel's
repetition and definition levels, both written through Sift's cascade.

Run through bench/nested.sh (venv, release wheel of the Python package, one core).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "ARROW_IO_THREADS", "RAYON_NUM_THREADS",
             "TOKIO_WORKER_THREADS", "POLARS_MAX_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import time  # noqa: E402
from importlib import metadata  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

pa.set_cpu_count(1)
pa.set_io_thread_count(1)

HERE = Path(__file__).resolve().parent
TYPES = ["PushEvent", "CreateEvent", "WatchEvent", "PullRequestEvent", "IssueCommentEvent",
         "IssuesEvent", "DeleteEvent", "PullRequestReviewEvent", "ForkEvent",
         "PullRequestReviewCommentEvent", "ReleaseEvent", "GollumEvent", "MemberEvent",
         "CommitCommentEvent", "PublicEvent"]
ACTIONS = {"PullRequestEvent": ["opened", "closed", "reopened", "synchronize"],
           "IssuesEvent": ["opened", "closed", "reopened", "labeled"],
           "IssueCommentEvent": ["created", "edited", "deleted"],
           "PullRequestReviewEvent": ["created"], "ReleaseEvent": ["published"],
           "MemberEvent": ["added"], "WatchEvent": ["started"]}


def zipf_ids(rng: np.random.Generator, n: int, universe: int, a: float) -> np.ndarray:
    """Ids in 1..universe with Zipf-like frequencies (a bounded power law), shuffled ids."""
    ranks = np.arange(1, universe + 1, dtype=np.float64)
    p = ranks ** -a
    p /= p.sum()
    perm = rng.permutation(universe) + 1
    return perm[rng.choice(universe, size=n, p=p)]


def events(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    vocab = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), size=rng.integers(2, 10)))
             for _ in range(2000)]
    labels = ["bug", "enhancement", "documentation", "question", "help wanted",
              "good first issue", "wontfix", "duplicate", "invalid", "dependencies"] + \
             [f"area/{w}" for w in vocab[:30]]
    tp = np.arange(1, len(TYPES) + 1, dtype=np.float64) ** -1.3
    types = rng.choice(len(TYPES), size=n, p=tp / tp.sum())
    start = datetime.datetime(2024, 3, 1, tzinfo=datetime.timezone.utc)
    created = (np.datetime64(start.replace(tzinfo=None), "us")
               + np.cumsum(rng.exponential(2_000, size=n)).astype("timedelta64[us]"))
    actor_id = zipf_ids(rng, n, 200_000, 1.1)
    repo_id = zipf_ids(rng, n, 50_000, 1.05)
    orgs = [vocab[i] for i in rng.integers(0, 2000, size=5000)]
    repo_names = {}
    commits, label_lists, actions, refs, sizes, headers = [], [], [], [], [], []
    for i in range(n):
        t = TYPES[types[i]]
        acts = ACTIONS.get(t)
        actions.append(acts[rng.integers(0, len(acts))] if acts else None)
        if t == "PushEvent":
            k = min(int(rng.geometric(0.35)), 20)
            cs = []
            for _ in range(k):
                words = rng.integers(0, 2000, size=rng.integers(3, 13))
                cs.append({"sha": rng.bytes(20).hex(),
                           "message": " ".join(vocab[w] for w in words),
                           "distinct": bool(rng.random() < 0.95)})
            commits.append(cs)
            refs.append("refs/heads/" + ("main" if rng.random() < 0.7 else vocab[rng.integers(0, 2000)]))
            sizes.append(k)
        else:
            commits.append(None)
            refs.append(None)
            sizes.append(None)
        if t in ("IssuesEvent", "IssueCommentEvent"):
            label_lists.append([labels[j] for j in rng.choice(len(labels), size=rng.integers(0, 6), replace=False)])
        else:
            label_lists.append(None)
        h = [("user-agent", "GitHub-Hookshot/" + format(int(rng.integers(0, 16**7)), "07x")),
             ("content-type", "application/json")]
        if rng.random() < 0.5:
            h.append(("x-github-delivery", rng.bytes(16).hex()))
        if rng.random() < 0.2:
            h.append(("x-request-priority", str(int(rng.integers(0, 4)))))
        headers.append(h)
        r = int(repo_id[i])
        if r not in repo_names:
            repo_names[r] = f"{orgs[r % 5000]}/{vocab[(r * 7919) % 2000]}-{r % 97}"
    actor = pa.StructArray.from_arrays(
        [pa.array(actor_id, pa.int64()),
         pa.array([f"{vocab[a % 2000]}{a % 1000}" for a in actor_id]),
         pa.array(actor_id % 53 == 0)],
        names=["id", "login", "bot"])
    repo = pa.StructArray.from_arrays(
        [pa.array(repo_id, pa.int64()), pa.array([repo_names[int(r)] for r in repo_id])],
        names=["id", "name"])
    commit_t = pa.struct([("sha", pa.string()), ("message", pa.string()), ("distinct", pa.bool_())])
    payload = pa.StructArray.from_arrays(
        [pa.array(actions, pa.string()), pa.array(refs, pa.string()),
         pa.array(sizes, pa.int32()), pa.array(commits, pa.list_(commit_t)),
         pa.array(label_lists, pa.list_(pa.string()))],
        names=["action", "ref", "size", "commits", "labels"])
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64) + 30_000_000_000),
        "created_at": pa.array(created, pa.timestamp("us", tz="UTC")),
        "type": pa.array([TYPES[t] for t in types]),
        "public": pa.array(rng.random(n) < 0.99),
        "actor": actor,
        "repo": repo,
        "payload": payload,
        "headers": pa.array(headers, pa.map_(pa.string(), pa.string())),
    })


def stored_bytes(path: Path) -> list[int]:
    """Bytes stored per column of a flat Sift file (all blocks)."""
    import sift
    meta = sift.open(path).metadata
    n = len(meta["blocks"][0]["columns"]) if meta["blocks"] else 0
    return [sum(b["columns"][c]["stored_bytes"] for b in meta["blocks"]) for c in range(n)]


def levels_against_lengths(table: pa.Table, work: Path) -> list[dict]:
    """The two ways to store a list, both through Sift's cascade: the list's lengths (one
    Int32 column, null where the list is null; what Sift stores), against Dremel's
    repetition and definition levels (Int8 columns, one pair per leaf under the list, as
    Parquet stores them: rep 0 at a row's first entry and 1 after it; def 0 for a null
    list, 1 for an empty one, 2 for an element; the leaves here are never null, so deeper
    definition levels would add nothing)."""
    import sift
    lists = [
        ("payload.commits", pc.struct_field(table["payload"], "commits"), 3),
        ("payload.labels", pc.struct_field(table["payload"], "labels"), 1),
        ("headers", table["headers"], 2),
    ]
    out = []
    for name, col, leaves in lists:
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        # Null for a null list (pyarrow's offsets are those of the array's own rows).
        lengths = pa.array(np.diff(np.asarray(col.offsets)), pa.int32(),
                           mask=np.asarray(col.is_null()))
        lens = np.asarray(lengths.fill_null(0), dtype=np.int64)
        valid = np.asarray(col.is_valid())
        entries = np.maximum(lens, 1)
        first = np.cumsum(entries) - entries
        rep = np.ones(int(entries.sum()), dtype=np.int8)
        rep[first] = 0
        row_def = np.where(~valid, 0, np.where(lens == 0, 1, 2)).astype(np.int8)
        dfn = np.repeat(row_def, entries)
        lpath, dpath = work / "lengths.sift", work / "levels.sift"
        sift.write(pa.table({"lengths": lengths}), lpath, threads=1)
        sift.write(pa.table({"rep": pa.array(rep), "def": pa.array(dfn)}), dpath, threads=1)
        (lb,), (rb, db) = stored_bytes(lpath), stored_bytes(dpath)
        out.append({"list": name, "rows": len(lens), "entries": int(entries.sum()),
                    "leaves": leaves, "lengths_bytes": lb, "levels_bytes_per_leaf": rb + db,
                    "levels_bytes": (rb + db) * leaves})
        lpath.unlink()
        dpath.unlink()
    return out


def best(f, runs: int):
    times = []
    out = None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return out, times[0], min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--scale", default="1", help="unused (launch.sh passes it)")
    ap.add_argument("--sift", default=None, help="unused (the Python package is measured)")
    ap.add_argument("--sift-missing-reason", default="")
    args = ap.parse_args()

    import duckdb
    import sift
    import vortex
    import vortex.io
    vortex.set_worker_threads(0)

    work = HERE / "data" / "nested"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    t0 = time.perf_counter()
    table = events(args.rows)
    gen_s = time.perf_counter() - t0
    print(f"generated {table.num_rows} events in {gen_s:.1f} s "
          f"({table.nbytes / 1e6:.1f} MB as Arrow)", flush=True)

    paths = {"sift": work / "events.sift", "parquet_zstd": work / "events.parquet",
             "vortex": work / "events.vortex"}
    sift.write(table, paths["sift"], threads=1)
    pq.write_table(table, paths["parquet_zstd"], compression="zstd")
    vortex_error = None
    try:
        vortex.io.write(table, str(paths["vortex"]))
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        vortex_error = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    back = sift.open(paths["sift"]).to_table()
    assert back.equals(table), "the Sift round trip differs from the table"
    sizes = {k: p.stat().st_size for k, p in paths.items() if p.exists()}
    print("sizes:", sizes, flush=True)

    layouts = levels_against_lengths(table, work)
    print("lengths vs levels:", layouts, flush=True)

    # A repository with about 0.1 % of the events.
    counts = pc.value_counts(pc.struct_field(table["repo"], "id")).to_pylist()
    target = 0.001 * table.num_rows
    repo = min(counts, key=lambda c: abs(c["counts"] - target))["values"]
    columns = ["id", "created_at", "payload"]
    expr = (pc.field("repo", "id") == repo) & (pc.field("type") == "PushEvent")
    expected = table.filter(expr).select(columns)
    want = expected.num_rows
    # payload.commits only: project the struct's list field.
    expected = pa.table({"id": expected["id"], "created_at": expected["created_at"],
                         "commits": pc.struct_field(expected["payload"], "commits")})

    f = sift.open(paths["sift"])
    sift_filter = f"repo.id = {repo} and type = 'PushEvent'"

    def run_sift():
        t = f.to_table(filter=sift_filter, columns=["id", "created_at", "payload.commits"])
        return t.rename_columns(["id", "created_at", "commits"])

    def run_pyarrow():
        t = pq.read_table(paths["parquet_zstd"], filters=expr,
                          columns=["id", "created_at", "payload.commits"])
        return t.rename_columns(["id", "created_at", "commits"])

    con = duckdb.connect()
    con.execute("SET threads TO 1")
    con.execute(
        "PREPARE q AS SELECT id, created_at, payload.commits AS commits "
        f"FROM read_parquet('{paths['parquet_zstd']}') "
        f"WHERE repo.id = {repo} AND type = 'PushEvent' ORDER BY id")

    def run_duckdb_table():
        return con.sql("EXECUTE q").to_arrow_table()

    results = {}
    for name, fn in (("sift", run_sift), ("pyarrow", run_pyarrow), ("duckdb", run_duckdb_table)):
        out, first, fastest = best(fn, args.runs)
        got = out.combine_chunks()
        ok = got.num_rows == want and got.column("commits").to_pylist() == \
            expected.column("commits").to_pylist() and got.column("id").equals(expected.column("id"))
        results[name] = {"first_ms": first * 1e3, "best_ms": fastest * 1e3, "rows": got.num_rows,
                         "equal": bool(ok)}
        print(f"{name}: {results[name]}", flush=True)
    run_sift()
    stats = f.last_scan_stats
    all_elements = sum(len(c) for c in pc.struct_field(table["payload"], "commits").to_pylist() if c)
    selected_elements = sum(len(c) for c in expected.column("commits").to_pylist() if c)

    report = {
        "rows": table.num_rows, "arrow_bytes": table.nbytes, "sizes": sizes,
        "vortex_error": vortex_error, "repo": repo, "matches": want,
        "commits_total": all_elements, "commits_selected": selected_elements,
        "scan": results, "sift_stats": stats, "runs": args.runs, "layouts": layouts,
        "versions": {p: metadata.version(p) for p in ("pyarrow", "duckdb", "vortex-data")},
        "machine": platform.processor() or platform.machine(),
        "date": datetime.date.today().isoformat(),
    }
    out = HERE / "results"
    (out / "nested.json").write_text(json.dumps(report, indent=2))
    lines = [
        "# Nested data: GitHub-events-like records",
        "",
        f"{table.num_rows:,} events generated by `bench/nested.py` (seeded; structs, lists of "
        f"structs, lists of strings, a map), {table.nbytes / 1e6:.1f} MB as Arrow. "
        f"One core, {report['date']}, pyarrow {report['versions']['pyarrow']}, "
        f"DuckDB {report['versions']['duckdb']}, vortex-data {report['versions']['vortex-data']}.",
        "",
        "## Size",
        "",
        "| format | bytes | ratio to Arrow | vs Sift |",
        "|---|---:|---:|---:|",
    ]
    for k, label in (("sift", "Sift"), ("parquet_zstd", "Parquet zstd"), ("vortex", "Vortex")):
        if k in sizes:
            lines.append(f"| {label} | {sizes[k]:,} | {table.nbytes / sizes[k]:.2f}× | "
                         f"{sizes[k] / sizes['sift']:.2f}× |")
    if vortex_error:
        lines.append(f"\nVortex could not write the table: {vortex_error}")
    lines += [
        "",
        "## Lengths against repetition and definition levels",
        "",
        "How each list would be stored, both through Sift's cascade (`sift.write` of the "
        "columns alone): its lengths (what Sift stores, one Int32 per row, null for a null "
        "list) against Dremel's repetition and definition levels (two Int8 per entry, one pair "
        "per leaf under the list, as Parquet stores them).",
        "",
        "| list | rows | entries | leaves | lengths (bytes) | levels (bytes, all leaves) | levels / lengths |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in layouts:
        lines.append(f"| {r['list']} | {r['rows']:,} | {r['entries']:,} | {r['leaves']} | "
                     f"{r['lengths_bytes']:,} | {r['levels_bytes']:,} | "
                     f"{r['levels_bytes'] / max(r['lengths_bytes'], 1):.2f}× |")
    lines += [
        "",
        "## Selective filter, list column projected",
        "",
        f"`repo.id = {repo} and type = 'PushEvent'` ({want} of {table.num_rows:,} rows), "
        f"returning `id`, `created_at`, `payload.commits` ({selected_elements:,} of "
        f"{all_elements:,} commits) as an Arrow table; in process, one thread, first run and "
        f"best of {args.runs}; results checked equal to the table filtered by pyarrow compute. "
        f"Sift decoded {stats['values_decoded']:,} values (the filter's columns, the commits' "
        f"lengths in every row, and the selected rows' commits only).",
        "",
        "| engine | file | first (ms) | best (ms) | best vs Sift | equal |",
        "|---|---|---:|---:|---:|---|",
    ]
    files = {"sift": "Sift", "pyarrow": "Parquet zstd", "duckdb": "Parquet zstd"}
    for k, r in results.items():
        lines.append(f"| {k} | {files[k]} | {r['first_ms']:.1f} | {r['best_ms']:.1f} | "
                     f"{r['best_ms'] / results['sift']['best_ms']:.2f}× | {r['equal']} |")
    (out / "nested.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if not all(r["equal"] for r in results.values()):
        raise SystemExit("a result differs from the reference")


if __name__ == "__main__":
    main()
