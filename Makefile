# One entry point for people and CI: `make run`, `make lint`, `make test`. `.ci/run` calls `make lint` then `make test`.
# `make run` installs only what the local runner needs (requirements.txt); the rest (CDK, tests, linters, Node
# tooling) comes with `make install`, `make lint` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
DIST_STAMP := $(VENV)/.installed-dist
NODE_STAMP := node_modules/.package-lock.json
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
# Python keeps its compiled modules (__pycache__, ignored by git, by every asset and by the wheels' file lists), so
# the many Python processes of a run compile the sources once, not each time; a caller's PYTHONDONTWRITEBYTECODE
# is not passed on.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install dist run lint test test-unit test-integration test-infra test-e2e test-shuffled synth preflight bench screenshots clean

$(RUN_STAMP): requirements.txt pyproject.toml client/pyproject.toml flagctl/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e ./client -e . -e ./flagctl
	touch $(RUN_STAMP)

$(DEV_STAMP): $(RUN_STAMP) requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(DEV_STAMP)

# `make dist` needs only the build front end and twine, at requirements-dev.txt's pins (a release job installs
# nothing else).
$(DIST_STAMP): requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check $$(grep -E '^(build|twine)==' requirements-dev.txt)
	touch $(DIST_STAMP)

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $(NODE_STAMP)

install: $(DEV_STAMP) $(NODE_STAMP)

run: $(RUN_STAMP)
	$(PY) -m local

# ruff, mypy, the import contracts between the packages (lint-imports: [tool.importlinter] in pyproject.toml) and
# the GitHub Actions workflows (actionlint).
lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-logo --cache-dir $(VENV)/.import_linter_cache
	$(VENV)/bin/actionlint

# Every target runs on all cores: one pytest-xdist worker per core (`make test WORKERS=0`: one process), each with
# its own moto, DynamoDB Local, runner, browser and synthesized apps.
WORKERS ?= auto
PYTEST := $(PY) -m pytest --numprocesses $(WORKERS) --dist load
# `make test-shuffled SEED=n`: every tier in a random order (pytest-random-order), to show no test leans on another.
SEED ?= $(shell date +%s)

test: install
	$(PYTEST)

test-unit: $(DEV_STAMP)
	$(PYTEST) tests/unit

test-integration: install
	$(PYTEST) tests/integration

test-infra: install
	$(PYTEST) tests/infra

test-e2e: $(DEV_STAMP)
	$(PYTEST) tests/e2e

test-shuffled: install
	$(PYTEST) --random-order-bucket=global --random-order-seed=$(SEED)

synth: install
	npx cdk synth --quiet

# What to fix before a first deploy (docs/deploy.md#preflight): cdk.json's implications, then, with AWS credentials,
# what only the account knows. Exit 0: nothing to fix. `make preflight ARGS=--offline` makes no AWS call.
preflight: $(DEV_STAMP)
	$(PY) -m singleton_flags_infra.preflight $(ARGS)

bench: install
	$(PY) -m bench

# PNGs of the console's views in docs/images/ (docs/console.md), taken in Debian's Chromium from a fresh runner.
screenshots: $(DEV_STAMP)
	$(PY) -m tests.support.screenshots docs/images

# The three distributions' sdists and wheels in dist/ (each wheel built from its sdist, in an isolated build
# environment), checked by twine: the client (client/), the service (the repository's root), flagctl (flagctl/).
# Earlier builds' leftovers go first: setuptools would put the files a stale *.egg-info lists into the sdist.
DIST_PROJECTS := client . flagctl
dist: $(DIST_STAMP)
	rm -rf dist build client/build flagctl/build *.egg-info client/src/*.egg-info flagctl/src/*.egg-info
	for project in $(DIST_PROJECTS); do $(PY) -m build --quiet --outdir dist $$project || exit 1; done
	$(VENV)/bin/twine check --strict dist/*

clean:
	rm -rf cdk.out .pytest_cache
