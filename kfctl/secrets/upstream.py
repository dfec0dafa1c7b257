"""Upstream's shared login credentials, generated per install instead (issue 18's rule for upstream's trees).

kubeflow/manifests (v1.10.0, v1.11.0, 26.03) ships every install the same login: Dex's static user
``user@example.com`` with password ``12341234`` (its bcrypt hash in Secret ``auth/dex-passwords``, which Dex's
config reads with ``hashFromEnv: DEX_USER_PASSWORD``), and one OIDC client secret in both Dex's
``auth/dex-oidc-client`` and oauth2-proxy's ``oauth2-proxy/oauth2-proxy`` (beside a fixed cookie secret). Anyone
who read upstream's README can log in to such a platform, and forge its session cookies.

When a rendered application holds one of those Secrets with upstream's value, kfctl plans it as a generated
Secret instead (kfctl.secrets.declared), the way the catalog's components declare theirs: the password is drawn
for the install and kept, with the user name, in Secret ``auth/kfctl-login`` (what `kfctl dashboard` points
at), Dex's Secret holds its bcrypt hash, the client secret is drawn once and copied into oauth2-proxy's, the
cookie secret drawn. A value the KfDef's trees changed is theirs: a Secret keeps what it renders unless the
value is upstream's. Keys that are not secret (the client id) are kept as rendered.

Reads rendered objects only; makes no value (kfctl.secrets.values does, at apply).
"""

from __future__ import annotations

import base64
import dataclasses
import re
from dataclasses import dataclass

import yaml

from kfctl.catalog.model import GeneratedSecret, SecretKey
from kfctl.objects import Obj, key_of
from kfctl.secrets.declared import Declared

LOGIN_SECRET = "kfctl-login"  # noqa: S105 (a name)
LOGIN_SECRET_NAMESPACE = "auth"  # noqa: S105 (Dex's namespace in upstream's trees)
DEFAULT_USER = "user@example.com"  # upstream's static user, when its Dex config cannot be read
UPSTREAM_PASSWORD = "12341234"  # noqa: S105 (what kfctl replaces) the login upstream's README gives for that user
# Upstream's fixed OIDC client secret and oauth2-proxy cookie secret (common/dex/base/secret_params.env,
# common/oauth2-proxy/base/kustomization.yaml): the same in v1.10.0, v1.11.0 and 26.03.
CLIENT_SECRET = "pUBnBOY80SnXgjibTYM9ZWNzY2xreNGQok"  # noqa: S105 (what kfctl replaces)
COOKIE_SECRET = "7d16fee92f8d11b8940b081b3f8b8acb"  # noqa: S105 (what kfctl replaces)
SHARED_DEFAULTS = frozenset({CLIENT_SECRET, COOKIE_SECRET})

HASHED = re.compile(r"[a-z0-9]{10}")  # the suffix kustomize's secretGenerator adds: a hash of the content
DEX_PASSWORDS = ("auth", "dex-passwords")
DEX_CLIENT = ("auth", "dex-oidc-client")
PROXY = ("oauth2-proxy", "oauth2-proxy")
HASH_KEY = "DEX_USER_PASSWORD"
PASSWORD = f"{LOGIN_SECRET_NAMESPACE}/{LOGIN_SECRET}/password"
CLIENT = f"{DEX_CLIENT[0]}/{DEX_CLIENT[1]}/OIDC_CLIENT_SECRET"


@dataclass(frozen=True)
class Rule:
    """A key of an upstream Secret that holds a shared value, and how kfctl makes it per install."""

    namespace: str
    secret: str
    key: str
    make: SecretKey
    description: str


RULES = (
    Rule(*DEX_PASSWORDS, HASH_KEY, SecretKey(HASH_KEY, bcrypt_of=PASSWORD), "Dex's static user's password hash"),
    Rule(*DEX_CLIENT, "OIDC_CLIENT_SECRET", SecretKey("OIDC_CLIENT_SECRET", 32), "Dex's OIDC client for oauth2-proxy"),
    Rule(*PROXY, "client-secret", SecretKey("client-secret", same_as=CLIENT), "oauth2-proxy's OIDC client"),
    Rule(*PROXY, "cookie-secret", SecretKey("cookie-secret", 32, alphabet="hex"), "oauth2-proxy's cookie secret"),
)


def is_upstream_default(rule: Rule, value: str) -> bool:
    """Whether ``value`` is what upstream ships in the rule's key (a hash of upstream's password counts, whoever
    hashed it)."""
    if rule.make.bcrypt_of:
        return _checks(UPSTREAM_PASSWORD, value)
    return value in SHARED_DEFAULTS


def _checks(password: str, hashed: str) -> bool:
    import bcrypt  # about 10 ms to import; only a KfDef with such a Secret pays it

    try:
        return bcrypt.checkpw(password.encode(), hashed.encode())
    except ValueError:  # not a bcrypt hash
        return False


