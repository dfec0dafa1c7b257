"""`kfctl plan -o dot|mermaid`: the plan as a picture, and the one in README.md and docs/index.md.

Rows give a plan of our own (the katib-shaped `tuner` plan of test_plan_podhooks.py, or a two-object one)
and the exact text Graphviz or Mermaid gets. README.md shows the application graph of the components
`kfctl init --platform kind` picks (so does the docs site's first page); a test regenerates it with the real
kustomize and compares. Set KFCTL_UPDATE_SNAPSHOTS=1 to rewrite both blocks after an intended change, and review
the diff.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from test_plan_podhooks import mutator, plan_of

from kfctl.cli.main import main
from kfctl.plan.diagram import Diagram, Node, application_diagram, object_diagram, to_dot, to_mermaid
from kfctl.plan.graph import build_plan
from kfctl.plan.summary import summarize

REPO = Path(__file__).parent.parent
PICTURES = (REPO / "README.md", REPO / "docs" / "index.md")
REGENERATE = "kfctl init demo --platform kind && kfctl plan demo -o mermaid"
MERMAID_BLOCK = re.compile(r"(<!-- regenerate: [^\n]*-->\n```mermaid\n)(.*?)(\n```)", re.DOTALL)


def tuner_applications() -> Diagram:
    return application_diagram(summarize(plan_of(mutator())))


def two_objects() -> Diagram:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "ml"}}
    return object_diagram(build_plan([("base", [ns]), ("app", [cm])], depends_on={"app": ["base"]}))


def awkward_names() -> Diagram:
    """Names Mermaid would misread as ids: a keyword, a leading digit, two that sanitize alike."""
    return Diagram(tuple(Node(n, n) for n in ("end", "1st", "a-b", "a_b")), ())


CASES: list[tuple[str, Callable[[], Diagram], Callable[[Diagram], str], str]] = [
    (
        # tuner dependsOn operator (solid); operator needs tuner's Namespace, serving waits for tuner's webhook
        # backend, neither through dependsOn (dashed, with the number of waits).
        "applications-mermaid",
        tuner_applications,
        to_mermaid,
        """\
flowchart TD
    operator["operator<br/>1 object"]
    tuner["tuner<br/>6 objects"]
    serving["serving<br/>2 objects"]
    tuner -.->|"1 wait"| operator
    operator --> tuner
    tuner -.->|"3 waits"| serving""",
    ),
    (
        "applications-dot",
        tuner_applications,
        to_dot,
        """\
digraph plan {
  rankdir=TB;
  node [shape=box, fontname="Helvetica"];
  "operator" [label="operator\\n1 object"];
  "tuner" [label="tuner\\n6 objects"];
  "serving" [label="serving\\n2 objects"];
  "tuner" -> "operator" [label="1 wait", style=dashed];
  "operator" -> "tuner";
  "tuner" -> "serving" [label="3 waits", style=dashed];
}""",
    ),
    (
        # Steps grouped by application, in apply order, by id within one; gates (the application `base`) drawn round.
        "objects-mermaid",
        two_objects,
        to_mermaid,
        """\
flowchart TD
    subgraph g1["base"]
        n1["Namespace ml"]
        n2(["application base"])
    end
    subgraph g2["app"]
        n3["ConfigMap ml/settings"]
    end
    n1 -->|"member"| n2
    n1 -->|"namespace"| n3
    n2 -->|"depends-on"| n3""",
    ),
    (
        "objects-dot",
        two_objects,
        to_dot,
        """\
digraph plan {
  rankdir=TB;
  node [shape=box, fontname="Helvetica"];
  subgraph "cluster_base" {
    label="base";
    "Namespace ml" [label="Namespace ml"];
    "application base" [label="application base", shape=ellipse];
  }
  subgraph "cluster_app" {
    label="app";
    "ConfigMap ml/settings" [label="ConfigMap ml/settings"];
  }
  "Namespace ml" -> "application base" [label="member"];
  "Namespace ml" -> "ConfigMap ml/settings" [label="namespace"];
  "application base" -> "ConfigMap ml/settings" [label="depends-on"];
}""",
    ),
    (
        "mermaid-ids-are-never-keywords-and-never-collide",
        awkward_names,
        to_mermaid,
        """\
flowchart TD
    n_end["end"]
    n_1st["1st"]
    a_b["a-b"]
    a_b_2["a_b"]""",
    ),
]


@pytest.mark.parametrize(("case", "diagram", "render", "expected"), CASES, ids=[c[0] for c in CASES])
def test_diagram(case: str, diagram: Callable[[], Diagram], render: Callable[[Diagram], str], expected: str) -> None:
    assert render(diagram()) == expected


@pytest.mark.parametrize("page", PICTURES, ids=[p.relative_to(REPO).as_posix() for p in PICTURES])
def test_the_front_pages_show_the_kind_platform_as_kfctl_plan_draws_it(
    page: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = str(tmp_path / "demo")
    assert main(["init", app, "--platform", "kind"]) == 0
    capsys.readouterr()
    assert main(["plan", app, "-o", "mermaid"]) == 0
    drawn = capsys.readouterr().out.rstrip("\n")
    text = page.read_text(encoding="utf-8")
    name = page.relative_to(REPO).as_posix()
    found = MERMAID_BLOCK.search(text)
    assert found, f"{name} has no ```mermaid block after a '<!-- regenerate: {REGENERATE} -->' line"
    if os.environ.get("KFCTL_UPDATE_SNAPSHOTS"):
        page.write_text(text[: found.start(2)] + drawn + text[found.end(2) :], encoding="utf-8")
    else:
        assert found.group(2) == drawn, (
            f"{name}'s plan diagram is stale: run `{REGENERATE}` and paste its output into the ```mermaid"
            " block (or run this test with KFCTL_UPDATE_SNAPSHOTS=1)"
        )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["apply", "demo", "-o", "dot"], "-o dot draws a graph, which only `kfctl plan` does; kfctl apply takes"),
        (["-o", "mermaid", "status", "demo"], "-o mermaid draws a graph, which only `kfctl plan` does; kfctl status"),
        (["plan", "demo", "--objects"], "--objects chooses what -o dot or -o mermaid draws; add one of them"),
        (["plan", "demo", "--full", "-o", "mermaid"], "--full is for the text output; for every object as a graph"),
    ],
    ids=["other-command", "other-command-format-before-it", "objects-without-a-graph", "full-with-a-graph"],
)
def test_graph_options_out_of_place_are_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2  # before anything is rendered or contacted: demo does not even exist
    assert message in capsys.readouterr().err
