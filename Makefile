# The two front-door commands (see README.md):
#   make demo   set everything up, start a local cluster, install the platform with kfctl, show its health,
#               run the seed TFJob on the real training operator to Succeeded
#   make test   set up, then ruff, mypy --strict and pytest (unit, component and end-to-end tests)
# Everything is installed by the project itself: a virtualenv with kfctl and its dev tools, kustomize if the
# machine has neither `kustomize` nor `kubectl kustomize`, the local control plane's binaries, the Kubeflow
# operators that testbed/kfctl_testbed/runtime.py runs on its fake nodes, the web UIs it runs for the full platform (built
# with the system's Node.js and npm), Flux's controllers (e2e/test_gitops_flux.py), Argo CD and Debian's
# redis-server (e2e/test_gitops_argocd.py) and Debian's chromium (e2e/test_browser.py).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEMO   ?= .work/demo
# Binaries built by e2e/build-binaries (kustomize among them when the machine lacks one) go first on PATH.
TOOLS  := $(shell e2e/build-binaries --print-bin-dir 2>/dev/null)
export PATH := $(TOOLS):$(CURDIR)/$(BIN):$(PATH)
export GOTOOLCHAIN := local

.PHONY: setup tools browser redis bytecode wheelhouse docs demo demo-down test lint unit clean

$(BIN)/.installed: pyproject.toml setup.py testbed/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]' -e ./testbed
	touch $@

# Argo CD's application controller caches in Redis: e2e/test_gitops_argocd.py starts Debian's redis-server on
# 127.0.0.1 (testbed/kfctl_testbed/argocd.py). Installed only when the machine lacks it.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Not fatal: without it only e2e/test_gitops_argocd.py fails, naming this target.
redis:
	command -v redis-server >/dev/null || $(SUDO) apt-get install -y redis-server \
		|| { $(SUDO) apt-get update && $(SUDO) apt-get install -y redis-server; } \
		|| echo "warning: could not install redis-server (Debian's); e2e/test_gitops_argocd.py needs it" >&2

# --webapps: the Kubeflow web UIs (dashboard, Jupyter/volumes/TensorBoards web apps) with npm and pip; see e2e/README.md.
tools: redis
	e2e/build-binaries --operators --flux --argocd --webapps

# An editable install compiles nothing, and with PYTHONDONTWRITEBYTECODE set (CI images often set it) Python never
# writes bytecode either: every kfctl command would compile its 157 modules again, 0.2-0.4 s of each start-up.
# Compile them as a wheel install does (only what changed since; a stale file is recompiled in memory, not used).
bytecode: $(BIN)/.installed
	$(BIN)/python -m compileall -q kfctl testbed/kfctl_testbed

# The wheels `pip install .` needs (kfctl's dependencies and its build backend), so that
# e2e/test_readme_quickstart.py installs kfctl into a fresh venv as the README says, with no index.
WHEELHOUSE := .work/wheelhouse
$(WHEELHOUSE)/.built: $(BIN)/.installed pyproject.toml setup.py
	rm -rf $(WHEELHOUSE)
	$(BIN)/pip wheel --quiet --wheel-dir $(WHEELHOUSE) . 'setuptools>=77'
	rm -f $(WHEELHOUSE)/kfctl-*.whl
	touch $@
wheelhouse: $(WHEELHOUSE)/.built

# Debian's chromium and chromium-driver for e2e/test_browser.py (apt-get, only when missing; needs root).
browser:
	e2e/setup-browser

setup: $(BIN)/.installed bytecode tools wheelhouse browser

# The demo builds only what it runs (the control plane, the three operators of the kind platform's defaults);
# make test builds the rest (helm, other releases, JobSet, Trainer, Flux).
demo: $(BIN)/.installed bytecode
	e2e/build-binaries --demo
	e2e/cluster up
	$(BIN)/kfctl init $(DEMO) --platform kind --force
	$(BIN)/kfctl generate $(DEMO)
	$(BIN)/kfctl apply $(DEMO) --kubeconfig "$$(e2e/cluster kubeconfig)"
	$(BIN)/kfctl status $(DEMO) --kubeconfig "$$(e2e/cluster kubeconfig)"
	$(BIN)/kfctl check $(DEMO) --kubeconfig "$$(e2e/cluster kubeconfig)" || [ $$? -eq 13 ]  # 13: warnings only
	$(BIN)/python e2e/demo-tfjob "$$(e2e/cluster kubeconfig)"
	e2e/cluster status
	@echo "The demo cluster keeps running; stop it with: make demo-down"

demo-down:
	e2e/cluster down

# The docs site (mkdocs.yml): --strict fails on a broken link or anchor; the reference pages it builds are
# generated from the code (`make docs` rewrites them; tests/test_docs_reference.py fails when they are stale).
lint: $(BIN)/.installed
	$(BIN)/ruff check kfctl testbed tests e2e bench docs
	$(BIN)/ruff format --check kfctl testbed tests e2e bench docs
	$(BIN)/mypy kfctl
	$(BIN)/mypy --strict testbed/kfctl_testbed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

docs: $(BIN)/.installed
	$(BIN)/python docs/gen_reference.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

unit: $(BIN)/.installed
	$(BIN)/pytest -m "not e2e" -n 2

# The hermetic tests are CPU-bound (kustomize, rendering): one worker per core. The e2e tests also wait on the
# control planes they start (--dist loadfile: a module's tests share its cluster), so two workers left the cores a
# quarter idle; three take about 1580 s against 2130-2213 s with two (e2e/README.md).
test: setup lint
	$(BIN)/pytest -m "not e2e" -n 2 --durations=10
	$(BIN)/pytest -m e2e -n 3 --dist loadfile --durations=25

clean:
	rm -rf $(VENV) .work
