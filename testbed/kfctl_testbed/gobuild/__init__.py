"""The Go build recipes of kfctl's test bed: the binaries of the local cluster (etcd, the Kubernetes control plane,
kwok, kubectl, helm, kustomize), the Kubeflow operators the process runtime runs, and Flux's controllers, built from
their Go modules at the versions e2e/versions.env pins into a cache outside the repository, and reused from there.

`python -m kfctl_testbed.gobuild` (`e2e/build-binaries` runs it) is the command; its modules, one job each:
`recipes` (the table), `cachekeys` (where each set goes), `pins` (the wrappers agree with versions.env), `run` (the
build itself), `cli` (flags, stdout, exit codes). Standard library only: the Makefile asks for the bin dir before
`make setup` has made the virtualenv.
"""
