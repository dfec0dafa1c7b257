"""The one tree of kfctl's exit codes: its errors, and the findings a command that succeeded reports by its code.

Every way a command ends, other than success (0) and a crash, is a class here under :class:`ExitStatus`, with
its exit code (the user guide's table, docs/usage.md, lists them). Every error a user can cause or meet derives from
:class:`KfctlError`, which carries an optional hint that says what to do; lower layers raise these (chaining
the original cause with ``raise ... from e``) and only the CLI catches and prints them. A :class:`Finding` is
not raised: the command did its job, printed its report, and says what it found by its exit code (``kfctl check``
warned, ``--detailed-exitcode`` and something changed …).
"""

from __future__ import annotations


class ExitStatus:
    """A way a kfctl command ends other than success: its exit code, and a word for it."""

    exit_code = 1
    kind = "error"


class Finding(ExitStatus):
    """The command succeeded and reports what it found by its exit code (the output names each finding)."""


class CheckWarned(Finding):
    """`kfctl check`: every check passed or was skipped, but some warned."""

    exit_code = 13
    kind = "check warned"


class CheckFailed(Finding):
    """`kfctl check`: at least one check failed (the report names each, with a hint)."""

    exit_code = 14
    kind = "check failed"


class Changed(Finding):
    """With --detailed-exitcode (as Terraform's): apply changed something / diff found a difference. Without the
    flag both exit 0 either way, so `set -e` scripts live with a no-op."""

    exit_code = 15
    kind = "changed"


class MigrationDropped(Finding):
    """`kfctl migrate --check`: an application, a part of a stack or a setting of the v1 KfDef has no place in the
    catalog (each is listed with the reason). Not an error: the migration itself worked."""

    exit_code = 16
    kind = "dropped in migration"


class KfctlError(ExitStatus, Exception):
    """Base of every error kfctl reports to a user."""

    exit_code = 1
    kind = "error"

    def __init__(self, message: str, *, hint: str | None = None, details: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details: list[str] = list(details or [])

    def __str__(self) -> str:
        return self.message


class UsageError(KfctlError):
    """The command line itself is wrong (bad flag combination, missing app directory)."""

    exit_code = 2
    kind = "usage error"


class ConfigError(KfctlError):
    """The KfDef, the catalog metadata or a lock file is invalid. ``details`` lists every problem."""

    exit_code = 3
    kind = "config error"


class RenderError(KfctlError):
    """kustomize failed, is missing or too old, or its output is not a valid object stream."""

    exit_code = 4
    kind = "render error"


class FetchError(RenderError):
    """The bytes a repo or remote base names could not be had: the network, an HTTP status, a missing archive.
    A render error of its own code, so that a script tells "try again, or use a mirror" from "fix the manifests".
    ``not_found`` says the source answered that there is no such thing (HTTP 404/410, no such file), so a caller
    trying several spellings of one name moves on to the next rather than stopping."""

    exit_code = 10
    kind = "fetch error"

    def __init__(
        self, message: str, *, hint: str | None = None, details: list[str] | None = None, not_found: bool = False
    ) -> None:
        super().__init__(message, hint=hint, details=details)
        self.not_found = not_found


class PlanError(KfctlError):
    """The objects cannot be ordered: a dependency cycle or a missing dependency."""

    exit_code = 5
    kind = "plan error"


class ClusterError(KfctlError):
    """The cluster cannot be reached or refuses us (kubeconfig, connection, authentication)."""

    exit_code = 6
    kind = "cluster error"


class ApiDeniedError(ClusterError):
    """The API server rejected a request for good: schema (422), RBAC (403), a webhook denial."""

    exit_code = 7
    kind = "API denied"


class HealthError(KfctlError):
    """Objects were applied but did not become healthy, or the wait timed out."""

    exit_code = 8
    kind = "health failure"


class StaleOutputError(KfctlError):
    """``generate --check`` found committed output that differs from a fresh render."""

    exit_code = 9
    kind = "stale output"


class OwnershipError(KfctlError):
    """Objects the bundle would write exist already under another owner (a Helm release, Argo CD, another
    kfctl install …): kfctl refuses before writing anything, as Helm and kapp do, unless told to adopt them."""

    exit_code = 11
    kind = "ownership conflict"


class LockedError(KfctlError):
    """Another kfctl run of the same install (apply, delete) holds its Lease and did not free it in time."""

    exit_code = 12
    kind = "locked"


class CancelledError(KfctlError):
    """The user answered no to a confirmation (``kfctl delete`` on a terminal); nothing was changed."""

    exit_code = 1
    kind = "cancelled"


class InterruptedError_(KfctlError):
    """The user pressed Ctrl-C; state in the cluster is left consistent (the inventory is a superset)."""

    exit_code = 130
    kind = "interrupted"


class TerminatedError(InterruptedError_):
    """SIGTERM stopped kfctl (a container runtime, `timeout(1)`, Argo CD's plugin deadline): as Ctrl-C, with the
    exit code a shell reports for a process SIGTERM ended (128 + 15)."""

    exit_code = 143


def must_be(what: str, expected: str, value: object, *, present: bool = True) -> str:
    """``WHAT must be EXPECTED, got 'VALUE'`` for a message; a value that is not there says so ("is missing", "is
    empty") rather than printing Python's ``None``, which is no word a KfDef or a catalog file has. ``what`` may be
    "" where the message's place names the field already (``kfdef.yaml:1:1 apiVersion: is empty; …``)."""
    subject = f"{what} " if what else ""
    if not present:
        return f"{subject}is missing; it must be {expected}"
    if value is None or value == "":
        return f"{subject}is empty; it must be {expected}"
    return f"{subject}must be {expected}, got {value!r}"
