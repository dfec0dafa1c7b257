"""kfctl_testbed.argocd.plugin_commands: what argocd-cmp-server's JSON log says of each plugin command (lines in
the shape Argo CD v3.2.11's cmp-server wrote them in e2e/test_gitops_argocd_faults.py, at debug level)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kfctl_testbed.argocd import PluginCommand, plugin_commands

INIT = {"dir": "/w/clusters/faults", "execID": "c8255", "level": "info", "msg": "sh -c init"}
INIT_EMPTY = {"command": {}, "execID": "c8255", "level": "warning", "msg": "Plugin command returned zero output"}
INIT_END = {"duration": 54763445, "execID": "c8255", "level": "debug", "msg": ""}
GENERATE = {"dir": "/w/clusters/faults", "execID": "7ab99", "level": "info", "msg": "sh -c exec kfctl generate"}
GENERATE_END = {"duration": 14860301545, "execID": "7ab99", "level": "debug", "msg": "apiVersion: v1\n"}
GENERATE_OK = {"execID": "7ab99", "level": "info", "msg": "Plugin command successful", "stderr": "Fetched: x\n"}
GRPC = {"grpc.code": "OK", "grpc.method": "GenerateManifest", "level": "info", "msg": "finished call"}
KILLED = {"dir": "/w/clusters/faults", "execID": "0f3e1", "level": "info", "msg": "sh -c exec kfctl generate"}


@pytest.mark.parametrize(
    ("lines", "commands"),
    [
        pytest.param([], [], id="empty-log"),
        pytest.param(
            [INIT, INIT_END, INIT_EMPTY, GENERATE, GENERATE_END, GENERATE_OK, GRPC],
            [
                PluginCommand("c8255", "sh -c init", 0.054763445, ""),
                PluginCommand("7ab99", "sh -c exec kfctl generate", 14.860301545, "Fetched: x\n"),
            ],
            id="init-and-generate-with-durations-and-stderr",
        ),
        pytest.param([KILLED, GRPC], [PluginCommand("0f3e1", "sh -c exec kfctl generate", None, "")], id="no-end-line"),
    ],
)
def test_plugin_commands_from_the_cmp_servers_log(
    tmp_path: Path, lines: list[dict[str, object]], commands: list[PluginCommand]
) -> None:
    log = tmp_path / "argocd-cmp-server.log"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines) + "time=... not JSON\n")
    assert plugin_commands(log) == commands
