# One entry point for people and CI: `make run`, `make lint`, `make test`. `.ci/run` calls `make lint` then `make test`.
# `make run` installs only what the local runner needs (requirements.txt); the rest (CDK, tests, linters, Node
# tooling) comes with `make install`, `make lint` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
NODE_STAMP := node_modules/.package-lock.json
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: install dist run lint test test-unit test-integration test-infra test-e2e synth bench screenshots clean

$(RUN_STAMP): requirements.txt pyproject.toml client/pyproject.toml flagctl/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e ./client -e . -e ./flagctl
	touch $(RUN_STAMP)

$(DEV_STAMP): $(RUN_STAMP) requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(DEV_STAMP)

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $(NODE_STAMP)

install: $(DEV_STAMP) $(NODE_STAMP)

run: $(RUN_STAMP)
	$(PY) -m local

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: install
	$(PY) -m pytest

test-unit: $(DEV_STAMP)
	$(PY) -m pytest tests/unit

test-integration: install
	$(PY) -m pytest tests/integration

test-infra: install
	$(PY) -m pytest tests/infra

test-e2e: $(DEV_STAMP)
	$(PY) -m pytest tests/e2e

synth: install
	npx cdk synth --quiet

bench: install
	$(PY) -m bench

# PNGs of the console's views in docs/images/ (docs/console.md), taken in Debian's Chromium from a fresh runner.
screenshots: $(DEV_STAMP)
	$(PY) -m tests.support.screenshots docs/images

dist: $(RUN_STAMP)
	rm -rf dist build
	$(PY) -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir dist .

clean:
	rm -rf cdk.out .pytest_cache
