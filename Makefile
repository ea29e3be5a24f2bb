# The two commands: `make demo` runs the main job, `make test` runs the whole test suite.
# Both set up a fresh machine first (Open MPI, .venv, torch, nord, Horovod); set-up is
# idempotent and skips what is already there. `make test-fast` is the inner loop: the
# in-process tests only (no subprocess, no mpirun; tests/conftest.py keeps the markers true).
PYTHON ?= .venv/bin/python
# pytest-xdist workers; a module's tests stay on one worker (they share its fixtures: SLURM
# daemons, network namespaces, mpirun jobs)
WORKERS ?= 2
FAST = -m "not processes and not slow and not exhaustive"

.PHONY: setup demo test test-fast test-unit test-parallel bench clean

setup:
	bash scripts/setup.sh

demo: setup
	bash scripts/demo.sh

test: setup
	$(PYTHON) -m pytest tests -n $(WORKERS) --dist loadscope

test-fast: setup
	$(PYTHON) -m pytest tests $(FAST) -n $(WORKERS)

test-unit: setup
	$(PYTHON) -m pytest tests/unit -n $(WORKERS) --dist loadscope

test-parallel: setup
	$(PYTHON) -m pytest tests/parallel -n $(WORKERS) --dist loadscope

bench: setup
	$(PYTHON) bench/local_evaluator.py
	$(PYTHON) bench/local_evaluator.py --recipe nasbench201 warmup-clip-smooth
	$(PYTHON) bench/augmentation_cost.py
	$(PYTHON) bench/oneshot.py
	$(PYTHON) bench/callback_cost.py
	$(PYTHON) bench/stop_rules.py
	$(PYTHON) bench/distributed.py
	$(PYTHON) bench/oneshot_data_parallel.py
	$(PYTHON) bench/nasbench201_lookup.py
	$(PYTHON) bench/compare_speed.py --processes 1
	$(PYTHON) bench/compare_speed.py --simulated
	$(PYTHON) bench/async_dispatch.py
	$(PYTHON) bench/descriptor_identity.py
	$(PYTHON) bench/report_speed.py
	$(PYTHON) bench/serve_speed.py
	$(PYTHON) bench/local_search.py
	$(PYTHON) bench/paper_question.py
	$(PYTHON) bench/asha.py
	$(PYTHON) bench/checkpoint_cost.py
	$(PYTHON) bench/digits_split.py

clean:
	rm -rf runs .pytest_cache
