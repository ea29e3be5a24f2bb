"""A tiny search space, algorithm and evaluator for the search-engine tests (no torch, no data).

* ``ToySpace``: genomes ``(width, kernel)`` in ``1..6 x 1..4`` decode to ``conv2d -> relu``;
  ``(6, 4)`` does not decode (a SearchSpaceError), so decode failures are exercised; only 23
  architectures exist, so a search of any length meets repeats (the cache).
* ``ToyEvaluator``: accuracy is a fixed function of the architecture; ``(1, 1)`` raises (a
  failed result); it can sleep, and append one line per evaluation to a log file
  (``"<world rank> <hash>"``) so tests can count what was really trained, and where.
* ``ToyGenerational``: a seeded generational algorithm whose children come from the earlier
  generations' results *in the order told*, so telling out of order changes the run.
"""
from __future__ import annotations

import os
import time
from typing import Optional

from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import SearchSpaceError
from nord.evaluators.base import Evaluator
from nord.evaluators.result import EvaluationResult
from nord.search.algorithms.base import Candidate, SearchAlgorithm
from nord.search.spaces.base import SearchSpace


class ToySpace(SearchSpace):
    lower = (1, 1)
    upper = (6, 4)

    def decode(self, genome):
        width, kernel = genome
        if (width, kernel) == (6, 4):
            raise SearchSpaceError("toy rule: (6, 4) has no network")
        descriptor = NeuralDescriptor()
        descriptor.add_layer_sequential("conv2d", {"out_channels": width, "kernel_size": kernel})
        descriptor.add_layer_sequential("relu")
        return descriptor


def toy_accuracy(width: int, kernel: int) -> float:
    return ((width * 7 + kernel * 3) % 17) / 17.0


def world_rank() -> int:
    return int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))


class ToyEvaluator(Evaluator):
    def __init__(self, sleep: float = 0.0, log: Optional[str] = None):
        self.sleep = sleep
        self.log = log
        self.calls = 0

    def describe(self):
        # subclasses that inject faults measure the same way: they resume its runs
        return {"evaluator": "ToyEvaluator"}

    def _evaluate(self, descriptor):
        self.calls += 1
        conv = next(layer for layer in descriptor.layers.values() if layer.type == "conv2d")
        width, kernel = conv.params["out_channels"], conv.params["kernel_size"]
        if self.log:
            with open(self.log, "a") as log:
                log.write(f"{world_rank()} {descriptor.hash}\n")
        if self.sleep:
            time.sleep(self.sleep)
        if (width, kernel) == (1, 1):
            raise ValueError("toy failure: (1, 1) does not train")
        return EvaluationResult(accuracy=toy_accuracy(width, kernel), loss=1.0 / (width + kernel),
                                n_params=width * kernel * kernel, epochs=1,
                                reported_accuracy=toy_accuracy(width, kernel) / 2,
                                metrics={"width": width, "kernel": kernel})


class Interrupting(ToyEvaluator):
    """Raises KeyboardInterrupt (which evaluators let through) at its ``stop_at``-th call."""

    def __init__(self, stop_at):
        super().__init__()
        self.stop_at = stop_at

    def _evaluate(self, descriptor):
        if self.calls + 1 == self.stop_at:
            raise KeyboardInterrupt
        return super()._evaluate(descriptor)


class ToyCurves(ToyEvaluator):
    """Training with a learning curve, in legs: after ``e`` epochs the accuracy is
    ``toy_accuracy * (1 - 0.5 ** e)`` (so a better architecture is better at every epoch);
    a checkpoint is a small JSON file with the epochs done. ``log`` gets one line per epoch
    trained (``"<rank> <hash> <epoch>"``), so tests can count what training cost."""

    trains_in_legs = True

    def __init__(self, max_epochs: int = 9, sleep: float = 0.0, log: Optional[str] = None):
        super().__init__(sleep, log)
        self.max_epochs = max_epochs
        self.epochs_trained = 0

    def describe(self):
        return {"evaluator": "ToyCurves", "max_epochs": self.max_epochs}

    def evaluate_task(self, task):
        import json
        started = time.time()
        descriptor = task.descriptor
        target = task.epochs if task.epochs is not None else self.max_epochs
        start = 0
        if task.resume_from is not None:
            if not os.path.exists(task.resume_from):
                return EvaluationResult.failure(f"checkpoint {task.resume_from} does not exist")
            with open(task.resume_from) as handle:
                start = json.load(handle)["epochs"]
        conv = next(layer for layer in descriptor.layers.values() if layer.type == "conv2d")
        width, kernel = conv.params["out_channels"], conv.params["kernel_size"]
        if (width, kernel) == (1, 1):
            return EvaluationResult.failure("toy failure: (1, 1) does not train")
        quality = toy_accuracy(width, kernel)
        for epoch in range(start + 1, target + 1):
            self.epochs_trained += 1
            if self.log:
                with open(self.log, "a") as log:
                    log.write(f"{world_rank()} {descriptor.hash} {epoch}\n")
            if self.sleep:
                time.sleep(self.sleep)
            if task.report is not None:
                from nord.evaluators.result import EpochRecord
                task.report(EpochRecord(epoch, 1.0 / epoch, quality * (1 - 0.5 ** epoch),
                                        1.0 / epoch, 0.001, {"width": width}))
        if task.checkpoint is not None and task.keep_at_end:
            with open(task.checkpoint, "w") as handle:
                json.dump({"epochs": target}, handle)
        accuracy = quality * (1 - 0.5 ** target)
        return EvaluationResult(accuracy=accuracy, reported_accuracy=accuracy / 2,
                                n_params=width * kernel, epochs=target,
                                train_time=time.time() - started, descriptor_hash=descriptor.hash,
                                metrics={"epochs_resumed": start})


