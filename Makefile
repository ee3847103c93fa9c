# kafkalite — every target bootstraps what it needs (idempotent; fast when already there).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: run test test-unit ecosystem test-fast install-test rename-packages bench fuzz lint codegen pipeline-demo matrix clean soak spark-crash spark-examples \
	matrix-reference test-reference differential test-migrate quickstart

run:
	@tools/bootstrap.sh venv
	@echo "the CLI, from another terminal here: .venv/bin/kafkalite topics --list  (or: source .venv/bin/activate)"
	$(PY) -m kafkalite serve $(ARGS)

test:
	@tools/bootstrap.sh venv clients spark console eco reference java4 golang rust
	$(VENV)/bin/lint-imports
	$(PY) tools/import_cycles.py
	$(PY) tools/mypy_baseline.py
	$(VENV)/bin/ruff check wire storage kafkalite compat-tests bench tools
	$(PY) -m pytest -q -p no:cacheprovider -m "not ecosystem and not matrix" $(TEST_PATHS) $(PYTEST_ARGS)

# Kafka's ecosystem on kafkalite (#25): Spark's own Kafka connector and the kafkalite data source, Kafka Streams,
# Kafka Connect and MirrorMaker 2, the Spark snippet of docs/user/spark.md;
# everything, including the scenarios marked `ecosystem` that make test leaves out (a few minutes)
ecosystem:
	@tools/bootstrap.sh venv clients spark eco
	$(PY) -m pytest -q -p no:cacheprovider compat-tests/test_spark_kafka.py compat-tests/test_kafka_streams.py \
		compat-tests/test_kafka_connect.py compat-tests/test_mirrormaker.py \
		"kafkalite/tests/e2e/test_docs_code.py::test_page_blocks_run[docs/user/spark.md]" $(PYTEST_ARGS)

# every tier of the project's own tests, and the real clients of compat-tests (CI runs `make test`)
TEST_PATHS ?= kafkalite_wire/tests kafkalite_storage/tests kafkalite/tests bench/tests compat-tests
OWN_TESTS := kafkalite_wire/tests kafkalite_storage/tests kafkalite/tests

# the pure tests (wire, storage, kafkalite/tests/unit): seconds
test-unit:
	@tools/bootstrap.sh venv
	$(PY) -m pytest -q -x -p no:cacheprovider -m unit $(OWN_TESTS) $(PYTEST_ARGS)

# unit + an embedded broker over real sockets (kafkalite/tests/broker); no client library, no subprocess
test-fast:
	@tools/bootstrap.sh venv
	$(PY) -m pytest -q -x -p no:cacheprovider -m "unit or broker" $(OWN_TESTS) $(PYTEST_ARGS)

# the built wheel in a fresh venv: serve, produce, consume; no generic top-level names (also part of make test)
install-test:
	@tools/bootstrap.sh venv
	$(PY) -m pytest -q -p no:cacheprovider kafkalite/tests/e2e/test_install_wheel.py $(PYTEST_ARGS)

# the README's quick start as a newcomer types it, from a clean clone of HEAD: make run (a fresh .venv: minutes),
# then the README's CLI commands, each checked (make test runs the same commands in this checkout's venv)
quickstart:
	@tools/bootstrap.sh venv
	$(PY) -m pytest -q -s -p no:cacheprovider kafkalite/tests/e2e/quickstart_clone.py $(PYTEST_ARGS)

# rewrite imports of wire/storage to their installed names kafkalite_wire/kafkalite_storage (idempotent)
rename-packages:
	$(PY) tools/rename_packages.py

# a long protocol-fuzz run against an in-process broker; e.g. make fuzz ARGS="--duration 3600 --seed 7"
fuzz:
	@tools/bootstrap.sh venv
	$(PY) -m kafkalite.tests.fuzz $(or $(ARGS),--duration 600)

lint:
	@tools/bootstrap.sh venv
	$(VENV)/bin/ruff check .
	$(PY) tools/mypy_baseline.py
	$(VENV)/bin/lint-imports
	$(PY) tools/import_cycles.py

codegen:
	@tools/bootstrap.sh venv
	$(PY) -m kafkalite_wire.codegen

bench:
	@tools/bootstrap.sh venv clients peers reference
	$(PY) -m bench.run_all $(ARGS)

# SIGKILL soak: a broker process killed repeatedly under an idempotent producer and a committing group;
# SOAK_SECONDS (default 180) bounds it, ARGS="--cycles N --seed S --keep" refine it (tools/soak.py).
soak:
	@tools/bootstrap.sh venv clients
	$(PY) tools/soak.py $(ARGS)

pipeline-demo:
	@tools/bootstrap.sh venv clients spark
	$(PY) -m kafkalite.spark.demo $(if $(CLUSTER),--cluster)

# the example pipelines of kafkalite/spark/examples, each against an embedded broker (their tests are in make test)
spark-examples:
	@tools/bootstrap.sh venv clients spark
	$(PY) -m kafkalite.spark.examples.fraud
	$(PY) -m kafkalite.spark.examples.state_join
	$(PY) -m kafkalite.spark.examples.to_parquet

matrix:
	@tools/bootstrap.sh venv clients java4 golang rust
	$(PY) compat-tests/make_matrix.py

# Apache Kafka 4.4 as the reference broker (compat-tests/harness/reference.py): the compat suite against it.
# MATRIX-kafka.md says which scenarios pass there; kafkalite-only ones are skipped with their reason.
matrix-reference:
	@tools/bootstrap.sh venv clients reference java4 golang rust
	KAFKALITE_COMPAT_BROKER=kafka $(PY) compat-tests/make_matrix.py --out compat-tests/MATRIX-kafka.md $(ARGS)

# the compat tests (or PYTEST_ARGS=compat-tests/test_x.py) against Apache Kafka 4.4 instead of kafkalite
test-reference:
	@tools/bootstrap.sh venv clients reference java4 golang rust
	KAFKALITE_COMPAT_BROKER=kafka $(PY) -m pytest -q -p no:cacheprovider $(or $(PYTEST_ARGS),compat-tests)

# kafkalite migrate: its unit and client tests, and the migration into a 3-node Apache Kafka 4.4 (also in make test)
test-migrate:
	@tools/bootstrap.sh venv clients reference
	$(PY) -m pytest -q -p no:cacheprovider kafkalite/tests/unit/test_migration.py \
		kafkalite/tests/clients/test_tools_migrate.py compat-tests/test_migrate.py $(PYTEST_ARGS)

# raw frames to kafkalite and to Kafka 4.4, every common version: rewrites compat-tests/DIFFERENTIAL.md
differential:
	@tools/bootstrap.sh venv reference
	$(PY) compat-tests/differential/run.py $(ARGS)

clean:
	rm -rf $(VENV) .deps compat-tests/node_modules

# SIGKILL of the broker, the Spark driver and an executor JVM (standalone cluster) mid-batch under the exactly-once
# Spark sink, and a driver crash before a batch's decision (minutes; not in make test)
spark-crash:
	@tools/bootstrap.sh venv clients spark
	$(PY) -m pytest -q -p no:cacheprovider kafkalite/tests/e2e/spark_eos_crash.py $(PYTEST_ARGS)
