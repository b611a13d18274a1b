#!/usr/bin/env python3
"""A fault-injecting HTTP/1.1 proxy between coach-operator and kube-apiserver (standard library).

The operator talks plain HTTP to this proxy on loopback (its kubeconfig's server is
http://127.0.0.1:PORT, which coach's client accepts); the proxy re-originates every request over
TLS to the API server with the testenv's admin client certificate. While faults are on, each
request is answered, with probability --rate, by one fault drawn evenly from those that fit it:

- 409 Conflict (PUT and PATCH only: the answer a stale resourceVersion gets; a 409 on a create
  would claim an object exists that does not, which no API server says);
- 429 Too Many Requests with Retry-After: 1 (API Priority and Fairness rejecting);
- 500 and 503 with a Status body;
- timeout: the request is forwarded (a write takes effect) but its answer is held back for
  --stall seconds (past the operator's 30 s request timeout) and the connection then closed;
  a watch is held without being forwarded.

What the proxy counts (GET /__chaos/stats, JSON): requests by verb, faults by kind, and
"retries": requests identical to an earlier faulted one (verb, path, and for POST the object's
name) that came within 120 s of that fault, i.e. the operator trying again. POST
/__chaos/faults?on=1|0 switches faults on and off.
"""

import argparse
import json
import random
import select
import socket
import ssl
import threading
import time
import urllib.parse

HOP_HEADERS = {"connection", "keep-alive", "proxy-connection", "upgrade", "http2-settings",
               "te", "trailer", "expect", "transfer-encoding", "host"}
FAULTS = ["409", "429", "500", "503", "timeout"]
REASONS = {"409": ("Conflict", "Conflict"), "429": ("Too Many Requests", "TooManyRequests"),
           "500": ("Internal Server Error", "InternalError"),
           "503": ("Service Unavailable", "ServiceUnavailable")}


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = {}
        self.faults = {f: 0 for f in FAULTS}
        self.faults_by_verb = {}
        self.retries = 0
        self.pending = {}  # key -> time of the last fault on it

    def request(self, verb, key):
        with self.lock:
            self.requests[verb] = self.requests.get(verb, 0) + 1
            t = self.pending.pop(key, None)
            if t is not None and time.monotonic() - t < 120:
                self.retries += 1

    def fault(self, kind, verb, key):
        with self.lock:
            self.faults[kind] += 1
            k = f"{kind} {verb}"
            self.faults_by_verb[k] = self.faults_by_verb.get(k, 0) + 1
            self.pending[key] = time.monotonic()

    def dump(self):
        with self.lock:
            return {"requests": dict(self.requests), "faults": dict(self.faults),
                    "faults_by_verb": dict(self.faults_by_verb), "retries": self.retries}


class Proxy:
    def __init__(self, args):
        u = urllib.parse.urlparse(args.upstream)
        self.up_host, self.up_port = u.hostname, u.port
        self.ctx = ssl.create_default_context(cafile=args.ca)
        self.ctx.load_cert_chain(args.cert, args.key)
        self.ctx.set_alpn_protocols(["http/1.1"])
        self.rate, self.stall = args.rate, args.stall
        self.faults_on = args.faults_on
        self.rng = random.Random(args.seed)
        self.rng_lock = threading.Lock()
        self.stats = Stats()

    def draw(self, verb, watch):
        if not self.faults_on:
            return None
        with self.rng_lock:
            if self.rng.random() >= self.rate:
                return None
            fits = [f for f in FAULTS if f != "409" or verb in ("PUT", "PATCH")]
            return self.rng.choice(fits)

    def serve(self, client):
        try:
            rf = client.makefile("rb")
            while self.one(client, rf):
                pass
        except (OSError, ValueError):
            pass
        finally:
            client.close()

    def one(self, client, rf):
        """One request on a client connection; False when the connection is done."""
        line = rf.readline(65536)
        if not line:
            return False
        verb, target, _ = line.decode("latin-1").split(" ", 2)
        headers = read_headers(rf)
        hmap = {k.lower(): v for k, v in headers}
        if hmap.get("expect", "").lower() == "100-continue":
            client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = read_body(rf, hmap)
        path = target.split("?", 1)[0]
        if path.startswith("/__chaos/"):
            return self.control(client, verb, target)
        watch = "watch=1" in target or "watch=true" in target
        key = f"{verb} {path}"
        if verb == "POST" and body:
            try:
                key += " " + json.loads(body).get("metadata", {}).get("name", "")
            except (ValueError, AttributeError):
                pass
        self.stats.request(verb, key)
        fault = self.draw(verb, watch)
        if fault is not None:
            self.stats.fault(fault, verb, key)
        if fault in REASONS:
            text, reason = REASONS[fault]
            status = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                      "message": f"injected by the chaos proxy: {text}", "reason": reason,
                      "code": int(fault)}
            data = json.dumps(status).encode()
            extra = "Retry-After: 1\r\n" if fault == "429" else ""
            client.sendall(f"HTTP/1.1 {fault} {text}\r\nContent-Type: application/json\r\n"
                           f"{extra}Content-Length: {len(data)}\r\n\r\n".encode() + data)
            return True
        upstream = None
        if fault != "timeout" or not watch:
            upstream = self.forward(verb, target, headers, body)
        if fault == "timeout":
            if upstream is not None:
                drain_response(upstream)
                upstream.close()
            # Hold the answer back until the client gives up or --stall passes.
            end = time.monotonic() + self.stall
            while time.monotonic() < end:
                r, _, _ = select.select([client], [], [], 0.5)
                if r and not client.recv(1, socket.MSG_PEEK):
                    break
            return False
        try:
            return relay_response(upstream, client)
        finally:
            upstream.close()

    def forward(self, verb, target, headers, body):
        raw = socket.create_connection((self.up_host, self.up_port), timeout=30)
        up = self.ctx.wrap_socket(raw, server_hostname=self.up_host)
        out = [f"{verb} {target} HTTP/1.1", f"Host: {self.up_host}:{self.up_port}",
               "Connection: close"]
        out += [f"{k}: {v}" for k, v in headers if k.lower() not in HOP_HEADERS
                and k.lower() not in ("content-length", "authorization")]
        if body or verb in ("POST", "PUT", "PATCH"):
            out.append(f"Content-Length: {len(body)}")
        up.sendall(("\r\n".join(out) + "\r\n\r\n").encode("latin-1") + body)
        up.settimeout(None)  # watches stay open for minutes
        return up

    def control(self, client, verb, target):
        if target.startswith("/__chaos/faults"):
            q = urllib.parse.parse_qs(urllib.parse.urlparse(target).query)
            self.faults_on = q.get("on", ["1"])[0] == "1"
        data = json.dumps(dict(self.stats.dump(), faults_on=self.faults_on)).encode()
        client.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                       + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        return True


