"""KUBECONFIG with several files is merged as kubectl merges it: one row per rule, the exact merged config.

Paths in the expected configs are written relative to the test's directory as ``$T``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from kfctl.errors import ClusterError
from kfctl.k8s.client import connect
from kfctl.k8s.kubeconfig import kubeconfig_paths, load_kubeconfig

SEP = os.pathsep

PROD = """
clusters:
- name: prod
  cluster: {server: "https://prod:6443", certificate-authority: ca.crt}
users:
- name: admin
  user: {client-certificate: certs/admin.crt, client-key: certs/admin.key}
contexts:
- name: prod
  context: {cluster: prod, user: admin}
current-context: prod
"""
STAGING = """
clusters:
- name: prod
  cluster: {server: "https://impostor:6443", insecure-skip-tls-verify: true}
- name: staging
  cluster: {server: "https://staging:6443", certificate-authority: ../pki/ca.crt}
users:
- name: admin
  user: {token: from-the-second-file}
- name: dev
  user: {tokenFile: token, exec: {command: ./bin/get-token, apiVersion: client.authentication.k8s.io/v1}}
contexts:
- name: staging
  context: {cluster: staging, user: dev}
current-context: staging
"""
NO_CURRENT = """
clusters:
- name: lab
  cluster: {server: "https://lab:6443", certificate-authority: /etc/lab/ca.crt}
users:
- name: lab
  user: {exec: {command: kubelogin, apiVersion: client.authentication.k8s.io/v1}}
contexts:
- name: lab
  context: {cluster: lab, user: lab}
"""

MERGED_PROD_STAGING = """
clusters:
- name: prod
  cluster: {server: "https://prod:6443", certificate-authority: $T/a/ca.crt}
- name: staging
  cluster: {server: "https://staging:6443", certificate-authority: $T/pki/ca.crt}
users:
- name: admin
  user: {client-certificate: $T/a/certs/admin.crt, client-key: $T/a/certs/admin.key}
- name: dev
  user: {tokenFile: $T/b/token, exec: {command: $T/b/bin/get-token, apiVersion: client.authentication.k8s.io/v1}}
contexts:
- name: prod
  context: {cluster: prod, user: admin}
- name: staging
  context: {cluster: staging, user: dev}