class ToyGroupEvaluator(ToyEvaluator):
    """A toy evaluator for groups of several ranks, with the protocol a data-parallel evaluator
    follows (``DistributedEvaluator``): the group root sends each descriptor to the other ranks
    of its group, which wait in ``serve()`` until ``release()``; every rank evaluates it."""

    def __init__(self, comm, sleep: float = 0.0, log: Optional[str] = None):
        super().__init__(sleep, log)
        self.comm = comm

    def descriptor_evaluate(self, descriptor):
        for member in range(1, self.comm.Get_size()):
            self.comm.send(descriptor.to_json(), dest=member)
        return super().descriptor_evaluate(descriptor)

    def serve(self):
        while True:
            message = self.comm.recv(source=0)
            if message is None:
                return
            super().descriptor_evaluate(NeuralDescriptor.from_json(message))

    def release(self):
        for member in range(1, self.comm.Get_size()):
            self.comm.send(None, dest=member)


class ToyGenerational(SearchAlgorithm):
    """Generation 0 is random; each later child mutates a parent drawn from earlier results."""

    name = "toy-generational"

    def __init__(self, space, seed=None, population: int = 4):
        super().__init__(space, seed)
        self.population = population
        self.history = []          # (genome, fitness) of earlier generations, in the order told
        self.current = []          # told in the current generation
        self.generation = 0
        self.asked_in_generation = 0

    def parameters(self):
        return {**super().parameters(), "population": self.population}

    def _ask(self):
        if self.asked_in_generation == self.population:
            if len(self.current) < self.population:
                return None        # generation barrier
            self.history.extend(self.current)
            self.current = []
            self.generation += 1
            self.asked_in_generation = 0
        self.asked_in_generation += 1
        if self.generation == 0:
            return Candidate(self.space.sample(self.rng), generation=0)
        index = int(self.rng.integers(len(self.history)))
        parent = list(self.history[index][0])
        gene = int(self.rng.integers(2))
        parent[gene] = int(self.rng.integers(self.space.lower[gene], self.space.upper[gene] + 1))
        return Candidate(tuple(parent), generation=self.generation)

    def _tell(self, candidate, result):
        self.current.append((candidate.genome, result.fitness))


TIMES = ("started", "ended", "train_time", "eval_time")


def journal_rows(path, drop=TIMES):
    """A journal's evaluations and candidates without the given columns, for comparisons.

    Runs with different numbers of workers propose the same candidates at different points
    (``told_before``): drop it too when comparing them.
    """
    from nord.journal import Journal

    with Journal(path) as journal:
        evaluations = [{k: v for k, v in row.items() if k not in drop}
                       for row in journal.evaluations()]
        candidates = [{k: v for k, v in row.items() if k != "asked" and k not in drop}
                      for row in journal.candidates()]
    for row in evaluations:  # NaN != NaN: compare failed accuracies as None
        for key in ("accuracy", "loss"):
            if row[key] != row[key]:
                row[key] = None
    return evaluations, candidates


def ask_and_tell(algorithm: SearchAlgorithm, evaluate, steps: int) -> list:
    """Ask and tell ``steps`` times, one candidate at a time, with ``evaluate(genome)``'s
    result; the genomes asked, in order."""
    asked = []
    for _ in range(steps):
        candidate = algorithm.ask()
        asked.append(candidate.genome)
        algorithm.tell(candidate, evaluate(candidate.genome))
    return asked
