# The two commands: `make run` (the simulator on its embedded defaults) and `make test` (the whole suite).
# Both create/update .venv first (make setup is idempotent).
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup run test lint bench clean

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

clean:
	rm -rf build .pytest_cache .ros_log .test_artifacts
