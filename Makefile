# craps-streams: `make run` (the floor, live) and `make test` (everything CI runs).
SHELL := /bin/bash
PYTHON ?= python3
TABLES ?= 8
HOURS ?= 2
SEED ?= 1
# Kafka nodes for run, kafka-up and kafka-down: 1, or 3 for a local cluster (docs/operating/cluster.md).
NODES ?= 1
# The ledger's database for run: sqlite (a file under .run/), or postgres (a PostgreSQL of the run's
# own from Debian's package, its data in .run/postgres: docs/operating/ledger.md).
LEDGER ?= sqlite

.PHONY: install run test test-unit explore bench kafka-up kafka-down replay-demo docs clean distclean faults

install:
	PATH="$$PATH:$$HOME/.cargo/bin" $(PYTHON) -m pip install -q --disable-pip-version-check --root-user-action=ignore -e '.[test]'
	infra/floor/fetch-assets.sh

# The main job: Kafka, a worker, the floor view, finance's ledger, Prometheus and a simulated floor fed
# live (infra/run-floor.sh); LEDGER=postgres keeps the ledger in a PostgreSQL of the run's own.
# infra/setup.sh installs what a fresh Debian machine lacks (Java, Maven, Prometheus, the jars, Chart.js).
run:
	@LEDGER=$(LEDGER) bash infra/setup.sh run
	NODES=$(NODES) LEDGER=$(LEDGER) bash infra/run-floor.sh

# Offline: a simulated floor settled by the rules core, printing the settlement summary.
replay-demo: install
	@mkdir -p out
	craps-streams simulate --tables $(TABLES) --hours $(HOURS) --seed $(SEED) --bad-rate 0.01 \
	  | craps-streams replay - --only settlements,alerts -o out/settlements.jsonl
	@echo "settlements and alerts: out/settlements.jsonl"

kafka-up:
	@infra/kafka/kafka.sh fetch
	@infra/kafka/kafka.sh status --nodes $(NODES) >/dev/null 2>&1 || infra/kafka/kafka.sh up --nodes $(NODES)

kafka-down:
	@infra/kafka/kafka.sh stop --nodes $(NODES)

# Everything CI runs: unit, property, codec, rules and the pipeline tests on the real broker,
# which infra/test.sh starts if needed and stops again (about 10 minutes on 2 cores).
test:
	@bash infra/setup.sh test
	bash infra/test.sh

test-unit: install
	$(PYTHON) -m pytest -q -m 'not kafka and not slow'

# The property tests with random seeds and SCALE times CI's examples (tests/exploration.py): what
# it finds is pinned as an @example. Not part of CI, which is derandomized.
SCALE ?= 20
explore: install
	HYPOTHESIS_PROFILE=explore CRAPS_EXPLORE_SCALE=$(SCALE) $(PYTHON) -m pytest -q -m 'not kafka and not slow' \
	  tests/rules tests/app tests/codec tests/odds tests/surveillance

bench: install
	$(PYTHON) benchmarks/core_replay.py

# The documentation site (mkdocs.yml, docs/), served with live reload at http://127.0.0.1:8000.
docs:
	@$(PYTHON) -m mkdocs --version >/dev/null 2>&1 || $(PYTHON) -m pip install -q --disable-pip-version-check --root-user-action=ignore 'mkdocs>=1.6' 'mkdocs-material>=9.5'
	NO_MKDOCS_2_WARNING=1 $(PYTHON) -m mkdocs serve -a 127.0.0.1:8000
# Disk (docs/operating/files.md): `make clean` removes what builds and runs leave behind, all of it
# made again by the next `make install` / `make run` / `make test`:
#   .kafka-data*   the local broker's data, every floor's topics (refused while the broker runs:
#                  `make kafka-down` first)
#   .kafka-cluster the local three-node cluster's data (NODES=3; refused while it runs:
#                  `make kafka-down NODES=3` first)
#   .run           `make run`'s logs, floor.env, Prometheus data, the ledger's SQLite file and its
#                  PostgreSQL (LEDGER=postgres; refused while it runs: infra/postgres/postgres.sh stop)
#   native/target  the Rust build of the native rules core (the built module in craps_streams/accelerator stays)
#   benchmarks/kstreams/target  the Kafka Streams contender's jar (built again by the benchmark)
#   build/ site/   the Python build and the docs site
#   out/*          replay-demo and benchmark outputs
# It never touches .secrets (the broker's CA and logins, the table key ring, the archive key).
clean:
	@if infra/kafka/kafka.sh status >/dev/null 2>&1; then \
	  echo "make clean: the Kafka broker is running on its data in .kafka-data: stop it first (make kafka-down)" >&2; exit 2; fi
	@if infra/kafka/kafka.sh status --nodes 3 >/dev/null 2>&1; then \
	  echo "make clean: the Kafka cluster is running on its data in .kafka-cluster: stop it first (make kafka-down NODES=3)" >&2; exit 2; fi
	@if PG_DIR=.run/postgres infra/postgres/postgres.sh status >/dev/null 2>&1; then \
	  echo "make clean: the ledger's PostgreSQL is running on its data in .run/postgres: stop it first (infra/postgres/postgres.sh stop)" >&2; exit 2; fi
	rm -rf .kafka-data .kafka-data-* .kafka-cluster .run native/target benchmarks/kstreams/target build site
	find out -mindepth 1 ! -name .keep -exec rm -rf {} +

# Everything `make clean` removes, and what was fetched or made once: infra/kafka/lib (the Kafka
# jars), craps_streams/floor/static/vendor (Chart.js), the native module, and .secrets: the broker's CA
# and logins (made again by the next broker start) and the TABLE KEY RING and ARCHIVE KEY, without
# which the events and archives tagged and sealed with them can no longer be verified. Keep a copy;
# it asks for YES=1.
distclean: clean
	@if [[ "$(YES)" != 1 ]]; then \
	  echo "make distclean deletes .secrets: the table key ring and the archive key too (history tagged or" >&2; \
	  echo "sealed with them can no longer be verified). Keep a copy, then: make distclean YES=1" >&2; exit 2; fi
	rm -rf .secrets infra/kafka/lib craps_streams/floor/static/vendor craps_streams/accelerator/_native*.so
# The cluster fault drills, each on a three-node cluster of its own (about 3 minutes each; not CI,
# which runs the busiest leader's kill -9 in tests/faults/test_cluster.py): docs/reliability/cluster.md.
# Then the fault tests too long for CI (marker `faults`: a lost broker as the operator sees it).
DRILLS ?= leader controller rolling frozen disk partition partition-controller
faults:
	@bash infra/setup.sh run
	$(PYTHON) -m tests.faults.drills $(DRILLS)
	$(PYTHON) -m pytest -ra -p no:cacheprovider -m faults tests/faults
