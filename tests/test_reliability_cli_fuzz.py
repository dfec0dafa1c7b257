"""R3: whatever the command line, kfctl ends with one of its own exit codes and a message, never a traceback.

Hypothesis builds argv lists from the real commands, their real options, plausible and hostile values and
arbitrary text, and runs them in-process through ``kfctl.cli.main.main`` in a scratch directory that holds a
valid app (a tiny local kustomize repo), a KfDef that is not YAML and one that is YAML but not a KfDef.
Every kubeconfig the runs can reach points at a closed port of 127.0.0.1, so cluster commands get as far as
connecting and must answer exit 6 naming the server. (The KfDef loader has its own fuzz test,
tests/test_config_fuzz.py.)
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kfctl.cli.main import COMMANDS as COMMAND_MODULES
from kfctl.cli.main import cli, main
from kfctl.cli.progress import Duration
from kfctl.errors import ExitStatus

REPO = Path(__file__).resolve().parent.parent


def _own_codes() -> set[int]:
    """Success and the exit code of every class of kfctl's exit-code tree (its errors and its findings, "changes"
    with --detailed-exitcode among them) but the base's 1 (an unexpected crash)."""
    classes: list[type[ExitStatus]] = [ExitStatus]
    for c in classes:
        classes.extend(c.__subclasses__())
    return {0} | ({c.exit_code for c in classes} - {1})


OWN_CODES = _own_codes()

COMMANDS = ["init", "catalog", "generate", "build", "export", "plan", "apply", "status", "diff", "delete", "version"]
OPTIONS = [
    "-v", "-vv", "-q", "-o", "--output", "--kubeconfig", "--context", "-f", "--file", "-h", "--help", "--",
    "--platform", "--components", "--namespace", "--inventory-namespace", "-n", "--force", "--check", "--offline",
    "--refresh", "-j",
    "--jobs", "--format", "--repo-url", "--revision", "--path", "--output-dir", "--prune", "--interval",
    "--timeout", "--wait-timeout", "--concurrency", "--recreate-immutable", "--no-prune", "--prune-namespaces",
    "--prune-crds", "--prune-storage", "--prune-all", "--force-namespaces", "--skip-generate",
    "--delete-storage", "--all", "--bogus", "-Z",
]  # fmt: skip
VALUES = [
    "app", "app/kfdef.yaml", "broken", "broken/kfdef.yaml", "notkfdef", "notkfdef/kfdef.yaml", "missing",
    "missing/kfdef.yaml", "new-app", ".", "dead.kubeconfig", "garbage.kubeconfig", "json", "text", "yaml",
    "kind", "gcp", "aws", "azure", "generic", "mars", "argocd", "flux", "https://example.invalid/r.git",
    "training-operator", "katib,kserve", "cert-manager", "nope", ",", "5m", "90", "0", "-1", "1h30m",
    "1e400", "nan", "10x", "64", "65", "kubeflow", "Bad_NS", "", " ", "-", "ctx", "💥", "\x7f", "a" * 300,
]  # fmt: skip
# Arbitrary text, but never a path out of the scratch directory, and no NUL (no command line can hold one).
TEXT = st.text(alphabet=st.characters(blacklist_characters="/\\\x00", blacklist_categories=("Cs",)), max_size=12)
TOKEN = st.one_of(st.sampled_from(OPTIONS), st.sampled_from(VALUES), TEXT)
NOISE = st.one_of(
    st.tuples(st.sampled_from(COMMANDS), st.lists(TOKEN, max_size=7)).map(lambda t: [t[0], *t[1]]),
    st.lists(TOKEN, max_size=6),
)

