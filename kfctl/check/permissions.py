"""Category "permissions": may the current user create (server-side apply: create and patch) every kind the
bundle holds, in every namespace it uses? Asked with SelfSubjectAccessReviews, concurrently."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from kfctl.check.model import Outcome, PreContext
from kfctl.engine.served import bundle_served
from kfctl.k8s.api import NoKindMatch
from kfctl.objects import group_of, meta_of

VERBS = ("create", "patch")  # server-side apply of a new object is a PATCH that needs create too
WORKERS = 8


def can_create(ctx: PreContext) -> Outcome:
    plurals = _plurals(ctx)
    wanted: set[tuple[str, str, str]] = set()  # (group, plural, namespace)
    for _, obj in ctx.objects:
        api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
        mapping = plurals.get((api_version, kind))
        if mapping is None:
            continue  # not served: the api-versions check names it
        plural, namespaced = mapping
        namespace = str(meta_of(obj).get("namespace") or "default") if namespaced else ""
        wanted.add((group_of(api_version), plural, namespace))
    reviews = sorted((verb, *w) for w in wanted for verb in VERBS)

    def ask(r: tuple[str, str, str, str]) -> bool:
        verb, group, plural, namespace = r
        return ctx.cluster.review_access(verb=verb, group=group, resource=plural, namespace=namespace).allowed

    with ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="kfctl-ssar") as pool:
        answers = list(pool.map(ask, reviews))
    denied = [r for r, ok in zip(reviews, answers, strict=True) if not ok]
    if denied:
        shown = [
            f"{verb} {plural}{'.' + group if group else ''} {f'in {ns}' if ns else '(cluster-wide)'}"
            for verb, group, plural, ns in denied
        ]
        return Outcome(
            "fail",
            f"the user of context {ctx.cluster.info.context!r} may not: {'; '.join(shown)}",
            "grant these permissions (installing a platform usually takes cluster-admin), or use a kubeconfig with "
            "more rights",
        )
    spaces = {ns for _, _, ns in wanted if ns}
    return Outcome(
        "pass",
        f"may create and patch all {len({(g, p) for g, p, _ in wanted})} kinds of the bundle "
        f"({len(spaces)} namespace(s), {len(reviews)} access reviews)",
    )


def _plurals(ctx: PreContext) -> dict[tuple[str, str], tuple[str, bool]]:
    """(apiVersion, kind) → (plural, namespaced), from discovery or, for kinds of the bundle's own CRDs
    (not served before they are installed), from those CRDs."""
    own: dict[tuple[str, str], tuple[str, bool]] = {}
    served = bundle_served(ctx.objects)
    for _, obj in ctx.objects:
        spec = obj.get("spec") or {}
        if obj.get("kind") == "CustomResourceDefinition":
            names = spec.get("names") or {}
            for group, version, kind in served:
                if group == spec.get("group") and kind == names.get("kind"):
                    own[(f"{group}/{version}", kind)] = (str(names.get("plural")), spec.get("scope") == "Namespaced")
    out: dict[tuple[str, str], tuple[str, bool]] = {}
    for _, obj in ctx.objects:
        key = (str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if key in out:
            continue
        try:
            res = ctx.cluster.resource(*key)
            out[key] = (res.plural, res.namespaced)
        except NoKindMatch:
            if key in own:
                out[key] = own[key]
    return out
