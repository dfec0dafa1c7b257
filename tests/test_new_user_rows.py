"""Issue 51, what a new user trips on: one row per row of the issue. argv (and the files and environment it
needs) → the exact exit code → the exact first line printed (stdout, or stderr when stdout is empty) → a later
line the row is about, if any → the files the run must have written, and those it must not have.

Each run starts in an empty directory ({tmp}, also the working directory) holding the row's ``files``; a file
whose text is ``SHARED:<name>`` is a copy of ../shared/fixtures/<name>. A row with an ``env`` runs kfctl as a
subprocess with exactly that environment (besides PATH and HOME): the locale is read when Python starts, so it
cannot be set in-process. Rows whose number is missing belong to other work on the issue; append them here.
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
