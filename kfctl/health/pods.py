"""Why pods do not become ready: the root cause at the bottom of a failed rollout's chain.

Reads pod conditions and container states (Unschedulable, ImagePullBackOff, CrashLoopBackOff,
CreateContainerConfigError …) and warning events; returns short phrases, most telling first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kfctl.objects import meta_of

WAITING_REASONS = (
    "ImagePullBackOff",
    "ErrImagePull",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "CreateContainerError",
    "InvalidImageName",
    "RunContainerError",
)


def pod_problems(pods: Iterable[Mapping[str, Any]], events: Iterable[Mapping[str, Any]] = ()) -> list[str]:
    """Distinct problems of the pods, e.g. ``Unschedulable: 0/3 nodes are available: …``."""
    found: list[str] = []
    pods = list(pods)
    # A scheduled pod's old FailedScheduling warnings (a claim not bound yet, minutes ago) are history, not the
    # reason it is not ready now.
    scheduled = {meta_of(p).get("name") for p in pods if (p.get("spec") or {}).get("nodeName")}

    def add(text: str) -> None:
        if text not in found:
            found.append(text)

    for pod in pods:
        status = pod.get("status") or {}
        for c in status.get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("status") == "False":
                add(f"{c.get('reason') or 'Unschedulable'}: {c.get('message') or 'no node fits'}".rstrip(": "))
        for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
            waiting = (cs.get("state") or {}).get("waiting") or {}
            reason = waiting.get("reason")
            if reason in WAITING_REASONS:
                msg = waiting.get("message") or ""
                add(f"{reason}: container {cs.get('name')}" + (f": {msg}" if msg else ""))
            terminated = (cs.get("lastState") or {}).get("terminated") or {}
            if terminated.get("reason") == "OOMKilled":
                add(f"OOMKilled: container {cs.get('name')}")
    for ev in events:
        if ev.get("reason") == "FailedScheduling" and (ev.get("involvedObject") or {}).get("name") in scheduled:
            continue
        if ev.get("type") == "Warning" and ev.get("reason") in ("FailedScheduling", "FailedMount", "FailedCreate"):
            reason = "Unschedulable" if ev.get("reason") == "FailedScheduling" else str(ev.get("reason"))
            if not any(p.startswith(reason) for p in found):
                add(f"{reason}: {ev.get('message', '')}")
    return found
