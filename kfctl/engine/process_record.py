"""Which process holds an install's lock, recorded so that a later run on the same machine can tell it ended.

A run killed with SIGKILL (an OOM kill, a second Ctrl-C in a wrapper, a CI job cancelled) cannot free its
Lease, and a run from another machine can only wait for it to go unrenewed (:mod:`kfctl.engine.lease`). On the
machine where it ran, the next run can know better: the record names the kernel's boot, the PID namespace, the
user, the pid and that process's start time, and when the same boot and namespace no longer run that pid with
that start time (or only its zombie), the holder is gone for certain — not paused, not slow, not elsewhere.
Only a holder of the same user is judged: ``/proc`` mounted with ``hidepid`` hides other users' processes, and
a hidden process must not look ended. Any doubt (another machine, container or user, no ``/proc``, an
unreadable record) answers "not known to have ended", and the lease's duration decides as before.

Reads ``/proc`` only (Linux); elsewhere there is no record, and nothing changes.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")


def _start_time(proc: Path, pid: str) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat); None when no process
    has that pid or it is a zombie (ended, not yet reaped). The command name (field 2) may hold spaces and
    parentheses: fields are counted after its closing parenthesis."""
    try:
        stat = (proc / pid / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    state, started = fields[0], fields[19]  # fields 3 and 22
    return None if state in ("Z", "X") else started


def _machine(proc: Path) -> tuple[str, str]:
    """(boot id, PID namespace): two processes with both equal see the same pids."""
    boot = (proc / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
    return boot, os.readlink(proc / "self" / "ns" / "pid")


def this_process(proc: Path = PROC) -> str | None:
    """The record of this process, ``<boot id>/<pid namespace>/<uid>/<pid>/<start time>``; None without
    ``/proc``."""
    pid = str(os.getpid())
    try:
        boot, namespace = _machine(proc)
        started = _start_time(proc, pid)
    except (OSError, ValueError, IndexError):
        return None
    if started is None:
        return None
    return f"{boot}/{namespace}/{os.getuid()}/{pid}/{started}"


def ended(record: str, proc: Path = PROC) -> bool:
    """True only when ``record`` names a process of this boot, PID namespace and user that no longer runs: its
    pid is free, a zombie, or reused by a process started at another time."""
    parts = record.split("/")
    if len(parts) != 5 or not parts[3].isdigit():
        return False
    boot, namespace, uid, pid, started = parts
    try:
        if _machine(proc) != (boot, namespace) or uid != str(os.getuid()):
            return False
        return _start_time(proc, pid) != started
    except (OSError, ValueError, IndexError):
        return False
