"""The CLI contract as a person meets it, one row per finding of the issue that set it ("commands that read write
nothing, errors that point at the cause, kubectl's conventions"): argv (and stdin) → exit code → the exact first
line printed (stdout, or stderr when stdout is empty; a progress line without its elapsed time), and what must, or
must never, appear in the output.

The detailed tables of each finding live beside their code (test_cli.py, test_cli_json.py, test_delete_dry_run.py,
test_parameter_types.py, test_read_commands_write_nothing.py, test_app_path.py, test_migrate.py …); this one keeps
the whole contract on one screen. {app} is an app dir of the catalog's cert-manager, generated; {tmp} an empty
directory; the other names are files the fixture below writes.
"""

from __future__ import annotations

import io
import re
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest
from fakecluster import FakeCluster, obj
from upstream import shared_fixture

from kfctl import __version__
from kfctl.cli import target
from kfctl.cli.main import main
from kfctl.engine.lease import COMMAND_ANNOTATION, lease_name

TYPO_KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata: {{name: typo}}
spec:
  platform: generic
  repos:
    - {{name: web, uri: "file://{repo}"}}
  applications:
    - name: web
      kustomizeConfig:
        repoRef: {{name: web, path: we}}
"""
NO_KIND = "apiVersion: kfdef.apps.kubeflow.org/v1\nmetadata: {name: demo}\nspec:\n  platform: kind\n"
SHADOW = "root:$6$abcdefgh$notforyoureyes:19000:0:99999:7:::\n"
# A plain progress line starts with the run's elapsed time ("[   0.0s] "), which is not the contract's.
ELAPSED = re.compile(r"^\[\s*[\d.]+s\] ")


@dataclass(frozen=True)
class Row:
    argv: tuple[str, ...]
    code: int
    first: str
    contains: str = ""
    absent: str = ""
    stdin: str = ""  # a file of the fixture whose bytes are the standard input


ROWS = [
    pytest.param(
        Row(
            ("plan", "{app}", "-f", "-"), 0, "Plan: 49 objects in 1 application(s), 5 wave(s)", stdin="{app}/kfdef.yaml"
        ),
        id="1-plan-reads-the-kfdef-from-stdin",
    ),
    pytest.param(
        Row(
            ("generate", "{typo}"),
            3,
            'Error (config error): application web: path "we" does not exist in repo web; did you mean "web"?',
            absent="lstat",
        ),
        id="2-kfctls-own-finding-first",
    ),
    pytest.param(Row(("-q", "version"), 0, f"kfctl {__version__}"), id="3-quiet-keeps-the-result"),
    pytest.param(
        Row(("apply", "--help"), 0, "Usage: kfctl apply [OPTIONS] [APPDIR]", absent="\b"), id="4-help-without-bytes"
    ),
    pytest.param(
        Row(("genrate",), 2, 'Error (usage error): unknown command "genrate" (did you mean "generate"?)'),
        id="5-did-you-mean-a-command",
    ),
    pytest.param(
        Row(
            ("init", "{tmp}/ml", "-p", "kind", "--namespace", "ml-platform"),
            2,
            "Error (usage error): No such option '--namespace'. Did you mean '--inventory-namespace'?",
        ),
        id="6-the-flag-is-named-for-what-it-does",
    ),
    pytest.param(
        Row(
            ("init", "{tmp}/none", "-p", "kind", "--components", ""),
            2,
            "Error (usage error): --components '' names no component: a KfDef without applications installs nothing",
        ),
        id="7-an-empty-scaffold-is-refused",
    ),
    pytest.param(
        Row(
            ("plan", "-f", "{nokind}"),
            3,
            "Error (config error): {nokind}: 2 problems in the KfDef",
            contains='kind is missing; it must be "KfDef"',
            absent="None",
        ),
        id="8-no-got-none",
    ),
    pytest.param(
        Row(
            ("migrate", "{v10}", "--to", "{tmp}/v12.yaml"),
            0,
            "Platform generic (no plugin: an existing cluster).",
            contains="Repo manifests: https://github.com/kubeflow/manifests/archive/v1.0-branch.tar.gz replaced by "
            "kfctl://catalog",
        ),
        id="9-migrate-says-what-it-replaces",
    ),
    pytest.param(
        Row(
            ("plan", "-f", "{shadow}"),
            3,
            "Error (config error): {shadow}: 1 problem in the KfDef",
            contains="not a KfDef: it has none of apiVersion, kind, spec (1 other key(s), not shown)",
            absent="$6$",
        ),
        id="10-a-non-kfdef-is-not-echoed",
    ),
    pytest.param(
        Row(
            ("apply", "{app}", "--skip-generate", "--lock-timeout", "1"),
            12,
            "Waiting    lock: held by `kfctl apply` (host elsewhere, pid 1) since 2026-01-01T00:00:00Z "
            "(last renewed {renewed}); waiting up to 1s",
        ),
        id="11-a-wait-on-the-lock-is-announced",
    ),
    pytest.param(
        Row(
            ("plan", "{app}", "-o", "json"),
            0,
            "{{",
            contains='"object": {\n          "group": "",\n          "kind": "Namespace",\n'
            '          "name": "cert-manager",',
        ),
        id="12-plan-json-gives-objects-as-objects",
    ),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("contract")
    app = root / "app"
    assert main(["init", str(app), "-p", "kind", "-c", "cert-manager", "-q"]) == 0
    assert main(["generate", str(app), "-q"]) == 0
    repo = root / "repo"
    (repo / "web").mkdir(parents=True)
    (repo / "web" / "kustomization.yaml").write_text("resources: []\n")
    (root / "typo").mkdir()
    (root / "typo" / "kfdef.yaml").write_text(TYPO_KFDEF.format(repo=repo))
    (root / "nokind.yaml").write_text(NO_KIND)
    (root / "shadow").write_text(SHADOW)
    shutil.copy(shared_fixture("kfctl_k8s_istio.v1.0.0.yaml"), root / "v10.yaml")  # migrate writes beside it
    names = {"app": app, "typo": root / "typo", "nokind": root / "nokind.yaml", "shadow": root / "shadow"}
    return {k: str(v) for k, v in names.items()} | {"v10": str(root / "v10.yaml")}


@pytest.fixture
def held_lock(monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> str:
    """A cluster where another run holds the install's lock and renewed it just now (a renewal older than the
    lock's stale limit would be taken over, not waited for); the renewal's time, as the Lease says it."""
    renewed = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    cluster = FakeCluster()
    lease = obj(
        "coordination.k8s.io/v1",
        "Lease",
        lease_name("app"),
        "kubeflow",
        annotations={COMMAND_ANNOTATION: "apply"},
        spec={
            "holderIdentity": "elsewhere/1/run",
            "leaseDurationSeconds": 3600,
            "acquireTime": "2026-01-01T00:00:00Z",
            "renewTime": renewed,
        },
    )
    cluster.put(obj("v1", "Namespace", "kubeflow"))
    cluster.put(lease)
    monkeypatch.setattr(target, "open_cluster", lambda **_: cluster)
    return renewed


@pytest.mark.parametrize("row", ROWS)
def test_the_cli_contract(
    row: Row,
    files: dict[str, str],
    held_lock: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = files | {"tmp": str(tmp_path), "renewed": held_lock}
    if row.stdin:
        data = Path(row.stdin.format(**names)).read_bytes()
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    code = main([a.format(**names) for a in row.argv])
    out, err = capsys.readouterr()
    printed = out or err
    first = ELAPSED.sub("", printed.splitlines()[0])
    assert (code, first) == (row.code, row.first.format(**names)), printed[:2000]
    assert row.contains in printed
    if row.absent:
        assert row.absent not in out + err