# Well-formed command lines (each command with its own options and plausible or hostile values), so that runs
# get past argument parsing into loading, rendering and connecting.
TARGETS = ["app", "broken", "notkfdef", "missing", "-f app/kfdef.yaml", "-f broken/kfdef.yaml", "-f nope.yaml"]
# Durations, well-formed and not: number-and-unit parts whose numbers may hold any count of dots ("1.2.3s",
# ".", "1.") and whose units may be missing, unknown or doubled, plus a few hostile constants: digits that
# str.isdigit() accepts and float() does not ("²"), overflow, signs, blanks, and arbitrary text.
DURATION_PART = st.tuples(
    st.text(alphabet="0123456789.", min_size=1, max_size=6), st.sampled_from(["s", "m", "h", "", "d", "ms", "M", " "])
).map("".join)
DURATION = st.one_of(
    st.lists(DURATION_PART, min_size=1, max_size=3).map("".join),
    st.sampled_from(["5m", "90", "1s", "1h30m", "0", "-1", "abc", "1e400", "9" * 400 + "h", "²s", "١٢s", " 5m ", ""]),
    TEXT,
)
SPEC: dict[str, dict[str, list[str] | st.SearchStrategy[str] | None]] = {
    "init": {
        "--platform": ["kind", "gcp", "aws", "azure", "generic", "mars"],
        "--components": ["training-operator", "katib,kserve", "nope", ","],
        "--inventory-namespace": ["kubeflow", "Bad_NS", ""],
        "--force": None,
    },
    "generate": {"--check": None, "--offline": None, "--refresh": None, "-j": ["0", "1", "33", "x"]},
    "plan": {"--skip-generate": None},
    "export": {
        "--format": ["argocd", "flux", "helm"],
        "--repo-url": ["https://example.invalid/r.git", "", "not a url"],
        "--revision": ["main", "refs/tags/v1"],
        "--path": ["clusters/dev", ""],
        "--output-dir": ["out", "app"],
        "--namespace": ["argocd", ""],
        "--prune": None,
        "--interval": DURATION,
    },
    "apply": {
        "--timeout": DURATION,
        "--wait-timeout": DURATION,
        "--concurrency": ["1", "0", "64", "65", "x"],
        "--recreate-immutable": None,
        "--no-prune": None,
        "--prune-all": None,
        "--force-namespaces": None,
        "--skip-generate": None,
    },
    "status": {"--all": None},
    "diff": {"--skip-generate": None},
    "delete": {"--delete-storage": None, "--force": None, "--force-namespaces": None, "--wait-timeout": DURATION},
}
GLOBAL: dict[str, list[str] | None] = {
    "-o": ["json", "text", "yaml"],
    "-q": None,
    "--kubeconfig": [
        "dead.kubeconfig",
        "garbage.kubeconfig",
        "shapeless.kubeconfig",
        "binary.kubeconfig",
        "missing.kubeconfig",
        "app",
    ],
    "--context": ["ctx", "nope"],
}


@st.composite
def well_formed(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(sorted(SPEC)))
    argv = [command]
    if command == "init":
        argv.append(draw(st.one_of(st.sampled_from(["new-app", "app", "broken", "."]), TEXT)))
    else:
        argv += draw(st.sampled_from(TARGETS)).split()
    options = {**SPEC[command], **GLOBAL}
    for name in draw(st.lists(st.sampled_from(sorted(options)), max_size=4, unique=True)):
        values = options[name]
        argv.append(name)
        if isinstance(values, st.SearchStrategy):
            argv.append(draw(values))
        elif values is not None:
            argv.append(draw(st.one_of(st.sampled_from(values), TEXT)))
    return argv


ARGV = st.one_of(NOISE, well_formed())


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again on return: nothing listens there


