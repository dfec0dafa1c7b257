"""Issue 51, what a new user trips on: one row per row of the issue. argv (and the files and environment it
needs) → the exact exit code → the exact first line printed (stdout, or stderr when stdout is empty) → a later
line the row is about, if any → the files the run must have written, and those it must not have.

Each run starts in an empty directory ({tmp}, also the working directory) holding the row's ``files``; a file
whose text is ``SHARED:<name>`` is a copy of ../shared/fixtures/<name>. A row with an ``env`` runs kfctl as a
subprocess with exactly that environment (besides PATH and HOME): the locale is read when Python starts, so it
cannot be set in-process. Row 8 is row-04's last column. Rows 20 and 21 are no command's first line: row 20 (objects
a webhook admits wait for its backend's rollout) is tests/test_engine_webhook_rollout.py's table, with a real
rollout in e2e/test_webhook_rollout.py and a real KServe upgrade in e2e/test_upstream_releases.py; row 21 (the host
as the test bed found it) is e2e/test_runtime_mounts.py and e2e/test_runtime_network.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from upstream import shared_fixture

from kfctl.cli.main import cli, main

NO_KFDEF = "Error (config error): demo/kfdef.yaml: no such file"
AKS_REPO = "https://github.com/kubeflow/manifests/archive/v1.2-branch.tar.gz"  # kfctl_azure.v1.2.0.yaml's repo

CATALOG_KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata: {name: app}
spec:
  platform: kind
  repos: [{name: manifests, uri: "kfctl://catalog"}]
  applications:
    - {name: cert-manager, kustomizeConfig: {repoRef: {name: manifests, path: manifests/cert-manager}}}
"""

BAD_KUBECONFIG = 'apiVersion: v1\nclusters:\n- cluster: {server: "https://127.0.0.1:1"\n  name: x\n'
# An unknown repoRef name, parameters as a mapping, a uri scheme kfctl does not fetch: three problems, one run.
THREE_PROBLEMS = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata: {name: three}
spec:
  platform: kind
  repos:
    - {name: web, uri: "ftp://example.invalid/m.tar.gz"}
  applications:
    - name: web
      kustomizeConfig:
        repoRef: {name: wbe, path: web}
        parameters: {a: b}
"""
ONE_OBJECT_KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata: {name: one}
spec:
  platform: generic
  repos: [{name: mine, uri: ../repo}]
  applications:
    - {name: settings, kustomizeConfig: {repoRef: {name: mine, path: web}}}
"""

# Every cluster command that gets this far connects to a closed port of 127.0.0.1.
UNREACHABLE_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@dataclass(frozen=True)
class Row:
    id: str
    argv: tuple[str, ...]
    code: int
    first: str
    contains: str = ""  # a line (or part of one) the row is about, anywhere in what is printed
    files: tuple[tuple[str, str], ...] = ()  # (path under {tmp}, text) written before the run
    env: tuple[tuple[str, str], ...] = ()  # run as a subprocess with this environment
    written: tuple[str, ...] = ()  # paths under {tmp} that exist after the run
    not_written: tuple[str, ...] = ()  # paths under {tmp} that do not


TAGS = "https://github.com/kubeflow/manifests/archive/refs/tags/"
RELEASE_2603 = (("tags/26.03.tar.gz", "SHARED:kubeflow-manifests-26.03.tar.gz"),)
MIRROR_TO_TAGS = ("--mirror", f"{TAGS}={{tmp}}/tags/")
OFFLINE_WAYS = (
    "map the release to a mirror (--mirror https://github.com/=LOCATION) or give a local archive of it "
    "(--upstream ./manifests-26.03.tar.gz)"
)

