#!/usr/bin/env python3
"""An HTTP proxy in front of an S3-compatible server, for tests and benchmarks of
object-store reads.

Every request (any method, path, query string and headers, the body streamed) is
forwarded to the upstream server and its response streamed back. On the way the proxy

* waits ``latency_ms`` before forwarding each request, standing in for an object
  store's time to first byte (a local server answers in microseconds);
* injects faults: every ``fail_every``-th request (0: none) is not forwarded but
  answered with a 503 ``SlowDown`` error (as S3 throttles) or by closing the connection
  without any response, the two kinds in turn, so that clients' retries are exercised;
* counts requests (received, forwarded, answered by a fault) and the response body
  bytes sent; counts the forwarded requests per method and per path (the path without
  its query string, percent-decoded, e.g. ``/bucket/year=2024/part-0.sift``); and logs
  them (method, path, query, Range header, status, body bytes).

Control endpoints (neither counted nor forwarded):

* ``GET /__proxy/stats``: the counters and the settings, as JSON;
* ``GET /__proxy/log``: the log of forwarded requests since the last reset (the most
  recent LOG_LIMIT), as a JSON list;
* ``POST /__proxy/reset``: zero the counters and empty the log (the fault cycle starts
  again);
* ``POST /__proxy/config`` with a JSON body ``{"latency_ms": 20, "fail_every": 3}``
  (either key may be left out): change the settings; the fault cycle starts again.

Headers are forwarded unchanged, Host included: S3 clients sign the Host header
(SigV4), so the upstream must see the one the client signed. Hop-by-hop headers
(Connection, Transfer-Encoding, …) are not forwarded. Each client connection is served
by its own thread, which keeps one connection to the upstream alive across requests.

Standard library only. As a program::

    python scripts/s3proxy.py --upstream http://127.0.0.1:5000 [--listen 127.0.0.1:0]
        [--latency-ms 20] [--fail-every 0]

prints ``listening on http://127.0.0.1:PORT`` once it accepts connections, then runs
until killed. In a Python process: ``S3Proxy(upstream, ...).start()`` serves on a
background thread (``.url``, ``.stats()``, ``.log()``, ``.reset()``, ``.configure()``,
``.stop()``).
It only listens on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import signal
import socket
import sys
import threading
import time
import urllib.parse
from collections import Counter, deque

CONTROL_PREFIX = "/__proxy/"
LISTEN_HOST = "127.0.0.1"

# Request bodies up to this size are read before forwarding, so that a request can be
# sent again on a fresh upstream connection when the kept-alive one turns out closed.
# Larger bodies are streamed (and not replayed).
REPLAY_LIMIT = 8 << 20
CHUNK = 64 << 10
LOG_LIMIT = 100_000

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "trailers",
    "transfer-encoding",
    "upgrade",
}

SLOWDOWN_BODY = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b"<Error><Code>SlowDown</Code>"
    b"<Message>Please reduce your request rate. (fault injected by s3proxy)</Message>"
    b"<RequestId>s3proxy</RequestId><HostId>s3proxy</HostId></Error>"
)


class ProxyState:
    """Settings and counters, shared by the handler threads."""

    def __init__(self, latency_ms: float = 0.0, fail_every: int = 0):
        self.lock = threading.Lock()
        self.latency_ms = float(latency_ms)
        self.fail_every = int(fail_every)
        self._zero()

    def _zero(self) -> None:
        self.seq = 0  # requests since the last reset or config change (the fault cycle)
        self.requests = 0
        self.forwarded = 0
        self.bytes_sent = 0
        self.faults = 0
        self.faults_503 = 0
        self.faults_closed = 0
        self.upstream_errors = 0
        self.methods: Counter[str] = Counter()
        self.paths: dict[str, Counter[str]] = {}
        self.log: deque[dict] = deque(maxlen=LOG_LIMIT)

    def reset(self) -> None:
        with self.lock:
            self._zero()

    def configure(self, latency_ms=None, fail_every=None) -> None:
        with self.lock:
            if latency_ms is not None:
                latency_ms = float(latency_ms)
                if latency_ms < 0:
                    raise ValueError("latency_ms must be >= 0")
                self.latency_ms = latency_ms
            if fail_every is not None:
                if isinstance(fail_every, bool) or int(fail_every) != fail_every:
                    raise ValueError("fail_every must be an integer")
                if fail_every < 0:
                    raise ValueError("fail_every must be >= 0")
                self.fail_every = int(fail_every)
            self.seq = 0

    def admit(self) -> tuple[float, str | None]:
        """Counts a request; returns the latency to apply and the fault to inject
        ('503', 'close' or None)."""
        with self.lock:
            self.seq += 1
            self.requests += 1
            fault = None
            if self.fail_every > 0 and self.seq % self.fail_every == 0:
                fault = "503" if self.faults % 2 == 0 else "close"
                self.faults += 1
                if fault == "503":
                    self.faults_503 += 1
                else:
                    self.faults_closed += 1
            return self.latency_ms, fault

    def record_forward(self, method: str, path: str) -> None:
        with self.lock:
            self.forwarded += 1
            self.methods[method] += 1
            self.paths.setdefault(path, Counter())[method] += 1

    def record_response(self, entry: dict, n: int) -> None:
        """Counts the body bytes sent for a forwarded request and logs it."""
        with self.lock:
            self.bytes_sent += n
            entry["bytes"] = n
            self.log.append(entry)

    def log_entries(self) -> list[dict]:
        with self.lock:
            return list(self.log)

    def upstream_error(self) -> None:
        with self.lock:
            self.upstream_errors += 1

    def snapshot(self) -> dict:
        with self.lock:
            return {
                "latency_ms": self.latency_ms,
                "fail_every": self.fail_every,
                "requests": self.requests,
                "forwarded": self.forwarded,
                "bytes_sent": self.bytes_sent,
                "faults": self.faults,
                "faults_503": self.faults_503,
                "faults_closed": self.faults_closed,
                "upstream_errors": self.upstream_errors,
                "methods": dict(self.methods),
                "paths": {p: dict(c) for p, c in self.paths.items()},
            }


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "s3proxy"
    # Set on the subclass made by make_server.
    state: ProxyState
    upstream: urllib.parse.SplitResult
    verbose = False

    # ------------------------------------------------------------------ plumbing

    def setup(self) -> None:
        super().setup()
        self._upstream_conn: http.client.HTTPConnection | None = None

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self._drop_upstream()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the base's name)
        if self.verbose:
            super().log_message(format, *args)

    def __getattr__(self, name: str):
        # BaseHTTPRequestHandler dispatches to do_<METHOD>: every method is forwarded.
        if name.startswith("do_"):
            return self._handle
        raise AttributeError(name)

    def _new_upstream(self) -> http.client.HTTPConnection:
        u = self.upstream
        cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        return cls(u.hostname, u.port, timeout=300)

    def _drop_upstream(self) -> None:
        if self._upstream_conn is not None:
            try:
                self._upstream_conn.close()
            except OSError:
                pass
            self._upstream_conn = None

    # ------------------------------------------------------------------ requests

    def _handle(self) -> None:
        try:
            self._handle_request()
        except ConnectionError:
            # The client went away (mid-body, or while reading the response).
            self.close_connection = True
        except ValueError as e:  # a malformed Content-Length or chunk size
            self._send_simple(400, f"s3proxy: bad request: {e}\n".encode(), "text/plain")
            self.close_connection = True

    def _handle_request(self) -> None:
        path_only = urllib.parse.urlsplit(self.path).path
        if path_only.startswith(CONTROL_PREFIX):
            self._control(path_only[len(CONTROL_PREFIX):])
            return
        latency_ms, fault = self.state.admit()
        if latency_ms > 0:
            time.sleep(latency_ms / 1000.0)
        if fault == "close":
            # No response at all: the client sees the connection closed.
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if fault == "503":
            self._drain_body()
            self._send_simple(
                503,
                SLOWDOWN_BODY,
                "application/xml",
                extra=[("Retry-After", "0"), ("x-amz-request-id", "s3proxy")],
            )
            return
        self._forward(urllib.parse.unquote(path_only))

    def _request_length(self) -> int | None:
        """The request body's length when given by Content-Length; None when the body
        is chunked; 0 when there is none."""
        te = self.headers.get("Transfer-Encoding", "")
        if "chunked" in te.lower():
            return None
        cl = self.headers.get("Content-Length")
        return int(cl) if cl else 0

    def _read_chunked(self):
        """The chunks of a chunked request body (trailers are read and dropped)."""
        while True:
            line = self.rfile.readline(65537)
            size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass
                return
            yield from self._read_exact(size, "a chunk")
            self.rfile.readline(3)  # the CRLF after the chunk

    def _read_exact(self, n: int, inside: str = "the body"):
        while n:
            data = self.rfile.read(min(n, CHUNK))
            if not data:
                raise ConnectionError(f"client closed the connection inside {inside}")
            n -= len(data)
            yield data

    def _drain_body(self) -> None:
        length = self._request_length()
        for _ in self._read_chunked() if length is None else self._read_exact(length):
            pass

    def _forward(self, path_only: str) -> None:
        length = self._request_length()
        # The body: bytes (replayable) or a generator (streamed once).
        if length is None:
            body = self._read_chunked()
            replayable = False
        elif length <= REPLAY_LIMIT:
            body = b"".join(self._read_exact(length))
            replayable = True
        else:
            body = self._read_exact(length)
            replayable = False
        headers = [
            (k, v)
            for k, v in self.headers.items()
            if k.lower() not in HOP_BY_HOP and k.lower() != "expect"
        ]
        resp = None
        for attempt in (0, 1):
            reused = self._upstream_conn is not None
            if self._upstream_conn is None:
                self._upstream_conn = self._new_upstream()
            conn = self._upstream_conn
            try:
                conn.putrequest(self.command, self.path, skip_host=True,
                                skip_accept_encoding=True)
                for k, v in headers:
                    conn.putheader(k, v)
                if length is None:
                    conn.putheader("Transfer-Encoding", "chunked")
                    conn.endheaders()
                    for data in body:
                        conn.send(b"%x\r\n%s\r\n" % (len(data), data))
                    conn.send(b"0\r\n\r\n")
                elif replayable:
                    conn.endheaders(body if body else None)
                else:
                    conn.endheaders()
                    for data in body:
                        conn.send(data)
                resp = conn.getresponse()
                break
            except (http.client.HTTPException, OSError):
                self._drop_upstream()
                # A kept-alive connection the upstream closed meanwhile: send again on a
                # fresh one, once, when the body can be sent again.
                if attempt == 0 and reused and replayable:
                    continue
                self.state.upstream_error()
                self._send_simple(502, b"s3proxy: upstream request failed\n", "text/plain")
                return
        self.state.record_forward(self.command, path_only)
        entry = {
            "method": self.command,
            "path": path_only,
            "query": urllib.parse.urlsplit(self.path).query,
            "range": self.headers.get("Range"),
            "status": resp.status,
        }
        self._relay(resp, entry)

    def _relay(self, resp: http.client.HTTPResponse, entry: dict) -> None:
        no_body = self.command == "HEAD" or resp.status in (204, 304) or 100 <= resp.status < 200
        resp_len = resp.getheader("Content-Length")
        chunked_out = not no_body and resp_len is None
        if chunked_out and self.request_version != "HTTP/1.1":
            # An HTTP/1.0 client: the body ends with the connection.
            chunked_out = False
            self.close_connection = True
        self.send_response_only(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in HOP_BY_HOP:
                self.send_header(k, v)
        if chunked_out:
            self.send_header("Transfer-Encoding", "chunked")
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        sent = 0
        try:
            if not no_body:
                while True:
                    data = resp.read1(CHUNK) if hasattr(resp, "read1") else resp.read(CHUNK)
                    if not data:
                        break
                    if chunked_out:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    else:
                        self.wfile.write(data)
                    sent += len(data)
                if chunked_out:
                    self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (http.client.HTTPException, OSError):
            # The upstream or the client went away mid-body: neither connection can be
            # used again.
            self.close_connection = True
            self._drop_upstream()
        finally:
            self.state.record_response(entry, sent)
        if resp.will_close:
            self._drop_upstream()
        if resp_len is not None and sent != int(resp_len) and not no_body:
            self.close_connection = True

    def _send_simple(self, status: int, body: bytes, ctype: str, extra=()) -> None:
        try:
            self.send_response_only(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    # ------------------------------------------------------------------ control

    def _control(self, what: str) -> None:
        length = self._request_length()
        raw = b"".join(self._read_chunked() if length is None else self._read_exact(length))
        if what == "stats" and self.command == "GET":
            out = self.state.snapshot()
        elif what == "log" and self.command == "GET":
            out = self.state.log_entries()
        elif what == "reset" and self.command == "POST":
            self.state.reset()
            out = self.state.snapshot()
        elif what == "config" and self.command == "POST":
            try:
                cfg = json.loads(raw or b"{}")
                if not isinstance(cfg, dict):
                    raise ValueError("the config must be a JSON object")
                unknown = set(cfg) - {"latency_ms", "fail_every"}
                if unknown:
                    raise ValueError(f"unknown settings: {sorted(unknown)}")
                self.state.configure(cfg.get("latency_ms"), cfg.get("fail_every"))
            except (ValueError, TypeError) as e:
                self._send_simple(400, json.dumps({"error": str(e)}).encode(),
                                  "application/json")
                return
            out = self.state.snapshot()
        else:
            self._send_simple(404, json.dumps({"error": f"no {self.command} {self.path}"})
                              .encode(), "application/json")
            return
        self._send_simple(200, json.dumps(out).encode(), "application/json")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


def parse_upstream(upstream: str) -> urllib.parse.SplitResult:
    u = urllib.parse.urlsplit(upstream)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ValueError(f"--upstream must be an http:// or https:// URL, not {upstream!r}")
    if u.path not in ("", "/") or u.query:
        raise ValueError(f"--upstream must have no path or query: {upstream!r}")
    return u


def make_server(upstream: str, port: int = 0, latency_ms: float = 0.0,
                fail_every: int = 0, verbose: bool = False) -> _Server:
    """A proxy server bound to 127.0.0.1:port (0: any free port), not yet serving."""
    state = ProxyState(latency_ms, fail_every)
    handler = type("BoundProxyHandler", (ProxyHandler,), {
        "state": state,
        "upstream": parse_upstream(upstream),
        "verbose": verbose,
    })
    server = _Server((LISTEN_HOST, port), handler)
    server.state = state
    return server


class S3Proxy:
    """The proxy serving on a background thread of this process."""

    def __init__(self, upstream: str, port: int = 0, latency_ms: float = 0.0,
                 fail_every: int = 0):
        self.server = make_server(upstream, port, latency_ms, fail_every)
        self.state: ProxyState = self.server.state
        self.port = self.server.server_address[1]
        self.url = f"http://{LISTEN_HOST}:{self.port}"
        self._thread: threading.Thread | None = None

    def start(self) -> "S3Proxy":
        self._thread = threading.Thread(target=self.server.serve_forever,
                                        name="s3proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self._thread is not None:
            self._thread.join()

    def stats(self) -> dict:
        return self.state.snapshot()

    def log(self) -> list[dict]:
        return self.state.log_entries()

    def reset(self) -> None:
        self.state.reset()

    def configure(self, latency_ms=None, fail_every=None) -> None:
        self.state.configure(latency_ms, fail_every)

    def __enter__(self) -> "S3Proxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _listen_port(listen: str) -> int:
    host, sep, port = listen.rpartition(":")
    if not sep:
        host, port = LISTEN_HOST, listen
    if host not in (LISTEN_HOST, "localhost"):
        raise ValueError(f"the proxy only listens on {LISTEN_HOST}, not {host!r}")
    return int(port)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description="HTTP proxy in front of an S3-compatible server: latency, injected "
                    "faults, request counters (GET /__proxy/stats).")
    p.add_argument("--upstream", required=True,
                   help="the S3 server, e.g. http://127.0.0.1:5000")
    p.add_argument("--listen", default=f"{LISTEN_HOST}:0",
                   help="127.0.0.1:PORT or PORT to listen on (0: a free port; default %(default)s)")
    p.add_argument("--latency-ms", type=float, default=0.0,
                   help="delay before forwarding each request, in milliseconds (default 0)")
    p.add_argument("--fail-every", type=int, default=0,
                   help="every Nth request gets a 503 or a closed connection, in turn "
                        "(0: never; default 0)")
    p.add_argument("--verbose", action="store_true", help="log every request on stderr")
    args = p.parse_args(argv)
    try:
        port = _listen_port(args.listen)
        if args.latency_ms < 0 or args.fail_every < 0:
            raise ValueError("--latency-ms and --fail-every must be >= 0")
        server = make_server(args.upstream, port, args.latency_ms, args.fail_every,
                             args.verbose)
    except (ValueError, OSError) as e:
        p.error(str(e))
    # SIGTERM ends the process like Ctrl-C (the server closes its socket).
    signal.signal(signal.SIGTERM, _interrupt)
    print(f"listening on http://{LISTEN_HOST}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
