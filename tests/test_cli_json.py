"""The documents `-o json` prints, as a program reads them: each carries a schemaVersion, whatever the command
and whether it succeeded; a stream (apply's and delete's events) carries it in every document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kfctl.cli.main import main
from kfctl.cli.output import SCHEMA_VERSION


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    app = tmp_path_factory.mktemp("json") / "demo"
    assert main(["init", str(app), "-p", "kind", "-c", "cert-manager", "-q"]) == 0
    return app


def documents(text: str) -> list[dict[str, Any]]:
    """One indented document, or a stream of one-line documents."""
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines()]


# argv ({app}: an initialised app dir, {tmp}: an empty directory) → exit code → a key of the document.
SCHEMA_ROWS = [
    pytest.param(["version"], 0, "version", id="version"),
    pytest.param(["catalog"], 0, "components", id="catalog"),
    pytest.param(["catalog", "katib"], 0, "parameters", id="catalog-component"),
    pytest.param(["init", "{tmp}/new", "-p", "kind"], 0, "addedDependencies", id="init"),
    pytest.param(["plan", "{app}"], 0, "summary", id="plan"),
    pytest.param(["apply", "{app}", "--dry-run=client"], 0, "summary", id="apply-client-dry-run"),
    pytest.param(["generate", "{tmp}/nowhere"], 3, "error", id="config-error"),
    pytest.param(["status", "{app}", "--kubeconfig", "{tmp}/none"], 6, "error", id="cluster-error"),
    pytest.param(["delete", "{app}", "--kubeconfig", "{tmp}/none"], 6, "error", id="delete-cluster-error"),
]


@pytest.mark.parametrize(("argv", "code", "first"), SCHEMA_ROWS)
def test_every_json_document_has_a_schema_version(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, app: Path, argv: list[str], code: int, first: str
) -> None:
    args = [a.format(app=app, tmp=tmp_path) for a in argv]
    assert main([*args, "-o", "json"]) == code
    out, err = capsys.readouterr()
    docs = documents(out if code == 0 else err)
    assert [d["schemaVersion"] for d in docs] == [SCHEMA_VERSION] * len(docs)
    assert first in docs[0], sorted(docs[0])
