"""The command line as a user meets it: exit codes, messages, files left alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kfctl import __version__
from kfctl.catalog.model import Catalog
from kfctl.cli.main import main
from kfctl.cli.options import kubectl_dry_run
from kfctl.cli.output import SCHEMA_VERSION
from kfctl.config.loader import EXAMPLE_HINT, load_kfdef


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_version_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "version") == (0, f"kfctl {__version__}\n", "")
    code, out, _ = run(capsys, "version", "-o", "json")
    assert (code, json.loads(out)) == (0, {"schemaVersion": SCHEMA_VERSION, "version": __version__})


@pytest.mark.parametrize("command", ["init", "generate", "build", "catalog", "migrate", "version"])
def test_every_command_has_help_with_an_example(capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    assert "Example" in out
    for flag in ("--output", "--kubeconfig", "--context", "--verbose", "--quiet"):
        assert flag in out


def test_init_kind_writes_a_kfdef_the_loader_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], real_catalog: Catalog
) -> None:
    app = tmp_path / "demo"
    code, out, err = run(capsys, "init", str(app), "--platform", "kind")
    assert (code, err) == (0, "")
    assert out.startswith(f"Wrote {app / 'kfdef.yaml'} (platform kind): ")
    kfdef = load_kfdef(app / "kfdef.yaml", real_catalog)
    assert kfdef.platform == "kind"
    assert {a.component for a in kfdef.applications} == set(real_catalog.platforms["kind"].default_components)
    assert (app / ".gitignore").read_text().splitlines()[1] == ".cache/"
    assert "# " in (app / "kfdef.yaml").read_text()  # commented for newcomers
    assert (app / "kfdef.yaml").stat().st_mode & 0o777 == 0o644  # shareable, like any file a user writes


def test_second_init_refuses_and_leaves_the_file_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = tmp_path / "demo"
    assert run(capsys, "init", str(app), "--platform", "kind")[0] == 0
    (app / "kfdef.yaml").write_bytes(b"# my edits\n" + (app / "kfdef.yaml").read_bytes())
    before = (app / "kfdef.yaml").read_bytes()
    code, out, err = run(capsys, "init", str(app), "--platform", "aws")
    assert (code, out) == (2, "")
    assert err == (
        f"Error (usage error): {app / 'kfdef.yaml'}: already exists; left unchanged\n"
        "Hint: pass --force to overwrite it, or choose another APPDIR\n"
    )
    assert (app / "kfdef.yaml").read_bytes() == before
    assert run(capsys, "init", str(app), "--platform", "kind", "--force")[0] == 0
    assert (app / "kfdef.yaml").read_bytes() != before


def test_init_components_adds_dependencies_and_rejects_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], real_catalog: Catalog
) -> None:
    code, out, _ = run(capsys, "init", str(tmp_path / "a"), "-p", "kind", "-c", "katib", "-o", "json")
    assert code == 0
    result = json.loads(out)
    assert result["components"][-1] == "katib"
    assert set(result["addedDependencies"]) == set(real_catalog.components["katib"].depends_on) | {
        d for c in real_catalog.components["katib"].depends_on for d in real_catalog.components[c].depends_on
    }
    code, out, err = run(capsys, "init", str(tmp_path / "b"), "-p", "kind", "-c", "katib,mxjob")
    assert (code, out) == (2, "")
    assert err.startswith('Error (usage error): --components: component "mxjob" is not available: MXJob was removed')
    assert not (tmp_path / "b" / "kfdef.yaml").exists()


def test_three_mistakes_yield_three_positioned_messages_and_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "kfdef.yaml"
    path.write_text(
        "apiVersion: kfdef.apps.kubeflow.org/v1\n"
        "kind: KfDef\n"
        "metadata:\n"
        "  name: demo\n"
        "spec:\n"
        "  platform: kind\n"
        "  colour: blue\n"
        "  repos:\n"
        "    - {name: manifests, uri: 'kfctl://catalog'}\n"
        "  applications:\n"
        "    - name: common\n"
        "      kustomizeConfig:\n"
        "        repoRef: {name: manifest, path: manifests/common}\n"
        "    - name: notebooks\n"
        "      kustomizeConfig:\n"
        "        repoRef: {name: manifests, path: manifests/notebook-controler}\n"
    )
    code, out, err = run(capsys, "generate", "-f", str(path))
    assert (code, out) == (3, "")
    assert err.splitlines() == [
        f"Error (config error): {path}: 3 problems in the KfDef",
        f'  {path}:7:3 spec.colour: unknown field "colour"',
        f'  {path}:13:19 spec.applications[0].kustomizeConfig.repoRef.name: repo "manifest" is not defined in '
        'spec.repos (did you mean "manifests"?)',
        f"  {path}:16:36 spec.applications[1].kustomizeConfig.repoRef.path: unknown component "
        '"notebook-controler" (did you mean "notebook-controller"?)',
        f"Hint: fix the fields named above; {EXAMPLE_HINT}",
    ]
    assert "Traceback" not in err
    code, out, err = run(capsys, "generate", "-f", str(path), "-o", "json")
    assert code == 3
    record = json.loads(err)["error"]
    assert (record["kind"], record["exitCode"], len(record["details"])) == ("config error", 3, 3)


def test_generate_without_kfdef_says_how_to_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "generate", str(tmp_path))
    assert (code, out) == (3, "")
    assert err == (
        f"Error (config error): {tmp_path / 'kfdef.yaml'}: no such file\n"
        "Hint: create one with `kfctl init APPDIR --platform kind`\n"
    )


@pytest.mark.parametrize(
    ("dirname", "name"),
    [
        pytest.param("demo", "demo", id="plain"),
        pytest.param("My Demo_App", "my-demo-app", id="spaces-and-underscores"),
        pytest.param("Démo", "d-mo", id="non-ascii-letter"),
        pytest.param("ÉÉ", "kubeflow", id="nothing-left"),
        pytest.param("x" * 70, "x" * 63, id="too-long"),
    ],
)
def test_init_derives_a_name_its_own_loader_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], real_catalog: Catalog, dirname: str, name: str
) -> None:
    app = tmp_path / dirname
    assert run(capsys, "init", str(app), "--platform", "kind")[0] == 0
    assert load_kfdef(app / "kfdef.yaml", real_catalog).name == name


def test_init_refuses_a_namespace_that_is_not_a_dns_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "init", str(tmp_path / "a"), "-p", "kind", "-n", "a: b")
    assert (code, out) == (2, "")
    assert err == (
        "Error (usage error): --inventory-namespace 'a: b' must be a DNS label (lowercase letters, digits, '-', at "
        "most 63)\n"
    )
    assert not (tmp_path / "a").exists()


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "init", str(tmp_path), "--platform", "openshift")
    assert code == 2
    assert err.startswith('Error (usage error): unknown platform "openshift"; known: ')
    code, _, err = run(capsys, "nosuch")
    assert code == 2
    assert err.startswith('Error (usage error): unknown command "nosuch"\n')


def test_global_options_work_before_and_after_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    a = run(capsys, "-o", "json", "version")
    b = run(capsys, "version", "-o", "json")
    assert a == b
    assert yaml.safe_load(a[1]) == {"schemaVersion": SCHEMA_VERSION, "version": __version__}


def test_catalog_lists_components_and_shows_parameters(
    capsys: pytest.CaptureFixture[str], real_catalog: Catalog
) -> None:
    code, out, _ = run(capsys, "catalog", "-o", "json")
    assert code == 0
    listing = json.loads(out)
    assert sorted(listing["components"]) == sorted(real_catalog.components)
    assert sorted(listing["platforms"]) == ["aws", "azure", "gcp", "generic", "kind"]
    code, out, _ = run(capsys, "catalog", "katib", "-o", "json")
    assert code == 0
    assert [p["name"] for p in json.loads(out)["parameters"]] == list(real_catalog.components["katib"].parameters)
    code, out, err = run(capsys, "catalog", "katbi")
    assert (code, out) == (2, "")
    assert err == (
        'Error (usage error): unknown component "katbi" (did you mean "katib"?)\n'
        "Hint: `kfctl catalog` lists the components, overlays and platforms\n"
    )


def test_the_guides_exit_code_table_and_help_match_the_error_classes() -> None:
    import re

    from kfctl import errors
    from kfctl.cli.main import HELP

    guide = (Path(__file__).parent.parent / "docs" / "usage.md").read_text(encoding="utf-8")
    table = guide.split("## Exit codes", 1)[1].split("\n\n", 2)[1]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", table, flags=re.M)}
    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.KfctlError)]
    raised = {c.exit_code for c in classes}
    # 2: click's usage errors; 13 to 16: outcomes that are not errors (check's verdicts, changes, migrate --check)
    findings = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.Finding)]
    outcomes = {c.exit_code for c in findings if c is not errors.Finding}
    assert documented == raised | {0, 2} | outcomes
    assert {int(c) for c in re.findall(r"(\d+) [A-Za-z]", HELP.split("Exit codes:", 1)[1])} == documented


def test_catalog_shows_an_overlays_parameters(capsys: pytest.CaptureFixture[str], real_catalog: Catalog) -> None:
    code, out, _ = run(capsys, "catalog", "image-mirror", "-o", "json")
    assert code == 0
    params = json.loads(out)["parameters"]
    assert [(p["name"], p["required"]) for p in params] == [("imageMirrorRegistry", True)]


@pytest.mark.parametrize(
    ("argv", "starts"),
    [
        pytest.param(["-q", "version"], f"kfctl {__version__}\n", id="version"),
        pytest.param(["catalog", "-q"], "Components:\n  cert-manager ", id="catalog"),
    ],
)
def test_quiet_silences_notes_never_the_result(
    capsys: pytest.CaptureFixture[str], argv: list[str], starts: str
) -> None:
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert out.startswith(starts), out[:200]


def test_quiet_plan_still_writes_the_diagram(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, real_catalog: Catalog
) -> None:
    assert run(capsys, "init", str(tmp_path / "demo"), "--platform", "kind")[0] == 0
    assert run(capsys, "generate", str(tmp_path / "demo"))[0] == 0
    code, out, _ = run(capsys, "plan", str(tmp_path / "demo"), "-q", "-o", "mermaid")
    assert code == 0 and out.startswith("flowchart TD\n"), out[:200]


CLI_CONVENTIONS = [
    (["genrate"], 2, 'Error (usage error): unknown command "genrate" (did you mean "generate"?)'),
    (["zzz"], 2, 'Error (usage error): unknown command "zzz"'),
    (["--version"], 0, f"kfctl {__version__}"),
]


@pytest.mark.parametrize(("argv", "code", "line"), CLI_CONVENTIONS, ids=["did-you-mean", "unknown", "version-flag"])
def test_kubectl_conventions(capsys: pytest.CaptureFixture[str], argv: list[str], code: int, line: str) -> None:
    got, out, err = run(capsys, *argv)
    assert got == code
    assert line in (out + err).splitlines()


def test_a_kfdef_file_given_as_appdir_says_to_use_f(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    kfdef = tmp_path / "kfdef.yaml"
    kfdef.write_text("kind: KfDef\n")
    code, _, err = run(capsys, "generate", str(kfdef))
    assert code == 2
    assert err.splitlines() == [
        f"Error (usage error): Invalid value for '[APPDIR]': {kfdef} is a file, and APPDIR is a directory; to use a "
        f"KfDef file, pass it with -f: kfctl generate -f {kfdef}",
        "Hint: `kfctl generate --help` shows the usage",
    ]


@pytest.mark.parametrize("command", [["plan"], ["plan", "-o", "mermaid"], ["plan", "--full"]])
def test_commands_that_read_write_nothing_into_the_app_dir(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: list[str]
) -> None:
    app = tmp_path / "demo"
    assert run(capsys, "init", str(app), "--platform", "kind")[0] == 0
    before = sorted(p.relative_to(app) for p in app.rglob("*"))
    code, _, err = run(capsys, *command, str(app))
    assert code == 0, err
    assert sorted(p.relative_to(app) for p in app.rglob("*")) == before


@pytest.mark.parametrize(
    "argv",
    [["version"], ["catalog"], ["catalog", "katib"], ["generate", "/nonexistent-appdir"]],
    ids=["version", "catalog", "component", "error"],
)
def test_o_yaml_prints_the_documents_o_json_prints(
    capsys: pytest.CaptureFixture[str], argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kubectl's -o yaml: the same documents as -o json (a result on stdout, an error on stderr), as YAML."""
    monkeypatch.chdir(tmp_path)
    as_json, as_yaml = run(capsys, *argv, "-o", "json"), run(capsys, *argv, "-o", "yaml")
    assert as_yaml[0] == as_json[0]
    stream = 1 if as_json[0] == 0 else 2
    assert yaml.safe_load(as_yaml[stream]) == json.loads(as_json[stream])
    assert as_yaml[stream].startswith("---\n")


