"""Fixtures of the dataset tests: a real HTTP server on 127.0.0.1 (in a thread) serving in-memory files with
configurable misbehaviour (status, truncation, delay); see dsfixtures_http.py."""
from __future__ import annotations

import threading

import pytest

from dsfixtures_http import FileServer, make_server


@pytest.fixture
def http_server():
    state = FileServer()
    server = make_server(state)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
