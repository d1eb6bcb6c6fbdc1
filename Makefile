# One entry point for people and CI: `make run`, `make test`. `.ci/run` calls `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.package-lock.json
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: install dist run test test-unit test-integration test-infra test-e2e synth bench clean

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $(NODE_STAMP)

install: $(STAMP) $(NODE_STAMP)

run: $(STAMP)
	$(PY) -m local

test: install
	$(PY) -m pytest

test-unit: $(STAMP)
	$(PY) -m pytest tests/unit

test-integration: install
	$(PY) -m pytest tests/integration

test-infra: install
	$(PY) -m pytest tests/infra

test-e2e: $(STAMP)
	$(PY) -m pytest tests/e2e

synth: install
	npx cdk synth --quiet

bench: install
	$(PY) -m bench

dist: $(STAMP)
	rm -rf dist build
	$(PY) -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir dist .

clean:
	rm -rf cdk.out .pytest_cache
