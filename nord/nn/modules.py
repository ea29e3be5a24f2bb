"""torch modules of nord's own, registered in ``nord.architecture.layers`` (imports torch).

``Zero`` and ``ReLUConvBN`` are the 'none' and convolution operations of
NAS-Bench-201 cells; ``Merge`` aligns and combines the inputs of a layer with several.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class Zero(nn.Module):
    """Outputs zeros shaped like its input: an edge that carries nothing."""

    def forward(self, x):
        return x.mul(0.0)


class ReLUConvBN(nn.Module):
    """ReLU, then a convolution, then batch normalisation (NAS-Bench-201's conv op)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 affine=True, track_running_stats=True):
        super().__init__()
        self.op = nn.Sequential(
            nn.ReLU(inplace=False),
            nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                      dilation=dilation, bias=False),
            nn.BatchNorm2d(out_channels, affine=affine, track_running_stats=track_running_stats),
        )

    def forward(self, x):
        return self.op(x)


def align(tensors, concat: bool):
    """Bring tensors to a common shape so they can be summed or concatenated.

    Rules (documented in ``nord.nn.network``): if any tensor is flat (N, F), spatial ones are
    flattened; spatial tensors are average-pooled to the smallest height and width; for a
    sum, channels (or features) are zero-padded to the largest count.
    """
    if any(t.dim() == 2 for t in tensors):
        tensors = [t.flatten(1) for t in tensors]
    else:
        height = min(t.shape[2] for t in tensors)
        width = min(t.shape[3] for t in tensors)
        tensors = [t if t.shape[2:] == (height, width) else F.adaptive_avg_pool2d(t, (height, width))
                   for t in tensors]
    if not concat:
        widest = max(t.shape[1] for t in tensors)
        tensors = [t if t.shape[1] == widest else _pad_channels(t, widest) for t in tensors]
    return tensors


def _pad_channels(t, channels):
    padding = [0, 0] * (t.dim() - 2) + [0, channels - t.shape[1]]
    return F.pad(t, padding)


class Merge(nn.Module):
    """Combines several input tensors by 'sum' or 'concat' after ``align``."""

    def __init__(self, rule: str = "sum"):
        super().__init__()
        self.rule = rule

    def forward(self, *tensors):
        if len(tensors) == 1:
            return tensors[0]
        tensors = align(list(tensors), concat=self.rule == "concat")
        if self.rule == "concat":
            return torch.cat(tensors, dim=1)
        out = tensors[0]
        for t in tensors[1:]:
            out = out + t
        return out

    def extra_repr(self):
        return f"rule={self.rule!r}"