ROWS = [
    Row(
        "row-01-the-newest-release-has-no-v",
        ("init", "x", "--upstream", "26.03", *MIRROR_TO_TAGS),
        0,
        f"Wrote x/kfdef.yaml (upstream Kubeflow 26.03, 27 applications from {TAGS}26.03.tar.gz)",
        files=RELEASE_2603,
        written=("x/kfdef.yaml",),
    ),
    Row(
        "row-01-a-v-where-there-is-none",
        ("init", "x", "--upstream", "v26.03", *MIRROR_TO_TAGS),
        0,
        f"Wrote x/kfdef.yaml (upstream Kubeflow 26.03, 27 applications from {TAGS}26.03.tar.gz)",
        files=RELEASE_2603,
        written=("x/kfdef.yaml",),
    ),
    Row(
        "row-01-neither-spelling-exists",
        ("init", "x", "--upstream", "26.04", *MIRROR_TO_TAGS),
        10,
        "Error (fetch error): --upstream 26.04: neither tag 26.04 nor v26.04 was found",
        contains=f'  repo "manifests" ({TAGS}v26.04.tar.gz), from {{tmp}}/tags/v26.04.tar.gz (mirror {TAGS} = '
        "{tmp}/tags): archive {tmp}/tags/v26.04.tar.gz does not exist",
        files=RELEASE_2603,
        not_written=("x",),
    ),
    Row(
        "row-02-a-plain-file",
        ("init", "x", "--upstream", "notes.txt"),
        2,
        "Error (usage error): --upstream notes.txt: {tmp}/notes.txt is a file, not a release archive (.tar.gz, .tgz, "
        ".tar, .zip) or a directory",
        files=(("notes.txt", "my notes\n"),),
        not_written=("x",),
    ),
    Row(
        "row-03-not-a-tag-url-or-path",
        ("init", "x", "--upstream", "banana-tag"),
        2,
        "Error (usage error): --upstream banana-tag: not a release tag (v1.11.0, 26.03), URL or path (there is no "
        "{tmp}/banana-tag)",
        contains="Hint: kfctl fetches any kubeflow/manifests release by its tag; it is tested with v1.10.0, v1.11.0, "
        "26.03.",
        not_written=("x",),
    ),
    Row(  # and row 8: nothing is left of the failed init, not even APPDIR/.cache/repos/
        "row-04-no-network-is-a-fetch-error-with-inits-hint",
        ("init", "x", "--upstream", "v1.11.0"),
        10,
        f'Error (fetch error): repo "manifests" ({TAGS}v1.11.0.tar.gz): download failed: [Errno 111] Connection '
        "refused",
        contains=f"Hint: check the network; without one, {OFFLINE_WAYS}",
        env=(("https_proxy", "http://127.0.0.1:9"), ("no_proxy", "")),
        not_written=("x",),
    ),
    Row(
        "row-04-a-prefix-mirrored-twice-is-refused-where-typed",
        ("init", "x", "--upstream", "26.03", *MIRROR_TO_TAGS, "--mirror", f"{TAGS}={{tmp}}/other/"),
        2,
        f"Error (usage error): --mirror {TAGS} is given twice (={{tmp}}/tags and ={{tmp}}/other)",
        contains="give each URL prefix one --mirror; the longest matching prefix wins",
        files=RELEASE_2603,
        not_written=("x",),
    ),
    Row(
        "row-05-global-option-after-a-group",
        ("secrets", "-o", "json", "apply", "demo"),
        3,
        '{"error": {"details": [], "exitCode": 3, "hint": "create one with `kfctl init APPDIR --platform kind`", '
        '"kind": "config error", "message": "demo/kfdef.yaml: no such file"}, "schemaVersion": 1}',
    ),
    Row("row-05-global-option-before-the-group", ("-q", "secrets", "apply", "demo"), 3, NO_KFDEF),
    Row("row-05-global-option-after-the-subcommand", ("secrets", "apply", "-v", "demo"), 3, NO_KFDEF),
    Row(
        "row-05-a-group-refuses-a-graph-format",
        ("secrets", "-o", "dot", "apply", "demo"),
        2,
        "Error (usage error): Invalid value for '-o' / '--output': -o dot draws a graph, which only `kfctl plan` "
        "does; kfctl secrets takes -o text, -o json or -o yaml",
    ),
    Row(
        "row-06-quiet-init-prints-nothing",
        ("-q", "init", "demo", "--platform", "kind"),
        0,
        "",
        written=("demo/kfdef.yaml",),
    ),
    Row(
        "row-06-quiet-migrate-prints-nothing",
        ("migrate", "-q", "v10.yaml"),
        0,
        "",
        files=(("v10.yaml", "SHARED:kfctl_k8s_istio.v1.0.0.yaml"),),
        written=("v10.migrated.yaml",),
    ),
    Row(
        "row-06-quiet-keeps-a-result",
        ("-q", "catalog", "katib"),
        0,
        "katib (namespace kubeflow)",
    ),
    Row(
        "row-07-an-empty-appdir-is-refused",
        ("init", "", "--platform", "kind"),
        2,
        "Error (usage error): APPDIR is empty: an unset variable?",
        contains="Hint: name the directory, or . for the current one",
        not_written=("kfdef.yaml", ".gitignore"),
    ),
    Row(
        "row-07-an-empty-appdir-applies-nothing",
        ("apply", ""),
        2,
        "Error (usage error): APPDIR is empty: an unset variable?",
        files=(("kfdef.yaml", "not read"),),
    ),
    Row(
        "row-09-a-kubeconfig-yaml-error-is-located",
        ("status", "demo", "--kubeconfig", "bad.kubeconfig"),
        6,
        "Error (cluster error): cannot load kubeconfig bad.kubeconfig:4:3: invalid YAML: did not find expected "
        "',' or '}'",
        files=(("demo/kfdef.yaml", CATALOG_KFDEF), ("bad.kubeconfig", BAD_KUBECONFIG)),
    ),
    Row(
        "row-09-a-nul-in-a-kubeconfig-is-located",
        ("status", "demo"),
        6,
        "Error (cluster error): cannot load kubeconfig nul.kubeconfig:2:12: invalid YAML: character #x0000, "
        "which YAML does not allow: is it a text file?",
        files=(("demo/kfdef.yaml", CATALOG_KFDEF), ("nul.kubeconfig", "apiVersion: v1\nclusters: [\x00]\n")),
        env=(("KUBECONFIG", "nul.kubeconfig"),),
    ),
    Row(
        "row-09-a-corrupt-lock-is-located",
        ("generate", "demo"),
        3,
        "Error (config error): demo/kfdef.lock:1:14: invalid YAML: character #x0000, which YAML does not allow: "
        "is it a text file?",
        files=(("demo/kfdef.yaml", CATALOG_KFDEF), ("demo/kfdef.lock", "apiVersion: x\x00\x00 garbage\n")),
        not_written=("demo/rendered",),
    ),
    Row(
        "row-10-catalog-shows-a-platform",
        ("catalog", "kind"),
        0,
        "kind (platform)",
        contains="  default:    cert-manager, common, training-operator, notebook-controller, pipelines, katib, kserve",
    ),
    Row(
        "row-11-every-problem-at-once",
        ("plan", "-f", "three.yaml"),
        3,
        "Error (config error): three.yaml: 3 problems in the KfDef",
        contains="  three.yaml:12:9 spec.applications[0].kustomizeConfig.parameters: must be a list, got a mapping",
        files=(("three.yaml", THREE_PROBLEMS),),
    ),
    Row(
        "row-11-a-uri-kfctl-cannot-fetch-is-a-problem-of-the-kfdef",
        ("plan", "-f", "three.yaml"),
        3,
        "Error (config error): three.yaml: 3 problems in the KfDef",
        contains="  three.yaml:7:19 spec.repos[0].uri: unsupported uri scheme 'ftp' in 'ftp://example.invalid/m.tar.gz'",
        files=(("three.yaml", THREE_PROBLEMS),),
    ),
    Row(
        "row-12-a-c-locale-gets-words",
        ("check", "demo", "--kubeconfig", "unreachable.kubeconfig"),
        14,
        "cluster",
        contains="\n  fail cluster-reachable: cannot reach server https://127.0.0.1:1 ",
        files=(("demo/kfdef.yaml", CATALOG_KFDEF), ("unreachable.kubeconfig", UNREACHABLE_KUBECONFIG)),
        env=(("LANG", "C"),),
    ),
    Row(
        "row-13-a-hint-a-pip-user-can-follow",
        ("generate", "demo"),
        4,
        "Error (render error): no kustomize v5+ found (neither kustomize nor kubectl is on PATH)",
        contains="Hint: put kustomize v5 on PATH (its release binary: kustomize_v5.5.0_<os>_<arch>.tar.gz of "
        "https://github.com/kubernetes-sigs/kustomize/releases holds the one file), or kubectl 1.27 or newer, "
        "which embeds it\n",
        files=(("demo/kfdef.yaml", CATALOG_KFDEF),),
        env=(("PATH", "/nonexistent"),),
        not_written=("demo/rendered",),
    ),
    Row(
        "row-14-secrets-help-has-an-example",
        ("secrets", "--help"),
        0,
        "Usage: kfctl secrets [OPTIONS] COMMAND [ARGS]...",
        contains="    kfctl secrets apply demo --context prod",
    ),
    Row(
        "row-14-secrets-did-you-mean",
        ("secrets", "aply"),
        2,
        'Error (usage error): unknown command "aply" (did you mean "apply"?)',
        contains="Hint: `kfctl secrets --help` lists the commands",
    ),
    Row(
        "row-15-completion-in-the-help",
        ("--help",),
        0,
        "Usage: kfctl [OPTIONS] COMMAND [ARGS]...",
        contains='    eval "$(_KFCTL_COMPLETE=bash_source kfctl)"',
    ),
    Row(
        "row-16-a-catalog-kfdef-is-not-migrated-again",
        ("migrate", "app.migrated.yaml"),
        0,
        "app.migrated.yaml: already a catalog KfDef (platform kind, applications from kfctl://catalog); "
        "nothing to migrate",
        files=(("app.migrated.yaml", CATALOG_KFDEF),),
        not_written=("app.migrated.migrated.yaml",),
    ),
    Row(
        "row-17-plan-help-says-dot-is-graphviz",
        ("plan", "--help"),
        0,
        "Usage: kfctl plan [OPTIONS] [APPDIR]",
        contains="kfctl plan demo -o dot --objects | dot -Tsvg > plan.svg   # needs Graphviz",
    ),
    Row("row-18-appdir-is-named-appdir", ("apply", "--help"), 0, "Usage: kfctl apply [OPTIONS] [APPDIR]"),
    Row(
        "row-18-one-object-not-one-objects",
        ("plan", "demo"),
        0,
        "Plan: 1 object in 1 application(s), 1 wave(s)",
        files=(
            ("demo/kfdef.yaml", ONE_OBJECT_KFDEF),
            ("repo/web/kustomization.yaml", "resources: [settings.yaml]\n"),
            ("repo/web/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: ml}\n"),
        ),
    ),
    Row(
        "row-18-upstream-twice-is-refused",
        ("init", "demo", "--upstream", "v1.11.0", "--upstream", "26.03"),
        2,
        "Error (usage error): --upstream given 2 times (v1.11.0, 26.03); give it once",
        not_written=("demo",),
    ),
    Row(
        "row-18-an-aws-kfdef-is-compared-with-an-aws-example",
        ("plan", "-f", "aws.yaml"),
        3,
        "Error (config error): aws.yaml: 1 problem in the KfDef",
        contains="Hint: fix the fields named above; `kfctl init example --platform aws` writes a valid",
        files=(("aws.yaml", CATALOG_KFDEF.replace("platform: kind", "platform: aws\n  colour: red")),),
    ),
    Row(  # tests/test_kustomize_v3_forms.py checks every var of the render against the tree and kustomize v3
        "row-19-the-v1-2-aks-kfdef-renders-its-release",
        ("generate", "kf", "-o", "json", "--mirror", f"{AKS_REPO}=manifests.tar.gz"),
        0,
        "{",
        contains='      "vendor/repos/manifests/common/spartakus/base/params.yaml: line 4: varReference path '
        'spec/template/spec/containers/0/args/1 (kind Deployment)"',
        files=(
            ("kf/kfdef.yaml", "SHARED:kfctl_azure.v1.2.0.yaml"),
            ("manifests.tar.gz", "SHARED:kubeflow-manifests-v1.2.0.tar.gz"),
        ),
        written=("kf/rendered/kubeflow-apps.yaml", "kf/vendor/repos/manifests/common/spartakus/base/params.yaml"),
    ),
]