current-context: prod
"""


@pytest.mark.parametrize(
    ("files", "kubeconfig", "merged", "read"),
    [
        pytest.param(
            {"a/config": PROD},
            ["a/config"],
            """
            clusters: [{name: prod, cluster: {server: "https://prod:6443", certificate-authority: $T/a/ca.crt}}]
            users:
            - name: admin
              user: {client-certificate: $T/a/certs/admin.crt, client-key: $T/a/certs/admin.key}
            contexts: [{name: prod, context: {cluster: prod, user: admin}}]
            current-context: prod
            """,
            ["a/config"],
            id="one-file-relative-paths-against-its-directory",
        ),
        pytest.param(
            {"a/config": PROD, "b/config": STAGING},
            ["a/config", "b/config"],
            MERGED_PROD_STAGING,
            ["a/config", "b/config"],
            id="two-files-first-name-wins-whole-each-file-resolves-against-its-own-directory",
        ),
        pytest.param(
            {"a/config": PROD, "b/config": STAGING},
            ["a/config", "missing/config", "b/config"],
            MERGED_PROD_STAGING,
            ["a/config", "b/config"],
            id="a-missing-file-is-skipped",
        ),
        pytest.param(
            {"a/config": PROD, "b/config": STAGING},
            ["a/config", "", "a/config", "b/config", ""],
            MERGED_PROD_STAGING,
            ["a/config", "b/config"],
            id="empty-entries-and-repeats-are-dropped",
        ),
        pytest.param(
            {"a/config": PROD, "b/config": STAGING},
            ["b/config", "a/config"],
            """
            clusters:
            - name: prod
              cluster: {server: "https://impostor:6443", insecure-skip-tls-verify: true}
            - name: staging
              cluster: {server: "https://staging:6443", certificate-authority: $T/pki/ca.crt}
            users:
            - name: admin
              user: {token: from-the-second-file}
            - name: dev
              user:
                tokenFile: $T/b/token
                exec: {command: $T/b/bin/get-token, apiVersion: client.authentication.k8s.io/v1}
            contexts:
            - name: staging
              context: {cluster: staging, user: dev}
            - name: prod
              context: {cluster: prod, user: admin}
            current-context: staging
            """,
            ["b/config", "a/config"],
            id="order-decides",
        ),
        pytest.param(
            {"c/config": NO_CURRENT, "b/config": STAGING, "a/config": PROD},
            ["c/config", "b/config", "a/config"],
            """
            clusters:
            - name: lab
              cluster: {server: "https://lab:6443", certificate-authority: /etc/lab/ca.crt}
            - name: prod
              cluster: {server: "https://impostor:6443", insecure-skip-tls-verify: true}
            - name: staging
              cluster: {server: "https://staging:6443", certificate-authority: $T/pki/ca.crt}
            users:
            - name: lab
              user: {exec: {command: kubelogin, apiVersion: client.authentication.k8s.io/v1}}
            - name: admin
              user: {token: from-the-second-file}
            - name: dev
              user:
                tokenFile: $T/b/token
                exec: {command: $T/b/bin/get-token, apiVersion: client.authentication.k8s.io/v1}
            contexts:
            - name: lab
              context: {cluster: lab, user: lab}
            - name: staging
              context: {cluster: staging, user: dev}
            - name: prod
              context: {cluster: prod, user: admin}
            current-context: staging
            """,
            ["c/config", "b/config", "a/config"],
            id="three-files-current-context-from-the-first-that-sets-it-absolute-and-PATH-commands-kept",
        ),
        pytest.param(
            {"a/config": "", "b/config": NO_CURRENT},
            ["a/config", "b/config"],
            """
            clusters: [{name: lab, cluster: {server: "https://lab:6443", certificate-authority: /etc/lab/ca.crt}}]
            users: [{name: lab, user: {exec: {command: kubelogin, apiVersion: client.authentication.k8s.io/v1}}}]
            contexts: [{name: lab, context: {cluster: lab, user: lab}}]
            """,
            ["a/config", "b/config"],
            id="an-empty-file-is-an-empty-config",
        ),
    ],
)
def test_merge(tmp_path: Path, files: dict[str, str], kubeconfig: list[str], merged: str, read: list[str]) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    paths = kubeconfig_paths(
        None, environ={"KUBECONFIG": SEP.join(_at(tmp_path, p) for p in kubeconfig)}, home=tmp_path
    )
    loaded = load_kubeconfig(paths)
    assert loaded.config == yaml.safe_load(merged.replace("$T", str(tmp_path)))
    assert loaded.files == tuple(str(tmp_path / p) for p in read)
    assert loaded.source == SEP.join(str(tmp_path / p) for p in read)


def _at(root: Path, rel: str) -> str:
    return str(root / rel) if rel else ""


@pytest.mark.parametrize(
    ("flag", "environ", "paths"),
    [
        pytest.param(f"/k/one{SEP}/k/two", {"KUBECONFIG": "/k/env"}, [f"/k/one{SEP}/k/two"], id="flag-is-one-file"),
        pytest.param(None, {"KUBECONFIG": f"/k/a{SEP}{SEP}/k/b{SEP}/k/a"}, ["/k/a", "/k/b"], id="env-list"),
        pytest.param(None, {"KUBECONFIG": ""}, ["/home/u/.kube/config"], id="env-empty-means-home"),
        pytest.param(None, {"KUBECONFIG": SEP}, ["/home/u/.kube/config"], id="env-only-separators-means-home"),
        pytest.param(None, {}, ["/home/u/.kube/config"], id="env-unset-means-home"),
    ],
)
def test_kubeconfig_paths(flag: str | None, environ: dict[str, str], paths: list[str]) -> None:
    assert kubeconfig_paths(flag, environ=environ, home=Path("/home/u")) == paths


@pytest.mark.parametrize(
    ("files", "kubeconfig", "message", "hint"),
    [
        pytest.param(
            {},
            ["a/config"],
            "kubeconfig $T/a/config does not exist",
            "pass --kubeconfig FILE or set KUBECONFIG to the cluster's kubeconfig",
            id="the-one-file-missing",
        ),
        pytest.param(
            {},
            ["a/config", "b/config", "c/config"],
            "none of the kubeconfig files exists: $T/a/config, $T/b/config, $T/c/config",
            "pass --kubeconfig FILE or set KUBECONFIG to the cluster's kubeconfig",
            id="every-file-missing-names-all-tried",
        ),
        pytest.param(
            {"a/config": PROD, "b/config": "clusters: 7\n"},
            ["a/config", "b/config"],
            "cannot load kubeconfig $T/b/config: clusters: expected a list, got int",
            "check the file (kubectl config view --kubeconfig FILE shows what is wrong), or pass another",
            id="a-malformed-file-is-named-even-after-a-good-one",
        ),
        pytest.param(
            {"a/config": "users: [{user: {token: t}}]\n"},
            ["a/config"],
            "cannot load kubeconfig $T/a/config: users[0]: expected an entry with a name",
            "check the file (kubectl config view --kubeconfig FILE shows what is wrong), or pass another",
            id="an-entry-without-a-name",
        ),
        pytest.param(
            {"a/config": "- a\n- list\n"},
            ["a/config"],
            "cannot load kubeconfig $T/a/config: expected a mapping, got list",
            "check the file (kubectl config view --kubeconfig FILE shows what is wrong), or pass another",
            id="not-a-mapping",
        ),
    ],
)
def test_errors(tmp_path: Path, files: dict[str, str], kubeconfig: list[str], message: str, hint: str) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    with pytest.raises(ClusterError) as raised:
        load_kubeconfig([str(tmp_path / p) for p in kubeconfig])
    e = raised.value
    assert (e.exit_code, e.message, e.hint) == (6, message.replace("$T", str(tmp_path)), hint)


def test_connect_uses_the_merge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client is configured from the merged config: the second file's context, its CA and token file
    resolved against its own directory, and ClusterInfo names every file read."""
    second = """
    clusters: [{name: staging, cluster: {server: "https://staging:6443", certificate-authority: ../pki/ca.crt}}]
    users: [{name: dev, user: {tokenFile: token}}]
    contexts: [{name: staging, context: {cluster: staging, user: dev}}]
    current-context: staging
    """
    files = {"a/config": NO_CURRENT, "b/config": second, "b/token": "secret", "pki/ca.crt": "read at the first request"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.setenv("KUBECONFIG", SEP.join([str(tmp_path / "a/config"), str(tmp_path / "b/config")]))
    client = connect(kubeconfig=None, context=None)
    cfg = client._cfg
    assert (cfg.host, cfg.ssl_ca_cert, client._authorization()) == (
        "https://staging:6443",
        str(tmp_path / "pki/ca.crt"),
        "Bearer secret",
    )
    assert (client.info.context, client.info.kubeconfig) == (
        "staging",
        f"{tmp_path / 'a/config'}{SEP}{tmp_path / 'b/config'}",
    )
