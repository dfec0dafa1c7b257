"""Every field of a KfDef, documented: its type, default, origin and an example.

The loader (kfctl.config.loader) decides which keys each level accepts; this table says what each one means.
docs/gen_reference.py writes docs/reference/kfdef.md from both, and refuses to when a key the loader accepts
has no entry here or an entry names a key the loader does not accept (tests/test_docs_reference.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kfctl.config import loader
from kfctl.config.model import API_GROUP, BUILTIN_URI, DNS_LABEL_RULE, SUPPORTED_VERSIONS

Origin = Literal["upstream", "kfctl"]


@dataclass(frozen=True)
class FieldDoc:
    path: str  # dotted, with [] for list items: spec.applications[].name
    type: str
    default: str  # "required", or what an absent field means
    origin: Origin  # upstream's KfDef field, or kfctl's own addition
    meaning: str
    example: str  # YAML, as written under the field's parent


FIELDS: tuple[FieldDoc, ...] = (
    FieldDoc(
        "apiVersion",
        "string",
        "required",
        "upstream",
        f"One of {', '.join(f'`{API_GROUP}/{v}`' for v in SUPPORTED_VERSIONS)} (the same shape); "
        "`v1alpha1` is refused, naming how to rewrite it.",
        f"apiVersion: {API_GROUP}/v1",
    ),
    FieldDoc("kind", "string", "required", "upstream", "Always `KfDef`.", "kind: KfDef"),
    FieldDoc("metadata", "mapping", "required", "upstream", "The install's name and namespace.", "metadata: {}"),
    FieldDoc(
        "metadata.name",
        "string",
        "the app directory's name, when that is a DNS label (as kfctl v1 named installs); else required",
        "upstream",
        f"Names this install: {DNS_LABEL_RULE}. It labels every object kfctl applies.",
        "name: demo",
    ),
    FieldDoc(
        "metadata.namespace",
        "string",
        "`kubeflow`",
        "upstream",
        "Where kfctl keeps its inventory (an ApplySet ConfigMap) and its run lock (a Lease). Objects go where "
        "their manifests say.",
        "namespace: kubeflow",
    ),
    FieldDoc("metadata.labels", "mapping of strings", "none", "upstream", "Accepted and not used.", "labels: {}"),
    FieldDoc(
        "metadata.annotations", "mapping of strings", "none", "upstream", "Accepted and not used.", "annotations: {}"
    ),
    FieldDoc("spec", "mapping", "required", "upstream", "What to install and where from.", "spec: {}"),
    FieldDoc(
        "spec.platform",
        "string",
        "inferred from a platform plugin (`KfGcpPlugin` → `gcp` …), else `generic`",
        "kfctl",
        "The platform: `kind`, `gcp`, `aws`, `azure` or `generic` (any other cluster). It picks per-component "
        "patches and the default components of `kfctl init`.",
        "platform: kind",
    ),
    FieldDoc(
        "spec.version",
        "string",
        '`""`',
        "upstream",
        "Free text (a number is taken as its text).",
        'version: "v1.11.0"',
    ),
    FieldDoc(
        "spec.applications",
        "list of mappings",
        "required",
        "upstream",
        "The applications to install, each rendered on its own and applied in dependency order.",
        "applications:\n  - name: training-operator",
    ),
    FieldDoc(
        "spec.applications[].name",
        "string",
        "required",
        "upstream",
        f"The application's name ({DNS_LABEL_RULE}), unique in the file. A name of the built-in catalog may stand "
        "alone: `- name: katib` means `repoRef: {name: manifests, path: manifests/katib}`.",
        "name: katib",
    ),
    FieldDoc(
        "spec.applications[].kustomizeConfig",
        "mapping",
        "the catalog component named by `name`",
        "upstream",
        "Where the application's kustomization is and how to render it.",
        "kustomizeConfig:\n  repoRef: {name: manifests, path: manifests/katib}",
    ),
    FieldDoc(
        "spec.applications[].kustomizeConfig.repoRef",
        "mapping",
        "`{name: manifests, path: manifests/<name>}` for a catalog component",
        "upstream",
        "A directory inside one of `spec.repos`.",
        "repoRef: {name: manifests, path: manifests/katib}",
    ),
    FieldDoc(
        "spec.applications[].kustomizeConfig.repoRef.name",
        "string",
        "required",
        "upstream",
        "The name of a repo in `spec.repos` (`manifests`, when `spec.repos` is empty: the built-in catalog).",
        "name: manifests",
    ),
    FieldDoc(
        "spec.applications[].kustomizeConfig.repoRef.path",
        "string",
        "required",
        "upstream",
        "A directory inside that repo holding a kustomization; in the catalog, `manifests/<component>`.",
        "path: applications/training-operator/upstream/overlays/kubeflow",
    ),
    FieldDoc(
        "spec.applications[].kustomizeConfig.overlays",
        "list of strings",
        "`[]`",
        "upstream",
        "Cross-cutting overlays of the catalog (`ha`, `image-mirror`, …) applied as kustomize Components. For an "
        "application from a repo, another name has kfctl v1.0's meaning: the package's own `overlays/<name>`.",
        "overlays: [ha]",
    ),
    FieldDoc(
        "spec.applications[].kustomizeConfig.parameters",
        "list of mappings",
        "`[]`",
        "upstream",
        "Parameters the component or a chosen overlay declares (`kfctl catalog <component>` lists them), "
        "checked for type and turned into kustomize `replacements`. For an application from a repo, a name no "
        "overlay declares is a kfctl v1.0 `params.env` entry.",
        "parameters:\n  - {name: dbPvcSize, value: 20Gi}",
    ),
    FieldDoc(
        "spec.applications[].kustomizeConfig.parameters[].name",
        "string",
        "required",
        "upstream",
        "A parameter the component or one of its overlays declares.",
        "name: dbPvcSize",
    ),
    FieldDoc(
        "spec.applications[].kustomizeConfig.parameters[].value",
        "string, number or boolean (as the parameter declares)",
        "required",
        "upstream",
        "The parameter's value; unquoted text is kept as written.",
        "value: 20Gi",
    ),
    FieldDoc(
        "spec.applications[].dependsOn",
        "list of strings",
        "`[]` (the catalog's own dependencies are added)",
        "kfctl",
        "Applications to install before this one: their API (CRDs Established, APIServices Available) or, "
        "when they serve none, all of them healthy.",
        "dependsOn: [katib]",
    ),
    FieldDoc(
        "spec.applications[].enabled",
        "boolean",
        "`true`",
        "kfctl",
        "`false` keeps the application in the file without installing it.",
        "enabled: false",
    ),
    FieldDoc(
        "spec.applications[].external",
        "boolean",
        "`false`",
        "kfctl",
        "The cluster already provides it (say, a cert-manager installed with Helm): nothing is rendered or "
        "applied; kfctl checks its CRDs are served and its webhooks answer before what depends on it.",
        "external: true",
    ),
    FieldDoc(
        "spec.applications[].adopt",
        "boolean",
        "`false`",
        "kfctl",
        "Take over this application's objects that exist under another owner (as `apply --adopt` does for all); "
        "`delete` and prune keep them unless `--delete-adopted` / `--prune-adopted`.",
        "adopt: true",
    ),
    FieldDoc(
        "spec.repos",
        "list of mappings",
        f"`[]`: with no repos, the repo name `manifests` means the built-in catalog (`{BUILTIN_URI}`)",
        "upstream",
        "Where manifests come from.",
        f"repos:\n  - {{name: manifests, uri: {BUILTIN_URI}}}",
    ),
    FieldDoc(
        "spec.repos[].name",
        "string",
        "required",
        "upstream",
        "The repo's name (letters, digits, `.`, `_`, `-`: it names a directory), unique in the file.",
        "name: mine",
    ),
    FieldDoc(
        "spec.repos[].uri",
        "string",
        "required",
        "upstream",
        f"`{BUILTIN_URI}`, a local directory (relative to the KfDef), an archive URL (`.tar.gz`, `.tgz`, `.tar`, "
        "`.zip`) or `git+https://…` / `git+file://…`.",
        "uri: https://github.com/kubeflow/manifests/archive/refs/tags/v1.11.0.tar.gz",
    ),
    FieldDoc(
        "spec.repos[].sha256",
        "string (64 lowercase hex digits)",
        "none (the lock file records it)",
        "kfctl",
        "Pins an archive's digest; checked before extraction.",
        "sha256: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    ),
    FieldDoc(
        "spec.repos[].ref",
        "string",
        "`HEAD` (the repository's default branch)",
        "kfctl",
        "A git repo's tag, branch or commit.",
        "ref: v1.11.0",
    ),
    FieldDoc(
        "spec.mirrors",
        "list of mappings",
        "`[]`",
        "kfctl",
        "Fetch URLs that start with `prefix` (repo archives, git repos, remote bases) from `location` instead; "
        "the longest prefix wins. `generate --mirror PREFIX=LOCATION` adds one for a run.",
        "mirrors:\n  - {prefix: https://github.com/, location: https://git.internal/github/}",
    ),
    FieldDoc(
        "spec.mirrors[].prefix",
        "string",
        "required",
        "kfctl",
        "A URL prefix, mirrored once.",
        "prefix: https://github.com/",
    ),
    FieldDoc(
        "spec.mirrors[].location",
        "string",
        "required",
        "kfctl",
        "A git or HTTP(S) base URL, a `file://` URL, or a local directory relative to the KfDef.",
        "location: https://git.internal/github/",
    ),
    FieldDoc(
        "spec.waitRules",
        "list of mappings",
        "`[]` (kfctl's own rules: cert-manager's kinds, APIService, InferenceService, TrainJob, Experiment and "
        "the training operator's jobs)",
        "kfctl",
        "How kfctl tells that a custom resource is healthy or has failed, per kind, as kapp's `waitRules`: "
        "`apply` waits for it, `status` reports it. A rule adds its kind or replaces kfctl's rule for it; the "
        "kinds kfctl judges with code (Deployment, StatefulSet, DaemonSet, Job, CRD, Namespace, Service, "
        "PersistentVolumeClaim) cannot be replaced. A kind without a rule is judged by kstatus' conventions "
        "(`Ready`, `Stalled`, `Reconciling`). Judged in order: the controller has not observed the latest "
        "generation → waiting; the first `failed` match that holds → failed; the first `ready` match → healthy; "
        "else waiting. `kfctl export --format argocd` writes each rule as Argo CD's health check of its kind "
        "(argocd-cm.yaml), so an Application's wave waits the same way.",
        "waitRules:\n  - apiGroup: db.example.com\n    kind: Database\n    ready: [{condition: Deployed}]\n"
        "    failed: [{condition: Failed}, {field: status.phase, equals: Error}]",
    ),
    FieldDoc(
        "spec.waitRules[].apiGroup",
        "string",
        "required",
        "kfctl",
        'The kind\'s API group, as its apiVersion starts (`serving.kserve.io` of `serving.kserve.io/v1beta1`); `""` '
        "for the core group.",
        "apiGroup: db.example.com",
    ),
    FieldDoc("spec.waitRules[].kind", "string", "required", "kfctl", "The kind the rule judges.", "kind: Database"),
    FieldDoc(
        "spec.waitRules[].ready",
        "list of mappings",
        "`[]`",
        "kfctl",
        "Matches any of which means healthy. A rule needs `ready`, `failed` or both.",
        "ready:\n  - condition: Deployed",
    ),
    FieldDoc(
        "spec.waitRules[].ready[].condition",
        "string",
        "none: give `condition` or `field`",
        "kfctl",
        "A type of the object's `status.conditions`; the match holds when that condition's status is `status`.",
        "condition: Deployed",
    ),
    FieldDoc(
        "spec.waitRules[].ready[].status",
        "`True`, `False` or `Unknown`",
        "`True`",
        "kfctl",
        "The condition's status that makes the match hold (only with `condition`).",
        'status: "True"',
    ),
    FieldDoc(
        "spec.waitRules[].ready[].field",
        "string (a dotted path)",
        "none: give `condition` or `field`",
        "kfctl",
        "A field of the object, as `status.phase`; the match holds when its value is `equals`.",
        "field: status.phase",
    ),
    FieldDoc(
        "spec.waitRules[].ready[].equals",
        "string, number or boolean",
        "required with `field`",
        "kfctl",
        "The field's value that makes the match hold, compared as text (`1` matches the number 1).",
        "equals: Running",
    ),
    FieldDoc(
        "spec.waitRules[].failed",
        "list of mappings",
        "`[]`",
        "kfctl",
        "Matches any of which means failed: `apply` stops waiting and reports the object's message. Their fields "
        "are `ready[]`'s: `condition` (with `status`) or `field` (with `equals`).",
        "failed:\n  - condition: Failed",
    ),
    *(
        FieldDoc(f"spec.waitRules[].failed[].{name}", kind, default, "kfctl", f"As `ready[].{name}`.", example)
        for name, kind, default, example in (
            ("condition", "string", "none: give `condition` or `field`", "condition: Failed"),
            ("status", "`True`, `False` or `Unknown`", "`True`", 'status: "True"'),
            ("field", "string (a dotted path)", "none: give `condition` or `field`", "field: status.phase"),
            ("equals", "string, number or boolean", "required with `field`", "equals: Error"),
        )
    ),
    FieldDoc(
        "spec.plugins",
        "list of mappings",
        "`[]`",
        "upstream",
        "Platform settings in upstream's plugin kinds: `KfGcpPlugin`, `KfAwsPlugin`, `KfAzurePlugin`, "
        "`KfGenericPlugin`. Fields kfctl does not use and plugins of other kinds are named in a note, never "
        "refused.",
        "plugins:\n  - kind: KfAwsPlugin\n    spec: {clusterName: prod, region: eu-west-1}",
    ),
    FieldDoc("spec.plugins[].kind", "string", "required", "upstream", "The plugin's kind.", "kind: KfAwsPlugin"),
    FieldDoc(
        "spec.plugins[].metadata",
        "mapping",
        "none",
        "upstream",
        "`metadata.name` names the plugin.",
        "metadata: {name: aws}",
    ),
    FieldDoc(
        "spec.plugins[].name",
        "string",
        "none",
        "upstream",
        "The plugin's name, as older KfDefs wrote it (`metadata.name` is the same).",
        "name: aws",
    ),
    FieldDoc(
        "spec.plugins[].spec",
        "mapping",
        "`{}`",
        "upstream",
        "The platform's parameters (`kfctl catalog` lists each platform's); a `KfGcpPlugin` without `cluster` "
        "means the cluster named after the install, as kfctl v1 created it.",
        "spec: {clusterName: prod, region: eu-west-1}",
    ),
    FieldDoc("status", "mapping", "none", "upstream", "kfctl v1 wrote it back; ignored.", "status: {}"),
)


def accepted_paths() -> tuple[str, ...]:
    """Every field path the loader accepts, from its key tuples, in document order."""
    app = "spec.applications[]"
    levels: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("", loader.TOP_KEYS),
        ("metadata", loader.METADATA_KEYS),
        ("spec", loader.SPEC_KEYS),
        (app, loader.APP_KEYS),
        (f"{app}.kustomizeConfig", loader.KCONFIG_KEYS),
        (f"{app}.kustomizeConfig.repoRef", loader.REPOREF_KEYS),
        (f"{app}.kustomizeConfig.parameters[]", loader.PARAM_KEYS),
        ("spec.repos[]", loader.REPO_KEYS),
        ("spec.mirrors[]", loader.MIRROR_KEYS),
        ("spec.waitRules[]", loader.WAIT_RULE_KEYS),
        ("spec.waitRules[].ready[]", loader.WAIT_MATCH_KEYS),
        ("spec.waitRules[].failed[]", loader.WAIT_MATCH_KEYS),
        ("spec.plugins[]", loader.PLUGIN_KEYS),
    )
    return tuple(f"{parent}.{key}" if parent else key for parent, keys in levels for key in keys)