def _at(text: str, tmp: Path) -> str:
    return text.replace("{tmp}", str(tmp))


def _setup(row: Row, tmp: Path) -> None:
    for name, text in row.files:
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if text.startswith("SHARED:"):
            shutil.copy(shared_fixture(text.removeprefix("SHARED:")), path)
        else:
            path.write_text(_at(text, tmp))


def _run(row: Row, tmp: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    argv = [_at(a, tmp) for a in row.argv]
    if row.env:
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp), **dict(row.env)}
        done = subprocess.run(
            [sys.executable, "-m", "kfctl.cli.main", *argv], cwd=tmp, env=env, capture_output=True, text=True
        )
        return done.returncode, done.stdout or done.stderr
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out or err


@pytest.mark.parametrize("row", [pytest.param(r, id=r.id) for r in ROWS])
def test_what_a_new_user_meets(
    row: Row, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _setup(row, tmp_path)
    code, printed = _run(row, tmp_path, capsys)
    first = printed.splitlines()[0] if printed else ""
    assert (code, first) == (row.code, _at(row.first, tmp_path)), printed[:3000]
    assert _at(row.contains, tmp_path) in printed, printed[:3000]
    assert [p for p in row.written if not (tmp_path / p).exists()] == []
    assert [p for p in row.not_written if (tmp_path / p).exists()] == []


def _commands(command: click.Command, path: str) -> list[tuple[str, click.Command]]:
    found = [(path, command)]
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            found += _commands(sub, f"{path} {name}")
    return found


def test_row_05_every_group_and_command_takes_the_global_options() -> None:
    """README: the global options go before or after any command name; so every group and every command of the
    tree has them (a group without them is what made `kfctl secrets -o json apply` a usage error)."""
    lacking = [
        path
        for path, command in _commands(cli, "kfctl")
        if not {"-v", "-q", "-o", "--kubeconfig", "--context"} <= {o for p in command.params for o in p.opts}
    ]
    assert lacking == []


def test_row_18_ctrl_c_is_one_error_paragraph(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C: exit 130 and kfctl's error, with no blank line before it (click's Abort printed one)."""

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("kfctl.cli.catalog_cmd.load_catalog", interrupted)
    assert main(["catalog"]) == 130
    assert capsys.readouterr() == ("", "Error (interrupted): interrupted by the user\n")
