"""What e2e/test_login_path.py and e2e/test_browser.py share: a part of upstream v1.11.0's example installed by
kfctl (the applications the login path needs, and more for the browser), the Secrets that hold the login kfctl
generated, and `kfctl dashboard` running for a test."""

from __future__ import annotations

import base64
import contextlib
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest
import yaml
from apply_support import REPO, kfctl, kubectl
from full_platform_support import served
from harness import Cluster
from kfctl_testbed import upstream_mirror
from kfctl_testbed.dex_standin import bcrypt_matches

USER = "user@example.com"  # Dex's static user in upstream's config
# The lines of upstream's example/kustomization.yaml the login path needs (kfdef.yaml keeps only these).
LOGIN_PATH = (
    "common/istio/istio-crds/base",
    "common/istio/istio-namespace/base",
    "common/istio/istio-install/overlays/oauth2-proxy",
    "common/oauth2-proxy/overlays/m2m-dex-only",
    "common/dex/overlays/oauth2-proxy",
    "common/kubeflow-namespace/base",
    "common/kubeflow-roles/base",
    "common/istio/kubeflow-istio-resources/base",
    "applications/centraldashboard/overlays/oauth2-proxy",
    "applications/profiles/pss",  # KFAM, which the dashboard asks for the user's namespaces
    "common/user-namespace/base",  # the Profile of user@example.com
)


@dataclass
class Installed:
    kubeconfig: str
    state_dir: Path | None
    app: Path


def install_part(
    cluster: Cluster,
    app: Path,
    mirror: upstream_mirror.Mirror,
    paths: tuple[str, ...],
) -> Installed:
    """`kfctl init --upstream v1.11.0` keeping the applications of these example lines, generate, apply."""
    kubeconfig = cluster.kubeconfig
    with served(mirror) as flags:
        init = kfctl("init", str(app), "--upstream", "v1.11.0", *flags, kubeconfig=kubeconfig)
        assert init.code == 0, init.explain()
        kfdef_path = app / "kfdef.yaml"
        kfdef = yaml.safe_load(kfdef_path.read_text())
        apps = kfdef["spec"]["applications"]
        kfdef["spec"]["applications"] = [a for a in apps if a["kustomizeConfig"]["repoRef"]["path"] in paths]
        assert len(kfdef["spec"]["applications"]) == len(paths), [a["name"] for a in apps]
        kfdef_path.write_text(yaml.safe_dump(kfdef, sort_keys=False))
        generated = kfctl("generate", str(app), kubeconfig=kubeconfig)
        assert generated.code == 0, generated.explain()
    run = kfctl("apply", str(app), "--wait-timeout", "5m", kubeconfig=kubeconfig, timeout=900)
    assert run.code == 0, run.explain()
    return Installed(kubeconfig, cluster.state_dir, app)


def secret(platform: Installed, namespace: str, name: str) -> dict[str, str]:
    data = json.loads(kubectl(platform.kubeconfig, "get", "secret", name, "-n", namespace, "-o", "json"))["data"]
    return {k: base64.b64decode(v).decode() for k, v in data.items()}


def login_password(platform: Installed) -> str:
    """The password kfctl drew for this install (auth/kfctl-login), checked against the hash Dex was given."""
    login = secret(platform, "auth", "kfctl-login")
    assert login["username"] == USER
    installed_hash = secret(platform, "auth", "dex-passwords")["DEX_USER_PASSWORD"]
    assert bcrypt_matches(login["password"], installed_hash), "auth/dex-passwords does not hash auth/kfctl-login"
    return login["password"]


def read_document(stream: IO[str]) -> dict[str, Any]:
    """The one JSON document `kfctl dashboard -o json` prints before it forwards (indented: lines until it parses)."""
    text = ""
    for line in stream:
        text += line
        with contextlib.suppress(ValueError):
            return dict(json.loads(text))
    raise AssertionError(f"kfctl dashboard printed no JSON document: {text!r}")


@dataclass
class Dashboard:
    document: dict[str, Any]  # what `kfctl dashboard -o json` printed
    proc: subprocess.Popen[str]

    @property
    def url(self) -> str:
        return str(self.document["url"])


@contextlib.contextmanager
def kfctl_dashboard(platform: Installed) -> Iterator[Dashboard]:
    """`kfctl dashboard APPDIR --port 0 -o json` running; its document read. Ended with Ctrl-C (SIGINT) after."""
    argv = [sys.executable, "-m", "kfctl.cli.main", "dashboard", str(platform.app), "--port", "0", "-o", "json"]
    proc = subprocess.Popen(
        [*argv, "--kubeconfig", platform.kubeconfig],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert proc.stdout is not None
        yield Dashboard(read_document(proc.stdout), proc)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
            pytest.fail("kfctl dashboard did not stop on Ctrl-C within 30 s")
