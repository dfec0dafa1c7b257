"""Upstream's shared login (user@example.com / 12341234, one OIDC client secret, one cookie secret) is replaced
per install: the rendered Secrets that hold upstream's values become generated ones, Dex's holding the bcrypt hash
of a password drawn for the install and kept in auth/kfctl-login, oauth2-proxy's client secret the copy of
Dex's. Rendered objects shaped as kubeflow/manifests v1.11.0 renders them (common/dex, common/oauth2-proxy)."""

from __future__ import annotations

import base64
from typing import Any

import bcrypt
from fakecluster import FakeCluster, obj

from kfctl.objects import ObjectKey
from kfctl.secrets.upstream import CLIENT_SECRET, COOKIE_SECRET, replace_fixed
from kfctl.secrets.values import read_values

# oauth2-proxy's comes from a secretGenerator without disableNameSuffixHash: its name carries the content's hash.
PROXY_SECRET = "oauth2-proxy-g7k9t2h5m8"
UPSTREAM_HASH = bcrypt.hashpw(b"12341234", bcrypt.gensalt(rounds=4)).decode()
DEX_CONFIG = """issuer: http://dex.auth.svc.cluster.local:5556/dex
staticPasswords:
- email: user@example.com
  hashFromEnv: DEX_USER_PASSWORD
  username: user
"""


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def text(value: str) -> str:
    return base64.b64decode(value).decode()


def rendered(*, hash_: str = UPSTREAM_HASH, client: str = CLIENT_SECRET) -> list[tuple[str, tuple[Any, ...]]]:
    dex = (
        obj("v1", "ConfigMap", "dex", "auth", data={"config.yaml": DEX_CONFIG}),
        obj("v1", "Secret", "dex-passwords", "auth", stringData={"DEX_USER_PASSWORD": hash_}),
        obj("v1", "Secret", "dex-oidc-client", "auth", data={
            "OIDC_CLIENT_ID": b64("kubeflow-oidc-authservice"), "OIDC_CLIENT_SECRET": b64(client)}),
        obj("apps/v1", "Deployment", "dex", "auth"),
    )  # fmt: skip
    proxy = (
        obj("v1", "Secret", PROXY_SECRET, "oauth2-proxy", data={
            "client-id": b64("kubeflow-oidc-authservice"), "client-secret": b64(CLIENT_SECRET),
            "cookie-secret": b64(COOKIE_SECRET)}),
    )  # fmt: skip
    return [("oauth2-proxy-m2m-dex-only", proxy), ("dex-oauth2-proxy", dex)]


def names(objs: tuple[Any, ...]) -> list[str]:
    return [f"{o['kind']} {o['metadata']['name']}" for o in objs]


def test_upstreams_shared_secrets_become_generated_ones() -> None:
    kept, declared = replace_fixed(rendered())
    assert [(app, names(objs)) for app, objs in kept] == [
        ("oauth2-proxy-m2m-dex-only", []),
        ("dex-oauth2-proxy", ["ConfigMap dex", "Deployment dex"]),
    ]
    assert [(d.application, str(d.key), [(k.name, k.value, k.same_as, k.bcrypt_of) for k in d.spec.keys])
            for d in declared] == [
        ("oauth2-proxy-m2m-dex-only", "Secret oauth2-proxy/oauth2-proxy-g7k9t2h5m8", [
            ("client-id", "kubeflow-oidc-authservice", "", ""),
            ("client-secret", None, "auth/dex-oidc-client/OIDC_CLIENT_SECRET", ""),
            ("cookie-secret", None, "", "")]),
        ("dex-oauth2-proxy", "Secret auth/kfctl-login", [
            ("username", "user@example.com", "", ""), ("password", None, "", "")]),
        ("dex-oauth2-proxy", "Secret auth/dex-passwords", [
            ("DEX_USER_PASSWORD", None, "", "auth/kfctl-login/password")]),
        ("dex-oauth2-proxy", "Secret auth/dex-oidc-client", [
            ("OIDC_CLIENT_ID", "kubeflow-oidc-authservice", "", ""), ("OIDC_CLIENT_SECRET", None, "", "")]),
    ]  # fmt: skip


