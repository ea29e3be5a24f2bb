"""The ranks that train one candidate together: alone, or a data-parallel group.

A training run asks its group five things: where this rank stands (``rank``, ``size``,
``local_rank``), to agree on failures, to reduce evaluation counts, to let the group root decide a
value, and to prepare the optimizer. A weight-sharing search, whose steps are not one optimizer's,
asks for the gradients it names to be averaged and for the ranks' copies to be compared. Alone,
each answer is immediate; ``DataParallelGroup`` (``nord.evaluators.distributed``) answers with
collectives::

    group = Alone()
    group.agree(error)                                  # raises the error, if any
    correct, seen, loss = group.reduce_counts(c, n, l)  # sums over the ranks
    optimizer = group.prepare(model, optimizer)         # what to train with
    loss = group.average_gradients(parameters, loss)    # the ranks' mean gradients and loss
"""
from __future__ import annotations

from typing import Any, Iterable, Optional, Tuple

import torch

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

    def start(self, device: torch.device, timeout: float = 600.0) -> None:
        """Start the group's backend (nothing to start alone)."""

    def close(self) -> None:
        """Stop the group's backend."""

    def average_gradients(self, parameters: Iterable[torch.Tensor],
                          loss: Optional[torch.Tensor] = None) -> Optional[float]:
        """Replace the gradient of each of ``parameters`` that has one by its mean over the
        ranks; returns the mean of ``loss`` (a NaN on any rank is a NaN on every rank, so
        all stop together), or None without one. Every rank must name the same parameters
        with gradients (the same cell, drawn from the root's decisions)."""
        return None if loss is None else float(loss.detach())

    def mean(self, hits: torch.Tensor) -> float:
        """The mean of ``hits`` (1 for a correct prediction) over the samples of every rank."""
        return float(hits.float().mean())

    def check_same(self, what: str, tensors: Iterable[torch.Tensor]) -> None:
        """Raise when the ranks' copies of ``tensors`` differ (``what`` names them)."""