def read_headers(rf):
    headers = []
    while True:
        line = rf.readline(65536)
        if not line:
            raise ValueError("connection closed in the headers")
        line = line.decode("latin-1").rstrip("\r\n")
        if not line:
            return headers
        k, _, v = line.partition(":")
        headers.append((k.strip(), v.strip()))


def read_body(rf, hmap):
    if "chunked" in hmap.get("transfer-encoding", "").lower():
        out = b""
        while True:
            size = int(rf.readline().split(b";")[0], 16)
            if size == 0:
                read_headers(rf)  # trailers
                return out
            out += rf.read(size)
            rf.readline()
    n = int(hmap.get("content-length", "0") or 0)
    return rf.read(n) if n else b""


def drain_response(up):
    try:
        up.settimeout(30)
        while up.recv(65536):
            pass
    except OSError:
        pass


def relay_response(up, client):
    """Copies one response, streaming chunked bodies (watches) chunk by chunk. The answer goes
    to the client chunked or with its length, so the client connection stays usable; False when
    it must close (an answer delimited by the upstream closing)."""
    uf = up.makefile("rb")
    status = uf.readline(65536)
    if not status:
        raise OSError("upstream closed without answering")
    headers = read_headers(uf)
    hmap = {k.lower(): v for k, v in headers}
    kept = [f"{k}: {v}" for k, v in headers if k.lower() not in HOP_HEADERS]
    chunked = "chunked" in hmap.get("transfer-encoding", "").lower()
    has_length = "content-length" in hmap
    if chunked:
        kept.append("Transfer-Encoding: chunked")
    elif not has_length:
        kept.append("Connection: close")
    client.sendall(status + ("\r\n".join(kept) + "\r\n\r\n").encode("latin-1"))
    if chunked:
        while True:
            size_line = uf.readline()
            if not size_line:
                raise OSError("upstream closed mid-stream")
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                read_headers(uf)
                client.sendall(b"0\r\n\r\n")
                return True
            data = uf.read(size)
            uf.readline()
            client.sendall(b"%x\r\n" % len(data) + data + b"\r\n")
    if has_length:
        n = int(hmap["content-length"])
        while n > 0:
            data = uf.read(min(n, 65536))
            if not data:
                raise OSError("upstream closed mid-body")
            client.sendall(data)
            n -= len(data)
        return True
    while True:
        data = uf.read1(65536)
        if not data:
            return False
        client.sendall(data)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--listen-port", type=int, required=True)
    p.add_argument("--upstream", required=True, help="https://127.0.0.1:PORT")
    p.add_argument("--ca", required=True)
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--rate", type=float, default=0.10)
    p.add_argument("--stall", type=float, default=35.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--faults-on", action="store_true")
    args = p.parse_args()
    proxy = Proxy(args)
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", args.listen_port))
    srv.listen(256)
    print(f"fault_proxy: 127.0.0.1:{args.listen_port} -> {args.upstream}, rate {args.rate}",
          flush=True)
    while True:
        client, _ = srv.accept()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=proxy.serve, args=(client,), daemon=True).start()


if __name__ == "__main__":
    main()
