"""The real gpuhttpd (host backend, loopback, port 0) for the live tests,
a proxy that cuts connections and one that holds an upload."""
import os
import select
import signal
import socket
import subprocess
import tempfile
import threading
import time

BACKEND = os.environ.get("GHD_TEST_BACKEND", "host")


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except FileNotFoundError:
        return ""


def free_ports(n: int) -> list[int]:
    """n TCP ports of 127.0.0.1 free a moment ago (bound to port 0 together,
    then closed), for options that cannot take 0 (--advertise-url, --peers).
    tests/ops (ghdtest.free_ports) uses it too."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Server:
    def __init__(self, binary: str, *args: str):
        self.dir = tempfile.TemporaryDirectory(prefix="ghd-py-")
        port_file = os.path.join(self.dir.name, "port")
        self.log = open(os.path.join(self.dir.name, "log"), "wb")  # noqa: SIM115 (until stop())
        env = {k: v for k, v in os.environ.items() if not k.startswith("GHD_")}
        self.proc = subprocess.Popen(
            [binary, "--port", "0", "--port-file", port_file, "--backend", BACKEND,
             "--pool-initial", "0", "--staging-chunks", "4", "--shutdown-grace", "2", *args],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 15
        while not _read(port_file):
            assert self.proc.poll() is None, f"gpuhttpd exited: {self.log_text()}"
            assert time.monotonic() < deadline, "gpuhttpd wrote no port file"
            time.sleep(0.02)
        self.port = int(_read(port_file))
        self.url = f"http://127.0.0.1:{self.port}"

    def log_text(self) -> str:
        self.log.flush()
        with open(self.log.name, "rb") as f:
            return f.read().decode("utf-8", "replace")[-4000:]

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        self.dir.cleanup()


class DroppingProxy:
    """A loopback TCP proxy that cuts chosen connections after some bytes
    (client to server for uploads, server to client for downloads): a
    dropped connection, for the resume tests."""

    def __init__(self, port: int, cut: dict, upstream: bool):
        self.port_to = port
        self.cut = cut  # connection number (from 1) -> bytes after which it is cut
        self.upstream = upstream
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.count = 0
        self.cuts = 0
        self.stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopping:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.count += 1
            s = socket.create_connection(("127.0.0.1", self.port_to))
            limit = self.cut.get(self.count)
            up, down = (limit, None) if self.upstream else (None, limit)
            threading.Thread(target=self._pipe, args=(c, s, up), daemon=True).start()
            threading.Thread(target=self._pipe, args=(s, c, down), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket, limit) -> None:
        moved = 0
        try:
            while True:
                data = a.recv(1 << 16)
                if not data:
                    break
                if limit is not None and moved + len(data) > limit:
                    self.cuts += 1
                    break
                b.sendall(data)
                moved += len(data)
        except OSError:
            pass
        _shut(a, b)

    def close(self) -> None:
        self.stopping = True
        self.sock.close()


def _shut(*socks: socket.socket) -> None:
    for x in socks:
        try:
            x.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        x.close()


class StallingProxy:
    """A loopback proxy that forwards a connection's first ``limit`` bytes
    to the server, then stops reading from the client (whose sends fill the
    socket buffers and wait): an upload held in the middle. ``stalled``
    is set then; a client that closes its side closes the server's."""

    def __init__(self, port: int, limit: int) -> None:
        self.port_to, self.limit = port, limit
        self.stalled = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.first = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            s = socket.create_connection(("127.0.0.1", self.port_to))
            limit, self.first = (self.limit if self.first else None), False
            threading.Thread(target=self._pipe, args=(c, s, limit), daemon=True).start()
            threading.Thread(target=self._pipe, args=(s, c, None), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket, limit: int | None) -> None:
        moved = 0
        try:
            while limit is None or moved < limit:
                data = a.recv(min(1 << 16, limit - moved) if limit else 1 << 16)
                if not data:
                    break
                b.sendall(data)
                moved += len(data)
            if limit is not None and moved >= limit:
                self.stalled.set()
                gone = select.POLLHUP | select.POLLERR | select.POLLRDHUP
                p = select.poll()
                p.register(a, gone)
                while not p.poll(100):  # until the client closes or resets its side
                    pass
        except OSError:
            pass
        _shut(a, b)

    def close(self) -> None:
        self.sock.close()
