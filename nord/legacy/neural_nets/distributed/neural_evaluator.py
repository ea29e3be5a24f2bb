"""The 2018 ``DistributedNeuralEvaluator``: every rank trains rank 0's descriptor, data-parallel.

    with Environment() as env:                          # mpirun -np 4 python search.py
        evaluator = DistributedNeuralEvaluator()
        fitness = evaluator.descriptor_evaluate(d)      # called on every rank

As in 2018, every rank calls ``descriptor_evaluate`` with a descriptor, and rank 0's is the
one evaluated; each rank trains on its share of the training set with averaged gradients
(Horovod when installed, else ``torch.distributed``), at learning rate ``initial_lr`` times
the number of ranks (left in ``final_lr`` at each evaluation, as 2018 did), in batches of 128
per rank. Rank 0 receives minus the test accuracy; the other ranks receive 0.0. A network
that cannot be evaluated gives 0.0 on every rank.

2018's module globals are read at every evaluation: ``EPOCHS`` (5, or
``$NORD_LEGACY_EPOCHS``), ``initial_lr``, ``momentum``, ``device`` (left as it is, each rank
takes its own GPU; 2018 put every rank on cuda:0) and ``criterion`` (cross-entropy only).

The work is done by nord's :class:`~nord.evaluators.distributed.DistributedEvaluator`
(``self.evaluator``, made at the first evaluation, once MPI runs). Differences from 2018: the
test accuracy is exact (correct answers summed over the ranks, where 2018 averaged the ranks'
accuracies), and Horovod starts at the first evaluation rather than in the Environment.
Without mpirun it evaluates in this process alone.
"""
from __future__ import annotations

import atexit

import torch
import torch.nn as nn

from nord.legacy.neural_nets.local.neural_evaluator import NeuralEvaluator, epochs_from_environment

__all__ = ["DistributedNeuralEvaluator", "close_evaluators", "EPOCHS", "momentum", "initial_lr",
           "final_lr", "device", "criterion"]

EPOCHS = epochs_from_environment()
"""Training epochs of every network (2018: 5)."""
momentum = 0.5
"""SGD's momentum."""
initial_lr = 0.01
"""The learning rate of one rank; training uses it times the number of ranks."""
final_lr = initial_lr
"""The learning rate of the last evaluation: initial_lr times the ranks (setting it does
nothing, as in 2018: each evaluation computes it again)."""
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
"""Where networks train; left as it is, each rank takes its own GPU."""
criterion = nn.CrossEntropyLoss()
"""The loss; only cross-entropy is accepted."""

_DEFAULT_DEVICE = device
_started = []  # the nord evaluators made in this process, for close_evaluators


def close_evaluators() -> None:
    """Stop the torch.distributed groups of this process's evaluators (before MPI ends)."""
    while _started:
        _started.pop().close()


class DistributedNeuralEvaluator(NeuralEvaluator):
    """Evaluates rank 0's descriptor on all ranks of ``MPI.COMM_WORLD``.

    Args:
        backend: 'auto' (Horovod when installed, else torch.distributed), 'horovod' or
            'torch'.
        **kwargs: those of :class:`NeuralEvaluator` (curator, epochs, lr, momentum, ...);
            ``lr`` stands for ``initial_lr``, ``batch_size`` is per rank.
    """

    _lazy = True  # MPI may start after the constructor (2018 built it before the Environment)
    _settings_module = __name__

    def __init__(self, backend: str = "auto", **kwargs):
        self.backend = backend
        super().__init__(**kwargs)

    def _lr_name(self) -> str:
        return "initial_lr"

    def _device(self):
        value = self._setting(self.device, "device")
        return "auto" if value is _DEFAULT_DEVICE else super()._device()

    def _criterion_hint(self) -> str:
        return ""

    def _make_evaluator(self):
        from nord.evaluators.distributed import DistributedEvaluator
        evaluator = DistributedEvaluator(backend=self.backend, scale_lr=True, **self._settings())
        atexit.register(evaluator.close)  # torch.distributed must be stopped before exit
        _started.append(evaluator)
        return evaluator

    def _is_root(self) -> bool:
        return self.evaluator.is_root

    def _shard(self):
        return self.evaluator.group.rank, self.evaluator.group.size

    @property
    def trainsampler(self):
        """2018's sampler of this rank's training share: its loader, which has ``set_epoch``."""
        return self.trainloader

    @property
    def testsampler(self):
        """2018's sampler of this rank's test share: its loader."""
        return self.testloader

    def descriptor_evaluate(self, descriptor, untrained: bool = False, verbose: bool = False) -> float:
        """As :meth:`NeuralEvaluator.descriptor_evaluate`, on every rank (rank 0's descriptor)."""
        self._globals()["final_lr"] = self._current()["lr"] * self.evaluator.group.size
        return super().descriptor_evaluate(descriptor, untrained, verbose)
