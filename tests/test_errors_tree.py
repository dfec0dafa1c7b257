"""kfctl's exit codes are one tree (kfctl.errors): one class per code, listed in the user guide (docs/usage.md)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from kfctl.errors import CancelledError, ExitStatus, Finding, KfctlError

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "usage.md"


def _tree() -> list[type[ExitStatus]]:
    classes: list[type[ExitStatus]] = [ExitStatus]
    for c in classes:
        classes.extend(c.__subclasses__())
    return classes


def test_each_exit_code_belongs_to_one_class() -> None:
    """1 is shared on purpose: an unexpected error and a confirmation answered no (docs/usage.md)."""
    own = [c for c in _tree() if "exit_code" in vars(c)]  # a subclass that keeps its family's code is its family
    counts = Counter(c.exit_code for c in own if c not in (ExitStatus, KfctlError, CancelledError))
    assert [code for code, n in counts.items() if n > 1] == []


def test_findings_are_not_errors() -> None:
    """A finding is reported by the exit code of a command that succeeded; it is never raised or printed as an error."""
    findings = [c for c in _tree() if issubclass(c, Finding) and c is not Finding]
    assert sorted(c.exit_code for c in findings) == [13, 14, 15, 16]
    assert not any(issubclass(c, BaseException) for c in findings)


def test_the_guide_lists_every_exit_code() -> None:
    table = GUIDE.read_text().split("## Exit codes", 1)[1].split("\n\n", 2)[1]
    listed = {int(m) for m in re.findall(r"^\| (\d+) \|", table, flags=re.M)}
    assert {c.exit_code for c in _tree()} <= listed
