# The two commands of the README: `make run` (the main job) and `make test` (the whole suite).
# Both create the virtual environment in .venv/ first if it is missing or older than pyproject.toml.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: deps setup run test lint bench faults kafka-jars kube-bin tools clean

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

# The local Kubernetes API server's binaries (ops/local_kube.py), unless you bring your own cluster.
kube-bin: setup
ifndef SCHEDSTREAM_KUBECONFIG
	$(PY) -m ops.local_kube build
endif

# helm and kubeconform (the chart's test), built from their Go modules at pinned versions into .local/tools.
tools: setup
	$(PY) -m ops.go_tools

run: setup kafka-jars
	$(PY) -m ops.run_example

# A local kube-apiserver + kwok (built from Go modules on first use), Kafka, and watch -> worker ->
# apply scheduling a few gangs live (ops/cluster_demo.py; docs/apply-and-shadow.md).
.PHONY: cluster-demo
cluster-demo: setup kafka-jars kube-bin
	$(PY) -m ops.cluster_demo

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

test: setup kafka-jars kube-bin tools lint
	$(PY) -m pytest

# The full fault suite (tests/faults/suite.py): 100k+ events, 20 worker kills, broker and
# PostgreSQL outages, each compared with replay; prints the table of docs/faults.md. SEED=N repeats a run.
# Then the live-cluster faults on the local API server: the watcher SIGKILLed mid-stream and resumed
# after an etcd compaction (410 Gone, relist), and the applier SIGKILLed mid-stream.
LIVE_FAULTS := tests/kube/test_watch.py::test_a_watcher_killed_and_restarted_after_a_compaction_relists_and_its_stream_replays_to_the_worker_decisions \
	tests/kube/test_apply.py::test_an_applier_killed_mid_stream_applies_every_decision_exactly_once_in_effect
faults: setup kafka-jars kube-bin
	$(PY) -m tests.faults.suite --full $(if $(SEED),--seed $(SEED))
	$(PY) -m pytest -v $(LIVE_FAULTS)

bench: setup kafka-jars
	$(PY) -m bench.run
	$(PY) -m bench.kueue --scale 1.0
	$(PY) -m bench.observe
	$(PY) -m bench.speed

clean:
	rm -rf .local .schedstream schedstream.db .pytest_cache .ruff_cache .hypothesis
