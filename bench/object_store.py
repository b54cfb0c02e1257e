#!/usr/bin/env python3
"""TPC-H Q6's and Q1's scans of lineitem in an object store: Sift's reader (on the Sift
file, and on the Parquet file through Sift's Parquet scan) against arrow-rs's
ParquetObjectReader on the Parquet file, with every request counted and a per-request
latency injected.

The objects are served by a minimal S3-compatible server started here on 127.0.0.1 (GET
and HEAD with byte ranges, path-style URLs, files of a local directory). Its per-request
cost is a few hundred microseconds, so what is measured is the readers' request pattern:
how many requests each makes, how many bytes it pulls, and how well it overlaps them when
every request waits `--latency-ms` before its first byte (20 ms is a typical object-store
first-byte time). Python S3 emulators (moto, s3s-fs) hash or copy the whole object on every
ranged GET (0.2-0.4 s each for a 150 MB object here), which would swamp both readers.

Every engine runs in the `sift` binary (`sift bench remote`), one scan at a time, timed in
process, every run opening the object anew and returning the query's columns of the
selected rows (a checksum of them must agree); the first run and the best of --runs are
reported. Requests and bytes are counted by this server.

    python bench/object_store.py --sift target/release/sift --data bench/data/tpch-sf1
Results: bench/results/object-store/tpch-sf{SF}.{md,json}
"""

from __future__ import annotations

import argparse
import datetime
import email.utils
import json
import os
import platform
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BUCKET = "bench"


class Counters:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with getattr(self, "lock", threading.Lock()):
            self.requests = 0
            self.bytes = 0

    def add(self, n: int) -> None:
        with self.lock:
            self.requests += 1
            self.bytes += n


