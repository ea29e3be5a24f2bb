"""MLPEnsemble: small feed-forward regressors trained side by side, for predictor-based search.

    ensemble = MLPEnsemble(members=5, layers=10, width=20, epochs=150, learning_rate=0.01)
    ensemble.fit(features, targets, seed=0)      # (n, d) and (n,) arrays
    predictions = ensemble.predict(candidates)   # (members, m): one row per network
    mean, spread = predictions.mean(axis=0), predictions.std(axis=0)

The meta neural network of BANANAS (White, Neiswanger and Savani, AAAI 2021): fully connected
ReLU layers, a linear output, mean absolute error, Adam. Each member starts from its own
Glorot-uniform weights and sees its own order of minibatches, both drawn from one seed, so
that the members disagree where the data say little; their spread is the model's uncertainty.

The members are stacked on a first axis and trained by the same numpy calls, since numpy's
per-call overhead dominates such small matrices: a fit of five members costs about 2.6 times
one member's, not 5 times (100 path encodings, CPU time). Float64 arithmetic in a fixed order
makes a fit a function of its seed and data. Details (settings, cost): docs/search.md.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, List, Tuple

import numpy as np

from nord.checks import check_int
from nord.errors import ConfigurationError

__all__ = ["MLPEnsemble", "check_learning_rate"]

_BETA1, _BETA2, _EPSILON = 0.9, 0.999, 1e-8   # Adam's usual constants


def check_learning_rate(value: Any, name: str = "learning_rate") -> float:
    """``value`` as a float when it is a finite real > 0."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not math.isfinite(value) or value <= 0):
        raise ConfigurationError(f"{name} must be a finite number > 0, e.g. 0.01; got {value!r}")
    return float(value)


