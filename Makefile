# Odradek: developer and CI entry points.
#   make run           start a broker on 127.0.0.1:9092 with ./data
#   make install-test  install the package with its test extra, plus kcat, podman (with runc and
#                      mmdebstrap) and a JDK where absent, Apache Kafka 4.4 with its Java
#                      client (Maven Central), and the client programs of the tests (Java,
#                      Go, KafkaJS, Testcontainers' modules)
#   make image         the container image localhost/odradek:latest, on a local Debian base
#   make lint          ruff + mypy
#   make test          install-test + lint + pytest (PYTEST_ARGS="-k foo" to narrow)
#   make soak          100 kill -9 cycles of a broker under mixed load, then the guarantees
#                      checked (SOAK_ARGS="--cycles 20"; a 5-cycle version runs in make test)
#   make pipeline      the example Spark pipeline on an Odradek of its own (odradek_spark/examples, run as odradek.spark.examples.orders)

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test
MAKEFLAGS += --no-print-directory

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
PYTEST_ARGS ?=
# Reinstall when the project metadata or the set of packages changes.
INSTALL_DEPS := pyproject.toml setup.py $(wildcard */__init__.py) odradek/__init__.py
# Test harness code that is type-checked (on top of the files in [tool.mypy]).
TYPED := odradek broker coordinator protocol storage odradek_spark bench typecheck.py setup.py
TEST_TYPED := tests/conftest.py $(addprefix tests/helpers/,__init__.py acl_admin.py both_brokers.py broker.py certs.py containers.py env.py java.py logs.py messages.py names.py reference_kafka.py topics.py spark.py client_programs.py go_client.py group_configs.py js_client.py kafka_tools.py streams_app.py)
TEST_TYPED += $(addprefix tests/soak/,__init__.py workload.py verify.py soak.py)
STAMP_RUN := $(VENV)/.stamp-install
STAMP_TEST := $(VENV)/.stamp-install-test
STAMP_SPARK := $(VENV)/.stamp-install-spark

.PHONY: run install install-test system-deps lint test clean pipeline image

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP_RUN): $(INSTALL_DEPS) | $(PY)
	$(PIP) install -e .
	@touch $@

$(STAMP_TEST): $(INSTALL_DEPS) | $(PY)
	$(PIP) install -e '.[test,spark]'
	@touch $@ $(STAMP_RUN) $(STAMP_SPARK)

$(STAMP_SPARK): $(INSTALL_DEPS) | $(PY)
	$(PIP) install -e '.[spark]'
	@touch $@ $(STAMP_RUN)

install: $(STAMP_RUN)

run: install
	exec $(PY) -m odradek --data-dir ./data --host 127.0.0.1 --port 9092

# kcat, podman and a JDK come from Debian packages; apt-get runs only when one is missing.
# Under CI=true a failed install is an error; elsewhere the tests that need it skip.
system-deps:
	@pkgs=""; \
	command -v kcat >/dev/null 2>&1 || pkgs="$$pkgs kcat"; \
	command -v javac >/dev/null 2>&1 || pkgs="$$pkgs openjdk-17-jdk-headless"; \
	command -v podman >/dev/null 2>&1 || pkgs="$$pkgs podman"; \
	command -v runc >/dev/null 2>&1 || pkgs="$$pkgs runc"; \
	command -v mmdebstrap >/dev/null 2>&1 || pkgs="$$pkgs mmdebstrap"; \
	if [ -n "$$pkgs" ]; then \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo"; \
	  echo "installing system packages:$$pkgs"; \
	  if ! { $$sudo apt-get update -qq && \
	         $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkgs >/dev/null; }; then \
	    if [ "$${CI:-}" = "true" ]; then echo "error: could not install$$pkgs" >&2; exit 1; fi; \
	    echo "warning: could not install$$pkgs; tests needing them will be skipped" >&2; \
	  fi; \
	fi

# Apache Kafka 4.4, the reference broker the tests run beside Odradek, from Maven Central
# (tests/reference/pom.xml; what Maven has cached is reused).
REFERENCE_STAMP := tests/reference/lib/.stamp
$(REFERENCE_STAMP): tests/reference/pom.xml
	mvn -q -B -f tests/reference/pom.xml dependency:copy-dependencies
	@touch $@

# The Apache Kafka Java client 4.4 that tests/java/KafkaTool.java runs on (tests/java/pom.xml).
JAVA_CLIENT_STAMP := tests/java/lib/.stamp
$(JAVA_CLIENT_STAMP): tests/java/pom.xml
	rm -rf tests/java/lib
	mvn -q -B -f tests/java/pom.xml dependency:copy-dependencies -DoutputDirectory=tests/java/lib
	@touch $@

