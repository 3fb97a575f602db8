"""The fixture server's tools over streamable HTTP on loopback (the SDK's app under uvicorn), for the
remote tests: ``python http_server.py [--json] [--bearer TOKEN] [--tls CERT KEY]`` prints its port
once it listens on 127.0.0.1.

Beyond the SDK's ``/mcp`` endpoint: ``/moved`` answers 307 to the same endpoint on another origin
(127.0.0.2), a request without ``Authorization: Bearer TOKEN`` (with ``--bearer``) gets 401, and the
extra tool ``authorization`` returns the Authorization header the server last received.
"""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path
from typing import Any

import uvicorn

sys.path.insert(0, str(Path(__file__).parent))
from fixture_server import app

SEEN: dict[str, str] = {}


@app.tool()
def authorization() -> str:
    """The Authorization header of the last HTTP request (a server that echoes its credentials)."""
    return SEEN.get("authorization", "")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true", help="JSON answers instead of event streams")
    parser.add_argument("--bearer", default=None)
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), default=None)
    args = parser.parse_args()
    inner = app.streamable_http_app(json_response=args.json, host="127.0.0.1")

    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            SEEN["authorization"] = headers.get(b"authorization", b"").decode()
            if scope["path"] == "/moved":
                port = scope["server"][1]
                await _answer(send, 307, [(b"location", f"http://127.0.0.2:{port}/mcp".encode())])
                return
            if args.bearer and SEEN["authorization"] != f"Bearer {args.bearer}":
                await _answer(send, 401, [(b"content-type", b"text/plain")], b"unauthorized")
                return
        await inner(scope, receive, send)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    tls = {"ssl_certfile": args.tls[0], "ssl_keyfile": args.tls[1]} if args.tls else {}
    server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning", lifespan="on", **tls))
    print(sock.getsockname()[1], flush=True)
    server.run(sockets=[sock])


async def _answer(send: Any, status: int, headers: list[tuple[bytes, bytes]], body: bytes = b"") -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


if __name__ == "__main__":
    main()
