"""Commands that read write nothing (issue 31, "Must show"): after `generate` and `apply`, `plan`, `diff`,
`status` and `check` (and `check --pre`, `generate --check`) work on an app dir made read-only, and leave every
file and directory with the same bytes and modification time; so does a fresh checkout of it, which has no
.cache/ (git ignores it): what a read needs from the network is fetched outside the app dir.

`chmod -R a-w` is what a read-only CI checkout looks like, but it stops no write when the tests run as root: the
oracle is the bytes and mtime of every path before and after. The app is real: the catalog's `common` rendered
by the real kustomize, and an application from a repo tarball whose kustomization has a remote base (an
https:// file, served from a local directory through spec.mirrors). The cluster is the fake one.
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakecluster import FakeCluster

from kfctl.cli import target
from kfctl.cli.main import main

KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata: {name: demo, namespace: kubeflow}
spec:
  platform: kind
  repos:
    - {name: manifests, uri: "kfctl://catalog"}
    - {name: mine, uri: ../team.tar.gz}
  mirrors:
    - {prefix: "https://files.example.com/", location: ../files}
  applications:
    - name: common
    - name: settings
      dependsOn: [common]
      kustomizeConfig:
        repoRef: {name: mine, path: apps/settings}
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: kubeflow}\ndata: {a: '1'}\n"


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    c = FakeCluster()
    monkeypatch.setattr(target, "open_cluster", lambda **_: c)  # every command opens it there
    return c


def snapshot(root: Path, *, leave_out: Path) -> dict[str, tuple[str, int, bytes]]:
    """Every path below ``root`` (and itself) but ``leave_out`` and what is in it: its kind, its mtime in ns, and
    a file's bytes."""
    out: dict[str, tuple[str, int, bytes]] = {}
    for path in [root, *sorted(root.rglob("*"))]:
        if path == leave_out or leave_out in path.parents:
            continue
        st = path.lstat()
        kind = "dir" if stat.S_ISDIR(st.st_mode) else "link" if stat.S_ISLNK(st.st_mode) else "file"
        out[str(path.relative_to(root))] = (kind, st.st_mtime_ns, path.read_bytes() if kind == "file" else b"")
    return out


def changes(before: dict[str, tuple[str, int, bytes]], after: dict[str, tuple[str, int, bytes]]) -> list[str]:
    """What differs, one line a path: added, removed, rewritten (other bytes) or touched (same bytes, new mtime)."""
    lines = [f"added {p}" for p in sorted(set(after) - set(before))]
    lines += [f"removed {p}" for p in sorted(set(before) - set(after))]
    for p in sorted(set(before) & set(after)):
        if before[p][2] != after[p][2] or before[p][0] != after[p][0]:
            lines.append(f"rewritten {p}")
        elif before[p][1] != after[p][1]:
            lines.append(f"touched {p}")
    return lines


@pytest.fixture(params=["with its cache", "a fresh checkout, no .cache"])
def read_only_app(request: pytest.FixtureRequest, tmp_path: Path, cluster: FakeCluster) -> Iterator[Path]:
    """APPDIR generated and applied to the fake cluster, then (its .cache/ removed, for a fresh checkout) every
    path below the test's directory `chmod -R a-w`, given back at the end."""
    team = tmp_path / "team" / "apps" / "settings"
    team.mkdir(parents=True)
    (team / "kustomization.yaml").write_text("resources: [configmap.yaml, https://files.example.com/extra.yaml]\n")
    (team / "configmap.yaml").write_text(CONFIGMAP % "settings")
    with tarfile.open(tmp_path / "team.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "team", arcname="team")
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "extra.yaml").write_text(CONFIGMAP % "extra")
    app = tmp_path / "demo"
    app.mkdir()
    (app / "kfdef.yaml").write_text(KFDEF)
    assert main(["generate", str(app), "-q"]) == 0
    assert main(["apply", str(app), "--skip-generate", "-q"]) == 0
    assert {p.name for p in (app / ".cache").iterdir()} >= {"repos", "remote"}  # both were fetched into it
    if request.param == "a fresh checkout, no .cache":
        shutil.rmtree(app / ".cache")
    scratch = tmp_path / "tmpdir"  # the temp dir (conftest): where private renders and fetches go
    modes = {p: p.lstat().st_mode for p in [tmp_path, *tmp_path.rglob("*")] if scratch not in (p, *p.parents)}
    for path in modes:
        os.chmod(path, stat.S_IMODE(modes[path]) & ~0o222, follow_symlinks=False)
    try:
        yield app
    finally:
        for path, mode in sorted(modes.items(), key=lambda item: len(item[0].parts)):
            if path.exists():
                os.chmod(path, stat.S_IMODE(mode), follow_symlinks=False)


# The command (APP: the app dir, KFDEF: its kfdef.yaml), its exit code, and a line its output has.
COMMANDS = [
    pytest.param(["plan", "APP"], 0, "Plan: 8 objects in 2 application(s), 3 wave(s)", id="plan"),
    pytest.param(["plan", "-f", "KFDEF"], 0, "Plan: 8 objects in 2 application(s), 3 wave(s)", id="plan-f"),
    pytest.param(["plan", "APP", "-o", "mermaid"], 0, "flowchart", id="plan-mermaid"),
    pytest.param(["diff", "APP"], 0, "0 change(s), 8 unchanged", id="diff"),
    pytest.param(["diff", "APP", "--skip-generate"], 0, "0 change(s), 8 unchanged", id="diff-skip-generate"),
    pytest.param(["status", "APP"], 0, "settings               ready", id="status"),
    pytest.param(["check", "APP"], 0, "platform works: 3 checks, 3 passed", id="check"),
    pytest.param(["check", "APP", "--pre"], 0, "ready to install:", id="check-pre"),
    pytest.param(["check", "APP", "--pre", "--skip-generate"], 0, "ready to install:", id="check-pre-skip-generate"),
    pytest.param(["generate", "APP", "--check"], 0, "is up to date", id="generate-check"),
    pytest.param(
        ["export", "APP", "--format", "argocd", "--repo-url", "https://git.example.com/ml.git"],
        0,
        "kind: Application",
        id="export",
    ),
]


@pytest.mark.parametrize(("command", "code", "says"), COMMANDS)
def test_a_read_command_works_on_a_read_only_app_dir_and_changes_no_byte_or_mtime(
    read_only_app: Path,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
    code: int,
    says: str,
) -> None:
    app = read_only_app
    root, scratch = app.parent, app.parent / "tmpdir"
    args = [{"APP": str(app), "KFDEF": str(app / "kfdef.yaml")}.get(a, a) for a in command]
    before = snapshot(root, leave_out=scratch)
    capsys.readouterr()
    assert main(args) == code, capsys.readouterr()
    out, err = capsys.readouterr()
    assert says in out, out + err
    assert changes(before, snapshot(root, leave_out=scratch)) == []
