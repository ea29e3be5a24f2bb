"""Rank programs for the nord.legacy tests, run under mpirun in a scratch folder.

    NORD_LEGACY_DATA=DATA mpirun -np 3 python -m tests.parallel.legacy_programs CHECK...

``close_workers`` finalises MPI, so it comes last.

They use the 2018 names, as a 2018 program would. Each check computes its expectation from
the world size and exits non-zero with a message when it does not hold; every rank prints
"checks passed" at the end.
"""
import sys

import torch.nn as nn

import nord.legacy  # noqa: F401 - the 2018 module names
from neural_nets import DistributedNeuralEvaluator, NeuralDescriptor
from neural_nets.distributed import Environment
import neural_nets.distributed.environment
from neural_nets.local.neural_evaluator import EvaluationFailed


def conv(kernel):
    d = NeuralDescriptor()
    d.add_layer_sequential(nn.Conv2d, [3, 6, kernel])
    d.add_layer_sequential(nn.ReLU6, [])
    return d


def require(condition, message):
    if not condition:
        raise AssertionError(message)


def rank_zero_descriptor(e):
    """Every rank passes a descriptor; rank 0's is the one evaluated, and only rank 0 scores."""
    evaluator = DistributedNeuralEvaluator(epochs=1)
    mine = conv(5) if e.master() else conv(40)  # the other ranks' would not even build
    fitness = evaluator.descriptor_evaluate(mine)
    result = evaluator.last_result
    require(result.ok, f"rank {e.world_rank}: {result.error}")
    results = e.comm.allgather((result.descriptor_hash, result.accuracy, fitness))
    require(all(r[0] == conv(5).hash for r in results), f"not rank 0's network: {results}")
    require(len({r[1] for r in results}) == 1, f"ranks disagree on the accuracy: {results}")
    expected = [-result.accuracy] + [0.0] * (e.world_size - 1)
    require([r[2] for r in results] == expected, f"fitness per rank {results}, expected {expected}")
    require(result.metrics["test_samples"] == evaluator.curator.n_test,
            "the test set was not shared out over the ranks exactly once")
    settings = evaluator.evaluator.describe()
    require(settings["ranks"] == e.world_size and settings["scale_lr"] and settings["lr"] == 0.01,
            f"not the 2018 data-parallel settings (lr 0.01 x ranks): {settings}")


def failure_on_rank_zero(e):
    """A network rank 0 cannot build scores 0.0 everywhere; verbose raises everywhere."""
    evaluator = DistributedNeuralEvaluator()
    fitness = evaluator.descriptor_evaluate(conv(40) if e.master() else conv(5), untrained=True)
    require(fitness == 0.0 and evaluator.last_result.status == "failed",
            f"rank {e.world_rank}: {fitness}, {evaluator.last_result}")
    try:
        evaluator.descriptor_evaluate(conv(40), untrained=True, verbose=True)
    except EvaluationFailed as error:
        require("ShapeError" in str(error), str(error))
    else:
        raise AssertionError("verbose=True did not raise for a network that cannot be built")
    # the ranks still work together afterwards
    evaluator.descriptor_evaluate(conv(5), untrained=True)
    require(evaluator.last_result.ok, evaluator.last_result.error)


def log_file(e):
    """Only rank 0 writes the log file, once per message, in the 2018 format."""
    e.log(f"message from rank {e.world_rank}")
    e.barrier()
    if e.master():
        lines = open("NORD.log").read().splitlines()
        require(len(lines) == 1 and lines[0].endswith(";NORD;INFO;message from rank 0"),
                f"NORD.log holds {lines}")
    require(neural_nets.distributed.environment.env is e, "the active environment is not set")
    require(e.world_size == e.comm.Get_size() and e.master() == (e.world_rank == 0),
            "world_size, world_rank or master() disagree with MPI")


def close_workers(e):
    """2018's close_workers leaves the environment and finalises MPI on every rank."""
    from mpi4py import MPI
    require(e.comm is MPI.COMM_WORLD, "comm is not MPI.COMM_WORLD")
    neural_nets.distributed.environment.close_workers()
    require(MPI.Is_finalized() and not e.active, "close_workers left MPI running")
    require(neural_nets.distributed.environment.env is None, "the environment is still active")


CHECKS = {f.__name__: f for f in (rank_zero_descriptor, failure_on_rank_zero, log_file,
                                  close_workers)}


def main(names):
    with Environment() as e:
        for name in names:
            CHECKS[name](e)
            if e.active:
                e.barrier()
        print(f"rank {e.world_rank}: checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
