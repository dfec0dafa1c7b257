"""`kfctl diff` when the server-side dry run fails: a denial is exit 7, a server not answering yet is exit 6."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakecluster import FakeCluster, obj, write_app

from kfctl.app.diff import diff_kfdef
from kfctl.catalog.load import load_catalog
from kfctl.config.loader import load_kfdef
from kfctl.errors import KfctlError
from kfctl.k8s.api import ApiError
from kfctl.objects import ObjectKey

RENDERED = """
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: kubeflow}
data: {a: "2"}
"""
WEBHOOK_DOWN = 'Internal error occurred: failed calling webhook "v.example.com": no endpoints available for service "w"'
DENIAL = 'admission webhook "v.example.com" denied the request: a must be 1'


@pytest.mark.parametrize(
    ("err", "kind", "code", "message"),
    [
        pytest.param(
            ApiError(500, WEBHOOK_DOWN),
            "cluster error",
            6,
            f"ConfigMap kubeflow/c: the server-side dry run could not run: {WEBHOOK_DOWN}",
            id="webhook-not-answering",
        ),
        pytest.param(
            ApiError(400, DENIAL),
            "API denied",
            7,
            f"ConfigMap kubeflow/c: the server-side dry run was rejected: {DENIAL}",
            id="webhook-denial",
        ),
    ],
)
def test_a_failed_dry_run_says_whether_it_was_refused(
    err: ApiError, kind: str, code: int, message: str, tmp_path: Path
) -> None:
    catalog = load_catalog()
    write_app(tmp_path, "common", rendered={"common": RENDERED})
    cluster = FakeCluster()
    cluster.put(obj("v1", "Namespace", "kube-system"))
    cluster.put(obj("v1", "ConfigMap", "c", "kubeflow", data={"a": "1"}))
    cluster.fail(ObjectKey("", "ConfigMap", "kubeflow", "c"), err)
    with pytest.raises(KfctlError) as raised:
        diff_kfdef(load_kfdef(tmp_path / "kfdef.yaml", catalog), catalog, open_cluster=lambda: cluster, render=False)
    e = raised.value
    assert (e.kind, e.exit_code, e.message) == (kind, code, message)