def dead_kubeconfig(port: int) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "dead", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "ctx", "context": {"cluster": "dead", "user": "u"}}],
            "current-context": "ctx",
        }
    )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scratch directory's content: a valid app, two broken KfDefs, two kubeconfigs."""
    root = tmp_path_factory.mktemp("cli-fuzz-template")
    src = root / "app" / "src" / "web"
    src.mkdir(parents=True)
    (src / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (src / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: fuzz}\n")
    (root / "app" / "kfdef.yaml").write_text(
        "apiVersion: kfdef.apps.kubeflow.org/v1\nkind: KfDef\nmetadata: {name: fuzz, namespace: fuzz}\n"
        "spec:\n  platform: generic\n  repos: [{name: local, uri: ./src}]\n"
        "  applications: [{name: web, kustomizeConfig: {repoRef: {name: local, path: web}}}]\n"
    )
    (root / "broken").mkdir()
    (root / "broken" / "kfdef.yaml").write_text("apiVersion: [unclosed\n  kind: : KfDef\n\t- x")
    (root / "notkfdef").mkdir()
    (root / "notkfdef" / "kfdef.yaml").write_text("- just\n- a list\n")
    (root / "dead.kubeconfig").write_text(dead_kubeconfig(closed_port()))
    (root / "garbage.kubeconfig").write_text("clusters: 7\nusers: {")
    (root / "shapeless.kubeconfig").write_text("clusters: 7\ncontexts: [1, {name: 2}]\ncurrent-context: 5\n")
    (root / "binary.kubeconfig").write_bytes(bytes(range(256)))
    return root


@contextlib.contextmanager
def scratch(template: Path) -> Iterator[Path]:
    """A fresh copy of the template, nested so that even ``..`` stays inside the temporary directory, as cwd,
    with KUBECONFIG at the dead cluster."""
    old_cwd, old_env = Path.cwd(), os.environ.get("KUBECONFIG")
    with tempfile.TemporaryDirectory(prefix="kfctl-fuzz-") as tmp:
        work = Path(tmp) / "a" / "work"
        shutil.copytree(template, work)
        os.chdir(work)
        os.environ["KUBECONFIG"] = str(work / "dead.kubeconfig")
        try:
            yield work
        finally:
            os.chdir(old_cwd)
            if old_env is None:
                os.environ.pop("KUBECONFIG", None)
            else:
                os.environ["KUBECONFIG"] = old_env


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def check(argv: list[str], code: int, out: str, err: str) -> None:
    where = f"kfctl {argv!r} exited {code}\nstdout: {out[-2000:]}\nstderr: {err[-2000:]}"
    assert code in OWN_CODES, where
    assert "Error (internal)" not in err, where
    verbose = any(a.startswith("-v") or a == "--verbose" for a in argv)
    if not verbose:
        assert "Traceback" not in out + err, where
    if code != 0:
        assert err.strip(), f"an error without a message: {where}"


@settings(
    max_examples=800,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
)
@given(argv=ARGV)
def test_any_command_line_ends_in_one_of_kfctls_own_exit_codes_with_a_message(template: Path, argv: list[str]) -> None:
    with scratch(template):
        code, out, err = run(argv)
    check(argv, code, out, err)


def duration_options() -> list[tuple[str, str]]:
    """Every (command, option) whose value is a Duration, found on the commands themselves so that a new one
    is fuzzed without being listed here."""
    ctx = click.Context(cli)
    found = []
    for name in sorted(COMMAND_MODULES):
        command = cli.get_command(ctx, name)
        assert command is not None
        for param in command.params:
            if isinstance(param, click.Option) and isinstance(param.type, Duration):
                found += [(name, opt) for opt in param.opts if opt.startswith("--")]
    return found


def test_the_duration_options_are_found() -> None:
    assert {("apply", "--timeout"), ("apply", "--wait-timeout"), ("delete", "--wait-timeout")} <= set(
        duration_options()
    )


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
)
@given(option=st.sampled_from(duration_options()), value=DURATION)
def test_any_duration_is_accepted_or_a_usage_error(template: Path, option: tuple[str, str], value: str) -> None:
    """A duration option's value is parsed before anything else runs: it is accepted (and the command goes on
    to fail on the missing app) or refused as a usage error naming it; never a crash (exit 1)."""
    command, name = option
    argv = [command, "missing", f"{name}={value}"]
    with scratch(template):
        code, out, err = run(argv)
    check(argv, code, out, err)


@pytest.mark.parametrize(
    "argv",
    [
        ["apply", "app"],
        ["apply", "-f", "app/kfdef.yaml", "--wait-timeout", "10s"],
        ["status", "app"],
        ["status", "app", "--all"],
        ["diff", "app"],
        ["delete", "app", "--force"],
        ["-o", "json", "apply", "app"],
        ["apply", "app", "--kubeconfig", "dead.kubeconfig", "--context", "ctx"],
    ],
    ids=lambda a: " ".join(a),
)
def test_cluster_commands_against_a_closed_port_exit_6_naming_the_server(template: Path, argv: list[str]) -> None:
    with scratch(template) as work:
        code, out, err = run(argv)
        server = yaml.safe_load((work / "dead.kubeconfig").read_text())["clusters"][0]["cluster"]["server"]
    check(argv, code, out, err)
    assert code == 6, f"{argv}: {code}\n{out}\n{err}"
    assert server in err and ("cannot reach the cluster" in err or "cannot reach" in err), err


@pytest.mark.parametrize(
    "argv",
    [
        [b"apply", b"\xff\xfe"],
        [b"init", b"app\xc3(", b"--platform", b"kind"],
        [b"--kubeconfig", b"\xffcfg", b"status", b"app"],
        [b"catalog", b"\x80"],
        [b"-o", b"\xe2\x82", b"version"],
    ],
    ids=["apply", "init", "kubeconfig", "catalog", "output"],
)
def test_bytes_that_are_not_utf8_on_the_real_command_line(template: Path, argv: list[bytes]) -> None:
    """As a shell passes them: undecodable argv bytes arrive as surrogate escapes, and must not crash
    printing or path handling."""
    with scratch(template) as work:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(REPO)}
        proc = subprocess.run(
            [sys.executable.encode(), b"-m", b"kfctl.cli.main", *argv],
            capture_output=True,
            cwd=work,
            env=env,
            timeout=120,
            check=False,
        )
    out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    check([a.decode(errors="replace") for a in argv], proc.returncode, out, err)
