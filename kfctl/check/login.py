"""Category "dashboard" of `kfctl check` on a platform with an Istio ingress (upstream's full platform): can a
person log in, and does the dashboard answer for them?

- ``login``: an unauthenticated ``GET /`` through the gateway is sent to the OIDC provider (oauth2-proxy's
  sign-in page and its button, or a redirect, to ``/oauth2/start``, then Dex's ``/dex/auth…`` login form); the
  form, given the user and password kfctl generated (Secret auth/kfctl-login), leads back through
  ``/oauth2/callback`` to a session cookie, and ``GET /`` with that cookie is let through.
- ``dashboard``: with that session, the central dashboard's ``/api/workgroup/env-info`` answers for that user,
  with a namespace of theirs (a Profile they own).

The requests go where a browser's would: to a local port forwarded to the gateway's pod through the API server
(kfctl.app-level `kfctl dashboard` uses the same forward), with cookies and redirects followed by hand so that
each hop is seen. A failure names the hop that broke — gateway, oauth2-proxy, issuer (Dex), JWT (the gateway's
RequestAuthentication and DENY policy), VirtualService (no route), backend (the dashboard) — from where the answer
came and what it said, the way Envoy, oauth2-proxy and Dex say it. Writes nothing; never shows the password.
"""

from __future__ import annotations

import base64
import html
import http.client
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from kfctl.check.ingress import ISTIO, ISTIO_VERSIONS, find_ingress
from kfctl.check.model import InstalledContext, Outcome
from kfctl.errors import KfctlError
from kfctl.k8s.api import ApiError, Cluster, NoKindMatch, Unreachable
from kfctl.k8s.portforward import LocalForward, Tunnel
from kfctl.secrets.upstream import LOGIN_SECRET, LOGIN_SECRET_NAMESPACE

ENV_INFO = "/api/workgroup/env-info"
MAX_HOPS = 12
TIMEOUT = 30.0
LOGIN_FORM = re.compile(r"<form\b[^>]*>", re.I)
ACTION = re.compile(r'action\s*=\s*"([^"]*)"', re.I)
LOGIN_ERROR = re.compile(r'id\s*=\s*"login-error"[^>]*>\s*([^<]+?)\s*<', re.I)
# oauth2-proxy's sign-in page (skip_provider_button = false, as upstream's oauth2_proxy.cfg has it): a 403 whose
# button is a GET form to <proxy prefix>/start with the page to return to in a hidden "rd".
SIGN_IN_FORM = re.compile(r'<form\b[^>]*\baction\s*=\s*"([^"]*/start)"[^>]*>(.*?)</form>', re.I | re.S)
RD_INPUT = re.compile(r'<input\b[^>]*\bname\s*=\s*"rd"[^>]*\bvalue\s*=\s*"([^"]*)"', re.I)
HINT_LOGIN = "kfctl dashboard APPDIR forwards the same gateway: open it and log in to see the page yourself"


