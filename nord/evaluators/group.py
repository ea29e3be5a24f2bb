"""The ranks that train one candidate together: alone, or a data-parallel group.

A training run asks its group five things: where this rank stands (``rank``, ``size``,
``local_rank``), to agree on failures, to reduce evaluation counts, to let the group root decide a
value, and to prepare the optimizer. Alone, each answer is immediate; ``DataParallelGroup``
(``nord.evaluators.distributed``) answers with collectives::

    group = Alone()
    group.agree(error)                                  # raises the error, if any
    correct, seen, loss = group.reduce_counts(c, n, l)  # sums over the ranks
    optimizer = group.prepare(model, optimizer)         # what to train with
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

from nord.nn.training import NonFiniteLossError

__all__ = ["Alone"]


class Alone:
    """One process trains the candidate by itself: the group of one rank."""

    rank = 0
    size = 1
    data_parallel = False
    """Whether training steps all-reduce gradients (``train_epoch``'s ``agree``)."""
    lr_factor = 1
    """What the recipe's learning rate is multiplied by (``scale_lr`` of a larger group)."""

    def __init__(self, local_rank: int = 0):
        self.local_rank = int(local_rank)
        """The rank on this host: which of its GPUs to take."""

    @property
    def is_root(self) -> bool:
        return self.rank == 0

    def agree(self, error: Optional[BaseException]) -> None:
        """An agreement point: raise when this rank (or, in a group, any rank) failed."""
        if error is not None:
            raise error

    def reduce_counts(self, correct: int, seen: int, loss_sum: float,
                      error: Optional[BaseException] = None) -> Tuple[int, int, float]:
        """Sums of the evaluation counts over the ranks sharing the set (raises on failure)."""
        self.agree(error)
        return correct, seen, loss_sum

    def root_decides(self, value: Any) -> Any:
        """The group root's ``value`` on every rank of the group."""
        return value

    def prepare(self, model, optimizer):
        """The optimizer to train with, once the model holds its starting weights."""
        return optimizer

    def share_root_buffers(self, model) -> None:
        """After an epoch's training: every rank takes the group root's buffers (batch
        normalisation's running statistics, which each rank gathers from its own shard), so
        that the ranks validate, test and checkpoint one and the same network."""

    def diverged(self, error: BaseException) -> bool:
        """Whether ``error`` says the training loss became NaN or infinite (on any rank)."""
        return isinstance(error, NonFiniteLossError)
