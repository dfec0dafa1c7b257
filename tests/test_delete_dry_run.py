"""`kfctl delete --dry-run` and delete's confirmation, through the CLI's main against a fake cluster.

An install of a Namespace, a ConfigMap and a PersistentVolumeClaim is applied first; each row changes the
cluster as a situation would, then gives the exact text `delete --dry-run` prints: delete's own rules (storage
kept, a namespace holding others' objects kept, what is gone skipped) applied without a single write.
"""

from __future__ import annotations

import copy
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fakecluster import FakeCluster, obj, write_app

from kfctl.cli import delete_cmd, target
from kfctl.cli.main import main
from kfctl.cli.output import SCHEMA_VERSION
from kfctl.objects import ObjectKey

RENDERED = (
    "apiVersion: v1\nkind: Namespace\nmetadata: {name: kubeflow}\n---\n"
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: kubeflow}\ndata: {a: '1'}\n---\n"
    "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: kubeflow}\n"
    "spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n"
)
SETTINGS = ObjectKey("", "ConfigMap", "kubeflow", "settings")
DONE = "(dry run: nothing was deleted)"


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    c = FakeCluster()
    c.on_apply("PersistentVolumeClaim", lambda o: o.setdefault("status", {}).update({"phase": "Bound"}))
    monkeypatch.setattr(target, "open_cluster", lambda **_: c)
    return c


@pytest.fixture
def app(tmp_path: Path, cluster: FakeCluster) -> Path:
    app = tmp_path / "demo"
    write_app(app, "common", rendered={"common": RENDERED})
    assert main(["apply", str(app), "--skip-generate", "-q"]) == 0
    return app


def as_is(cluster: FakeCluster) -> None:
    pass


def users_configmap(cluster: FakeCluster) -> None:
    cluster.put(obj("v1", "ConfigMap", "mine", "kubeflow", data={"x": "1"}))


def settings_deleted_by_hand(cluster: FakeCluster) -> None:
    cluster.objects.pop(SETTINGS)


PREVIEWS = [
    pytest.param(
        as_is,
        [],
        [
            "ConfigMap kubeflow/settings: deleted (dry run)",
            "PersistentVolumeClaim kubeflow/data: kept (dry run): storage is kept without --delete-storage",
            "Namespace kubeflow: kept (dry run): holds 1 PersistentVolumeClaim(s), kept without --delete-storage",
            f"3 objects: 1 deleted, 2 kept {DONE}",
        ],
        id="storage-kept",
    ),
    pytest.param(
        as_is,
        ["--delete-storage"],
        [
            "ConfigMap kubeflow/settings: deleted (dry run)",
            "PersistentVolumeClaim kubeflow/data: deleted (dry run)",
            "Namespace kubeflow: deleted (dry run)",
            f"3 objects: 3 deleted {DONE}",
        ],
        id="delete-storage",
    ),
    pytest.param(
        users_configmap,
        ["--delete-storage"],
        [
            "ConfigMap kubeflow/settings: deleted (dry run)",
            "PersistentVolumeClaim kubeflow/data: deleted (dry run)",
            "Namespace kubeflow: kept (dry run): holds 1 object(s) kfctl did not apply: ConfigMap kubeflow/mine; "
            "kept without --force-namespaces",
            f"3 objects: 2 deleted, 1 kept {DONE}",
        ],
        id="namespace-holds-a-users-object",
    ),
    pytest.param(
        settings_deleted_by_hand,
        ["--delete-storage"],
        [
            "ConfigMap kubeflow/settings: skipped (dry run): already gone",
            "PersistentVolumeClaim kubeflow/data: deleted (dry run)",
            "Namespace kubeflow: deleted (dry run)",
            f"3 objects: 2 deleted, 1 skipped {DONE}",
        ],
        id="gone-already",
    ),
]


@pytest.mark.parametrize(("situation", "flags", "lines"), PREVIEWS)
def test_dry_run_says_what_delete_would_do_and_writes_nothing(
    app: Path,
    cluster: FakeCluster,
    capsys: pytest.CaptureFixture[str],
    situation: Callable[[FakeCluster], None],
    flags: list[str],
    lines: list[str],
) -> None:
    situation(cluster)
    before, writes = copy.deepcopy(cluster.objects), list(cluster.writes)
    capsys.readouterr()
    assert main(["delete", str(app), "--dry-run", *flags]) == 0
    assert capsys.readouterr().out.splitlines() == lines
    assert (cluster.objects, cluster.writes) == (before, writes)  # no delete, no release, no lock


def test_dry_run_json_names_each_object_by_its_fields(
    app: Path, cluster: FakeCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["delete", str(app), "--dry-run=server", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schemaVersion"] == SCHEMA_VERSION and doc["dryRun"] is True
    assert doc["objects"][0] == {
        "subject": "ConfigMap kubeflow/settings",
        "object": {"group": "", "version": "v1", "kind": "ConfigMap", "namespace": "kubeflow", "name": "settings"},
        "application": "common",
        "verdict": "delete",
    }
    assert doc["summary"] == {"delete": 1, "keep": 2, "skip": 0, "error": 0}


def test_dry_run_of_nothing_installed_and_client_dry_run(
    tmp_path: Path, cluster: FakeCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    app = tmp_path / "demo"
    write_app(app, "common", rendered={"common": RENDERED})
    assert main(["delete", str(app), "--dry-run"]) == 0
    assert capsys.readouterr().out == "Nothing to delete: no kfctl inventory for demo in namespace kubeflow\n"
    assert main(["delete", str(app), "--dry-run=client"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "Error (usage error): delete --dry-run=client: what delete removes is recorded in the cluster (kfctl's "
        "inventory), so its dry run reads the cluster",
        "Hint: use --dry-run (=server): it reads, and deletes nothing",
    ]


QUESTION = "Delete install demo? 1 deleted, 2 kept (kfctl delete --dry-run lists each object) [y/N]: "

# stdin a terminal or not → the answer typed → the flags → exit code, the prompt, whether the ConfigMap is gone.
CONFIRMATIONS = [
    pytest.param(True, "n\n", [], 1, QUESTION, False, id="terminal-no"),
    pytest.param(True, "y\n", [], 0, QUESTION, True, id="terminal-yes"),
    pytest.param(True, "", ["--yes"], 0, "", True, id="terminal-flag-yes"),
    pytest.param(True, "", ["-y"], 0, "", True, id="terminal-flag-y"),
    pytest.param(False, "", [], 0, "", True, id="not-a-terminal"),
]


@pytest.mark.parametrize(("terminal", "typed", "flags", "code", "prompt", "gone"), CONFIRMATIONS)
def test_delete_asks_on_a_terminal_only(
    app: Path,
    cluster: FakeCluster,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    terminal: bool,
    typed: str,
    flags: list[str],
    code: int,
    prompt: str,
    gone: bool,
) -> None:
    monkeypatch.setattr(delete_cmd, "stdin_is_a_terminal", lambda: terminal)
    monkeypatch.setattr(sys, "stdin", io.StringIO(typed))
    capsys.readouterr()
    assert main(["delete", str(app), *flags, "-q"]) == code
    err = capsys.readouterr().err
    assert err.startswith(prompt)
    if code:
        assert err[len(prompt) :].splitlines()[0] == "Error (cancelled): nothing was deleted"
    assert (cluster.live(SETTINGS) is None) == gone
