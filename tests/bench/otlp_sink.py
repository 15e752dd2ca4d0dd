"""An OTLP/HTTP collector that keeps nothing, for run_trace_bench.sh: reads each
POST to its end, counts bodies, bytes and spans (the "spanId" keys of OTLP/JSON),
answers 200 at once. It writes its port to PORT_FILE and its counts, as JSON, to
COUNTS_FILE on SIGTERM.

usage: python3 otlp_sink.py PORT_FILE COUNTS_FILE"""
import http.server
import json
import signal
import sys
import threading

counts = {"posts": 0, "bytes": 0, "spans": 0}
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        data = self.rfile.read(n)
        with lock:
            counts["posts"] += 1
            counts["bytes"] += len(data)
            counts["spans"] += data.count(b'"spanId"')
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def main():
    port_file, counts_file = sys.argv[1], sys.argv[2]
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def stop(*_):
        with open(counts_file, "w") as f:
            json.dump(counts, f)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    with open(port_file, "w") as f:
        f.write(str(httpd.server_address[1]))
    httpd.serve_forever()


if __name__ == "__main__":
    main()
