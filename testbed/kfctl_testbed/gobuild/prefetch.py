"""Downloads the modules of the builds to come while the builds before them compile.

A cold `go build` first fetches and unpacks its modules, then compiles. The compiles keep both cores busy; the
fetches mostly wait on the network (`go mod download` of KServe's wrapper: 1.5 GB in 37 s, 23 s of it CPU). So one
thread walks the builds in the run's order and, for each, runs `go list -deps` of the packages its `go build` will
compile: that loads, and so downloads, exactly the modules the build reads, compiles nothing and writes nothing but
the module cache, which go locks for concurrent use. It never touches a wrapper's go.mod or go.sum
(`-mod=readonly`), and its output and failures are dropped: the build itself downloads what is missing and reports
what fails, as it would without it.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType


@dataclass(frozen=True)
class Job:
    """One build's `go list`: in its wrapper dir, of its main packages, with the environment its build gets."""

    cwd: Path
    packages: tuple[str, ...]
    env: Mapping[str, str]

    @property
    def argv(self) -> list[str]:
        return ["go", "list", "-mod=readonly", "-e", "-deps", "-f", "{{.ImportPath}}", *self.packages]


@dataclass
class Prefetch:
    """A context manager: the thread starts on entry; on exit a `go list` still running is stopped."""

    jobs: Sequence[Job]
    done: list[Job] = field(default_factory=list)  # the jobs run to their end, in order (for tests)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _current: subprocess.Popen[bytes] | None = None
    _thread: threading.Thread | None = None

    def __enter__(self) -> Prefetch:
        if self.jobs:
            self._thread = threading.Thread(target=self._run, name="gobuild-prefetch", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        with self._lock:
            if self._current is not None and self._current.poll() is None:
                self._current.terminate()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        for job in self.jobs:
            with self._lock:
                if self._stop.is_set():
                    return
                try:
                    self._current = subprocess.Popen(
                        job.argv,
                        cwd=job.cwd,
                        env=dict(job.env),
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                except OSError:
                    return  # no go on PATH: the build says so
            self._current.wait()
            if not self._stop.is_set():
                self.done.append(job)