# The Kafka Streams 4.4 application of tests/streams/ (tests/streams/pom.xml): built into
# tests/streams/target, its jars copied into tests/streams/lib.
STREAMS_STAMP := tests/streams/lib/.stamp
$(STREAMS_STAMP): tests/streams/pom.xml $(wildcard tests/streams/app/src/main/java/dev/odradek/streams/*.java)
	rm -rf tests/streams/lib
	mvn -q -B -f tests/streams/pom.xml package dependency:copy-dependencies
	@touch $@

# The franz-go scenarios of tests/go (github.com/twmb/franz-go from the Go module proxy,
# pinned by go.mod and go.sum), built into tests/go/bin.
GO_CLIENT := tests/go/bin/kafkago
$(GO_CLIENT): tests/go/go.mod tests/go/go.sum $(wildcard tests/go/*.go)
	cd tests/go && go build -o bin/kafkago .

# KafkaJS 2.2.4 for tests/js/scenarios.js, from the npm registry (tests/js/package-lock.json).
JS_CLIENT_STAMP := tests/js/node_modules/.stamp
$(JS_CLIENT_STAMP): tests/js/package.json tests/js/package-lock.json
	cd tests/js && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The programs that run the image through Testcontainers' Kafka modules (tests/testcontainers):
# for Java, org.testcontainers:testcontainers-kafka 2.0.5 with the Kafka client 4.4 (Maven:
# built into java/target, jars copied into java/lib); for Go, testcontainers-go's
# modules/kafka v0.44.0 with franz-go (the Go module proxy, go.mod and go.sum), built into
# go/bin. Python's testcontainers comes with the test extra.
TC_DIR := tests/testcontainers
TC_JAVA_STAMP := $(TC_DIR)/java/lib/.stamp
$(TC_JAVA_STAMP): $(TC_DIR)/java/pom.xml $(wildcard $(TC_DIR)/java/src/main/java/dev/odradek/testcontainers/*.java)
	rm -rf $(TC_DIR)/java/lib
	mvn -q -B -f $(TC_DIR)/java/pom.xml package dependency:copy-dependencies
	@touch $@

TC_GO := $(TC_DIR)/go/bin/tckafka
$(TC_GO): $(TC_DIR)/go/go.mod $(TC_DIR)/go/go.sum $(wildcard $(TC_DIR)/go/*.go)
	cd $(TC_DIR)/go && go build -o bin/tckafka .

# Spark's own Kafka connector, format("kafka") (tests/spark/connector/pom.xml): its jars
# copied into tests/spark/connector/lib for spark.jars. Spark's parent pom names a second
# repository; the settings file reads every repository from Maven Central.
SPARK_KAFKA_DIR := tests/spark/connector
SPARK_KAFKA_STAMP := $(SPARK_KAFKA_DIR)/lib/.stamp
$(SPARK_KAFKA_STAMP): $(SPARK_KAFKA_DIR)/pom.xml $(SPARK_KAFKA_DIR)/maven-settings.xml
	rm -rf $(SPARK_KAFKA_DIR)/lib
	mvn -q -B -s $(SPARK_KAFKA_DIR)/maven-settings.xml -f $(SPARK_KAFKA_DIR)/pom.xml dependency:copy-dependencies
	@touch $@

install-test: $(STAMP_TEST) system-deps $(REFERENCE_STAMP) $(JAVA_CLIENT_STAMP) $(GO_CLIENT) $(JS_CLIENT_STAMP) $(STREAMS_STAMP) $(TC_JAVA_STAMP) $(TC_GO) $(SPARK_KAFKA_STAMP)

# Podman settings this host needs (runc, ulimits); the base image carries the host's apt
# sources and stays local; the host's CA bundle is mounted for pip during the build only.
export CONTAINERS_CONF := $(CURDIR)/docker/podman/containers.conf
BASE_IMAGE := localhost/odradek-python-base:bookworm
CA_BUNDLE := /etc/ssl/certs/ca-certificates.crt

image: system-deps
	docker/build-base-image.sh $(BASE_IMAGE)
	podman build --format docker --build-arg BASE=$(BASE_IMAGE) \
	  $(if $(wildcard $(CA_BUNDLE)),--build-arg PIP_CERT=$(CA_BUNDLE) -v $(CA_BUNDLE):$(CA_BUNDLE):ro) \
	  -f docker/Dockerfile -t localhost/odradek:latest .

# Produces sample orders, runs the Spark job on local[2] until they are drained and
# prints the result table (PIPELINE_ARGS="--bootstrap HOST:PORT" to use another Kafka).
PIPELINE_ARGS ?=
pipeline: $(STAMP_SPARK) system-deps
	$(PY) -m odradek.spark.examples.orders $(PIPELINE_ARGS)

lint: $(STAMP_TEST)
	$(PY) -m ruff check .
	MYPYPATH=tests $(PY) typecheck.py $(TYPED) $(TEST_TYPED)

# CI leaves out the long versions of tests whose short versions run (marked slow)
# Two workers (pytest-xdist): most of a test's time is spent waiting on brokers and
# clients, so two run side by side on two cores; each file stays in one worker, so its
# module fixtures start once. TEST_WORKERS=0 runs them one by one.
TEST_WORKERS ?= 2
test: install-test lint
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=40 $(if $(filter true,$(CI)),-m "not slow") $(PYTEST_ARGS)

clean:
	rm -rf tests/go/bin tests/js/node_modules tests/java/classes tests/streams/lib tests/streams/target tests/java/lib tests/reference/lib $(TC_DIR)/java/lib $(TC_DIR)/java/target $(TC_DIR)/go/bin $(SPARK_KAFKA_DIR)/lib .pytest_cache .mypy_cache .ruff_cache $(STAMP_RUN) $(STAMP_TEST) $(STAMP_SPARK)

# Data-plane benchmark, Odradek beside Apache Kafka 4.4 (tests/reference/lib, as the tests
# start it) and librdkafka's mock cluster (bench/data_plane.py).
#   make bench                       full run (~6 min), table + bench/results/data_plane.json
#   make bench BENCH_ARGS=--quick    short run (~1.5 min)
BENCH_ARGS ?=
.PHONY: bench
bench: $(STAMP_TEST) $(REFERENCE_STAMP)
	$(PY) -m bench.data_plane $(BENCH_ARGS)

# Consumer-group and transaction benchmarks, Odradek beside Apache Kafka 4.4 and librdkafka's
# mock cluster (bench/groups.py, bench/transactions.py); BENCH_ARGS=--quick for a short run
# (~1.5 min; Kafka's start takes part of it).
#   make bench-groups         join time 1/10/100 members, commits/s, memory per group
#   make bench-transactions   txn/s, commit latency, read_committed consume
#   make bench-share          share groups (1 and 4 members) beside a classic group
.PHONY: bench-groups bench-transactions bench-share bench-coordinator-load bench-spark \
	bench-spark-connectors
bench-groups: $(STAMP_TEST) $(REFERENCE_STAMP)
	$(PY) -m bench.groups $(BENCH_ARGS)

bench-transactions: $(STAMP_TEST) $(REFERENCE_STAMP)
	$(PY) -m bench.transactions $(BENCH_ARGS)

bench-share: $(STAMP_TEST)
	$(PY) -m bench.share_groups $(BENCH_ARGS)

# A group coordinator loading a large __consumer_offsets (1M offset records, 2,000 groups)
# after SIGTERM and after kill -9, Odradek beside Kafka 4.4: ApiVersions latency during
# the load, time until every group answers, the broker's CPU (bench/coordinator_load.py).
bench-coordinator-load: $(STAMP_TEST) $(REFERENCE_STAMP)
	$(PY) -m bench.coordinator_load $(BENCH_ARGS)

# A full Metadata answer at 10,000 partitions (100 topics x 100), Odradek beside Kafka 4.4:
# its time, the broker's CPU per answer and how long other clients wait meanwhile
# (bench/metadata_scale.py); BENCH_ARGS=--quick for 2,000 partitions.
.PHONY: bench-metadata
bench-metadata: $(STAMP_TEST) $(REFERENCE_STAMP)
	$(PY) -m bench.metadata_scale $(BENCH_ARGS)

# Controller and broker failover of a cluster of 3 controllers and 3 brokers, Odradek
# beside Kafka 4.4 (6 JVMs), as ratios (bench/failover.py); BENCH_ARGS=--quick for one
# failover of each (~4 min; the full run, five of each, ~8 min on 2 cores).
.PHONY: bench-failover
bench-failover: $(STAMP_TEST) $(REFERENCE_STAMP)
	$(PY) -m bench.failover $(BENCH_ARGS)

# Time to ready through Testcontainers' Kafka modules (Java, Go, Python): the image
# (built first) beside Apache Kafka 4.4 from its jars (bench/testcontainers_start.py);
# BENCH_ARGS=--quick for one repeat.
.PHONY: bench-testcontainers
bench-testcontainers: image $(STAMP_TEST) $(REFERENCE_STAMP) $(TC_JAVA_STAMP) $(TC_GO)
	$(PY) -m bench.testcontainers_start $(BENCH_ARGS)

# Spark connector: source and sink records/s beside the same client used directly
# (bench/spark.py); BENCH_ARGS=--quick for a smoke run.
bench-spark: $(STAMP_SPARK) system-deps
	$(PY) -m bench.spark $(BENCH_ARGS)

# Spark's two Kafka connectors, format("kafka") and format("odradek"), each on Odradek
# and on Kafka 4.4 in one run: availableNow reads and streaming copies, records/s and the
# broker's CPU per MB (bench/spark_connectors.py); BENCH_ARGS=--quick for a smoke run.
bench-spark-connectors: $(STAMP_TEST) system-deps $(REFERENCE_STAMP) $(SPARK_KAFKA_STAMP)
	$(PY) -m bench.spark_connectors $(BENCH_ARGS)

# Soak (tests/soak/soak.py): kill -9 cycles of one broker under idempotent, transactional
# and consumer-group load, then a read_committed check of everything acknowledged.
SOAK_ARGS ?= --cycles 100
.PHONY: soak
soak: $(STAMP_TEST)
	PYTHONPATH=tests $(PY) -m soak.soak $(SOAK_ARGS)
