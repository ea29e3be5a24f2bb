"""The 2018 ``NeuralEvaluator``: train and test a descriptor, and return a float fitness.

    evaluator = NeuralEvaluator()                      # CIFAR-10, 5 epochs, SGD(lr 0.01, momentum 0.5)
    fitness = evaluator.descriptor_evaluate(d)         # -0.47: minus the test accuracy
    evaluator.descriptor_evaluate(d, untrained=True)   # the initial weights, tested
    evaluator.last_result                              # nord's EvaluationResult of that call

    import neural_nets.local.neural_evaluator as settings
    settings.EPOCHS = 1                                # the 2018 globals take effect when set

The fitness is minus the accuracy (a fraction) on the test set, so that minimisers such as
pygmo's improve accuracy; there is no validation split, as in 2018. A network that cannot
be evaluated (it does not build, or its loss diverges) gives 0.0, worse than any network
that trained, and ``last_result.error`` says why; with ``verbose=True`` it raises instead.

2018's module globals are read at every evaluation: ``EPOCHS`` (5, or ``$NORD_LEGACY_EPOCHS``),
``learning_rate``, ``momentum``, ``device`` and ``criterion`` (descriptor_evaluate trains with
cross-entropy only and says so when ``criterion`` is another loss; ``train`` and ``test``
use any). Keyword arguments of the constructor override them for one evaluator.

Training runs on nord's :class:`~nord.evaluators.local.LocalEvaluator` (``self.evaluator``),
which seeds each evaluation: the same descriptor gets the same initial weights, batch order
and fitness (2018 drew them anew every time).
"""
from __future__ import annotations

import os
import sys
from typing import Any, Dict, Optional

import torch
import torch.nn as nn

from nord.checks import check_int
from nord.errors import ConfigurationError, NordError
from nord.legacy import EPOCHS_ENV
from nord.legacy.neural_nets.local.data_curator import CLASSES, default_curator
from nord.nn.training import ProgressBar, make_optimizer, resolve_device, train_epoch

__all__ = ["NeuralEvaluator", "EvaluationFailed", "EPOCHS", "learning_rate", "momentum",
           "device", "criterion", "epochs_from_environment"]


def epochs_from_environment(default: int = 5) -> int:
    """``$NORD_LEGACY_EPOCHS`` as an integer >= 0, or ``default`` when it is unset."""
    text = os.environ.get(EPOCHS_ENV, "").strip()
    if not text:
        return default
    try:
        value: Any = int(text)
    except ValueError:
        value = text
    return check_int(value, f"${EPOCHS_ENV} (the 2018 EPOCHS)", 0)


EPOCHS = epochs_from_environment()
"""Training epochs of every network (2018: 5)."""
learning_rate = 0.01
"""SGD's learning rate."""
momentum = 0.5
"""SGD's momentum."""
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
"""Where networks train: a torch.device or 'cpu', 'cuda', 'cuda:N', 'auto'."""
criterion = nn.CrossEntropyLoss()
"""The loss; descriptor_evaluate accepts only cross-entropy, train and test any loss."""


class EvaluationFailed(NordError, RuntimeError):
    """``descriptor_evaluate(..., verbose=True)`` met a network that could not be evaluated."""


def _is_plain_cross_entropy(loss) -> bool:
    return (type(loss) is nn.CrossEntropyLoss and loss.weight is None
            and loss.ignore_index == -100 and loss.reduction == "mean"
            and loss.label_smoothing == 0.0)


