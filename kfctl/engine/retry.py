"""Which API failures are worth retrying, and how long to wait before the next try.

An API error is judged by the Status the server sent: its ``reason`` and ``details.causes``, not by
searching its message (which changes between Kubernetes releases and is written for people). Where the body
is not a Status (a proxy's HTML page) or names a reason this module does not know, the HTTP code stands in
for it, as client-go's ``IsConflict``/``IsInvalid``… do (apimachinery ``api/errors``: an unknown reason
falls back to the code).

Transient (retried): ``TooManyRequests`` (honouring Retry-After), ``InternalError``/``ServerTimeout``/
``Timeout``/``ServiceUnavailable`` and any 5xx (an API server restarting, etcd slow, a webhook that cannot
be called: "failed calling webhook" is an InternalError), ``NotFound`` (apply creates what is missing, so
the namespace or the kind's handler is not there *yet*), ``Forbidden`` with a ``NamespaceTerminating``
cause, optimistic-lock ``Conflict``s, connection errors and a kind not (yet) served after a mapping refresh.

Final: ``Invalid`` (the schema or validation refused a field: each cause's field is quoted), ``Forbidden``
(RBAC), ``AlreadyExists``, any other ``Conflict`` (a field-manager conflict, a failed UID precondition),
``BadRequest``/``Unauthorized``… and webhook *denials*. Retrying cannot help those.

Three checks read text because the Status carries nothing better, and are the only ones that do:

- A webhook denial has whatever reason and code the webhook chose; the API server only guarantees the
  message's opening, ``admission webhook "<name>" denied the request`` (apiserver ``webhook/errors``
  ``ToStatusErr``).
- ``Conflict`` is both the optimistic lock ("the object has been modified; please apply your changes to the
  latest version and try again", apiserver ``registry.OptimisticLockErrorMsg``: someone wrote in between, so
  the next try is likely to pass) and a failed precondition (the object was replaced: retrying cannot make
  its UID ours). Neither has causes; the message tells them apart. A field-manager conflict does have causes
  (``FieldManagerConflict``) and is final: kfctl applies with force, so one means it was asked not to.
- An immutable field is an ``Invalid`` cause like any other (``FieldValueInvalid``, ``FieldValueForbidden``);
  only its message says "field is immutable" (or "spec is immutable after creation").
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from kfctl.k8s.api import ApiError, NoKindMatch, Unreachable

Verdict = Literal["transient", "denied", "immutable", "fatal"]

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
TRANSIENT_REASONS = frozenset({"InternalError", "ServerTimeout", "Timeout", "ServiceUnavailable", "NotFound"})
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
KNOWN_REASONS = TRANSIENT_REASONS | DENIED_REASONS | {"TooManyRequests", "Gone", "Expired"}
WEBHOOK_DENIAL = re.compile(r'admission webhook "[^"]+" denied the request')
_OPTIMISTIC_LOCK = "the object has been modified"
_IMMUTABLE = ("field is immutable", "is immutable after creation")


@dataclass(frozen=True)
class Classified:
    verdict: Verdict
    message: str
    retry_after: float | None = None
    fields: tuple[str, ...] = ()  # the field paths an immutable or invalid verdict is about


def classify(err: BaseException) -> Classified:
    if isinstance(err, Unreachable):
        return Classified("transient", f"cannot reach the API server: {err}")
    if isinstance(err, NoKindMatch):
        return Classified("transient", str(err))
    if not isinstance(err, ApiError):
        return Classified("fatal", f"{type(err).__name__}: {err}")
    text = err.message
    reason = err.reason if err.reason in KNOWN_REASONS else _reason_for_code(err.status)
    causes = [c for c in err.causes if isinstance(c, Mapping)]
    if WEBHOOK_DENIAL.search(text):
        return Classified("denied", text)
    if reason == "TooManyRequests":
        return Classified("transient", f"throttled: {text}", retry_after=err.retry_after)
    if reason in TRANSIENT_REASONS:
        # NotFound: apply creates what is missing, so the place is not there yet: its namespace (made by
        # someone else), or a kind whose CRD was just Established but whose handler the API server has not
        # started ("the server could not find the requested resource").
        return Classified("transient", text, retry_after=err.retry_after)
    if reason == "Conflict":
        if not _caused_by(causes, "FieldManagerConflict") and _OPTIMISTIC_LOCK in text:
            return Classified("transient", text, retry_after=err.retry_after)
        return Classified("denied", text)
    if reason == "Forbidden" and _caused_by(causes, "NamespaceTerminating"):
        return Classified("transient", text, retry_after=err.retry_after)
    if reason == "Invalid":
        return _invalid(text, causes)
    return Classified("denied" if reason in DENIED_REASONS else "fatal", text)


def _reason_for_code(status: int) -> str:
    """apimachinery's NewGenericServerResponse: the code's reason, and any other 5xx is an InternalError."""
    return REASON_FOR_CODE.get(status) or ("InternalError" if status >= 500 else "")


def _caused_by(causes: list[Mapping[str, Any]], reason: str) -> bool:
    return any(c.get("reason") == reason for c in causes)


def _invalid(text: str, causes: list[Mapping[str, Any]]) -> Classified:
    """An Invalid Status: immutable fields, else each refused field with what is wrong with it."""
    immutable = tuple(
        str(c.get("field") or "?") for c in causes if any(m in str(c.get("message", "")) for m in _IMMUTABLE)
    )
    if immutable:
        return Classified("immutable", text, fields=immutable)
    fields = [c for c in causes if c.get("field")]
    if not fields:
        return Classified("denied", text)
    said = "; ".join(f"{c['field']}: {c.get('message') or c.get('reason') or 'invalid'}" for c in fields)
    return Classified("denied", f"schema denial: {said}", fields=tuple(str(c["field"]) for c in fields))


def backoff(attempt: int, *, retry_after: float | None = None, cap: float = 10.0) -> float:
    """Seconds before retry number ``attempt`` (1-based): 0.5, 1, 2, 4 … capped; Retry-After wins."""
    if retry_after is not None:
        return max(0.0, min(retry_after, 60.0))
    return float(min(cap, 0.5 * 2 ** max(0, attempt - 1)))


T = TypeVar("T")


def retry_transient(
    fn: Callable[[], T],
    *,
    deadline: float,
    cap: float = 10.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[Classified, float], None] | None = None,
    give_up: Callable[[BaseException], bool] = lambda _e: False,
) -> T:
    """``fn()``, retried with backoff while it fails transiently and ``deadline`` (on ``clock``) allows.

    The one retry loop for calls outside the scheduler (inventory reads and writes, prune and delete), so
    that a restarting API server is ridden out the same way everywhere. ``give_up`` stops early on an error
    that is transient in general but final for this caller (a failed UID precondition).
    """
    attempt = 0
    while True:
        try:
            return fn()
        except (ApiError, Unreachable) as e:
            c = classify(e)
            attempt += 1
            if give_up(e) or c.verdict != "transient" or clock() > deadline:
                raise
            delay = backoff(attempt, retry_after=c.retry_after, cap=cap)
            if on_retry is not None:
                on_retry(c, delay)
            sleep(delay)
