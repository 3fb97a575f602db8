"""Cancelling a request in flight (the compaction prepared in the background, ``prepare``): the caller
is woken at once, the server sees the connection closed (a single-slot server is free again), and
nothing is retried."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from i_core.cancel import Cancelled
from i_core.transport import Transport


class SilentServer:
    """Accepts connections, reads the request, never answers; notes when each client went away."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1/chat/completions"
        self.connections = 0
        self.closed_at: list[float] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                data = b""
            if not data:
                self.closed_at.append(time.monotonic())
                conn.close()
                return


def test_cancel_wakes_the_caller_at_once_and_closes_the_connection() -> None:
    server = SilentServer()
    transport = Transport(timeout=60, retries=3, cancellable=True)
    failure: list[BaseException] = []

    def post() -> None:
        try:
            transport.post(server.url, {"model": "m"}, {}, stream=False, on_retry=lambda *_: None)
        except BaseException as exc:
            failure.append(exc)

    caller = threading.Thread(target=post)
    caller.start()
    deadline = time.monotonic() + 10
    while server.connections == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # the request is sent; the server holds it
    cancelled = time.monotonic()
    transport.cancel()
    caller.join(5)
    assert not caller.is_alive()
    assert len(failure) == 1 and isinstance(failure[0], Cancelled)
    while not server.closed_at and time.monotonic() < cancelled + 5:
        time.sleep(0.01)
    assert server.closed_at and server.closed_at[0] - cancelled < 2  # the server saw the client leave
    assert server.connections == 1  # not retried
    with pytest.raises(Cancelled):  # and nothing later starts
        transport.post(server.url, {"model": "m"}, {}, stream=False, on_retry=lambda *_: None)
    transport.close()