def test_a_graph_format_outside_plan_names_the_formats_the_command_takes(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "status", "-o", "mermaid")
    assert code == 2
    assert (
        "-o mermaid draws a graph, which only `kfctl plan` does; kfctl status takes -o text, -o json or -o yaml" in err
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["apply", "--dry-run", "demo"], ["apply", "--dry-run", "demo"]),
        (["apply", "demo", "--dry-run=server"], ["apply", "demo", "--dry-run"]),
        (["apply", "demo", "--dry-run=client"], ["apply", "demo", "--dry-run-client"]),
        (["apply", "demo", "--dry-run=none"], ["apply", "demo"]),
        (["apply", "-f", "-", "--", "--dry-run=client"], ["apply", "-f", "-", "--", "--dry-run=client"]),
    ],
    ids=["bare-before-appdir", "server", "client", "none", "after-double-dash"],
)
def test_kubectls_dry_run_values_map_onto_kfctls_flag(argv: list[str], expected: list[str]) -> None:
    assert kubectl_dry_run(argv) == expected


def test_client_dry_run_prints_the_plan_without_the_cluster(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    app = tmp_path / "demo"
    assert run(capsys, "init", str(app), "--platform", "kind", "-q")[0] == 0
    missing = str(tmp_path / "no-kubeconfig")
    code, out, err = run(capsys, "apply", str(app), "--dry-run=client", "--kubeconfig", missing, "-o", "json")
    assert code == 0, err
    assert json.loads(out)["summary"]["waves"] > 0
    code, _, err = run(capsys, "apply", str(app), "--dry-run=maybe")
    assert (code, err.strip()) == (
        2,
        "Error (usage error): --dry-run=maybe: choose --dry-run=server (or --dry-run), client or none",
    )


@pytest.mark.parametrize("components", ["", " , "])
def test_init_with_no_component_named_is_a_usage_error_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, components: str
) -> None:
    code, _, err = run(capsys, "init", str(tmp_path / "demo"), "-p", "kind", "--components", components)
    assert code == 2
    assert err.splitlines()[0] == (
        f"Error (usage error): --components {components!r} names no component: a KfDef without applications "
        "installs nothing"
    )
    assert not (tmp_path / "demo").exists()


