"""Image augmentation of training batches: random crops, flips and cutout, per sample.

The batch is augmented where it lives (a GPU keeps its data set there), with one draw per sample
from a generator seeded anew each epoch from the run's seed, the epoch and the rank, so that a
resumed candidate draws what an uninterrupted one would have, on any device::

    augment = Augmentation(("flip", "crop"), shape=(3, 32, 32), padding=4)
    augment.start_epoch(seed=0, epoch=3, rank=0)
    for x, y in loader:
        x = augment(x)

Draws per batch, in the order the parts are given: 'crop' two offsets in ``[0, 2 * padding]``
(``torch.randint``), 'flip' one ``torch.rand`` below 0.5, 'cutout' a centre row and column.
The crop's border is ``fill``: the normalised value of a black pixel, as torchvision's
``RandomCrop`` pads the image before it is normalised.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np
import torch

from nord.errors import ConfigurationError

__all__ = ["Augmentation", "augmentation_seed", "black_pixel"]


def augmentation_seed(seed: int, epoch: int, rank: int = 0) -> int:
    """The seed of epoch ``epoch``'s draws on rank ``rank`` (a 63-bit mix of the three)."""
    state = np.random.SeedSequence([int(seed), int(epoch), int(rank)]).generate_state(2)
    return int((int(state[0]) << 31) ^ int(state[1])) & ((1 << 63) - 1)


def black_pixel(mean: Optional[Sequence[float]], std: Optional[Sequence[float]],
                channels: int) -> Tuple[float, ...]:
    """A black pixel after normalisation with ``mean`` and ``std`` (zeros when not normalised),
    computed in float32 as the data's own normalisation computes it."""
    if mean is None or std is None:
        return (0.0,) * channels
    zero = torch.zeros(channels, dtype=torch.float32)
    return tuple((zero - torch.tensor(mean, dtype=torch.float32))
                 .div_(torch.tensor(std, dtype=torch.float32)).tolist())


class Augmentation:
    """Random crops, flips and cutout of ``(N, C, H, W)`` batches (see the module docstring).

    Args:
        parts: 'crop', 'flip' and 'cutout', applied in this order.
        shape: one sample's shape ``(C, H, W)``.
        padding: the crop's padding in pixels.
        cutout: the cutout square's side in pixels.
        fill: per channel, the value of the crop's border.

    Raises:
        ConfigurationError: parts given for samples that are not images.
    """

    def __init__(self, parts: Sequence[str], shape: Sequence[int], padding: int = 4,
                 cutout: int = 16, fill: Optional[Sequence[float]] = None):
        self.parts = tuple(parts)
        if self.parts and len(shape) != 3:
            raise ConfigurationError(
                f"--augment {','.join(self.parts)} (augment=) transforms images, shaped (C, H, W), "
                f"but this data set's samples have shape {tuple(shape)}; drop --augment (choices: "
                "crop, flip, cutout, for image data sets)")
        self.padding = int(padding)
        self.cutout = int(cutout)
        channels = int(shape[0]) if self.parts else 0
        self._fill = torch.tensor(fill if fill is not None else (0.0,) * channels,
                                  dtype=torch.float32).view(1, -1, 1, 1)
        self.generator = torch.Generator()

    def __bool__(self) -> bool:
        return bool(self.parts)

    def start_epoch(self, seed: int, epoch: int, rank: int = 0) -> None:
        """Seed the draws of epoch ``epoch`` (counted from 0) on rank ``rank``."""
        self.generator.manual_seed(augmentation_seed(seed, epoch, rank))

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        for part in self.parts:
            x = getattr(self, f"_{part}")(x)
        return x

    def _draw_int(self, high: int, size: Tuple[int, ...], device) -> torch.Tensor:
        return torch.randint(0, high, size, generator=self.generator).to(device)

    def _crop(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        p = self.padding
        offsets = self._draw_int(2 * p + 1, (n, 2), x.device)
        padded = self._fill.to(x.device, x.dtype).expand(n, c, h + 2 * p, w + 2 * p).clone()
        padded[:, :, p:p + h, p:p + w] = x
        # every h x w window of the padded images, as a view (n, c, 2p + 1, 2p + 1, h, w):
        # picking one per sample copies each pixel once (a gather over four index grids
        # took five times as long)
        windows = padded.unfold(2, h, 1).unfold(3, w, 1)
        return windows[torch.arange(n, device=x.device), :, offsets[:, 0], offsets[:, 1]]

    def _flip(self, x: torch.Tensor) -> torch.Tensor:
        flipped = (torch.rand(x.shape[0], generator=self.generator) < 0.5).to(x.device)
        return torch.where(flipped.view(-1, 1, 1, 1), x.flip(3), x)

    def _cutout(self, x: torch.Tensor) -> torch.Tensor:
        n, _, h, w = x.shape
        centre_rows = self._draw_int(h, (n, 1), x.device)
        centre_cols = self._draw_int(w, (n, 1), x.device)
        top, left = centre_rows - self.cutout // 2, centre_cols - self.cutout // 2
        rows = torch.arange(h, device=x.device).view(1, h)
        cols = torch.arange(w, device=x.device).view(1, w)
        inside_rows = (rows >= top) & (rows < top + self.cutout)          # (n, h)
        inside_cols = (cols >= left) & (cols < left + self.cutout)        # (n, w)
        square = inside_rows.view(n, 1, h, 1) & inside_cols.view(n, 1, 1, w)
        return x.masked_fill(square, 0.0)
