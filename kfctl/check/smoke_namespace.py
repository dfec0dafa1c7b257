"""Where a `kfctl check --smoke` job runs: a user's namespace, made the way Kubeflow makes one, when the cluster
has Kubeflow's profiles; a plain scratch namespace otherwise.

A job that completes in a scratch namespace proves the operator works; it does not prove that a user can run one.
In upstream's full platform users work in a Profile's namespace: the profile controller gives it the platform's
labels (Katib's and KServe's injection, Pipelines'), RoleBindings, ServiceAccounts and an Istio AuthorizationPolicy,
and the webhooks that select on those labels (PodDefault's, Katib's) act on its pods. So when the cluster serves
``kubeflow.org/v1`` Profile, the smoke job runs in a Profile's namespace.

The namespace is made first, by kfctl, with the Profile's owner in its ``owner`` annotation and
``istio-injection: disabled``; the profile controller then takes it over (it adopts a namespace whose ``owner``
annotation names the Profile's owner, and adds only the labels it lacks, so the opt-out stays). That is how the job
runs without a sidecar on a real cluster too — a sidecar keeps running after the job's container ends, so the pod
would never complete — without a pod-template field that differs between operators' releases. The Profile is
taken when the controller's ServiceAccount ``default-editor`` exists in it; a Profile the controller marks
``Failed`` (or never takes) fails the smoke check with its message.

Both are deleted after the job whatever happens, and waited for: the Profile first (its controller removes its
finalizer), then the namespace.
"""

from __future__ import annotations

from dataclasses import dataclass

from kfctl.check.model import InstalledContext
from kfctl.k8s.api import ApiError, NoKindMatch
from kfctl.objects import Obj

PROFILE_API = "kubeflow.org/v1"
# The Profile's owner: a user that cannot exist (the .invalid top-level domain is reserved, RFC 2606).
OWNER = "kfctl-smoke@example.invalid"
# The ServiceAccount the profile controller makes in every Profile's namespace once it has taken it.
TAKEN_BY = "default-editor"
# How long the profile controller may take to take a Profile over (it retries its own steps every few seconds).
PROFILE_TIMEOUT = 60.0
# How long the namespace and the Profile may take to go once deleted (pods' grace periods, finalizers).
CLEANUP_TIMEOUT = 120.0
POLL_INTERVAL = 1.0


@dataclass(frozen=True)
class SmokeNamespace:
    name: str
    profile: bool  # made through a Profile (a user's namespace) rather than a plain scratch namespace

    @property
    def where(self) -> str:
        """The words a passing outcome ends with: where the job ran, and that it is gone."""
        if self.profile:
            return f" in Profile {self.name}'s namespace; both are deleted"
        return "; its namespace is deleted"


class NotTaken(Exception):
    """The profile controller did not make the namespace a user's namespace; the message says what it showed."""


def serves_profiles(ctx: InstalledContext) -> bool:
    try:
        ctx.cluster.resource(PROFILE_API, "Profile")
    except (NoKindMatch, ApiError):
        return False
    return True


def choose(ctx: InstalledContext, name: str) -> SmokeNamespace:
    """The namespace the job will run in: a Profile's when the cluster serves Profiles."""
    return SmokeNamespace(name, serves_profiles(ctx))


def create(ctx: InstalledContext, made: SmokeNamespace, check: str) -> None:
    """Make ``made`` (the namespace, then its Profile, waiting until the profile controller has taken it). Raises
    `NotTaken` when the controller does not take it; the caller deletes ``made`` in every case."""
    ctx.cluster.create(_namespace(made.name, check, made.profile))
    if made.profile:
        ctx.cluster.create(
            {
                "apiVersion": PROFILE_API,
                "kind": "Profile",
                "metadata": {"name": made.name, "labels": {"kfctl.dev/smoke": check}},
                "spec": {"owner": {"kind": "User", "name": OWNER}},
            }
        )
        _wait_taken(ctx, made.name)


def _namespace(name: str, check: str, profile: bool) -> Obj:
    metadata: Obj = {
        "name": name,
        "labels": {"app.kubernetes.io/managed-by": "kfctl", "kfctl.dev/smoke": check, "istio-injection": "disabled"},
    }
    if profile:
        metadata["annotations"] = {"owner": OWNER}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def _wait_taken(ctx: InstalledContext, name: str) -> None:
    deadline = ctx.clock() + PROFILE_TIMEOUT
    while ctx.cluster.get("v1", "ServiceAccount", namespace=name, name=TAKEN_BY) is None:
        live = ctx.cluster.get(PROFILE_API, "Profile", namespace="", name=name) or {}
        failed = [
            str(c.get("message") or c.get("reason") or "")
            for c in (live.get("status") or {}).get("conditions") or []
            if c.get("type") == "Failed"
        ]
        if failed:
            raise NotTaken(f"the profile controller refused Profile {name}: {failed[-1]}")
        if ctx.clock() >= deadline:
            raise NotTaken(
                f"the profile controller did not take Profile {name} within {PROFILE_TIMEOUT:.0f}s "
                f"(no ServiceAccount {TAKEN_BY} in its namespace)"
            )
        ctx.sleep(POLL_INTERVAL)


def delete(ctx: InstalledContext, made: SmokeNamespace) -> str:
    """Delete the Profile (if any), wait until it is gone, then the namespace, and wait again; what is left when
    the wait ends ("" if nothing). The order matters: the profile controller makes a Profile's namespace again
    whenever it reconciles a Profile still there, even one being deleted."""
    gone: list[tuple[str, str, str]] = []
    if made.profile:
        gone.append((PROFILE_API, "Profile", f"Profile {made.name}"))
    gone.append(("v1", "Namespace", f"namespace {made.name}"))
    deadline = ctx.clock() + CLEANUP_TIMEOUT
    for api_version, kind, what in gone:
        try:
            ctx.cluster.delete(api_version, kind, namespace="", name=made.name)
        except ApiError as e:
            return f"{what} could not be deleted: {e}"
        while ctx.cluster.get(api_version, kind, namespace="", name=made.name) is not None:
            if ctx.clock() >= deadline:
                return f"{what} is still there {CLEANUP_TIMEOUT:.0f}s after its deletion"
            ctx.sleep(POLL_INTERVAL)
    return ""
