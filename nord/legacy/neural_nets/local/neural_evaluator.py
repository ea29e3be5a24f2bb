"""The 2018 ``NeuralEvaluator``: train and test a descriptor, and return a float fitness.

    evaluator = NeuralEvaluator()                      # CIFAR-10, 5 epochs, SGD(lr 0.01, momentum 0.5)
    fitness = evaluator.descriptor_evaluate(d)         # -0.47: minus the test accuracy
    evaluator.descriptor_evaluate(d, untrained=True)   # the initial weights, tested
    evaluator.last_result                              # nord's EvaluationResult of that call

The fitness is minus the accuracy (a fraction) on the test set, so that minimisers such as
pygmo's improve accuracy; there is no validation split, as in 2018. A network that cannot
be evaluated (it does not build, or its loss diverges) gives 0.0, worse than any network
that trained, and ``last_result.error`` says why; with ``verbose=True`` it raises instead.

Training runs on nord's :class:`~nord.evaluators.local.LocalEvaluator` (``self.evaluator``),
which seeds each evaluation: the same descriptor gets the same initial weights, batch order
and fitness (2018 drew them anew every time). Keyword arguments change the 2018 defaults.
"""
from __future__ import annotations

import time
from typing import Any, Dict, Optional

from nord.errors import NordError
from nord.legacy.neural_nets.local.data_curator import default_curator

__all__ = ["NeuralEvaluator", "EvaluationFailed", "EPOCHS", "LEARNING_RATE", "MOMENTUM",
           "BATCH_SIZE"]

EPOCHS = 5
LEARNING_RATE = 0.01
MOMENTUM = 0.5
BATCH_SIZE = 128


class EvaluationFailed(NordError, RuntimeError):
    """``descriptor_evaluate(..., verbose=True)`` met a network that could not be evaluated."""