def _commands() -> list[str]:
    import click

    from kfctl.cli.main import cli

    return list(cli.list_commands(click.Context(cli)))


@pytest.mark.parametrize("command", _commands())
def test_help_fits_a_screen_with_examples_one_per_line_and_no_control_bytes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) <= 50, f"kfctl {command} --help is {len(lines)} lines"
    assert not [c for c in out if ord(c) < 32 and c not in "\n"], "control bytes in the help"
    if command == "secrets":  # a group: its one subcommand's help has the examples
        code, out, _ = run(capsys, command, "apply", "--help")
        lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() in ("Example:", "Examples:"))
    examples: list[str] = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        if examples and examples[-1].endswith("\\"):  # a long example continued on the next line
            examples[-1] += " " + line.strip()
        else:
            examples.append(line.strip())
    assert examples and all(e.startswith("kfctl ") for e in examples), examples


def test_generate_names_what_it_removes_and_check_does_not_claim_to_vendor(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    app = tmp_path / "demo"
    assert run(capsys, "init", str(app), "-p", "kind", "-c", "training-operator", "-q")[0] == 0
    assert run(capsys, "generate", str(app))[0] == 0
    (app / "rendered" / "my-extra.yaml").write_text("kind: ConfigMap\n")
    code, out, _ = run(capsys, "generate", str(app))
    assert code == 0
    assert "0 file(s) changed\n1 file(s) removed (no longer rendered): rendered/my-extra.yaml\n" in out
    code, out, _ = run(capsys, "generate", str(app), "--check")
    assert code == 0
    assert out.splitlines()[-1].startswith(f"{app / 'vendor'} is up to date: ")


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (None, ".cache/\n.kfctl-tmp-*/\n"),
        (
            "*.swp",
            "*.swp\n# kfctl: caches that are re-created on demand. Commit kfdef.yaml, kfdef.lock, "
            "kustomize/, vendor/, rendered/.\n.cache/\n.kfctl-tmp-*/\n",
        ),
        ("*.swp\n.cache/\n.kfctl-tmp-*/\n", "*.swp\n.cache/\n.kfctl-tmp-*/\n"),
    ],
    ids=["none", "the-users-own", "already-complete"],
)
def test_init_makes_the_gitignore_ignore_kfctls_caches_keeping_the_users_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, before: str | None, after: str
) -> None:
    app = tmp_path / "demo"
    app.mkdir()
    if before is not None:
        (app / ".gitignore").write_text(before)
    assert run(capsys, "init", str(app), "-p", "kind", "-q")[0] == 0
    assert (app / ".gitignore").read_text().endswith(after)


