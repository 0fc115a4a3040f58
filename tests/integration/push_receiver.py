#!/usr/bin/env python3
# A profiling backend for tests/integration/push.sh, on 127.0.0.1 only:
# stores every request it is sent (body, path, query, headers) in DIR as
# NNNNNN.body and NNNNNN.json, and answers as MODE says:
#   store        200, an empty body (an empty ExportProfilesServiceResponse)
#   status:CODE  CODE, with a line of text
#   partial:N    200, an ExportProfilesServiceResponse whose partial_success
#                rejected N profiles, with a message
#   hang         reads the request and never answers
# --down S: the port is bound at once (written to --port-file) but refuses
# connections for S seconds, then listens: a backend that is down, then up.
import argparse
import json
import os
import socket
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

ap = argparse.ArgumentParser()
ap.add_argument("--dir", required=True)
ap.add_argument("--port-file", required=True)
ap.add_argument("--mode", default="store")
ap.add_argument("--down", type=float, default=0)
args = ap.parse_args()
os.makedirs(args.dir, exist_ok=True)
lock = threading.Lock()
count = [0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        sys.stderr.write("receiver: " + (fmt % a) + "\n")

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        if args.mode == "hang":
            time.sleep(3600)
            return
        with lock:
            count[0] += 1
            name = os.path.join(args.dir, "%06d" % count[0])
        u = urlsplit(self.path)
        meta = {"path": u.path, "query": u.query, "headers": {k.lower(): v for k, v in self.headers.items()}}
        if args.mode == "store" or args.mode.startswith("partial:"):
            with open(name + ".body.tmp", "wb") as f:
                f.write(body)
            with open(name + ".json.tmp", "w") as f:
                json.dump(meta, f)
            os.rename(name + ".body.tmp", name + ".body")
            os.rename(name + ".json.tmp", name + ".json")
            code, text = 200, b""
            if args.mode.startswith("partial:"):
                # partial_success (1) { rejected_profiles (1), error_message (2) }
                n, msg = int(args.mode.split(":")[1]), b"test receiver: too old"
                ps = b"\x08" + bytes([n]) + b"\x12" + bytes([len(msg)]) + msg
                text = b"\x0a" + bytes([len(ps)]) + ps
        else:
            code, text = int(args.mode.split(":")[1]), b"refused by the test receiver\n"
        self.send_response(code)
        self.send_header("Content-Type", "application/x-protobuf" if code == 200 else "text/plain")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)


class Server(ThreadingHTTPServer):
    daemon_threads = True


srv = Server(("127.0.0.1", 0), Handler, bind_and_activate=False)
srv.allow_reuse_address = True
srv.server_bind()
with open(args.port_file + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
os.rename(args.port_file + ".tmp", args.port_file)
if args.down:
    time.sleep(args.down)  # bound, not listening: connections are refused
srv.server_activate()
with open(os.path.join(args.dir, "up"), "w") as f:
    f.write("%f\n" % time.time())
srv.serve_forever()