class Broken(Exception):
    """A hop of the way in failed: ``hop`` is which, the message what it answered."""

    def __init__(self, hop: str, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hop = hop
        self.hint = hint


@dataclass
class Answer:
    status: int
    path: str
    headers: dict[str, str]
    body: str

    @property
    def location(self) -> str:
        return self.headers.get("location", "")

    def snippet(self) -> str:
        text = " ".join(self.body.split())
        return text[:160] + ("…" if len(text) > 160 else "")


@dataclass
class Browser:
    """Requests to one local port, with the cookies the answers set and the paths walked."""

    port: int
    cookies: dict[str, str] = field(default_factory=dict)
    walked: list[str] = field(default_factory=list)

    def request(self, method: str, path: str, *, form: dict[str, str] | None = None) -> Answer:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        headers = {"Host": f"127.0.0.1:{self.port}", "User-Agent": "kfctl-check", "Accept": "text/html,*/*"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            body = urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        self.walked.append(f"{method} {path.split('?')[0]}")
        try:
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            text = resp.read().decode("utf-8", errors="replace")
        except (OSError, http.client.HTTPException) as e:
            raise Broken(
                "gateway",
                f"no answer to {method} {path.split('?')[0]} through the port-forward to the gateway's pod ({e})",
                "kfctl status APPDIR: is the ingress gateway's Deployment available? (kubectl get pods -n "
                "istio-system)",
            ) from e
        finally:
            conn.close()
        for name, value in resp.getheaders():
            if name.lower() == "set-cookie":
                cookie = value.split(";", 1)[0]
                k, _, v = cookie.partition("=")
                if v:
                    self.cookies[k.strip()] = v.strip()
                else:
                    self.cookies.pop(k.strip(), None)
        return Answer(resp.status, path, {k.lower(): v for k, v in resp.getheaders()}, text)

    def follow(self, path: str) -> Answer:
        """GET ``path`` and every redirect after it (any host's: the gateway serves them all), up to MAX_HOPS."""
        answer = self.request("GET", path)
        for _ in range(MAX_HOPS):
            if answer.status not in (301, 302, 303, 307, 308) or not answer.location:
                return answer
            answer = self.request("GET", _local(answer.location, answer.path))
        raise Broken("oauth2-proxy", f"more than {MAX_HOPS} redirects from {path}: {' → '.join(self.walked[-6:])}")


def _local(location: str, current: str) -> str:
    """A redirect's target as a path on the gateway (Dex's issuer URL names the cluster's service host)."""
    parts = urlsplit(html.unescape(location))
    path = parts.path or urlsplit(current).path
    if not path.startswith("/"):
        path = urlsplit(current).path.rsplit("/", 1)[0] + "/" + path
    return path + (f"?{parts.query}" if parts.query else "")


def sign_in_button(answer: Answer) -> str | None:
    """Where the "Sign in with …" button of oauth2-proxy's sign-in page goes (``/oauth2/start?rd=…``), if
    ``answer`` is that page; a browser's click on it."""
    form = SIGN_IN_FORM.search(answer.body)
    if answer.status != 403 or form is None:
        return None
    rd = RD_INPUT.search(form.group(2))
    start = _local(form.group(1), answer.path)
    return start + ("?" + urlencode({"rd": html.unescape(rd.group(1))}) if rd else "")


def hop_of(path: str) -> str:
    """Which server a path of the way in belongs to."""
    if path.startswith("/oauth2"):
        return "oauth2-proxy"
    if path.startswith("/dex"):
        return "issuer"
    return "backend"


def judge(answer: Answer, *, authenticated: bool) -> Broken:
    """Why a request did not get what it should, by hop, from Envoy's, oauth2-proxy's and Dex's words."""
    status, text, where = answer.status, answer.body, answer.path.split("?")[0]
    said = f"{status} {answer.snippet()}".strip()
    if status == 404 and not text.strip():
        return Broken(
            "VirtualService",
            f"the gateway has no route for {where} (404 with no body, Envoy's 'route not found')",
            "the VirtualService that routes it is missing or names another gateway: kubectl get virtualservices -A",
        )
    if status in (401, 403) and ("jwt" in text.lower() or (authenticated and "rbac" in text.lower())):
        return Broken(
            "JWT",
            f"the gateway refused {where} with a session: {said} (the token oauth2-proxy passes is not verified "
            "against the issuer's keys: RequestAuthentication dex-jwt, AuthorizationPolicy require-jwt)",
            "the RequestAuthentication's issuer and jwksUri must be Dex's: kubectl get requestauthentications -A -o "
            "yaml",
        )
    if status in (401, 403) and not authenticated:
        # Envoy answers 403 (the provider's statusOnError) when it cannot ask oauth2-proxy; oauth2-proxy itself
        # answers a browser with its sign-in page (403, a button to /oauth2/start) or a redirect to the login.
        return Broken(
            "oauth2-proxy",
            f"the gateway refused {where} instead of sending it to the login: {said} (oauth2-proxy, which the "
            "gateway asks first, does not answer, or the gateway does not ask it)",
            "kfctl status APPDIR: is oauth2-proxy's Deployment available? The CUSTOM AuthorizationPolicy's provider "
            "must be the istio ConfigMap's oauth2-proxy extensionProvider (kubectl get authorizationpolicies -A)",
        )
    if status in (502, 503, 504):
        hop = hop_of(where)
        name = {"oauth2-proxy": "oauth2-proxy", "issuer": "Dex (the OIDC issuer)"}.get(hop, "the dashboard")
        return Broken(
            hop,
            f"{name} behind the gateway does not answer {where}: {said}",
            f"kfctl status APPDIR names the Deployment of {name} that is not ready (kubectl get pods -A)",
        )
    return Broken(hop_of(where), f"{where} answered {said}", HINT_LOGIN)


@dataclass(frozen=True)
class Session:
    username: str
    browser: Browser


def credentials(cluster: Cluster) -> tuple[str, str]:
    live = cluster.get("v1", "Secret", namespace=LOGIN_SECRET_NAMESPACE, name=LOGIN_SECRET)
    if live is None:
        raise Broken(
            "issuer",
            f"no Secret {LOGIN_SECRET_NAMESPACE}/{LOGIN_SECRET}: kfctl generated no login for Dex on this platform",
            "kfctl apply APPDIR with this kfctl generates it (and Dex's password hash from it)",
        )
    data = live.get("data") or {}
    return _decoded(data.get("username")), _decoded(data.get("password"))


def _decoded(value: object) -> str:
    try:
        return base64.b64decode(str(value or "")).decode()
    except ValueError:
        return ""


def log_in(port: int, username: str, password: str) -> tuple[Session, str]:
    """The login a browser makes; the session and the way it went (for the message). Broken names the hop."""
    browser = Browser(port)
    first = browser.request("GET", "/")
    button = sign_in_button(first)
    if button is None and first.status not in (301, 302, 303, 307, 308):
        if first.status == 200:
            raise Broken(
                "oauth2-proxy",
                "an unauthenticated GET / was answered 200, not sent to the login: the gateway does not ask "
                "oauth2-proxy (its CUSTOM AuthorizationPolicy istio-ingressgateway-oauth2-proxy)",
                "kubectl get authorizationpolicies -n istio-system",
            )
        raise judge(first, authenticated=False)
    page = browser.follow(button or _local(first.location, "/"))
    if page.status != 200:
        raise judge(page, authenticated=False)
    form = LOGIN_FORM.search(page.body)
    if form is None or 'name="password"' not in page.body:
        raise Broken(
            hop_of(page.path),
            f"the way to the login ended at {page.path.split('?')[0]} without a login form: {page.snippet()}",
            HINT_LOGIN,
        )
    action = ACTION.search(form.group(0))
    target = _local(action.group(1), page.path) if action and action.group(1) else page.path
    answer = browser.request("POST", target, form={"login": username, "password": password})
    if answer.status == 200:
        said = LOGIN_ERROR.search(answer.body)
        raise Broken(
            "issuer",
            f"Dex refused the login of {username} with the password in Secret {LOGIN_SECRET_NAMESPACE}/{LOGIN_SECRET}"
            + (f': "{said.group(1)}"' if said else f": {answer.snippet()}"),
            "Dex checks the bcrypt hash in Secret auth/dex-passwords (DEX_USER_PASSWORD): kfctl apply APPDIR makes "
            "it again from the password, then restart Dex (kubectl -n auth rollout restart deployment dex)",
        )
    if answer.status not in (301, 302, 303, 307, 308):
        raise judge(answer, authenticated=False)
    back = browser.follow(_local(answer.location, answer.path))
    if sign_in_button(back):
        raise Broken(
            "oauth2-proxy",
            f"after the login, GET / shows oauth2-proxy's sign-in page again ({back.status}): the callback set no "
            f"session cookie (cookies: {', '.join(sorted(browser.cookies)) or 'none'})",
            HINT_LOGIN,
        )
    again = LOGIN_FORM.search(back.body) and 'name="password"' in back.body
    if back.status in (301, 302, 303, 307, 308) or again:
        raise Broken("oauth2-proxy", f"after the login, GET / is sent to the login again: {back.snippet()}")
    # The session exists once the callback set it: the dashboard behind "/" being down or unrouted is the
    # dashboard check's to name, not the login's.
    backend_only = back.status >= 500 or back.status == 404
    if back.status >= 400 and not (backend_only and hop_of(back.path) == "backend" and browser.cookies):
        callback = any("/oauth2/callback" in w for w in browser.walked[-3:])
        if back.status == 500 and callback:
            raise Broken(
                "oauth2-proxy",
                f"oauth2-proxy's /oauth2/callback failed: {back.status} {back.snippet()}: the client secret it has "
                "(Secret oauth2-proxy/oauth2-proxy client-secret) must be Dex's (auth/dex-oidc-client)",
                "kfctl apply APPDIR generates both from one value",
            )
        raise judge(back, authenticated=True)
    if not browser.cookies:
        raise Broken("oauth2-proxy", "the login went through but oauth2-proxy set no session cookie")
    way = " → ".join(dict.fromkeys(w.split(" ", 1)[1] for w in browser.walked if w.split(" ", 1)[1] != "/"))
    return Session(username, browser), way


def with_forward(ctx: InstalledContext, run: Callable[[int], Outcome]) -> Outcome:
    """``run`` with a local port forwarded to the ingress pod for the time it takes."""
    try:
        ingress = find_ingress(ctx.cluster)
    except KfctlError as e:
        return Outcome("fail", f"gateway: {e.message}", e.hint or "")

    def tunnel() -> Tunnel:
        return ctx.cluster.port_forward(namespace=ingress.namespace, pod=ingress.pod, port=ingress.pod_port)

    with LocalForward(tunnel, port=0) as local:
        try:
            return run(local.port)
        except Broken as e:
            if e.hop == "gateway" and local.failures:
                return Outcome("fail", f"gateway: {e} ({ingress.describe()}: {local.failures[-1]})", e.hint)
            return Outcome("fail", f"{e.hop}: {e}", e.hint)


def login_check(ctx: InstalledContext) -> Outcome:
    def run(port: int) -> Outcome:
        username, password = credentials(ctx.cluster)
        session, way = log_in(port, username, password)
        cookies = ", ".join(sorted(session.browser.cookies))
        return Outcome(
            "pass",
            f"an unauthenticated GET / is sent to the OIDC provider ({way}); {username} logs in with the password "
            f"kfctl generated and gets a session (cookie {cookies})",
        )

    return with_forward(ctx, run)


def dashboard_check(ctx: InstalledContext) -> Outcome:
    def run(port: int) -> Outcome:
        username, password = credentials(ctx.cluster)
        session, _way = log_in(port, username, password)
        answer = session.browser.request("GET", ENV_INFO)
        if answer.status != 200:
            raise judge(answer, authenticated=True)
        try:
            info: Any = json.loads(answer.body)
        except ValueError as e:
            raise Broken("backend", f"{ENV_INFO} answered 200 but not JSON: {answer.snippet()}") from e
        user = str((info or {}).get("user") or "")
        namespaces = [n for n in (info or {}).get("namespaces") or [] if isinstance(n, dict)]
        if user and user != username:
            raise Broken(
                "JWT",
                f"{ENV_INFO} answered for {user!r}, not for {username!r}: the kubeflow-userid header the gateway "
                "sets from the token is not the logged-in user's",
            )
        if not namespaces:
            return Outcome(
                "fail",
                f"backend: {ENV_INFO} answers for {username}, who has no namespace (no Profile owns one for them): "
                "the dashboard shows them its registration page",
                f"make one: a Profile with spec.owner {{kind: User, name: {username}}} (kubectl apply), or register "
                "through the dashboard",
            )
        names = ", ".join(f"{n.get('namespace')} ({n.get('role')})" for n in namespaces)
        return Outcome("pass", f"{ENV_INFO} answers for {username}: namespace(s) {names}")

    return with_forward(ctx, run)


def has_ingress(cluster: Cluster) -> bool:
    """Whether the cluster has an Istio Gateway: the login and dashboard checks are then run."""
    for version in ISTIO_VERSIONS:
        try:
            return bool(cluster.list(f"{ISTIO}/{version}", "Gateway"))
        except (NoKindMatch, ApiError):
            continue
        except Unreachable:
            return False
    return False
