"""The small valid resources `kfctl check` sends through each installed component's admission webhooks, as
data: one sample per check, each the smallest object its upstream documents as valid (the catalog's own
versions: training-operator v1.9, Katib v0.19, KServe v0.16, Notebooks v1.10, Trainer v2.2, cert-manager
v1.19; and, for upstream's full platform, kubeflow/kubeflow v1.10's Profile and PodDefault and the Spark operator
v2's SparkApplication). They are only ever created as server-side dry runs: nothing is stored, nothing runs.

A sample's component is the catalog component that installs its kind, or (for kinds the catalog does not have)
the application upstream's example names; `kfctl check` probes a sample when its catalog component is in the
KfDef or when the cluster serves its kinds, whoever installed them.

``{name}`` in any string becomes the run's unique name (``kfctl-check-<random>``), ``{namespace}`` the
component's namespace. This module holds data and the substitution only: it neither talks to the cluster
nor prints.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from kfctl.objects import Obj

NAME_PREFIX = "kfctl-check-"


@dataclass(frozen=True)
class Sample:
    component: str  # the catalog component whose webhooks judge it
    category: str
    check: str  # the check's name (--only/--skip)
    objects: tuple[Obj, ...]  # dry-run in this order; metadata.namespace is set per run
    # Labels the component's webhook demands of the namespace (Katib: Experiments only where its metrics
    # collector is injected): the sample goes to a namespace carrying them instead of the component's own.
    namespace_labels: tuple[tuple[str, str], ...] = ()
    cluster_scoped: bool = False  # its objects have no namespace (a Profile)

    def instantiate(self, *, name: str, namespace: str) -> list[Obj]:
        out = []
        for template in self.objects:
            obj = _substitute(copy.deepcopy(template), name=name, namespace=namespace)
            obj.setdefault("metadata", {}).update(name=name)
            if not self.cluster_scoped:
                obj["metadata"]["namespace"] = namespace
            out.append(obj)
        return out

    @property
    def kinds(self) -> str:
        """ "TFJob", "Issuer and Certificate": what the check's messages call the sample."""
        return " and ".join(str(o["kind"]) for o in self.objects)


def _substitute(value: Any, *, name: str, namespace: str) -> Any:
    if isinstance(value, str):
        return value.replace("{name}", name).replace("{namespace}", namespace)
    if isinstance(value, list):
        return [_substitute(v, name=name, namespace=namespace) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, name=name, namespace=namespace) for k, v in value.items()}
    return value


def _replica(container: str, image: str) -> dict[str, Any]:
    return {
        "replicas": 1,
        "restartPolicy": "Never",
        "template": {
            "spec": {"containers": [{"name": container, "image": image, "command": ["python", "-c", "print(1)"]}]}
        },
    }


TFJOB: Obj = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    # The operator's webhook requires a container named "tensorflow" in every replica.
    "spec": {"tfReplicaSpecs": {"Worker": _replica("tensorflow", "docker.io/tensorflow/tensorflow:2.16.1")}},
}

PYTORCHJOB: Obj = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    # A container named "pytorch"; a Master, if any, has exactly one replica.
    "spec": {
        "pytorchReplicaSpecs": {
            "Master": _replica("pytorch", "docker.io/pytorch/pytorch:2.3.1-cuda12.1-cudnn8-runtime")
        }
    },
}

EXPERIMENT: Obj = {
    "apiVersion": "kubeflow.org/v1beta1",
    "kind": "Experiment",
    # Katib's random-search example, one trial: the validator checks the algorithm against katib-config, that
    # every trial parameter is substituted in the template, and that the template converts to a batch Job.
    "spec": {
        "objective": {"type": "maximize", "goal": 0.99, "objectiveMetricName": "accuracy"},
        "algorithm": {"algorithmName": "random"},
        "maxTrialCount": 1,
        "parallelTrialCount": 1,
        "maxFailedTrialCount": 1,
        "parameters": [{"name": "lr", "parameterType": "double", "feasibleSpace": {"min": "0.01", "max": "0.05"}}],
        "trialTemplate": {
            "primaryContainerName": "training-container",
            "successCondition": 'status.conditions.#(type=="Complete")#|#(status=="True")#',
            "failureCondition": 'status.conditions.#(type=="Failed")#|#(status=="True")#',
            "trialParameters": [{"name": "learningRate", "description": "learning rate", "reference": "lr"}],
            "trialSpec": {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "training-container",
                                    "image": "docker.io/kubeflowkatib/pytorch-mnist-cpu:v0.19.0",
                                    "command": [
                                        "python3",
                                        "/opt/pytorch-mnist/mnist.py",
                                        "--epochs=1",
                                        "--lr=${trialParameters.learningRate}",
                                    ],
                                }
                            ],
                        }
                    }
                },
            },
        },
    },
}

