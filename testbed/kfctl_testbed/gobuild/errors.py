"""The build's one error tree: each class carries the exit code `e2e/build-binaries` has always used for it.

Only the command line (`cli.main`) catches these and prints them; nothing else prints an error.
"""

from __future__ import annotations


class BuildError(Exception):
    """A build that cannot go on; `str(e)` is the whole message (it may span lines), without the prefix."""

    exit_code = 1


class UsageError(BuildError):
    """An argument the command does not know."""

    exit_code = 2


class PinError(BuildError):
    """versions.env lacks a version, or a wrapper module pins another one than versions.env says."""

    exit_code = 2


class NoToolchain(BuildError):
    """No `go` on PATH."""

    exit_code = 3


class GoFailed(BuildError):
    """A go command failed; it printed why on stderr. Exits with go's own status, as the script did."""

    def __init__(self, message: str, *, returncode: int) -> None:
        super().__init__(message)
        self.exit_code = returncode or 1
