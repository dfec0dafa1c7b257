"""The Go build recipes as a table: which binary, from which module and package, at which versions.env pin, built in
which wrapper module (e2e/gobuild/<wrapper>), into which set.

Data and pure functions only: nothing here runs go, reads a go.mod or touches the cache (`run` does).

The sets, and who asks for them (`cli` maps the flags onto them):

- control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok (every run)
- helm: the ownership tests' real Helm (every run but --demo; not part of any cache key)
- kustomize: only where neither `kustomize` nor `kubectl kustomize` is found
- demo operators: the operators of the kind platform's default components, at their main versions (--demo,
  --operators)
- other operators: the other releases of those three, JobSet, Trainer, kubeflow/kubeflow's components, the Spark
  operator and Knative Serving (--operators, not --demo)
- flux: Flux's source-controller and kustomize-controller (--flux)
- argocd: Argo CD's one binary, whose basename (or $ARGOCD_BINARY_NAME) selects the component it runs
  (argocd-application-controller, argocd-repo-server, argocd-cmp-server), and the kustomize its repo-server runs
  (--argocd)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from kfctl_testbed.gobuild.versions import Versions

Group = Literal["control plane", "helm", "kustomize", "demo operators", "other operators", "flux", "argocd"]
# wrapper: `go build` inside e2e/gobuild/<wrapper> (go.mod pins the release, go.sum its hashes);
# go install: `go install <package>@<version>` (the module builds as a dependency-free main module);
# fixture tarball: from the source in ../shared/fixtures (the module is not on the Go module proxy).
Source = Literal["wrapper", "go install", "fixture tarball"]
# Whether the wrapper's replace/exclude directives must equal the upstream go.mod's (a dependency's are ignored, so
# a wrapper without them would link other versions than upstream's release does); Flux's upstream replaces its
# own api submodule with ./api, which the wrapper requires at the same release instead.
Directives = Literal["unchecked", "upstream's", "upstream's but ./api"]


@dataclass(frozen=True)
class Command:
    binary: str  # its name in the cache dir; another release's is <binary>-<version>
    package: str  # the main package (for a fixture tarball: its directory under components/)


@dataclass(frozen=True)
class Recipe:
    label: str  # in the progress lines
    group: Group
    version_key: str  # in versions.env
    module: str
    commands: tuple[Command, ...]  # several: one `go build` for all (they share most of their packages)
    source: Source = "wrapper"
    wrapper: str = ""  # e2e/gobuild/<wrapper>; another release's is <wrapper>-<version>
    ldflags: str = "-s -w"  # {version}, {major}, {minor}, {bare} (the version without its "v"): the release's
    other_releases: bool = False  # also build <KEY>_OTHER_VERSIONS (<X>_VERSION → <X>_OTHER_VERSIONS)
    versioned_names: bool = False  # every binary is <binary>-<version>, so no cache key needs the release
    directives: Directives = "unchecked"
    pinned_modules: tuple[str, ...] = ()  # the wrapper's go.mod must `require <m> <version>` for each; () = module
    staging_key: str = ""  # the version every `=> k8s.io/<staging module> v…` replace of the wrapper must name
    unknown_to_sumdb: frozenset[str] = frozenset()  # releases the checksum database does not know (GONOSUMDB)
    seed_upstream_sum: bool = False  # --tidy appends upstream's go.sum before `go mod tidy` (see run.py)
    linkname_retry: bool = False  # retry a link refused for a go:linkname with -checklinkname=0
    inline: bool = False  # compiled with inlining (run.py): what every test's time goes through
    estimate: str = ""  # a cold build's time, in the "building" progress line

    @property
    def requires(self) -> tuple[str, ...]:
        return self.pinned_modules or (self.module,)

    @property
    def tidy_flags(self) -> str:
        """The flags that rebuild this recipe's go.sum, for the hints of a failed pin check."""
        if self.group.endswith("operators"):
            return "--operators --tidy"
        if self.group in ("flux", "argocd"):
            return f"--{self.group} --tidy"
        return "--tidy"


K8S_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
# `/version` and `kubectl version` report the release, not v0.0.0-master.
K8S_LDFLAGS = "-s -w" + "".join(
    f" -X {pkg}.gitVersion={{version}} -X {pkg}.gitMajor={{major}} -X {pkg}.gitMinor={{minor}}"
    f" -X {pkg}.gitTreeState=clean -X {pkg}.buildDate=1970-01-01T00:00:00Z"
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
)
TWO_MIN = "cold: about 2 min on 2 cores"


