# The two commands: `make run` (the simulator on its embedded defaults) and `make test` (the whole suite).
# Both create/update .venv first (make setup is idempotent).
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup run test lint bench soak clean

setup:
	@bash tools/setup_venv.sh

run: setup
	$(VENV)/bin/vasimov up

test: setup
	@bash tools/run_tests.sh

lint: setup
	$(VENV)/bin/ruff check .

bench: setup
	$(PY) bench/run_all.py

# Long real-time run with an SDK client walking random commands, a Foxglove client and a recorder (bench/soak.py);
# `make soak SOAK_S=60` for a short one.
SOAK_S ?= 1800
soak: setup
	$(PY) bench/soak.py --duration $(SOAK_S)

clean:
	rm -rf build .pytest_cache .ros_log .test_artifacts
