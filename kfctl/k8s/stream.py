"""A watch's HTTP response read as :class:`~kfctl.k8s.api.WatchEvent` values, one JSON document per line.

The API server writes each watch event as one JSON object followed by a newline, in chunks that need not
end on a line. This module only splits and decodes; what an event means (a 410 to re-list from, a bookmark
to resume at) is :mod:`kfctl.k8s.watch`'s business. It must not retry: a broken connection ends the
iteration with :class:`~kfctl.k8s.api.Unreachable`.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterable, Iterator
from typing import Any, cast

import urllib3

from kfctl.k8s.api import Unreachable, WatchEvent, WatchType

TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"})


def events(chunks: Iterable[bytes], *, api_version: str, kind: str) -> Iterator[WatchEvent]:
    """Decode a watch body: lines of ``{"type": …, "object": …}``; items lack apiVersion/kind in some
    servers' answers, so they are set from the watched kind as a list's items are."""
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                yield _event(line, api_version=api_version, kind=kind)
    if buffer.strip():
        yield _event(buffer, api_version=api_version, kind=kind)


def _event(line: bytes, *, api_version: str, kind: str) -> WatchEvent:
    try:
        doc = json.loads(line)
    except ValueError as e:
        raise Unreachable(f"watch of {kind}: a line that is not JSON ({e})") from e
    kind_of_event = str(doc.get("type", "")) if isinstance(doc, dict) else ""
    obj = doc.get("object") if isinstance(doc, dict) else None
    if kind_of_event not in TYPES or not isinstance(obj, dict):
        raise Unreachable(f"watch of {kind}: not a watch event: {line[:200]!r}")
    if kind_of_event != "ERROR":
        obj.setdefault("apiVersion", api_version)
        obj.setdefault("kind", kind)
    return WatchEvent(cast("WatchType", kind_of_event), obj)


class HttpWatchStream:
    """Implements :class:`kfctl.k8s.api.WatchStream` over an open urllib3 response (``preload_content=False``)."""

    def __init__(self, response: Any, *, api_version: str, kind: str) -> None:
        self._response = response
        self._api_version = api_version
        self._kind = kind
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[WatchEvent]:
        resp = self._response
        chunks: Iterable[bytes] = resp.read_chunked() if resp.chunked else resp.stream(4096)
        try:
            yield from events(chunks, api_version=self._api_version, kind=self._kind)
        except (urllib3.exceptions.HTTPError, OSError) as e:
            if self._closed.is_set():
                return  # close() cut the connection under a blocked read: that is the end, not a failure
            raise Unreachable(f"watch of {self._kind} broke: {e}") from e
        finally:
            resp.release_conn()

    def close(self) -> None:
        """Unblock a reader in another thread: shut the socket down, then drop the connection."""
        self._closed.set()
        # Already closed, or a urllib3 without shutdown(): close() below still ends it.
        with contextlib.suppress(Exception):
            self._response.shutdown()
        self._response.close()
