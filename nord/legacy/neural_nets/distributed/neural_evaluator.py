"""The 2018 ``DistributedNeuralEvaluator``: every rank trains rank 0's descriptor, data-parallel.

    with Environment() as env:                          # mpirun -np 4 python search.py
        evaluator = DistributedNeuralEvaluator()
        fitness = evaluator.descriptor_evaluate(d)      # called on every rank

As in 2018, every rank calls ``descriptor_evaluate`` with a descriptor, and rank 0's is the
one evaluated; each rank trains on its share of the training set with averaged gradients
(Horovod when installed, else ``torch.distributed``), at learning rate 0.01 times the
number of ranks, in batches of 128 per rank. Rank 0 receives minus the test accuracy; the
other ranks receive 0.0. A network that cannot be evaluated gives 0.0 on every rank.

The work is done by nord's :class:`~nord.evaluators.distributed.DistributedEvaluator`
(``self.evaluator``, made at the first evaluation, once MPI runs). Differences from 2018: the
test accuracy is exact (correct answers summed over the ranks, where 2018 averaged the ranks'
accuracies), and Horovod starts at the first evaluation rather than in the Environment.
Without mpirun it evaluates in this process alone.
"""
from __future__ import annotations

import atexit

from nord.legacy.neural_nets.local.neural_evaluator import NeuralEvaluator

__all__ = ["DistributedNeuralEvaluator"]


class DistributedNeuralEvaluator(NeuralEvaluator):
    """Evaluates rank 0's descriptor on all ranks of ``MPI.COMM_WORLD``.

    Args:
        backend: 'auto' (Horovod when installed, else torch.distributed), 'horovod' or
            'torch'.
        **kwargs: those of :class:`NeuralEvaluator` (curator, epochs, lr, momentum, ...);
            ``batch_size`` is per rank.
    """

    _lazy = True  # MPI may start after the constructor (2018 built it before the Environment)

    def __init__(self, backend: str = "auto", **kwargs):
        self.backend = backend
        super().__init__(**kwargs)

    def _make_evaluator(self):
        from nord.evaluators.distributed import DistributedEvaluator
        evaluator = DistributedEvaluator(backend=self.backend, scale_lr=True, **self._settings())
        atexit.register(evaluator.close)  # torch.distributed must be stopped before exit
        return evaluator

    def _is_root(self) -> bool:
        return self.evaluator.is_root
