"""The data of each generated Secret as apply sends it: what the cluster holds already, plus the keys it lacks
drawn at random (stdlib ``secrets``, a CSPRNG). Never overwrites a value: re-apply, upgrade and a reinstall
after a delete that kept the volume all carry the password that matches the data.

Values live in memory only: this module returns them to the caller that puts them into the object it applies,
and keeps them out of ``repr`` so that no error message or log line can show them.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from kfctl.catalog.model import ALPHABETS, SecretKey
from kfctl.k8s.api import Cluster
from kfctl.objects import Obj, ObjectKey, key_of
from kfctl.secrets.declared import Declared
from kfctl.secrets.upstream import SHARED_DEFAULTS

# The fixed credentials kfctl's catalog shipped to every install before it generated them. An install made
# then keeps them (they open its data); apply says so, by key, so that they get changed.
FORMER_DEFAULTS = frozenset(
    {
        "kfp-default-mysql-password-change-me",
        "kfp-default-access-key",
        "kfp-default-secret-key-change-me",
        "katib-default-mysql-password-change-me",
    }
)
SHARED = FORMER_DEFAULTS | SHARED_DEFAULTS  # and upstream's, which an install made before kfctl replaced them holds


def draw(key: SecretKey) -> str:
    """A fresh random value for ``key``: ``length`` characters of its alphabet, each chosen by the CSPRNG."""
    alphabet = ALPHABETS[key.alphabet]
    return "".join(secrets.choice(alphabet) for _ in range(key.length))


@dataclass(frozen=True)
class SecretValues:
    """Per generated Secret, its data (base64, as the API stores it) and which keys were drawn in this run."""

    data: Mapping[ObjectKey, Mapping[str, str]] = field(default_factory=dict, repr=False)
    drawn: Mapping[ObjectKey, tuple[str, ...]] = field(default_factory=dict)  # random keys new in this run
    fixed: Mapping[ObjectKey, tuple[str, ...]] = field(default_factory=dict)  # fixed keys (a user name) new in it
    carried: Mapping[ObjectKey, tuple[str, ...]] = field(default_factory=dict)  # keys the cluster had
    shared: Mapping[ObjectKey, tuple[str, ...]] = field(default_factory=dict)  # carried keys holding a former default
    orphaned: Mapping[ObjectKey, str] = field(default_factory=dict)  # drawn, though the claim it protects exists


def read_values(
    cluster: Cluster,
    wanted: Iterable[Declared],
    *,
    make: Callable[[SecretKey], str] = draw,
    known: Mapping[ObjectKey, Obj | None] | None = None,
) -> SecretValues:
    """Reads each generated Secret; keeps every value it holds and draws (or sets, for a fixed key) the rest.

    ``known``: what apply's ownership scan read moments before under the same lock (an object of this install,
    whole, or None for absent): a Secret or claim found there is not read again."""
    seen = known or {}

    def get(kind: str, namespace: str, name: str) -> Obj | None:
        key = ObjectKey("", kind, namespace, name)
        if key in seen:
            return seen[key]
        return cluster.get("v1", kind, namespace=namespace, name=name)

    data: dict[ObjectKey, dict[str, str]] = {}
    drawn: dict[ObjectKey, tuple[str, ...]] = {}
    fixed: dict[ObjectKey, tuple[str, ...]] = {}
    carried: dict[ObjectKey, tuple[str, ...]] = {}
    shared: dict[ObjectKey, tuple[str, ...]] = {}
    orphaned: dict[ObjectKey, str] = {}
    generated = [s for s in wanted if s.generated]
    held = {s.key: dict((get("Secret", s.namespace, s.name) or {}).get("data") or {}) for s in generated}
    text: dict[str, str] = {}  # "namespace/name/key" -> the value (decoded), for the keys made from another
    new: dict[ObjectKey, list[str]] = {}
    # Keys made from another come second, once every value they may be made from is known.
    for derived_pass in (False, True):
        for secret in generated:
            have = held[secret.key]
            out = data.setdefault(secret.key, {})
            for key in secret.spec.keys:
                if bool(key.derived_from) != derived_pass:
                    continue
                where = f"{secret.namespace}/{secret.name}/{key.name}"
                if key.derived_from:
                    value = _derived(key, text.get(key.derived_from, ""), have.get(key.name))
                    if value is None:
                        out[key.name] = str(have[key.name])
                    else:
                        out[key.name] = base64.b64encode(value.encode()).decode()
                        new.setdefault(secret.key, []).append(key.name)
                    text[where] = _decoded(out[key.name])
                    continue
                if key.name in have:
                    out[key.name] = str(have[key.name])
                    text[where] = _decoded(have[key.name])
                    continue
                value = key.value if key.value is not None else make(key)
                out[key.name] = base64.b64encode(value.encode()).decode()
                text[where] = value
                new.setdefault(secret.key, []).append(key.name)
    for secret in generated:
        have, made = held[secret.key], new.get(secret.key, [])
        drawn[secret.key] = tuple(k.name for k in secret.spec.keys if k.name in made and k.generated)
        fixed[secret.key] = tuple(k.name for k in secret.spec.keys if k.name in made and not k.generated)
        carried[secret.key] = tuple(k for k in secret.spec.key_names if k in have and k not in made)
        shared[secret.key] = tuple(k for k in carried[secret.key] if _decoded(have[k]) in SHARED)
        # Drawn while the data stays: the volume was initialised with values this install no longer has.
        claim = secret.spec.protects
        if drawn[secret.key] and claim and get("PersistentVolumeClaim", secret.namespace, claim) is not None:
            orphaned[secret.key] = claim
    return SecretValues(data, drawn, fixed, carried, shared, orphaned)


def _derived(key: SecretKey, source: str, held: object) -> str | None:
    """The value of a key made from ``source``: None to keep what the cluster holds (a copy already there, or a
    hash that still checks against the password), else the value to write. A copy never overwrites (it was
    made from the source, or someone set both); a hash that no longer checks is made again, or Dex would refuse
    the password kfctl shows."""
    if key.same_as:
        return None if held is not None else source
    import bcrypt  # about 10 ms to import; only an install with such a key pays it

    if held is not None:
        try:
            if source and bcrypt.checkpw(source.encode(), _decoded(held).encode()):
                return None
        except ValueError:  # not a bcrypt hash: make one
            pass
    # Cost 12 as upstream's hash; Dex refuses hashes below 10.
    return bcrypt.hashpw(source.encode(), bcrypt.gensalt(rounds=12)).decode()


def _decoded(value: object) -> str:
    try:
        return base64.b64decode(str(value)).decode()
    except ValueError:  # not base64 (binascii.Error) or not UTF-8 (UnicodeDecodeError): no former default
        return ""


def with_data(prepared: Obj, values: SecretValues) -> Obj:
    """A generated Secret as apply sends it: the planned object (labels and content hash already on it, so the
    hash never depends on a value) with its data. Values not read first is kfctl's bug, never an empty Secret:
    a server-side apply without the data would delete the keys kfctl applied before."""
    key = key_of(prepared)
    if key not in values.data:
        raise RuntimeError(f"{key}: the generated Secret's values were not read before applying it")
    return {**prepared, "data": dict(values.data[key])}
