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


# A usage error reads as every other error, in one style, and obeys -o json even when click stopped parsing
# before it reached -o. argv → the start of the message (after "Error (usage error): "); exit code 2 for all.
USAGE_ROWS = [
    pytest.param(["genrate"], 'unknown command "genrate" (did you mean "generate"?)', id="unknown-command"),
    pytest.param(["generate", "--nope"], "No such option '--nope'.", id="unknown-option"),
    pytest.param(["apply", "x", "--dry-run=maybe"], "--dry-run=maybe: choose --dry-run=server", id="dry-run-value"),
    pytest.param(
        ["delete", "x", "--dry-run=client"], "delete --dry-run=client: what delete removes", id="delete-client"
    ),
    pytest.param(["init", "{tmp}/a", "-p", "kinda"], 'unknown platform "kinda" (did you mean "kind"?)', id="platform"),
    pytest.param(
        ["init", "{tmp}/a", "-p", "kind", "-c", "katbi"],
        '--components: unknown component "katbi" (did you mean "katib"?)',
        id="component",
    ),
    pytest.param(["plan", "--objects"], "--objects chooses what -o dot or -o mermaid draws", id="plan-objects"),
]


@pytest.mark.parametrize(("argv", "message"), USAGE_ROWS)
def test_usage_errors_are_errors_like_the_others(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str
) -> None:
    args = [a.format(tmp=tmp_path) for a in argv]
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"Error (usage error): {message}"), err
    assert main([*args, "-o", "json"]) == 2
    record = json.loads(capsys.readouterr().err)
    assert (record["schemaVersion"], record["error"]["kind"], record["error"]["exitCode"]) == (
        SCHEMA_VERSION,
        "usage error",
        2,
    )
    assert record["error"]["message"].startswith(message)