def operator(
    label: str,
    group: Group,
    version_key: str,
    module: str,
    package: str,
    *,
    wrapper: str = "",
    ldflags: str = "-s -w",
    other_releases: bool = False,
    versioned_names: bool = False,
    unknown_to_sumdb: set[str] | None = None,
    estimate: str = TWO_MIN,
) -> Recipe:
    """An operator's row: one binary (named like its row), `go build` in its wrapper (named like the row too, unless
    said), whose replace/exclude must be upstream's and whose go.sum `--tidy` seeds with upstream's."""
    return Recipe(
        label,
        group,
        version_key,
        module,
        (Command(label, package),),
        wrapper=wrapper or label,
        ldflags=ldflags,
        other_releases=other_releases,
        versioned_names=versioned_names,
        directives="upstream's",
        unknown_to_sumdb=frozenset(unknown_to_sumdb or ()),
        seed_upstream_sum=True,
        estimate=estimate,
    )


def flux_controller(name: str, version_key: str, *, estimate: str) -> Recipe:
    """github.com/fluxcd/<name> (main package at its module root) from the wrapper flux-<name>: upstream's go.mod
    replaces its own api submodule with ./api, which no dependency's go.mod can carry, so the wrapper requires
    <module>/api at the same release; its other replace directives must be upstream's."""
    module = f"github.com/fluxcd/{name}"
    return Recipe(
        name,
        "flux",
        version_key,
        module,
        (Command(name, module),),
        wrapper=f"flux-{name}",
        directives="upstream's but ./api",
        pinned_modules=(module, f"{module}/api"),
        seed_upstream_sum=True,
        estimate=estimate,
    )