INVENTORY = "Inventory and lock (kfctl's record of this install): namespace"

# `-n` names where kfctl keeps its record, not where objects go: init's flag says so, and plan says both.
# init's flags → plan's line about the inventory, the NAMESPACES column of cert-manager.
INVENTORY_NAMESPACE = [
    pytest.param(
        ["-c", "cert-manager", "-n", "ml-platform"],
        f"{INVENTORY} ml-platform, where no object goes: apply creates it for the record alone",
        id="short-flag",
    ),
    pytest.param(
        ["-c", "cert-manager", "--inventory-namespace", "ml-platform"],
        f"{INVENTORY} ml-platform, where no object goes: apply creates it for the record alone",
        id="long-flag",
    ),
    pytest.param(
        ["-c", "cert-manager,training-operator"], f"{INVENTORY} kubeflow, created by application common", id="default"
    ),
]


@pytest.mark.parametrize(("flags", "line"), INVENTORY_NAMESPACE)
def test_plan_says_where_the_inventory_goes_and_where_objects_go(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flags: list[str], line: str
) -> None:
    app = tmp_path / "demo"
    assert run(capsys, "init", str(app), "-p", "kind", *flags)[0] == 0
    code, out, err = run(capsys, "plan", str(app))
    assert code == 0, err
    assert line in out.splitlines()
    # APPLICATION OBJECTS NAMESPACES: cert-manager's objects go to its own namespace, whatever -n says
    assert [row.split()[2] for row in out.splitlines() if row.split()[:1] == ["cert-manager"]] == ["cert-manager"]
    code, out, _ = run(capsys, "plan", str(app), "-o", "json")
    assert json.loads(out)["inventory"]["namespace"] == line.split("namespace ", 1)[1].split(",")[0]


def test_init_has_no_namespace_flag_that_would_not_place_the_platform(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "init", "demo", "-p", "kind", "--namespace", "ml")
    assert (code, out) == (2, "")
    assert err.splitlines()[0] == (
        "Error (usage error): No such option '--namespace'. Did you mean '--inventory-namespace'?"
    )


def test_the_command_reference_is_what_the_cli_says() -> None:
    """docs/reference/commands.md is generated from these commands (and tests/test_docs_reference.py says so too):
    after changing a command, an option or a help text, run `python docs/gen_reference.py` and commit the page."""
    import gen_reference

    assert gen_reference.commands_page() == (gen_reference.DOCS / "reference" / "commands.md").read_text(
        encoding="utf-8"
    ), "docs/reference/commands.md is stale: run `python docs/gen_reference.py`"
