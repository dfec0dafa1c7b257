"""SIGTERM handled as Ctrl-C is: raised in the main thread, so every ``finally`` runs before kfctl exits.

Python's default for SIGTERM ends the process on the spot: a fetch's temporary directory (``.tmp-NAME-…`` in the
repo cache, with a partial archive) stayed behind. Container runtimes stopping a pod, CI runners and `timeout(1)`
send SIGTERM; so does argocd-cmp-server, to the plugin's process group at the controller's deadline, though it
kills the plugin's own process outright at the same moment. SIGKILL cannot be handled: what it leaves, the next
fetch into the same cache removes (kfctl.fsutil.filling).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived. A KeyboardInterrupt so that it unwinds as Ctrl-C does: no ``except Exception`` stops it."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """While inside, SIGTERM raises :class:`Terminated` in the main thread; the handler before is put back after
    (kfctl's main runs in-process in tests). Elsewhere than the main thread Python allows no handler: a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
