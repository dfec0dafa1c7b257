"""kfctl_testbed.localcluster.open_loopback: the test bed's probes of its own 127.0.0.1 servers use no proxy.
urllib.request.urlopen builds its opener at its first use and keeps that moment's proxy environment; e2e's
no_network() sets a dead proxy with no_proxy=127.0.0.1 only while it lasts. A first urlopen inside it left
every later loopback probe of that pytest process going to the dead proxy (the Argo CD fleet module after the
faults module: its repo-server never seen ready)."""

from __future__ import annotations

import http.server
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from kfctl_testbed import localcluster


class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_proxy_urllib_kept_from_its_first_use_does_not_reach_loopback_probes(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(urllib.request, "_opener", None)  # this process's urlopen not used yet; put back after
    for var in ("no_proxy", "NO_PROXY"):  # the machine's own, if any, would bypass the dead proxy below
        monkeypatch.delenv(var, raising=False)
    with monkeypatch.context() as m:  # what no_network() does
        for var in ("http_proxy", "HTTP_PROXY"):
            m.setenv(var, f"http://127.0.0.1:{closed_port()}")
        m.setenv("no_proxy", "127.0.0.1")
        with urllib.request.urlopen(url, timeout=5) as response:
            assert response.status == 200  # bypassed while no_proxy is set
    # urllib's own opener kept the dead proxy and, no_proxy gone, sends loopback there: the fault
    with pytest.raises(urllib.error.URLError, match="Connection refused"):
        urllib.request.urlopen(url, timeout=5)
    assert localcluster.http_ok(url)