class MLPEnsemble:
    """``members`` networks of ``layers`` hidden ReLU layers of ``width`` units each.

    Targets are standardised before training (their mean and standard deviation are kept
    and undone by ``predict``), so that the same learning rate suits accuracies in [0, 1]
    and errors in percent alike.

    Args:
        members: networks in the ensemble (>= 1).
        layers: hidden layers per network (>= 1).
        width: units per hidden layer (>= 1).
        epochs: passes over the data per fit (>= 1).
        learning_rate: Adam's step size (> 0).
        batch_size: examples per Adam step (>= 1; the last batch of an epoch may be smaller).

    Raises:
        ConfigurationError: a setting out of its range, named with the rule.
    """

    def __init__(self, members: int = 5, layers: int = 10, width: int = 20, epochs: int = 150,
                 learning_rate: float = 0.01, batch_size: int = 32):
        self.members = check_int(members, "ensemble_size (networks in the ensemble)", 1)
        self.layers = check_int(layers, "layers (hidden layers of each network)", 1)
        self.width = check_int(width, "width (units per hidden layer)", 1)
        self.epochs = check_int(epochs, "epochs (passes over the data per fit)", 1)
        self.learning_rate = check_learning_rate(learning_rate)
        self.batch_size = check_int(batch_size, "batch_size (examples per Adam step)", 1)
        self._layers: List[np.ndarray] = []   # views into one flat parameter vector
        self._centre, self._scale = 0.0, 1.0

    @property
    def fitted(self) -> bool:
        return bool(self._layers)

    def _layout(self, inputs: int) -> List[Tuple[int, int]]:
        return ([(inputs, self.width)] + [(self.width, self.width)] * (self.layers - 1)
                + [(self.width, 1)])

    def _views(self, flat: np.ndarray, inputs: int) -> List[np.ndarray]:
        """Each layer's parameters ``(members, in + 1, out)`` (the last row: its biases) as
        views of ``flat``, so that Adam updates them all with a few whole-vector operations."""
        layers, offset = [], 0
        for fan_in, fan_out in self._layout(inputs):
            size = self.members * (fan_in + 1) * fan_out
            layers.append(flat[offset:offset + size].reshape(self.members, fan_in + 1, fan_out))
            offset += size
        return layers

    def fit(self, features: Any, targets: Any, seed: Any) -> "MLPEnsemble":
        """Train every member from scratch on ``features`` ``(n, d)`` and ``targets`` ``(n,)``.

        Raises:
            ConfigurationError: shapes that do not match, no examples, or non-finite values.
        """
        features = np.asarray(features, dtype=np.float64)
        targets = np.asarray(targets, dtype=np.float64)
        if (features.ndim != 2 or targets.shape != (features.shape[0],)
                or features.shape[0] == 0):
            raise ConfigurationError(
                f"fit needs features (n, d) and targets (n,) with n >= 1; got "
                f"{features.shape} and {targets.shape}")
        if not (np.isfinite(features).all() and np.isfinite(targets).all()):
            raise ConfigurationError("fit needs finite features and targets")
        count, inputs = features.shape
        rng = np.random.default_rng(seed)
        layout = self._layout(inputs)
        flat = np.zeros(sum(self.members * (fan_in + 1) * fan_out for fan_in, fan_out in layout))
        layers = self._views(flat, inputs)
        for layer in layers:   # Glorot-uniform weights; biases (the last row) start at zero
            limit = math.sqrt(6.0 / (layer.shape[1] - 1 + layer.shape[2]))
            layer[:, :-1] = rng.uniform(-limit, limit, size=layer[:, :-1].shape)
        self._centre = float(targets.mean())
        spread = float(targets.std())
        self._scale = spread if spread > 0 else 1.0
        standard = (targets - self._centre) / self._scale
        # every layer's input carries a last column of ones, its bias's input
        augmented = np.concatenate([features, np.ones((count, 1))], axis=1)
        gradient = np.zeros_like(flat)
        gradients = self._views(gradient, inputs)
        first, second, scratch = (np.zeros_like(flat) for _ in range(3))
        members, batch, step = self.members, self.batch_size, 0
        weights = [layer[:, :-1].transpose(0, 2, 1) for layer in layers]   # for the backward pass
        hidden_inputs = {}   # batch size -> the hidden layers' input buffers
        rows = np.broadcast_to(np.arange(count), (members, count))
        for _ in range(self.epochs):
            order = rng.permuted(rows, axis=1)          # each member its own shuffle
            for start in range(0, count, batch):
                chosen = order[:, start:start + batch]  # (members, b)
                size = chosen.shape[1]
                buffers = hidden_inputs.get(size)
                if buffers is None:
                    buffers = hidden_inputs[size] = [
                        np.ones((members, size, fan_in + 1)) for fan_in, _ in layout[1:]]
                activations = [augmented[chosen]] + buffers
                for layer, below, above in zip(layers, activations, buffers):
                    hidden = above[..., :-1]
                    np.matmul(below, layer, out=hidden)
                    np.maximum(hidden, 0.0, out=hidden)
                output = (activations[-1] @ layers[-1])[..., 0]
                # mean absolute error's gradient in the output, per member
                delta = (np.sign(output - standard[chosen]) / size)[..., None]
                for index in range(len(layers) - 1, -1, -1):
                    below = activations[index]
                    np.matmul(below.transpose(0, 2, 1), delta, out=gradients[index])
                    if index:
                        delta = delta @ weights[index]
                        delta *= below[..., :-1] > 0
                step += 1
                # Adam, in place on the flat vectors: a dozen numpy calls per step
                first *= _BETA1
                np.multiply(gradient, 1 - _BETA1, out=scratch)
                first += scratch
                second *= _BETA2
                np.multiply(gradient, gradient, out=scratch)
                scratch *= 1 - _BETA2
                second += scratch
                correction = math.sqrt(1 - _BETA2 ** step)
                np.sqrt(second, out=scratch)
                scratch += _EPSILON * correction
                np.divide(first, scratch, out=scratch)
                scratch *= self.learning_rate * correction / (1 - _BETA1 ** step)
                flat -= scratch
        self._layers = layers
        return self

    def predict(self, features: Any) -> np.ndarray:
        """Each member's prediction for each row of ``features`` ``(m, d)``: ``(members, m)``.

        Raises:
            ConfigurationError: the ensemble was never fitted.
        """
        if not self.fitted:
            raise ConfigurationError("predict needs a fitted ensemble; call fit(features, "
                                     "targets, seed) first")
        hidden = np.asarray(features, dtype=np.float64)[None]
        for layer in self._layers[:-1]:
            hidden = np.maximum(hidden @ layer[:, :-1] + layer[:, -1:], 0.0)
        output = (hidden @ self._layers[-1][:, :-1] + self._layers[-1][:, -1:])[..., 0]
        return output * self._scale + self._centre