class NeuralEvaluator:
    """Evaluates descriptors in this process, with the 2018 defaults.

    Args:
        curator: the data (a nord DataCurator); default CIFAR-10 scaled as in 2018 (see
            :mod:`nord.legacy.neural_nets.local.data_curator` for where it is read from).
        epochs: training epochs of each network.
        lr: SGD learning rate.
        momentum: SGD momentum.
        batch_size: training batch size.
        test_batch_size: testing batch size.
        seed: seeds initial weights and batch order.
        device: 'auto' (a GPU when there is one), 'cpu', 'cuda' or 'cuda:N'.
        threads: torch CPU threads (None leaves torch's setting alone).
    """

    _lazy = False  # whether the nord evaluator is made at the first evaluation

    def __init__(self, curator=None, epochs: int = EPOCHS, lr: float = LEARNING_RATE,
                 momentum: float = MOMENTUM, batch_size: int = BATCH_SIZE,
                 test_batch_size: int = BATCH_SIZE, seed: int = 0, device="auto",
                 threads: Optional[int] = None):
        self.curator = default_curator() if curator is None else curator
        self.epochs = epochs
        self.lr = lr
        self.momentum = momentum
        self.batch_size = batch_size
        self.test_batch_size = test_batch_size
        self.seed = seed
        self.device = device
        self.threads = threads
        self.last_result = None
        # made now, so that bad settings are refused here rather than at the first network
        self._evaluator = None if self._lazy else self._make_evaluator()

    # --- what subclasses change ------------------------------------------------------------
    def _settings(self) -> Dict[str, Any]:
        return dict(curator=self.curator, epochs=self.epochs, optimizer="sgd", lr=self.lr,
                    optimizer_kwargs={"momentum": self.momentum}, batch_size=self.batch_size,
                    test_batch_size=self.test_batch_size, seed=self.seed, device=self.device,
                    threads=self.threads)

    def _make_evaluator(self):
        from nord.evaluators.local import LocalEvaluator
        return LocalEvaluator(**self._settings())

    def _is_root(self) -> bool:
        """Whether this process receives the fitness and prints."""
        return True

    # --- the 2018 interface -----------------------------------------------------------------
    @property
    def evaluator(self):
        """The nord evaluator doing the work (its results carry more than the fitness)."""
        if self._evaluator is None:
            self._evaluator = self._make_evaluator()
        return self._evaluator

    def descriptor_evaluate(self, descriptor, untrained: bool = False, verbose: bool = False) -> float:
        """Train (unless ``untrained``) and test the descriptor's network.

        Args:
            descriptor: a NeuralDescriptor.
            untrained: skip training and test the initial weights.
            verbose: show training progress and print the test accuracy; raise
                :class:`EvaluationFailed` when the network cannot be evaluated.

        Returns:
            Minus the test accuracy, a fraction in [-1, 0]; 0.0 when the evaluation failed.

        Raises:
            DataError: the data set cannot be loaded (this is no failure of the network).
        """
        # Missing or damaged data must stop the program, not score every network 0.0.
        self.curator.load()
        evaluator = self.evaluator
        evaluator.epochs = 0 if untrained else self.epochs
        evaluator.progress = bool(verbose)
        result = evaluator.descriptor_evaluate(descriptor)
        self.last_result = result
        if not result.ok:
            if verbose:
                raise EvaluationFailed(f"the network could not be evaluated: {result.error}")
            return 0.0
        if not self._is_root():
            return 0.0
        if verbose:
            if result.epochs:
                print(f"Trained for {result.epochs} epochs in {result.train_time:.1f} s")
            print(f"Test accuracy: {100 * result.reported_accuracy:.2f} % (mean loss "
                  f"{result.metrics['test_loss']:.4f})")
        return -float(result.reported_accuracy)

    def get_sample(self):
        """The first training example as a numpy array, laid out (height, width, channels).

        This is 2018's layout, which its programs turn into a network input with
        ``torch.Tensor(sample).transpose(2, 0).unsqueeze(0)``. The values are those the
        networks see (scaled), where 2018 returned the raw bytes; only the shape is meant
        to be used.
        """
        images, _ = self.curator.tensors("train")
        sample = images[0]
        if sample.dim() == 3:
            sample = sample.permute(1, 2, 0)
        return sample.numpy().copy()

    def train(self, net, epochs: int, verbose: bool = False) -> None:
        """Train a torch network in place with the evaluator's data and SGD settings."""
        from nord.nn.training import ProgressBar, make_optimizer, resolve_device, train_epoch

        device = resolve_device(self.device)
        net.to(device)
        optimizer = make_optimizer("sgd", net.parameters(), self.lr, momentum=self.momentum)
        loader = self.curator.train_loader(batch_size=self.batch_size, shuffle=True,
                                           seed=self.seed, device=device)
        started = time.perf_counter()
        for epoch in range(epochs):
            loader.set_epoch(epoch)
            bar = ProgressBar(len(loader), f"epoch {epoch + 1}/{epochs}") if verbose else None
            train_epoch(net, loader, optimizer, device, progress=bar)
        if verbose:
            print(f"Trained for {epochs} epochs in {time.perf_counter() - started:.1f} s")

    def test(self, net, verbose: bool = False) -> float:
        """The accuracy (a fraction) of a torch network on the test set."""
        from nord.nn.training import resolve_device, test_counts

        device = resolve_device(self.device)
        net.to(device)
        loader = self.curator.test_loader(batch_size=self.test_batch_size, device=device)
        correct, seen, loss_sum = test_counts(net, loader, device)
        if verbose:
            print(f"Test accuracy: {100 * correct / seen:.2f} % (mean loss {loss_sum / seen:.4f})")
        return correct / seen

    def __deepcopy__(self, memo):
        # pygmo deep-copies a problem, and the evaluator inside it, at every evolve: share
        # the evaluator (its data set and, when distributed, its communicator) instead.
        return self
