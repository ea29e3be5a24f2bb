# The two commands: `make demo` runs the main job, `make test` runs the whole test suite.
# Both set up a fresh machine first (Open MPI, .venv, torch, nord, Horovod); set-up is
# idempotent and skips what is already there.
PYTHON ?= .venv/bin/python

.PHONY: setup demo test test-unit test-parallel bench clean

setup:
	bash scripts/setup.sh

demo: setup
	bash scripts/demo.sh

test: setup
	$(PYTHON) -m pytest tests

test-unit: setup
	$(PYTHON) -m pytest tests/unit

test-parallel: setup
	$(PYTHON) -m pytest tests/parallel

bench: setup
	$(PYTHON) bench/local_evaluator.py
	$(PYTHON) bench/distributed.py
	$(PYTHON) bench/nasbench201_lookup.py
	$(PYTHON) bench/compare_speed.py --processes 1
	$(PYTHON) bench/compare_speed.py --simulated
	$(PYTHON) bench/async_dispatch.py
	$(PYTHON) bench/descriptor_identity.py
	$(PYTHON) bench/report_speed.py
	$(PYTHON) bench/local_search.py
	$(PYTHON) bench/paper_question.py
	$(PYTHON) bench/asha.py

clean:
	rm -rf runs .pytest_cache
