"""A tiny HTTP file server for the download tests, with configurable misbehaviour per path."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Route:
    body: bytes = b""
    status: int = 200
    truncate_at: int | None = None  # announce len(body) but send only this many bytes, then close
    delay: float = 0.0  # seconds to wait before answering
    fail_times: int = 0  # answer 503 this many times before behaving


@dataclass
class FileServer:
    routes: dict = field(default_factory=dict)
    requests: list = field(default_factory=list)
    base: str = ""

    def url(self, path: str) -> str:
        return self.base + path

    def count(self, path: str) -> int:
        return sum(1 for p in self.requests if p == path)


def make_server(state: FileServer) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep pytest output clean
            pass

        def do_GET(self):
            state.requests.append(self.path)
            route = state.routes.get(self.path)
            if route is None:
                self.send_error(404, "Not Found")
                return
            if route.delay:
                time.sleep(route.delay)
            if route.fail_times > 0:
                route.fail_times -= 1
                self.send_error(503, "Service Unavailable")
                return
            if route.status != 200:
                self.send_error(route.status)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            payload = route.body if route.truncate_at is None else route.body[: route.truncate_at]
            try:
                self.wfile.write(payload)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            if route.truncate_at is not None:
                self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.base = f"http://127.0.0.1:{server.server_address[1]}"
    return server
