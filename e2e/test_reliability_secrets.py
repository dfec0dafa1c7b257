"""R6, the live half: a Secret's values never appear in anything kfctl prints.

Applies a Secret (data and stringData), changes its values in the bundle and in the cluster, and runs
`kfctl apply -v` (text and -o json), `kfctl status -o json`, `kfctl diff` (text and -o json) and `kfctl
delete`: no output, on stdout or stderr, holds a value in clear, base64-encoded or JSON-escaped.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from apply_support import REPO, Run, kfctl, kubectl, write_local_kfdef

pytestmark = pytest.mark.e2e

NS = f"e2e-secrets-{uuid.uuid4().hex[:6]}"
RUN = uuid.uuid4().hex[:10]  # makes every value unique to this run, so a match cannot be a coincidence
VALUES = [f"{what}-{RUN}-{i}" for i, what in enumerate(["data-pw", "string-token", "data-pw2", "string-tok2", "drift"])]


def bundle(pw: str, token: str) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "creds", "namespace": NS},
            "type": "Opaque",
            "data": {"password": base64.b64encode(pw.encode()).decode()},
            "stringData": {"token": token},
        },
    ]


def kfctl_text(*args: str, kubeconfig: str) -> Run:
    """kfctl as a person runs it: text output, no -o json."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    argv = [sys.executable, "-m", "kfctl.cli.main", *args, "--kubeconfig", kubeconfig]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, cwd=REPO, check=False)
    return Run(list(args), proc.returncode, proc.stdout, proc.stderr, 0.0)


def forms(value: str) -> list[str]:
    b64 = base64.b64encode(value.encode()).decode()
    return [value, b64, b64.rstrip("="), json.dumps(value)[1:-1]]


def assert_no_secret(run: Run) -> None:
    text = run.stdout + run.stderr
    for value in VALUES:
        for form in forms(value):
            assert form not in text, f"{form!r} (from {value!r}) leaked:\n{run.explain()}"


def test_secret_values_never_appear_in_apply_status_diff_or_delete_output(tmp_path: Path, kubeconfig: str) -> None:
    write_local_kfdef(tmp_path, name="e2e-secrets", namespace=NS, apps={"creds": bundle(VALUES[0], VALUES[1])})
    runs: list[Run] = []
    try:
        runs.append(kfctl("apply", str(tmp_path), "-v", "-v", kubeconfig=kubeconfig))
        assert runs[-1].code == 0, runs[-1].explain()
        live = kubectl(kubeconfig, "-n", NS, "get", "secret", "creds", "-o", "json")
        assert base64.b64encode(VALUES[1].encode()).decode() in live  # it really is there to leak
        runs.append(kfctl("status", str(tmp_path), "--all", kubeconfig=kubeconfig))
        assert runs[-1].code == 0, runs[-1].explain()

        # Changed in the bundle: diff shows that the values change, not what they are.
        write_local_kfdef(tmp_path, name="e2e-secrets", namespace=NS, apps={"creds": bundle(VALUES[2], VALUES[3])})
        runs.append(kfctl("diff", str(tmp_path), kubeconfig=kubeconfig))
        assert runs[-1].code == 0, runs[-1].explain()
        text = json.dumps(runs[-1].stdout)
        assert "/data/password" in text and "/data/token" in text and "<masked sha256:" in text, runs[-1].explain()

        # Changed in the cluster by someone else (drift): the same.
        patch = json.dumps({"data": {"extra": base64.b64encode(VALUES[4].encode()).decode()}})
        kubectl(kubeconfig, "-n", NS, "patch", "secret", "creds", "--type", "merge", "-p", patch)
        runs.append(kfctl("diff", str(tmp_path), kubeconfig=kubeconfig))
        assert runs[-1].code == 0, runs[-1].explain()

        # The text renderings too.
        for args in (("diff", str(tmp_path)), ("apply", str(tmp_path), "-v", "-v")):
            runs.append(kfctl_text(*args, kubeconfig=kubeconfig))
            assert runs[-1].code == 0, runs[-1].explain()
        assert "~ Secret" in runs[-2].stdout, runs[-2].explain()
        runs.append(kfctl_text("status", str(tmp_path), "--all", kubeconfig=kubeconfig))
        for run in runs:
            assert_no_secret(run)
    finally:
        run = kfctl("delete", str(tmp_path), "-v", "-v", "--wait-timeout", "1m", kubeconfig=kubeconfig)
        assert_no_secret(run)
