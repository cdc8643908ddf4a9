# The two commands of the README: `make run` (the main job) and `make test` (the whole suite).
# Both create the virtual environment in .venv/ first if it is missing or older than pyproject.toml.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: deps setup run test lint bench kafka-jars clean

# Debian packages a fresh machine may lack (Java, Maven, python3-venv, PostgreSQL); a no-op otherwise.
deps:
	bash ops/install-deps.sh

$(STAMP): pyproject.toml | deps
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

# The broker's jars, unless you bring your own broker (then neither Java nor Maven is needed).
kafka-jars: setup
ifndef SCHEDSTREAM_KAFKA_BOOTSTRAP
	$(PY) -m ops.local_kafka fetch
endif

run: setup kafka-jars
	$(PY) -m ops.run_example

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

test: setup kafka-jars lint
	$(PY) -m pytest

bench: setup kafka-jars
	$(PY) -m bench.run
	$(PY) -m bench.kueue --scale 1.0
	$(PY) -m bench.speed

clean:
	rm -rf .local .schedstream schedstream.db .pytest_cache .ruff_cache .hypothesis
