"""The rendezvous store: a small key-value store every rank of a job reaches, for exchanging the
communicator's unique id and for barriers.

Note [Rendezvous store]
Two kinds, chosen by the init_method URL as in torch:
- ``tcp://HOST:PORT``: rank 0 serves the store from a thread on HOST:PORT; every rank (rank 0 too)
  talks to it over a socket. Requests are length-prefixed frames ``op key [value]``; the server answers
  ``get`` only once the key exists, so waiting costs no polling.
- ``file:///PATH``: PATH is a folder on a file system all ranks share; a key is a file in it, written
  to a temporary name and renamed (atomic), read by polling; counters are updated under an flock.
Every wait has a deadline: a rank that never arrives (died, or never started) makes the others raise
``TimeoutError`` naming the key, the store and the seconds waited, never hang.
Values are bytes. Keys are plain strings (letters, digits, ``/_-.``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import socket
import socketserver
import struct
import threading
import time
import urllib.parse

_KEY = re.compile(r"^[A-Za-z0-9_./-]{1,200}$")


def _check_key(key: str) -> str:
    if not isinstance(key, str) or not _KEY.match(key) or ".." in key:
        raise ValueError(f"store key {key!r}: use 1-200 letters, digits or _ . / - (no '..')")
    return key


class Store:
    """What the process groups need of a store: set, get (waiting), add (a shared counter), wait_count."""

    timeout: float

    def set(self, key: str, value: bytes) -> None:
        raise NotImplementedError

    def get(self, key: str, timeout: float | None = None) -> bytes:
        raise NotImplementedError

    def add(self, key: str, amount: int) -> int:
        raise NotImplementedError

    def barrier(self, name: str, world_size: int, timeout: float | None = None) -> None:
        """Return once ``world_size`` ranks have called barrier(name); each name is used once."""
        arrived = self.add(f"barrier/{name}/count", 1)
        if arrived == world_size:
            self.set(f"barrier/{name}/open", b"1")
        self.get(f"barrier/{name}/open", timeout)

    def close(self) -> None:
        pass


# --- file store -----------------------------------------------------------------------------------------


class FileStore(Store):
    def __init__(self, folder: str, timeout: float):
        self.folder = os.path.abspath(folder)
        self.timeout = timeout
        os.makedirs(self.folder, exist_ok=True)

    def _path(self, key: str) -> str:
        return os.path.join(self.folder, _check_key(key).replace("/", "%"))

    def set(self, key: str, value: bytes) -> None:
        path = self._path(key)
        tmp = f"{path}.tmp{os.getpid()}.{threading.get_ident()}"
        with open(tmp, "wb") as f:
            f.write(bytes(value))
        os.replace(tmp, path)

    def get(self, key: str, timeout: float | None = None) -> bytes:
        path = self._path(key)
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        delay = 0.001
        while True:
            with contextlib.suppress(FileNotFoundError), open(path, "rb") as f:
                return f.read()
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"rendezvous: waited {limit:g} s for key {key!r} in the file store {self.folder}; "
                    "the rank that should write it has not (it died, is stuck, or was never started)"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def add(self, key: str, amount: int) -> int:
        path = self._path(key)
        with open(self._path(key) + ".lock", "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                with open(path, "rb") as f:
                    value = int(f.read() or b"0")
            except FileNotFoundError:
                value = 0
            value += int(amount)
            self.set(key, str(value).encode())
            return value


# --- tcp store ------------------------------------------------------------------------------------------

_OPS = {"set": 1, "get": 2, "add": 3}


def _send_frame(sock: socket.socket, *parts: bytes) -> None:
    payload = b"".join(struct.pack("!I", len(p)) + p for p in parts)
    sock.sendall(struct.pack("!I", len(payload)) + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            raise ConnectionError("rendezvous: the store's connection closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _recv_frame(sock: socket.socket) -> list[bytes]:
    (size,) = struct.unpack("!I", _recv_exact(sock, 4))
    payload, parts, i = _recv_exact(sock, size), [], 0
    while i < len(payload):
        (n,) = struct.unpack("!I", payload[i : i + 4])
        parts.append(payload[i + 4 : i + 4 + n])
        i += 4 + n
    return parts


class _StoreServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int]):
        self.values: dict[str, bytes] = {}
        self.changed = threading.Condition()
        super().__init__(address, _StoreHandler)


class _StoreHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server: _StoreServer = self.server  # type: ignore[assignment]
        with contextlib.suppress(ConnectionError, OSError):
            while True:
                op, key, value = (_recv_frame(self.request) + [b""])[:3]
                name = key.decode()
                if op[0] == _OPS["set"]:
                    with server.changed:
                        server.values[name] = value
                        server.changed.notify_all()
                    _send_frame(self.request, b"ok")
                elif op[0] == _OPS["get"]:
                    (limit,) = struct.unpack("!d", value)
                    with server.changed:
                        found = server.changed.wait_for(lambda key=name: key in server.values, timeout=limit)
                        answer = server.values.get(name) if found else None
                    _send_frame(self.request, b"ok" if answer is not None else b"timeout", answer or b"")
                elif op[0] == _OPS["add"]:
                    with server.changed:
                        total = int(server.values.get(name, b"0")) + int(value)
                        server.values[name] = str(total).encode()
                        server.changed.notify_all()
                    _send_frame(self.request, b"ok", str(total).encode())


class TCPStore(Store):
    def __init__(self, host: str, port: int, is_server: bool, timeout: float):
        self.host, self.port, self.timeout = host, port, timeout
        self._server: _StoreServer | None = None
        if is_server:
            self._server = _StoreServer((host, port))
            self.port = self._server.server_address[1]
            threading.Thread(target=self._server.serve_forever, name="slimtensor-store", daemon=True).start()
        self._lock = threading.Lock()
        self._sock = self._connect(timeout)

    def _connect(self, timeout: float) -> socket.socket:
        deadline = time.monotonic() + timeout
        while True:
            try:
                return socket.create_connection((self.host, self.port), timeout=5)
            except OSError as exc:
                if time.monotonic() >= deadline:
                    raise TimeoutError(
                        f"rendezvous: could not reach the store at tcp://{self.host}:{self.port} within "
                        f"{timeout:g} s ({exc}); rank 0 serves it: is rank 0 running, with the same address?"
                    ) from None
                time.sleep(0.05)

    def _call(self, op: str, key: str, value: bytes, wait: float) -> list[bytes]:
        with self._lock:
            self._sock.settimeout(wait + 10)
            _send_frame(self._sock, bytes([_OPS[op]]), _check_key(key).encode(), value)
            return _recv_frame(self._sock)

    def set(self, key: str, value: bytes) -> None:
        self._call("set", key, bytes(value), 0)

    def get(self, key: str, timeout: float | None = None) -> bytes:
        limit = self.timeout if timeout is None else timeout
        status, value = self._call("get", key, struct.pack("!d", limit), limit)
        if status != b"ok":
            raise TimeoutError(
                f"rendezvous: waited {limit:g} s for key {key!r} in the store at tcp://{self.host}:{self.port}; "
                "the rank that should write it has not (it died, is stuck, or was never started)"
            )
        return value

    def add(self, key: str, amount: int) -> int:
        return int(self._call("add", key, str(int(amount)).encode(), 0)[1])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def store_from_init_method(init_method: str, rank: int, timeout: float) -> Store:
    """The store an init_method URL names (Note [Rendezvous store]); rank 0 serves a tcp store."""
    url = urllib.parse.urlparse(init_method)
    if url.scheme == "tcp":
        if not url.hostname or not url.port:
            raise ValueError(f"init_method {init_method!r}: a tcp store needs tcp://HOST:PORT")
        return TCPStore(url.hostname, url.port, is_server=(rank == 0), timeout=timeout)
    if url.scheme == "file":
        if not url.path:
            raise ValueError(
                f"init_method {init_method!r}: a file store needs file:///PATH (a shared folder)"
            )
        return FileStore(url.path, timeout)
    raise ValueError(
        f"init_method {init_method!r}: expected 'tcp://HOST:PORT' or 'file:///PATH' (or 'env://', which reads "
        "MASTER_ADDR and MASTER_PORT as the launcher sets them)"
    )