def make_handler(root: Path, counters: Counters, latency: list[float]):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def _object(self) -> Path | None:
            path = self.path.split("?", 1)[0].lstrip("/")
            parts = path.split("/")
            if any(p in ("", ".", "..") for p in parts):
                return None
            target = root.joinpath(*parts)
            return target if target.is_file() else None

        def _headers(self, status: int, length: int, size: int, extra: dict) -> None:
            self.send_response(status)
            st = self.obj.stat()
            self.send_header("Content-Length", str(length))
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", f'"{st.st_size:x}-{int(st.st_mtime_ns):x}"')
            self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
            for k, v in extra.items():
                self.send_header(k, v)
            self.end_headers()

        def _not_found(self) -> None:
            body = b"<Error><Code>NoSuchKey</Code></Error>"
            self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_HEAD(self) -> None:
            time.sleep(latency[0])
            self.obj = self._object()
            counters.add(0)
            if self.obj is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            size = self.obj.stat().st_size
            self._headers(200, size, size, {})

        def do_GET(self) -> None:
            time.sleep(latency[0])
            self.obj = self._object()
            if self.obj is None:
                counters.add(0)
                self._not_found()
                return
            size = self.obj.stat().st_size
            start, end, status, extra = 0, size, 200, {}
            rng = self.headers.get("Range")
            if rng:
                m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
                if not m:
                    self.send_response(416)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                a, b = m.groups()
                if a == "":
                    start, end = max(0, size - int(b)), size
                else:
                    start = int(a)
                    end = size if b == "" else min(size, int(b) + 1)
                status = 206
                extra["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
            counters.add(end - start)
            self._headers(status, end - start, size, extra)
            with open(self.obj, "rb") as f:
                self.connection.sendfile(f, start, end - start)

    return Handler


def start_server(root: Path, counters: Counters, latency: list[float]):
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(root, counters, latency))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run_engine(sift: str, url: str, engine: str, query: str, runs: int, env: dict) -> dict:
    out = subprocess.run(
        [sift, "bench", "remote", url, "--engine", engine, "--query", query,
         "--runs", str(runs)],
        env=env, capture_output=True, text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"{engine} on {url} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sift", default="target/release/sift")
    ap.add_argument("--data", default="bench/data/tpch-sf1",
                    help="directory with sift/lineitem.sift and parquet/lineitem.parquet")
    ap.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, 20.0])
    ap.add_argument("--queries", nargs="+", default=["q6", "q1"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    data = Path(args.data)
    root = Path(os.environ.get("TMPDIR", "/tmp")) / f"sift-s3-bench-{os.getpid()}"
    (root / BUCKET).mkdir(parents=True, exist_ok=True)
    sift_file = data / "sift" / "lineitem.sift"
    parquet_file = data / "parquet" / "lineitem.parquet"
    # (label, engine, object)
    runs = [("sift", "sift", sift_file), ("sift on Parquet", "sift", parquet_file),
            ("arrow-rs", "arrow-rs", parquet_file)]
    for src in (sift_file, parquet_file):
        link = root / BUCKET / src.name
        if not link.exists():
            os.symlink(src.resolve(), link)
    counters = Counters()
    latency = [0.0]
    server = start_server(root, counters, latency)
    port = server.server_address[1]
    env = dict(os.environ,
               AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_ALLOW_HTTP="true",
               AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
               AWS_REGION="us-east-1")
    rows = []
    try:
        for query in args.queries:
            for ms in args.latency_ms:
                latency[0] = ms / 1000.0
                for label, engine, src in runs:
                    url = f"s3://{BUCKET}/{src.name}"
                    counters.reset()
                    r = run_engine(args.sift, url, engine, query, args.runs, env)
                    r["label"] = label
                    r["latency_ms"] = ms
                    r["server_requests_per_run"] = counters.requests / args.runs
                    r["server_bytes_per_run"] = counters.bytes / args.runs
                    r["object_bytes"] = src.stat().st_size
                    rows.append(r)
                    print(f"{query} {label:15} latency {ms:5.1f} ms: first {r['first_ms']:8.1f} "
                          f"ms, best {r['best_ms']:8.1f} ms, {r['server_requests_per_run']:.0f} "
                          f"requests, {r['server_bytes_per_run'] / 1e6:.1f} MB, checksum "
                          f"{r['checksum']}", file=sys.stderr)
    finally:
        server.shutdown()
        for p in (root / BUCKET).iterdir():
            p.unlink()
        (root / BUCKET).rmdir()
        root.rmdir()
    for query in args.queries:
        sums = {(r["checksum"], r["rows"]) for r in rows if r["query"] == query}
        if len(sums) != 1:
            raise SystemExit(f"engines disagree on {query}: {sums}")

    scale = json.loads((data / "parquet" / "manifest.json").read_text()).get("scale", "?") \
        if (data / "parquet" / "manifest.json").exists() else "?"
    out = Path(args.out or f"bench/results/object-store/tpch-sf{scale}")
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(), "runs": args.runs,
    }
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [
        f"# TPC-H Q6 and Q1 scans of lineitem SF{scale} in an object store",
        "",
        f"{meta['date']}, {meta['cpus']} CPUs, {args.runs} runs per engine; one scan at a "
        "time, timed in process, every run opening the object anew. Requests and bytes "
        "as counted by the server; latency is added before each response's first byte.",
        "",
        "| query | latency | engine | object | requests | bytes fetched | first run "
        "| best run | best vs Sift |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for query in args.queries:
        for ms in args.latency_ms:
            group = [r for r in rows if r["latency_ms"] == ms and r["query"] == query]
            base = next(r["best_ms"] for r in group if r["label"] == "sift")
            for r in group:
                lines.append(
                    f"| {query.upper()} | {ms:g} ms | {r['label']} | "
                    f"{r['object_bytes'] / 1e6:.0f} MB | {r['server_requests_per_run']:.0f} | "
                    f"{r['server_bytes_per_run'] / 1e6:.1f} MB | {r['first_ms']:.0f} ms | "
                    f"{r['best_ms']:.0f} ms | {r['best_ms'] / base:.2f}× |")
    lines.append("")
    for query in args.queries:
        r = next(r for r in rows if r["query"] == query)
        lines.append(f"{query.upper()}: every engine returns {r['rows']} rows, checksum "
                     f"{r['checksum']}.")
    lines.append("")
    out.with_suffix(".md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