class NeuralEvaluator:
    """Evaluates descriptors in this process, with the 2018 defaults.

    Args:
        curator: the data (a nord DataCurator); default CIFAR-10 scaled as in 2018 (see
            :mod:`nord.legacy.neural_nets.local.data_curator` for where it is read from).
        epochs, lr, momentum, device: override the module's ``EPOCHS``, ``learning_rate``,
            ``momentum`` and ``device`` (None: the module's value at each evaluation).
        batch_size: training batch size.
        test_batch_size: testing batch size.
        seed: seeds initial weights and batch order.
        threads: torch CPU threads (None leaves torch's setting alone).
    """

    _lazy = False  # whether the nord evaluator is made at the first evaluation
    _settings_module = __name__  # the module whose 2018 globals this evaluator reads

    def __init__(self, curator=None, epochs: Optional[int] = None, lr: Optional[float] = None,
                 momentum: Optional[float] = None, batch_size: int = 128,
                 test_batch_size: int = 128, seed: int = 0, device=None,
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
        self._loaders: Dict[Any, Any] = {}
        # made now, so that bad settings are refused here rather than at the first network
        self._evaluator = None if self._lazy else self._make_evaluator()

    # --- the 2018 module globals -----------------------------------------------------------
    def _globals(self):
        return sys.modules[self._settings_module].__dict__

    @property
    def _globals_name(self) -> str:
        """The module's 2018 name, for messages: 'neural_nets.local.neural_evaluator'."""
        return self._settings_module.replace("nord.legacy.", "", 1)

    def _setting(self, own, name: str):
        return self._globals()[name] if own is None else own

    def _named(self, own, argument: str, name: str) -> str:
        """What a setting is called in a message: the argument, or the module global."""
        return f"NeuralEvaluator({argument}=...)" if own is not None else (
            f"{self._globals_name}.{name}")

    def _current(self) -> Dict[str, Any]:
        """The settings of the next evaluation: the constructor's, else the module's now."""
        epochs = check_int(self._setting(self.epochs, "EPOCHS"),
                           self._named(self.epochs, "epochs", "EPOCHS"), 0)
        lr = self._setting(self.lr, self._lr_name())
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not lr > 0:
            raise ConfigurationError(
                f"the learning rate ({self._named(self.lr, 'lr', self._lr_name())}) must be a "
                f"positive number; got {lr!r}")
        momentum_value = self._setting(self.momentum, "momentum")
        if (isinstance(momentum_value, bool) or not isinstance(momentum_value, (int, float))
                or momentum_value < 0):
            raise ConfigurationError(
                f"the momentum ({self._named(self.momentum, 'momentum', 'momentum')}) must be "
                f"a number >= 0; got {momentum_value!r}")
        return dict(epochs=epochs, lr=float(lr), momentum=float(momentum_value),
                    device=self._device())

    def _lr_name(self) -> str:
        return "learning_rate"

    def _device(self):
        value = self._setting(self.device, "device")
        resolve_device(value)  # refused here, not as a failure of every network
        return value

    def _criterion(self):
        return self._globals()["criterion"]

    def _check_criterion(self) -> None:
        loss = self._criterion()
        if not _is_plain_cross_entropy(loss):
            raise ConfigurationError(
                f"{self._globals_name}.criterion is {loss!r}, but descriptor_evaluate trains and "
                "tests with cross-entropy, the only loss of nord's evaluators; set it back to "
                "torch.nn.CrossEntropyLoss()" + self._criterion_hint())

    def _criterion_hint(self) -> str:
        return (", or train with your loss yourself: net = NeuralNet(d, 10, sample); "
                "evaluator.train(net, EPOCHS); evaluator.test(net) (both use criterion)")

    # --- what subclasses change ------------------------------------------------------------
    def _settings(self) -> Dict[str, Any]:
        current = self._current()
        return dict(curator=self.curator, epochs=current["epochs"], optimizer="sgd",
                    lr=current["lr"], optimizer_kwargs={"momentum": current["momentum"]},
                    batch_size=self.batch_size, test_batch_size=self.test_batch_size,
                    seed=self.seed, device=current["device"], threads=self.threads)

    def _make_evaluator(self):
        from nord.evaluators.local import LocalEvaluator
        return LocalEvaluator(**self._settings())

    def _is_root(self) -> bool:
        """Whether this process receives the fitness and prints."""
        return True

    def _shard(self):
        """(rank, size) of this process's share of the data."""
        return 0, 1

    # --- the 2018 interface -----------------------------------------------------------------
    @property
    def evaluator(self):
        """The nord evaluator doing the work (its results carry more than the fitness)."""
        if self._evaluator is None:
            self._evaluator = self._make_evaluator()
        return self._evaluator

    @property
    def trainloader(self):
        """This process's training batches, shuffled each epoch:
        ``for images, labels in evaluator.trainloader``."""
        return self._loader("train", *self._shard())

    @property
    def testloader(self):
        """This process's test batches, in order."""
        return self._loader("test", *self._shard())

    def _loader(self, split: str, rank: int = 0, size: int = 1):
        """The loader of a split for one rank's share, made once."""
        key = (split, rank, size)
        if key not in self._loaders:
            if split == "train":
                self._loaders[key] = self.curator.train_loader(
                    batch_size=self.batch_size, rank=rank, size=size, shuffle=True,
                    seed=self.seed)
            else:
                self._loaders[key] = self.curator.test_loader(
                    batch_size=self.test_batch_size, rank=rank, size=size)
        return self._loaders[key]

    @property
    def classes(self):
        """The class names, as 2018's loaders gave them: ('plane', 'car', ...)."""
        return CLASSES

    def descriptor_evaluate(self, descriptor, untrained: bool = False, verbose: bool = False) -> float:
        """Train (unless ``untrained``) and test the descriptor's network.

        Args:
            descriptor: a NeuralDescriptor (2018's or nord's).
            untrained: skip training and test the initial weights.
            verbose: show training progress and print the test accuracy as 2018 did; raise
                :class:`EvaluationFailed` when the network cannot be evaluated.

        Returns:
            Minus the test accuracy, a fraction in [-1, 0]; 0.0 when the evaluation failed.

        Raises:
            DataError: the data set cannot be loaded (this is no failure of the network).
            ConfigurationError: a 2018 module global holds a value that cannot be used.
        """
        # Missing or damaged data must stop the program, not score every network 0.0.
        self.curator.load()
        self._check_criterion()
        current = self._current()
        evaluator = self.evaluator
        evaluator.epochs = 0 if untrained else current["epochs"]
        evaluator.lr = current["lr"]
        evaluator.optimizer_kwargs = {"momentum": current["momentum"]}
        evaluator.device = current["device"]
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
            if not untrained:
                print("Finished Training")
            _print_test(result.reported_accuracy, result.metrics["test_loss"])
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
        """Train a torch network in place, in this process, on the whole training set, with
        the SGD settings and ``criterion``."""
        current = self._current()
        target = resolve_device(current["device"])
        net.to(target)
        net.train()
        optimizer = make_optimizer("sgd", net.parameters(), current["lr"],
                                   momentum=current["momentum"])
        loader = self._loader("train")  # the whole training set, in this process
        for epoch in range(epochs):
            loader.set_epoch(epoch)
            bar = ProgressBar(len(loader), f"epoch {epoch + 1}/{epochs}") if verbose else None
            train_epoch(net, loader, optimizer, target,
                        loss_fn=self._criterion(), progress=bar)
        if verbose:
            print("Finished Training")

    def test(self, net, verbose: bool = False) -> float:
        """The accuracy (a fraction) of a torch network on the test set; ``verbose`` prints
        it and the mean ``criterion`` loss per batch, as 2018 did."""
        target = resolve_device(self._device())
        net.to(target)
        net.eval()
        loss = self._criterion()
        correct = seen = 0
        losses = []
        with torch.no_grad():
            for inputs, labels in _on(self._loader("test"), target):
                outputs = net(inputs)
                losses.append(float(loss(outputs, labels)))
                correct += int((outputs.argmax(1) == labels).sum())
                seen += len(labels)
        if verbose:
            _print_test(correct / seen, sum(losses) / max(len(losses), 1))
        return correct / seen

    def __deepcopy__(self, memo):
        # pygmo deep-copies a problem, and the evaluator inside it, at every evolve: share
        # the evaluator (its data set and, when distributed, its communicator) instead.
        return self


def _on(loader, target):
    """The batches of ``loader`` on the device ``target``."""
    for inputs, labels in loader:
        yield inputs.to(target), labels.to(target)


def _print_test(accuracy: float, loss: float) -> None:
    """The two lines 2018 printed after testing a network."""
    print("Accuracy of the network on the test images: %.2f %%" % (100 * accuracy))
    print("Loss of the network on the test images: %.4f " % loss)
