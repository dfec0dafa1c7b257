"""The HTTP/1.1 server loop of the test bed's stand-ins (dex_standin.py, istio_gateway.py). TEST CODE.

`http_server(address, handle)` answers each request with `handle(method, target, headers, body)` (headers with
lower-case names; the body read by Content-Length) → (status, headers, body), sent with its Content-Length. A
`handle` that raises is a 500 for that request and a logged traceback, never the server's end.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger("httpserve")

Handle = Callable[[str, str, dict[str, str], bytes], tuple[int, list[tuple[str, str]], bytes]]


def http_server(address: tuple[str, int], handle: Handle) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                status, answer_headers, answer_body = handle(self.command, self.path, headers, body)
            except Exception as e:  # one request's surprise is a 500, never the server's end
                log.exception("%s %s", self.command, self.path)
                status, answer_headers, answer_body = 500, [("content-type", "text/plain")], f"error: {e}\n".encode()
            self.send_response(status)
            for name, value in answer_headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer_body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(answer_body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass  # each stand-in logs its requests with what it decided

    return ThreadingHTTPServer(address, Handler)