RECIPES: tuple[Recipe, ...] = (
    # --- the control plane (its cache key: the Kubernetes, etcd and kwok versions) ---
    Recipe(
        "etcd",
        "control plane",
        "ETCD_VERSION",
        "go.etcd.io/etcd/server/v3",
        (Command("etcd", "go.etcd.io/etcd/server/v3"),),
        wrapper="etcd",
        inline=True,
        estimate="cold: about 1-3 min on 2 cores",
    ),
    Recipe(
        "kubernetes",
        "control plane",
        "KUBERNETES_VERSION",
        "k8s.io/kubernetes",
        tuple(Command(c, f"k8s.io/kubernetes/cmd/{c}") for c in K8S_COMMANDS),
        wrapper="k8s",
        ldflags=K8S_LDFLAGS,
        staging_key="KUBERNETES_STAGING_VERSION",
        linkname_retry=True,
        inline=True,
        estimate="a cold build takes 10-25 min on 2 cores",
    ),
    Recipe(
        "kwok",
        "control plane",
        "KWOK_VERSION",
        "sigs.k8s.io/kwok",
        (Command("kwok", "sigs.k8s.io/kwok/cmd/kwok"),),
        source="go install",
        ldflags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version={version}",
        estimate="cold: about 2-4 min on 2 cores",
    ),
    Recipe(
        "helm",
        "helm",
        "HELM_VERSION",
        "helm.sh/helm/v3",
        (Command("helm", "helm.sh/helm/v3/cmd/helm"),),
        source="go install",
        ldflags=(
            "-s -w -X helm.sh/helm/v3/internal/version.version={version}"
            " -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
        ),
        estimate="a cold build takes about 2 min on 2 cores",
    ),
    Recipe(
        "kustomize",
        "kustomize",
        "KUSTOMIZE_VERSION",
        "sigs.k8s.io/kustomize/kustomize/v5",
        (Command("kustomize", "sigs.k8s.io/kustomize/kustomize/v5"),),
        source="go install",
        inline=True,
    ),
    # --- the operators (their cache key: the five operators' releases, other releases included) ---
    operator(
        "training-operator",
        "demo operators",
        "TRAINING_OPERATOR_VERSION",
        "github.com/kubeflow/training-operator",
        "github.com/kubeflow/training-operator/cmd/training-operator.v1",
        other_releases=True,
        unknown_to_sumdb={"v1.9.1"},
    ),
    operator(
        "katib-controller",
        "demo operators",
        "KATIB_VERSION",
        "github.com/kubeflow/katib",
        "github.com/kubeflow/katib/cmd/katib-controller/v1beta1",
        wrapper="katib",
        other_releases=True,
        unknown_to_sumdb={"v0.19.0"},
    ),
    operator(
        "kserve-manager",
        "demo operators",
        "KSERVE_VERSION",
        "github.com/kserve/kserve",
        "github.com/kserve/kserve/cmd/manager",
        wrapper="kserve",
        other_releases=True,
        estimate="cold: about 3 min on 2 cores",
    ),
    operator(
        "jobset-controller",
        "other operators",
        "JOBSET_VERSION",
        "sigs.k8s.io/jobset",
        "sigs.k8s.io/jobset",  # its main package is the module root
        wrapper="jobset",
        ldflags="-s -w -X sigs.k8s.io/jobset/pkg/version.GitVersion={version}",
        other_releases=True,
    ),
    operator(
        "trainer-controller-manager",
        "other operators",
        "TRAINER_VERSION",
        "github.com/kubeflow/trainer/v2",
        "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager",
        wrapper="trainer",
        other_releases=True,
    ),
    # kubeflow/kubeflow's Go components at the release upstream's full platform deploys. Their modules are not on the
    # Go module proxy (every version refused): built from ../shared/fixtures/kubeflow-components-<v>.tar.gz (never
    # committed), each in its own directory with its dependencies from the proxy (-mod=mod: their go.sum files are
    # incomplete). A machine without the fixture builds none of them and says so.
    Recipe(
        "kubeflow components",
        "other operators",
        "KUBEFLOW_COMPONENTS_VERSION",
        "github.com/kubeflow/kubeflow",
        (
            Command("profile-controller", "profile-controller"),
            Command("kfam", "access-management"),
            Command("notebook-controller", "notebook-controller"),
            Command("poddefaults-webhook", "admission-webhook"),
        ),
        source="fixture tarball",
        versioned_names=True,
    ),
    operator(
        "spark-operator",
        "other operators",
        "SPARK_OPERATOR_VERSION",
        "github.com/kubeflow/spark-operator/v2",
        "github.com/kubeflow/spark-operator/v2/cmd/operator",
        ldflags="-s -w -X github.com/kubeflow/spark-operator/v2.version={version}",
        versioned_names=True,
        estimate="cold: about 3 min on 2 cores",
    ),
    # Knative Serving's control plane and its activator (which reaches the autoscaler's Service: podnet.py), for
    # Kubeflow manifests v1.10.0/v1.11.0 and (another release) 26.03.
    Recipe(
        "knative serving",
        "other operators",
        "KNATIVE_SERVING_VERSION",
        "knative.dev/serving",
        tuple(
            Command(f"knative-serving-{c}", f"knative.dev/serving/cmd/{c}")
            for c in ("activator", "autoscaler", "controller", "webhook")
        ),
        wrapper="knative-serving",
        other_releases=True,
        versioned_names=True,
        directives="upstream's",
        unknown_to_sumdb=frozenset({"v0.43.1"}),
        estimate="cold: about 6 min on 2 cores",
    ),
    # The full platform's login (the ext-authz server of its Istio gateway); no replace directives, so `go install`.
    Recipe(
        "oauth2-proxy",
        "other operators",
        "OAUTH2_PROXY_VERSION",
        "github.com/oauth2-proxy/oauth2-proxy/v7",
        (Command("oauth2-proxy", "github.com/oauth2-proxy/oauth2-proxy/v7"),),
        source="go install",
        ldflags="-s -w -X github.com/oauth2-proxy/oauth2-proxy/v7/pkg/version.VERSION={version}",
        versioned_names=True,
        estimate=TWO_MIN,
    ),
    # --- Flux (its cache key: both controllers' releases) ---
    flux_controller("source-controller", "FLUX_SOURCE_CONTROLLER_VERSION", estimate="cold: about 6 min on 2 cores"),
    flux_controller(
        "kustomize-controller", "FLUX_KUSTOMIZE_CONTROLLER_VERSION", estimate="cold: about 3 min on 2 cores"
    ),
    # --- Argo CD (its cache key: its release and kustomize's) ---
    # Its multicall command, as upstream's Makefile builds it (./cmd, the version from -X of its common package).
    # The wrapper's replace directives are upstream's: Argo CD's go.mod replaces the k8s.io staging modules.
    Recipe(
        "argocd",
        "argocd",
        "ARGOCD_VERSION",
        "github.com/argoproj/argo-cd/v3",
        (Command("argocd", "github.com/argoproj/argo-cd/v3/cmd"),),
        wrapper="argocd",
        ldflags="-s -w -X github.com/argoproj/argo-cd/v3/common.version={bare}",
        directives="upstream's",
        estimate="cold: about 20 min on 2 shared cores",
    ),
)