def test_a_value_the_trees_changed_is_theirs() -> None:
    """A password hash of the user's own and a client secret of their own: nothing is replaced (oauth2-proxy's
    client secret would no longer match Dex's if it alone were drawn), only the cookie secret."""
    own = bcrypt.hashpw(b"their own", bcrypt.gensalt(rounds=4)).decode()
    kept, declared = replace_fixed(rendered(hash_=own, client="their-own-client-secret"))
    assert [str(d.key) for d in declared] == ["Secret oauth2-proxy/oauth2-proxy-g7k9t2h5m8"]
    assert [k.name for k in declared[0].spec.keys if k.generated] == ["cookie-secret"]
    assert names(kept[1][1]) == ["ConfigMap dex", "Secret dex-passwords", "Secret dex-oidc-client", "Deployment dex"]


def keys(cluster: FakeCluster, namespace: str, name: str) -> dict[str, str]:
    live = cluster.live(ObjectKey("", "Secret", namespace, name)) or {}
    return {k: text(v) for k, v in (live.get("data") or {}).items()}


def test_first_apply_draws_the_password_and_writes_its_hash_and_one_client_secret() -> None:
    _kept, declared = replace_fixed(rendered())
    cluster = FakeCluster()
    values = read_values(cluster, declared)
    data = {str(k): {n: text(v) for n, v in d.items()} for k, d in values.data.items()}
    login, dex = data["Secret auth/kfctl-login"], data["Secret auth/dex-passwords"]
    assert login["username"] == "user@example.com"
    assert len(login["password"]) == 20 and login["password"] != "12341234"
    assert bcrypt.checkpw(login["password"].encode(), dex["DEX_USER_PASSWORD"].encode())
    assert dex["DEX_USER_PASSWORD"].startswith("$2b$12$")  # cost 12, as upstream's; Dex refuses below 10
    client = data["Secret auth/dex-oidc-client"]["OIDC_CLIENT_SECRET"]
    assert len(client) == 32 and client != CLIENT_SECRET
    proxy = data["Secret oauth2-proxy/oauth2-proxy-g7k9t2h5m8"]
    assert proxy["client-secret"] == client
    assert len(proxy["cookie-secret"]) == 32 and proxy["cookie-secret"] != COOKIE_SECRET
    assert proxy["client-id"] == "kubeflow-oidc-authservice"
    assert {str(k): v for k, v in values.drawn.items()} == {
        "Secret oauth2-proxy/oauth2-proxy-g7k9t2h5m8": ("client-secret", "cookie-secret"),
        "Secret auth/kfctl-login": ("password",),
        "Secret auth/dex-passwords": ("DEX_USER_PASSWORD",),
        "Secret auth/dex-oidc-client": ("OIDC_CLIENT_SECRET",),
    }
    assert password_not_in_repr(values, login["password"])


def password_not_in_repr(values: Any, password: str) -> bool:
    return password not in repr(values) and b64(password) not in repr(values)


def test_reapply_keeps_every_value_and_a_stale_hash_is_made_again() -> None:
    _kept, declared = replace_fixed(rendered())
    cluster = FakeCluster()
    first = read_values(cluster, declared)
    for key, data in first.data.items():
        cluster.put(obj("v1", "Secret", key.name, key.namespace, data=dict(data)))
    again = read_values(cluster, declared)
    assert again.data == first.data
    assert all(not v for v in again.drawn.values())
    # An install made before kfctl replaced upstream's login: Dex's Secret still holds the hash of 12341234.
    cluster.put(obj("v1", "Secret", "dex-passwords", "auth", data={"DEX_USER_PASSWORD": b64(UPSTREAM_HASH)}))
    fixed = read_values(cluster, declared)
    password = keys(cluster, "auth", "kfctl-login")["password"]
    remade = text(fixed.data[ObjectKey("", "Secret", "auth", "dex-passwords")]["DEX_USER_PASSWORD"])
    assert bcrypt.checkpw(password.encode(), remade.encode())
    assert not bcrypt.checkpw(b"12341234", remade.encode())
