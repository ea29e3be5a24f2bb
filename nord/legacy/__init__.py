"""Run code written for NORD 2018 on nord: its module names, signatures, defaults and output.

A 2018 program imported the modules ``neural_nets`` and ``utils`` by those top-level
names. One added line makes them importable again::

    import nord.legacy                      # the only change
    from neural_nets import NeuralDescriptor, NeuralEvaluator
    from neural_nets.distributed import Environment
    from utils import get_logger

The line also works inside a NORD 2018 checkout (its own ``neural_nets/`` and ``utils.py``
are recognised and replaced, see :mod:`nord.legacy.imports`), and under mpirun it makes an
exception on any rank end the whole job (:mod:`nord.legacy.failure`). The 2018 examples,
ported this way, are in ``experiments/legacy/``. Details: docs/legacy.md.
"""
from __future__ import annotations

from nord.legacy.failure import install_abort_hook
from nord.legacy.imports import LEGACY_MODULES, finder_installed, install_finder

__all__ = ["install", "installed", "LEGACY_MODULES", "DATA_ENV", "EPOCHS_ENV"]

DATA_ENV = "NORD_LEGACY_DATA"
"""Environment variable: a folder with CIFAR-10 files in the official python format (possibly
a small or modified copy, so not checked against the official checksums) that the 2018
evaluators read instead of the official CIFAR-10."""

EPOCHS_ENV = "NORD_LEGACY_EPOCHS"
"""Environment variable: the starting value of the 2018 ``EPOCHS`` (5) of both evaluators."""


def installed() -> bool:
    """Whether the 2018 module names are importable through nord.legacy's hook."""
    return finder_installed()


def install() -> None:
    """Make ``neural_nets`` and ``utils`` importable as in 2018 and, in a multi-rank MPI job,
    make an uncaught exception abort the job (idempotent; done on import)."""
    install_finder()
    install_abort_hook()


install()
