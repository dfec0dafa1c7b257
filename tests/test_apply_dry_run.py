"""`kfctl apply --dry-run`: every write apply would make, as a server-side dry run, and the verdict on each.
Through the CLI's main against a fake cluster that already holds this install's `settings` ConfigMap: one row
per situation of a second object, with the exact line printed for it and the exit code; nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakecluster import FakeCluster, obj, write_app

from kfctl.cli import target
from kfctl.cli.main import main
from kfctl.k8s.api import ApiError
from kfctl.objects import ObjectKey

NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata: {name: kubeflow}\n"
SETTINGS = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: kubeflow}\ndata: {a: '1'}\n"
EXTRA = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: kubeflow}\ndata: {b: '2'}\n"
WIDGET = (  # its CRD comes with this apply
    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.org}\n"
    "spec: {group: example.org, scope: Namespaced, names: {kind: Widget, plural: widgets},"
    " versions: [{name: v1, served: true, storage: true}]}\n---\n"
    "apiVersion: example.org/v1\nkind: Widget\nmetadata: {name: w, namespace: kubeflow}\n"
)
EXTRA_KEY = ObjectKey("", "ConfigMap", "kubeflow", "extra")
DENIAL = 'admission webhook "policy.example.org" denied the request: ConfigMaps need an owner label'
UNANSWERED = 'Internal error occurred: failed calling webhook "policy.example.org": connection refused'


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    c = FakeCluster()
    monkeypatch.setattr(target, "open_cluster", lambda **_: c)
    return c


def run(app: Path, *args: str) -> int:
    return main(["apply", str(app), "--skip-generate", *args])


@pytest.mark.parametrize(
    ("second", "situation", "line", "code"),
    [
        pytest.param(EXTRA, None, "ConfigMap kubeflow/extra: created (server dry run)", 0, id="a new object"),
        pytest.param(
            EXTRA,
            ApiError(403, DENIAL, reason="Forbidden"),
            f"ConfigMap kubeflow/extra: denied (server dry run): {DENIAL}",
            7,
            id="refused by a webhook",
        ),
        pytest.param(
            EXTRA,
            ApiError(500, UNANSWERED),
            f"ConfigMap kubeflow/extra: pending (server dry run): {UNANSWERED}",
            0,
            id="a webhook not answering yet",
        ),
        pytest.param(
            WIDGET,
            None,
            "Widget.example.org kubeflow/w: created (server dry run): not sent: its kind is served once its CRD is "
            "applied",
            0,
            id="a kind not served yet",
        ),
        pytest.param(
            EXTRA,
            "foreign",
            "ConfigMap kubeflow/extra: foreign (server dry run): no owner recorded; apply stops (exit 11) unless "
            "--adopt",
            11,
            id="another owner's",
        ),
    ],
)
def test_a_dry_run_says_what_apply_would_do_and_writes_nothing(
    tmp_path: Path,
    cluster: FakeCluster,
    capsys: pytest.CaptureFixture[str],
    second: str,
    situation: ApiError | str | None,
    line: str,
    code: int,
) -> None:
    app = tmp_path / "demo"
    write_app(app, "common", rendered={"common": NAMESPACE + "---\n" + SETTINGS})
    assert run(app, "-q") == 0
    write_app(app, "common", rendered={"common": NAMESPACE + "---\n" + SETTINGS + "---\n" + second})
    if isinstance(situation, ApiError):
        cluster.fail(EXTRA_KEY, situation)
    elif situation == "foreign":
        cluster.put(obj("v1", "ConfigMap", "extra", "kubeflow", data={"b": "1"}))  # someone's, made by hand
    before = list(cluster.writes)
    capsys.readouterr()
    assert run(app, "--dry-run") == code
    out = capsys.readouterr().out.splitlines()
    assert line in out
    assert out[-1].endswith("(server-side dry run: nothing persisted)")
    assert cluster.writes == before