def recipe(label: str) -> Recipe:
    [found] = [r for r in RECIPES if r.label == label]
    return found


def in_groups(*groups: Group) -> tuple[Recipe, ...]:
    return tuple(r for r in RECIPES if r.group in groups)


@dataclass(frozen=True)
class Selection:
    """What a run builds, from its flags. --demo: the control plane and the demo operators only (no helm, no other
    releases); `make test` builds the rest later."""

    operators: bool = False
    flux: bool = False
    demo: bool = False
    argocd: bool = False

    def groups(self) -> tuple[Group, ...]:
        groups: list[Group] = ["control plane"]
        if not self.demo:
            groups.append("helm")
        groups.append("kustomize")
        if self.operators or self.demo:
            groups.append("demo operators")
            if not self.demo:
                groups.append("other operators")
        if self.flux:
            groups.append("flux")
        if self.argocd:
            groups.append("argocd")
        return tuple(groups)


@dataclass(frozen=True)
class Build:
    """One recipe at one release: what one `go build` (or `go install`) makes."""

    recipe: Recipe
    version: str
    outputs: tuple[tuple[str, str], ...]  # (name in the cache dir, package)
    wrapper: str  # e2e/gobuild/<wrapper>; "" for go install and the fixture tarball
    ldflags: str

    @property
    def label(self) -> str:
        return self.outputs[0][0] if len(self.recipe.commands) == 1 else self.recipe.label

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.outputs)

    @property
    def workdir(self) -> str:
        """The directory of the run's scratch this build makes its outputs in: one per build of a run. Two
        releases of a multi-binary recipe share its label ("knative serving" v0.43.1 and v0.48.1), so the label
        alone made a cold build stop at the second: `FileExistsError: … .build.i6mutuj9/knative-serving`."""
        return f"{self.label}-{self.version}".replace(" ", "-")


def _ldflags(template: str, version: str) -> str:
    parts = version.removeprefix("v").split(".")
    major, minor = parts[0], parts[1] if len(parts) > 1 else ""
    filled = template.replace("{version}", version).replace("{major}", major).replace("{minor}", minor)
    return filled.replace("{bare}", version.removeprefix("v"))


def release(r: Recipe, version: str, *, other: bool = False) -> Build:
    """`r` at `version`; `other`: a release of <KEY>_OTHER_VERSIONS (<binary>-<version>, <wrapper>-<version>)."""
    suffix = f"-{version}" if other or r.versioned_names else ""
    outputs = tuple((c.binary + suffix, c.package) for c in r.commands)
    wrapper = f"{r.wrapper}-{version}" if other and r.wrapper else r.wrapper
    return Build(r, version, outputs, wrapper, _ldflags(r.ldflags, version))


def releases(r: Recipe, versions: Versions, *, others: bool = True) -> tuple[Build, ...]:
    """The main release, then (when `others` and the recipe has them) each other release versions.env names."""
    main = release(r, versions.get(r.version_key))
    if not (others and r.other_releases):
        return (main,)
    return (main, *(release(r, v, other=True) for v in versions.others(r.version_key)))


def builds(selection: Selection, versions: Versions, *, group: Group) -> tuple[Build, ...]:
    """What `selection` builds of one group, in build order (empty when it does not build that group)."""
    if group not in selection.groups():
        return ()
    return tuple(b for r in in_groups(group) for b in releases(r, versions, others=not selection.demo))


def go_output_name(package: str) -> str:
    """The file `go build -o <dir>/` writes for a main package: its last element, without a major version suffix."""
    parts = package.split("/")
    if len(parts) > 1 and re.fullmatch(r"v[0-9]+", parts[-1]):
        return parts[-2]
    return parts[-1]


def operator_binaries(versions: Versions) -> set[str]:
    """Every binary name `--operators` puts in the operators' cache dir, when nothing fails."""
    return {
        name for r in in_groups("demo operators", "other operators") for b in releases(r, versions) for name in b.names
    }
