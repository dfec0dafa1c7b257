"""Global options shared by every command, carried on click's context object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

OutputFormat = Literal["text", "json", "yaml", "dot", "mermaid"]  # dot and mermaid: kfctl plan only


@dataclass
class GlobalOptions:
    """What the group-level flags said; commands read it with ``click.get_current_context().obj``."""

    verbose: int = 0
    quiet: bool = False
    output: OutputFormat = "text"
    kubeconfig: str | None = None
    context: str | None = None
    # Set by a command whose success has a code of its own (10: nothing to do).
    exit_code: int = 0
