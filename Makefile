# The two commands: `make test` and `make demo`. Both create .venv when missing.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo venv bench clean test-spark-versions jepsen

# setup.py compiles the optional Cython modules (*.pyx) in place.
$(STAMP): pyproject.toml setup.py $(wildcard gregor/*/*.pyx gregor/*/*/*.pyx)
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,demo,console]' --config-settings editable_mode=compat
	touch $(STAMP)

venv: $(STAMP)

# System packages (kcat, ZooKeeper) are installed first when running as root with apt-get.
# scripts/test-lanes.sh runs the suite in two lanes at once, then the Python paths the
# compiled modules shadow (gregor/compiled.py); with PYTEST_ARGS, one plain pytest run.
test: $(STAMP)
	@.ci/install-system-packages
	scripts/test-lanes.sh $(PYTEST_ARGS)

# The Spark tests on the PySpark floor of pyproject.toml (a venv of its own) and on .venv's.
test-spark-versions: $(STAMP)
	scripts/spark-versions.sh $(PYTEST_ARGS)

# Jepsen-style runs (root and ZooKeeper; docs/jepsen.md): seeds of the queue and the
# transactional workload under the random nemesis, the secured cluster, and the control that
# must lose writes. Each run keeps its history, faults and report in jepsen-output/.
JEPSEN_SEEDS ?= 1 2 3 4 5
JEPSEN_DURATION ?= 150
jepsen: $(STAMP)
	@.ci/install-system-packages
	@fail=0; for s in $(JEPSEN_SEEDS); do for w in queue txn; do \
	  $(BIN)/python -m gregor.testing.jepsen --seed $$s --duration $(JEPSEN_DURATION) \
	    --workload $$w --out jepsen-output/$$w-$$s || fail=1; done; done; \
	for w in queue txn; do $(BIN)/python -m gregor.testing.jepsen --seed 1 --secure \
	  --duration $(JEPSEN_DURATION) --workload $$w --out jepsen-output/secure-$$w-1 || fail=1; \
	done; \
	for c in acks1 unclean; do $(BIN)/python -m gregor.testing.jepsen --control $$c \
	  --out jepsen-output/control-$$c || fail=1; done; \
	exit $$fail

demo: $(STAMP)
	$(BIN)/gregor demo $(DEMO_ARGS)

bench: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[bench]'
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info demo-output
	find gregor \( -name '_*.c' -o -name '*.so' \) -delete
