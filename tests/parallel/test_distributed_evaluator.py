"""DistributedEvaluator under real mpirun, 2 and 3 ranks, Horovod and torch.distributed backends.

The checks themselves live in tests/parallel/distributed_programs.py and run on every rank.
"""
import pytest

from tests.mpirun import requires_mpirun, run_mpi

pytestmark = [requires_mpirun, pytest.mark.mpi]

COMMON = ["fixed_weights", "trained_identical", "recipe_training", "legs_equal_straight",
          "uneven_data", "failing_network",
          "rank_specific_failure", "backward_failure", "nan_on_one_rank", "failure_between_checks",
          "failure_between_checks_with_step_rules",
          "serve_and_release", "groups_of_one"]


def horovod_available():
    try:
        import horovod.torch  # noqa: F401
        return True
    except ImportError:
        return False


BACKENDS = [pytest.param("horovod", marks=pytest.mark.skipif(
    not horovod_available(), reason="Horovod is not built (run scripts/build_horovod.sh)")),
    "torch"]


def run_checks(backend, ranks, checks, env=None):
    run = run_mpi(["-m", "tests.parallel.distributed_programs", backend, *checks], np=ranks,
                  timeout=240, env=env)
    assert not run.timed_out, f"timed out after {run.seconds:.0f} s:\n{run.output[-4000:]}"
    assert run.returncode == 0, run.output[-6000:]
    assert run.output.count("checks passed") == ranks, run.output[-3000:]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("ranks", [2, 3])
def test_distributed_evaluator(backend, ranks):
    run_checks(backend, ranks, COMMON)


@pytest.mark.parametrize("backend", BACKENDS)
def test_groups_of_two_train_their_own_networks(backend):
    # a fresh job: Horovod starts once per process, with one group's communicator
    run_checks(backend, 3, ["groups_of_two"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_collective_per_training_step(backend):
    # a fresh job: Horovod records its cycles only when started with a dynamic timeline
    run_checks(backend, 2, ["one_collective_per_step"], env={"HOROVOD_TIMELINE": "DYNAMIC"})


@pytest.mark.skipif(not horovod_available(), reason="Horovod is not built (run scripts/build_horovod.sh)")
def test_horovod_of_fewer_ranks_than_the_group_is_refused():
    run_checks("horovod", 2, ["horovod_alone_is_refused"],
               env={"HOROVOD_CONTROLLER": "gloo", "HOROVOD_CPU_OPERATIONS": "gloo"})
