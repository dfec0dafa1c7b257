"""What went wrong talking to the API server, typed where it is met: the one place that reads an answer's Status.

Every :class:`ApiError` is born as the subclass its Status says (``ApiError(409, "...")`` gives an
:class:`OptimisticLock` or a :class:`Conflict`), so that the client, the test fakes and every caller see the
same types and nobody above this module reads a status code, a reason or a message to decide what to do:

- :class:`Transient` — retrying may help: :class:`Unreachable` (connection refused, reset, timed out),
  :class:`NoKindMatch` (a kind not served yet), :class:`Throttled` (429, honouring Retry-After),
  :class:`Unavailable` (``InternalError``/``ServerTimeout``/``Timeout``/``ServiceUnavailable`` and any 5xx: an
  API server restarting, etcd slow, a webhook that cannot be called), :class:`NotFound` (apply creates what is
  missing, so its namespace or its kind's handler is not there *yet*), :class:`OptimisticLock` (someone wrote
  in between) and :class:`NamespaceTerminating` (a Forbidden whose cause says so);
- :class:`Denied` — final, retrying cannot help: :class:`Invalid` (each refused field quoted),
  :class:`Immutable` (an immutable field changed), :class:`WebhookDenied`, :class:`Conflict` (a field-manager
  conflict, a :class:`PreconditionFailed`), :class:`Forbidden` (RBAC or an admission plugin),
  :class:`Unauthorized` (credentials refused), :class:`AlreadyExists`, :class:`MethodNotAllowed` (a kind that
  cannot be listed), and ``BadRequest``, ``UnsupportedMediaType`` … as a plain :class:`Denied`;
- a plain :class:`ApiError` — a reason this module does not know (``Gone``, ``Expired``): final too.

An answer is judged by its Status's ``reason`` and ``details.causes``, not by its message (which changes
between Kubernetes releases and is written for people). Where the body is not a Status (a proxy's HTML page)
or names a reason not known here, the HTTP code stands in for it, as client-go's ``IsConflict``/
``IsInvalid``… do (apimachinery ``api/errors``: an unknown reason falls back to the code).

The checks that read text, because the Status carries nothing better, are all here:

- A webhook denial has whatever reason and code the webhook chose; the API server only guarantees the
  message's opening, ``admission webhook "<name>" denied the request`` (apiserver ``webhook/errors``
  ``ToStatusErr``). A webhook the API server could not call is an InternalError whose message names it
  (``failed calling webhook "<name>"``): :attr:`ApiError.failed_webhook`, and why, for `kfctl check`.
- ``Conflict`` is both the optimistic lock ("the object has been modified; please apply your changes to the
  latest version and try again", apiserver ``registry.OptimisticLockErrorMsg``: someone wrote in between, so
  the next try is likely to pass) and a failed precondition (the object was replaced: retrying cannot make
  its UID ours). Neither has causes; the message tells them apart. A field-manager conflict does have causes
  (``FieldManagerConflict``) and is final: kfctl applies with force, so one means it was asked not to.
- An immutable field is an ``Invalid`` cause like any other (``FieldValueInvalid``, ``FieldValueForbidden``);
  only its message says "field is immutable" (or "spec is immutable after creation").

This module does not import ``kubernetes`` and knows nothing of kfctl's own error tree (:mod:`kfctl.errors`):
turning these into what a user reads is the callers' job.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# The reason for a code when the body names none we know (apimachinery NewGenericServerResponse).
REASON_FOR_CODE = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
UNAVAILABLE_REASONS = frozenset({"InternalError", "ServerTimeout", "Timeout", "ServiceUnavailable"})
DENIED_REASONS = frozenset(
    {
        "BadRequest",
        "Unauthorized",
        "Forbidden",
        "MethodNotAllowed",
        "NotAcceptable",
        "AlreadyExists",
        "Conflict",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "Invalid",
    }
)
KNOWN_REASONS = UNAVAILABLE_REASONS | DENIED_REASONS | {"NotFound", "TooManyRequests", "Gone", "Expired"}
WEBHOOK_DENIAL = re.compile(r'admission webhook "[^"]+" denied the request')
FAILED_CALL = re.compile(r'failed calling webhook "([^"]+)"')
UNTRUSTED = ("x509:", "certificate signed by unknown authority")
SERVICE_NOT_FOUND = re.compile(r'service "([^"]+)" not found')
_OPTIMISTIC_LOCK = "the object has been modified"
_PRECONDITION = ("Precondition failed", "UID")
_IMMUTABLE = ("field is immutable", "is immutable after creation")


class KubeError(Exception):
    """A failure of the conversation with the API server."""

    retry_after: float | None = None  # seconds the server asked us to wait (Retry-After)

    @property
    def explanation(self) -> str:
        """What went wrong, for a person (an event, a failure's message)."""
        return str(self)

    @property
    def fields(self) -> tuple[str, ...]:
        """The field paths an :class:`Invalid` or :class:`Immutable` answer is about."""
        return ()


class Transient(KubeError):
    """Retrying may help."""


class Unreachable(Transient):
    """The connection to the API server failed (refused, reset, timed out, TLS)."""

    @property
    def explanation(self) -> str:
        return f"cannot reach the API server: {self}"


class NoKindMatch(Transient):
    """Discovery does not know the kind (its CRD is missing or not yet served)."""

    def __init__(self, group: str, version: str, kind: str) -> None:
        api = f"{group}/{version}" if group else version
        super().__init__(f'no matches for kind "{kind}" in version "{api}"')
        self.group, self.version, self.kind = group, version, kind


class ApiError(KubeError):
    """The API server answered with a non-success status; constructed, it is the subclass that answer is."""

    def __new__(
        cls,
        status: int,
        message: str,
        *,
        reason: str = "",
        retry_after: float | None = None,
        causes: list[Mapping[str, Any]] | None = None,
    ) -> ApiError:
        typed = _type_of(status, message, reason, causes or []) if cls is ApiError else cls
        return super().__new__(typed)

    def __init__(
        self,
        status: int,
        message: str,
        *,
        reason: str = "",
        retry_after: float | None = None,
        causes: list[Mapping[str, Any]] | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}" if reason else f"{status}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        self.causes: list[Mapping[str, Any]] = list(causes or [])

    @property
    def explanation(self) -> str:
        return self.message

    @property
    def failed_webhook(self) -> str | None:
        """The webhook the API server could not call (``failed calling webhook "<name>"``), if that is what
        this answer says."""
        call = FAILED_CALL.search(self.message)
        return call.group(1) if call else None

    @property
    def untrusted_certificate(self) -> bool:
        """The call to a webhook failed because the API server does not trust its certificate."""
        return any(u in self.message for u in UNTRUSTED)

    @property
    def missing_service(self) -> str | None:
        """The Service the API server says does not exist (``service "<name>" not found``), if any."""
        found = SERVICE_NOT_FOUND.search(self.message)
        return found.group(1) if found else None


class Throttled(ApiError, Transient):
    """429 TooManyRequests: wait (Retry-After), then again."""

    @property
    def explanation(self) -> str:
        return f"throttled: {self.message}"


class Unavailable(ApiError, Transient):
    """A 5xx: an API server restarting, etcd slow, a webhook that cannot be called ("failed calling webhook")."""


class NotFound(ApiError, Transient):
    """404: for apply, the place is not there yet — its namespace (made by someone else), or a kind whose CRD
    was just Established but whose handler the API server has not started ("the server could not find the
    requested resource")."""


class OptimisticLock(ApiError, Transient):
    """409 "the object has been modified": someone wrote in between; the next try is likely to pass."""


class NamespaceTerminating(ApiError, Transient):
    """403 with a ``NamespaceTerminating`` cause: wait, then the namespace can be made again."""


class Denied(ApiError):
    """The API server refused for good: RBAC, a webhook's denial, the schema …; retrying cannot help."""


class Unauthorized(Denied):
    """401: the API server does not accept our credentials (authentication, not a refusal of one request)."""


class Forbidden(Denied):
    """403 Forbidden: RBAC, or an admission plugin, refused this request (the message names the user, the verb,
    the resource). Not a webhook's denial, whatever code the webhook chose, nor a terminating namespace."""


class AlreadyExists(Denied):
    """409 AlreadyExists: a create found the name taken (by someone who created it first)."""


class MethodNotAllowed(Denied):
    """405: the resource does not take this verb (a kind that cannot be listed)."""


class WebhookDenied(Denied):
    """An admission webhook denied the request (the message quotes it)."""


class Conflict(Denied):
    """A 409 that is not an optimistic lock: a field-manager conflict, a failed precondition."""


class PreconditionFailed(Conflict):
    """A UID (or resourceVersion) precondition failed: the object was replaced by someone else's since read."""


class Invalid(Denied):
    """422: the schema or validation refused fields; :attr:`explanation` quotes each with what is wrong."""

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(str(c["field"]) for c in self.causes if isinstance(c, Mapping) and c.get("field"))

    @property
    def explanation(self) -> str:
        refused = [c for c in self.causes if isinstance(c, Mapping) and c.get("field")]
        if not refused:
            return self.message
        said = "; ".join(f"{c['field']}: {c.get('message') or c.get('reason') or 'invalid'}" for c in refused)
        return f"schema denial: {said}"


class Immutable(Denied):
    """422 naming fields that cannot change once the object exists (a selector, a PVC's storage class …)."""

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(str(c.get("field") or "?") for c in self.causes if isinstance(c, Mapping) and _immutable(c))


# The final reasons with a type of their own; the other DENIED_REASONS are a plain Denied.
DENIED_AS: dict[str, type[ApiError]] = {
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "AlreadyExists": AlreadyExists,
    "MethodNotAllowed": MethodNotAllowed,
}


def _immutable(cause: Mapping[str, Any]) -> bool:
    return any(m in str(cause.get("message", "")) for m in _IMMUTABLE)


def _type_of(status: int, text: str, reason: str, causes: list[Mapping[str, Any]]) -> type[ApiError]:
    """The subclass an answer is: by its Status's reason and causes, the code standing in for a reason not
    known here; the message only where nothing else tells (see the module's docstring)."""
    reason = reason if reason in KNOWN_REASONS else _reason_for_code(status)
    causes = [c for c in causes if isinstance(c, Mapping)]
    caused_by = {c.get("reason") for c in causes}
    if WEBHOOK_DENIAL.search(text):
        return WebhookDenied
    if reason == "TooManyRequests":
        return Throttled
    if reason in UNAVAILABLE_REASONS:
        return Unavailable
    if reason == "NotFound":
        return NotFound
    if reason == "Conflict":
        if "FieldManagerConflict" not in caused_by and _OPTIMISTIC_LOCK in text:
            return OptimisticLock
        if "FieldManagerConflict" not in caused_by and any(p in text for p in _PRECONDITION):
            return PreconditionFailed
        return Conflict
    if reason == "Forbidden" and "NamespaceTerminating" in caused_by:
        return NamespaceTerminating
    if reason == "Invalid":
        return Immutable if any(_immutable(c) for c in causes) else Invalid
    return DENIED_AS.get(reason, Denied) if reason in DENIED_REASONS else ApiError


def _reason_for_code(status: int) -> str:
    """apimachinery's NewGenericServerResponse: the code's reason, and any other 5xx is an InternalError."""
    return REASON_FOR_CODE.get(status) or ("InternalError" if status >= 500 else "")