def replace_fixed(
    rendered: list[tuple[str, tuple[Obj, ...]]],
) -> tuple[list[tuple[str, tuple[Obj, ...]]], list[Declared]]:
    """The rendered applications without upstream's shared-credential Secrets, and the generated Secrets that
    take their place (plus ``auth/kfctl-login`` when Dex's password is one of them). A Secret a kustomize
    secretGenerator made carries its content hash in its name (oauth2-proxy's: ``oauth2-proxy-<hash>``): it is
    found by the name it was generated from, and generated under the name the workloads refer to."""
    found: dict[tuple[str, str], tuple[str, str, dict[str, str]]] = {}  # (ns, rule's name) -> (app, name, values)
    for app, objs in rendered:
        for o in objs:
            k = key_of(o)
            base = _rule_name(k.namespace, k.name) if k.kind == "Secret" and not k.group else None
            if base is not None:
                found[(k.namespace, base)] = (app, k.name, _values(o))
    shared = {
        (r.namespace, r.secret, r.key): r
        for r in RULES
        if (r.namespace, r.secret) in found and is_upstream_default(r, found[(r.namespace, r.secret)][2].get(r.key, ""))
    }
    # A copy of a key kfctl does not draw would differ from its source: leave such a Secret as it renders.
    derived = {f"{ns}/{name}/{key}" for ns, name, key in shared}
    shared = {k: r for k, r in shared.items() if not r.make.same_as or r.make.same_as in derived}
    if not shared:
        return rendered, []
    actual = {f"{ns}/{base}/": f"{ns}/{name}/" for (ns, base), (_app, name, _v) in found.items()}
    out: list[Declared] = []
    replaced: set[tuple[str, str]] = set()
    for (ns, base), (app, name, values) in found.items():
        rules = {r.key: r for (n, s, _k), r in shared.items() if (n, s) == (ns, base)}
        if not rules:
            continue
        if base == DEX_PASSWORDS[1] and HASH_KEY in rules:
            out.append(_login(app, rendered))
        keys = tuple(
            _named(rules[k].make, actual) if k in rules else SecretKey(k, value=v) for k, v in sorted(values.items())
        )
        what = "; ".join(r.description for r in rules.values())
        spec = GeneratedSecret(name, f"{what} (upstream ships one value to every install)", keys)
        out.append(Declared(app, app, ns, spec, replaces_rendered=True))
        replaced.add((ns, name))
    kept = [(app, tuple(o for o in objs if not _among(o, replaced))) for app, objs in rendered]
    return kept, out


def _rule_name(namespace: str, name: str) -> str | None:
    """The name of the rule's Secret that ``name`` is, itself or with a secretGenerator's hash suffix."""
    for r in RULES:
        if r.namespace != namespace:
            continue
        if name == r.secret or (name.startswith(r.secret + "-") and HASHED.fullmatch(name[len(r.secret) + 1 :])):
            return r.secret
    return None


def _named(key: SecretKey, actual: dict[str, str]) -> SecretKey:
    """``key`` with the Secret it is made from named as rendered (a hash suffix, if kustomize gave one)."""

    def rename(ref: str) -> str:
        for base, real in actual.items():
            if ref.startswith(base):
                return real + ref[len(base) :]
        return ref

    return dataclasses.replace(key, same_as=rename(key.same_as)) if key.same_as else key


def _among(o: Obj, secrets: set[tuple[str, str]]) -> bool:
    k = key_of(o)
    return k.kind == "Secret" and not k.group and (k.namespace, k.name) in secrets


def _login(app: str, rendered: list[tuple[str, tuple[Obj, ...]]]) -> Declared:
    keys = (SecretKey("username", value=_dex_user(rendered)), SecretKey("password", 20))
    spec = GeneratedSecret(
        LOGIN_SECRET, "the login kfctl made for Dex's static user: its user name and password (kfctl dashboard)", keys
    )
    return Declared(app, app, LOGIN_SECRET_NAMESPACE, spec)


def _dex_user(rendered: list[tuple[str, tuple[Obj, ...]]]) -> str:
    """The email of the static user whose hash Dex reads from DEX_USER_PASSWORD (Dex's ConfigMap ``dex``)."""
    for _app, objs in rendered:
        for o in objs:
            k = key_of(o)
            if k.kind != "ConfigMap" or k.name != "dex" or k.namespace != DEX_PASSWORDS[0]:
                continue
            try:
                config = yaml.safe_load(str((o.get("data") or {}).get("config.yaml") or "")) or {}
            except yaml.YAMLError:
                continue
            for user in config.get("staticPasswords") or [] if isinstance(config, dict) else []:
                if isinstance(user, dict) and user.get("hashFromEnv") == HASH_KEY and user.get("email"):
                    return str(user["email"])
    return DEFAULT_USER


def _values(secret: Obj) -> dict[str, str]:
    """A rendered Secret's keys and values, decoded (``data`` is base64, ``stringData`` text and wins)."""
    out: dict[str, str] = {}
    for k, v in (secret.get("data") or {}).items():
        try:
            out[str(k)] = base64.b64decode(str(v)).decode()
        except ValueError:
            out[str(k)] = ""
    out.update({str(k): str(v) for k, v in (secret.get("stringData") or {}).items()})
    return out
