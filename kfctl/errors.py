"""The one error tree of kfctl.

Every error a user can cause or meet derives from :class:`KfctlError`. Each class carries the process
exit code for its family and an optional hint that says what to do. Lower layers raise these (chaining
the original cause with ``raise ... from e``); only the CLI catches and prints them.
"""

from __future__ import annotations


class KfctlError(Exception):
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


# With --detailed-exitcode (as Terraform's): the command succeeded and apply changed something / diff found a
# difference. Without the flag both exit 0 either way, so `set -e` scripts live with a no-op.
EXIT_CHANGES = 15

# `kfctl check`: every check passed but some warned / a check failed (the report names each, with a hint).
EXIT_CHECK_WARNINGS = 13
EXIT_CHECK_FAILED = 14

# `kfctl migrate --check`: an application, a part of a stack or a setting of the v1 KfDef has no place in the
# catalog (each is listed with the reason). Not an error: the migration itself worked.
EXIT_MIGRATE_DROPPED = 16


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
