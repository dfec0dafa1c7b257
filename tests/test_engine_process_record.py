"""A lock holder's process record: ended only when this machine certainly no longer runs it.

The record is what a run leaves in its Lease; a later run on the same machine takes the Lease at once when
the recorded process has ended. Every doubt must answer "not ended", or a live run's lock would be taken.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kfctl.engine.process_record import ended, this_process

BOOT = "476a2569-68ac-4450-8754-7f7953538ba7"
PIDNS = "pid:[4026531836]"
UID = str(os.getuid())


def stat(pid: str, *, state: str = "S", started: str = "7031051", comm: str = "python3") -> str:
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime
    # cstime priority nice threads itrealvalue starttime ...
    return f"{pid} ({comm}) {state} 1 1 1 0 -1 4194560 10 0 0 0 5 2 0 0 20 0 1 0 {started} 1000 200\n"


def fake_proc(tmp_path: Path, processes: dict[str, str]) -> Path:
    """A /proc with this boot id and PID namespace and the given pid → stat contents."""
    proc = tmp_path / "proc"
    (proc / "sys" / "kernel" / "random").mkdir(parents=True)
    (proc / "sys" / "kernel" / "random" / "boot_id").write_text(BOOT + "\n")
    (proc / "self" / "ns").mkdir(parents=True)
    (proc / "self" / "ns" / "pid").symlink_to(PIDNS)
    for pid, text in processes.items():
        (proc / pid).mkdir()
        (proc / pid / "stat").write_text(text)
    return proc


def record(*, boot: str = BOOT, pidns: str = PIDNS, uid: str = UID, pid: str = "4242", started: str = "7031051") -> str:
    return f"{boot}/{pidns}/{uid}/{pid}/{started}"


CASES = [
    # case, the record, the processes this machine runs, ended?
    ("its-pid-is-free", record(), {}, True),
    ("it-still-runs", record(), {"4242": stat("4242")}, False),
    ("it-still-runs-under-a-name-with-parentheses", record(), {"4242": stat("4242", comm="a) b (c")}, False),
    ("its-pid-now-runs-another-process", record(), {"4242": stat("4242", started="9999999")}, True),
    ("only-its-zombie-is-left", record(), {"4242": stat("4242", state="Z")}, True),
    ("another-machine-or-a-reboot", record(boot="0c1d…"), {}, False),
    ("another-pid-namespace", record(pidns="pid:[4026532999]"), {}, False),
    ("another-user-hidepid-could-hide-it", record(uid=str(os.getuid() + 1)), {}, False),
    ("a-record-of-another-shape", "build-7/4242", {}, False),
]


@pytest.mark.parametrize(("rec", "processes", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_holder_has_ended_only_when_this_machine_certainly_no_longer_runs_it(
    tmp_path: Path, rec: str, processes: dict[str, str], expected: bool
) -> None:
    assert ended(rec, fake_proc(tmp_path, processes)) is expected


def test_without_proc_there_is_no_record_and_nothing_has_ended(tmp_path: Path) -> None:
    assert this_process(tmp_path / "no-proc") is None
    assert ended(record(), tmp_path / "no-proc") is False


def test_this_process_is_recorded_and_has_not_ended(tmp_path: Path) -> None:
    pid = str(os.getpid())
    proc = fake_proc(tmp_path, {pid: stat(pid, started="123")})
    assert this_process(proc) == record(pid=pid, started="123")
    assert ended(record(pid=pid, started="123"), proc) is False
    real = this_process()  # Linux: the real /proc
    assert real is not None and real.split("/")[3] == pid and not ended(real)