INFERENCESERVICE: Obj = {
    "apiVersion": "serving.kserve.io/v1beta1",
    "kind": "InferenceService",
    "spec": {
        "predictor": {
            "model": {
                "modelFormat": {"name": "sklearn"},
                "storageUri": "gs://kfserving-examples/models/sklearn/1.0/model",
            }
        }
    },
}

NOTEBOOK: Obj = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "Notebook",
    "spec": {
        "template": {"spec": {"containers": [{"name": "{name}", "image": "kubeflownotebookswg/jupyter-scipy:v1.10.0"}]}}
    },
}

TRAINJOB: Obj = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    # The webhook validates against the runtime it names: torch-distributed is one the catalog installs.
    "spec": {
        "runtimeRef": {
            "apiGroup": "trainer.kubeflow.org",
            "kind": "ClusterTrainingRuntime",
            "name": "torch-distributed",
        }
    },
}

# cert-manager's webhook does not look the issuer up, but a dry run of the self-signed Issuer it references
# goes through the same webhook first, so the pair is what a user would create.
ISSUER: Obj = {"apiVersion": "cert-manager.io/v1", "kind": "Issuer", "spec": {"selfSigned": {}}}
CERTIFICATE: Obj = {
    "apiVersion": "cert-manager.io/v1",
    "kind": "Certificate",
    "spec": {
        "secretName": "{name}",
        "dnsNames": ["{name}.{namespace}.svc"],
        "issuerRef": {"group": "cert-manager.io", "kind": "Issuer", "name": "{name}"},
    },
}

PROFILE: Obj = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "Profile",
    # The owner is the one required field: the profile controller makes the namespace and binds it to them.
    "spec": {"owner": {"kind": "User", "name": "{name}@example.com"}},
}

PODDEFAULT: Obj = {
    "apiVersion": "kubeflow.org/v1alpha1",
    "kind": "PodDefault",
    "spec": {
        "desc": "kfctl check",
        "selector": {"matchLabels": {"kfctl.kubeflow.org/check": "{name}"}},
        "env": [{"name": "KFCTL_CHECK", "value": "1"}],
    },
}
# The PodDefault webhook mutates pods (failurePolicy Fail) in profile namespaces: a pod's dry run goes through it.
POD: Obj = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"labels": {"kfctl.kubeflow.org/check": "{name}"}},
    "spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "docker.io/library/busybox:1.36.1", "command": ["true"]}],
    },
}

SPARKAPPLICATION: Obj = {
    "apiVersion": "sparkoperator.k8s.io/v1beta2",
    "kind": "SparkApplication",
    # The Spark operator's own spark-pi example, the smallest it documents.
    "spec": {
        "type": "Scala",
        "mode": "cluster",
        "image": "docker.io/library/spark:3.5.5",
        "mainClass": "org.apache.spark.examples.SparkPi",
        "mainApplicationFile": "local:///opt/spark/examples/jars/spark-examples.jar",
        "sparkVersion": "3.5.5",
        "driver": {"cores": 1, "memory": "512m"},
        "executor": {"instances": 1, "cores": 1, "memory": "512m"},
    },
}

PROFILE_NAMESPACE = (("app.kubernetes.io/part-of", "kubeflow-profile"),)

SAMPLES: tuple[Sample, ...] = (
    Sample("cert-manager", "certificates", "certificate", (ISSUER, CERTIFICATE)),
    Sample("training-operator", "training", "tfjob", (TFJOB,)),
    Sample("training-operator", "training", "pytorchjob", (PYTORCHJOB,)),
    Sample("trainer", "training", "trainjob", (TRAINJOB,)),
    Sample(
        "katib",
        "tuning",
        "experiment",
        (EXPERIMENT,),
        namespace_labels=(("katib.kubeflow.org/metrics-collector-injection", "enabled"),),
    ),
    Sample("kserve", "serving", "inferenceservice", (INFERENCESERVICE,)),
    Sample("notebook-controller", "notebooks", "notebook", (NOTEBOOK,)),
    Sample("profiles", "profiles", "profile", (PROFILE,), cluster_scoped=True),
    Sample("admission-webhook", "notebooks", "poddefault", (PODDEFAULT, POD), namespace_labels=PROFILE_NAMESPACE),
    Sample("spark-operator", "spark", "sparkapplication", (SPARKAPPLICATION,)),
)
