#!/usr/bin/env python3
"""A loopback HTTP server for memwall's remote-file tests (tests/pull_test.cpp), with the faults
they inject.

Serves the files of --root at /NAME and, like Hugging Face, at /OWNER/REPO/resolve/REV/NAME
(which answers with a redirect to /cdn/NAME carrying X-Linked-Etag and X-Linked-Size). Supports
Range (one range) and If-Range. The ETag is the file's SHA-256 in quotes unless told otherwise.

The faults come from --control, a JSON file read again on every request, every key optional:
  {"no_range": true}              ignore Range headers: always 200 with the whole file
  {"status": 500}                 answer every request with this status
  {"drop_after": N, "drops": K}   close the connection after N body bytes, for K responses
                                  longer than that (counted since the control file changed)
  {"throttle": B}                 send at most B body bytes per second
  {"etag": "sha256" | "none" | "weak" | "other" | TEXT}
  {"serve": {"/a.gguf": "b.gguf"}} which file of --root a path serves (a file that changes)
Binds 127.0.0.1 on an ephemeral port and writes the port to --port-file; logs one JSON line per
request to --log.
"""
import argparse
import hashlib
import json
import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
LOCK = threading.Lock()
STATE = {"control_text": None, "drops_done": 0}
HASHES = {}


def control():
    try:
        with open(ARGS.control) as f:
            text = f.read()
    except OSError:
        text = "{}"
    with LOCK:
        if text != STATE["control_text"]:
            STATE["control_text"] = text
            STATE["drops_done"] = 0
    return json.loads(text or "{}")


def sha256_of(path):
    st = os.stat(path)
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in HASHES:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        HASHES[key] = h.hexdigest()
    return HASHES[key]


def log(entry):
    with LOCK:
        with open(ARGS.log, "a") as f:
            f.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.handle_get(head=True)

    def do_GET(self):
        self.handle_get(head=False)

    def finish_headers(self, entry):
        self.end_headers()
        log(entry)

    def handle_get(self, head):
        c = control()
        entry = {"method": self.command, "path": self.path,
                 "range": self.headers.get("Range"), "if_range": self.headers.get("If-Range"),
                 "authorization": self.headers.get("Authorization")}
        if "status" in c:
            entry["status"] = c["status"]
            self.send_response(c["status"])
            self.send_header("Content-Length", "0")
            self.finish_headers(entry)
            return
        parts = self.path.split("?")[0].split("/")
        linked = len(parts) >= 6 and parts[3] == "resolve"
        name = "/" + parts[-1]
        path = os.path.join(ARGS.root, c.get("serve", {}).get(name, name.lstrip("/")))
        if not os.path.isfile(path) or ".." in self.path:
            entry["status"] = 404
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.finish_headers(entry)
            return
        size = os.path.getsize(path)
        sha = sha256_of(path)
        etag_kind = c.get("etag", "sha256")
        etag = {"sha256": '"%s"' % sha, "none": None, "weak": 'W/"%s"' % sha,
                "other": '"%s"' % sha[:32]}.get(etag_kind, etag_kind)
        if linked:
            # Hugging Face: the resolve URL redirects to its CDN, the hash is on the redirect.
            entry["status"] = 302
            self.send_response(302)
            self.send_header("Location", "/cdn" + name)
            self.send_header("X-Linked-Etag", '"%s"' % sha)
            self.send_header("X-Linked-Size", str(size))
            self.send_header("ETag", '"%s"' % sha[:40])
            self.send_header("Content-Length", "0")
            self.finish_headers(entry)
            return
        if self.path.startswith("/cdn/"):
            etag = '"cdn-%s"' % sha[:16]

        first, last = 0, size - 1
        status = 200
        want = self.headers.get("Range")
        if_range = self.headers.get("If-Range")
        if want and not c.get("no_range") and (if_range is None or if_range == etag):
            spec = want.strip().split("=", 1)[1]
            a, b = spec.split("-", 1)
            if a == "":
                first, last = max(0, size - int(b)), size - 1
            else:
                first = int(a)
                last = min(int(b), size - 1) if b else size - 1
            if first >= size:
                entry["status"] = 416
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.finish_headers(entry)
                return
            status = 206
        length = last - first + 1
        entry["status"] = status
        self.send_response(status)
        self.send_header("Content-Length", str(length))
        if not c.get("no_range"):
            self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (first, last, size))
        if etag:
            self.send_header("ETag", etag)
        self.finish_headers(entry)
        if head:
            return

        drop_at = None
        if "drop_after" in c and c["drop_after"] < length:
            with LOCK:
                if STATE["drops_done"] < c.get("drops", 1):
                    STATE["drops_done"] += 1
                    drop_at = c["drop_after"]
        throttle = c.get("throttle")
        sent = 0
        start = time.monotonic()
        try:
            with open(path, "rb") as f:
                f.seek(first)
                while sent < length:
                    n = min(16384, length - sent)
                    if drop_at is not None:
                        n = min(n, drop_at - sent)
                        if n <= 0:
                            break
                    block = f.read(n)
                    if not block:
                        break
                    self.wfile.write(block)
                    sent += len(block)
                    if throttle:
                        ahead = sent / throttle - (time.monotonic() - start)
                        if ahead > 0:
                            time.sleep(ahead)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return
        if sent < length:
            # The fault: the connection goes away in the middle of the body.
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that hangs up (as memwall does when it refuses an answer) is no error


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--control", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    ARGS = p.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, ARGS.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
