"""The weight-sharing methods by name, without importing them (nor torch): a configuration
names and checks its method before anything is loaded.

    from nord.oneshot.registry import METHODS
    METHODS.canonical("DARTS_V1")      # 'darts-v1'
    METHODS.load("gdas")               # the class (imports torch)
"""
from __future__ import annotations

from nord.registry import Registry

METHODS: Registry[str] = Registry(
    "weight-sharing method",
    hint="Weight-sharing methods search the NAS-Bench-201 space (--space nasbench201) by "
         "training one supernet; docs/oneshot.md describes each.")
"""Name -> the dotted path of its :class:`~nord.oneshot.methods.OneShotMethod` class."""

for _name, _target, _description in (
        ("darts-v1", "DartsFirstOrder", "DARTS, first order: the mixture's gradient"),
        ("darts-v2", "DartsSecondOrder", "DARTS, second order: after a virtual weight step"),
        ("gdas", "GDAS", "GDAS: one Gumbel-softmax sample per pass, straight-through"),
        ("setn", "SETN", "SETN: uniform cells for the weights, the best of the most likely"),
        ("enas", "ENAS", "ENAS: an LSTM controller trained by REINFORCE"),
        ("rsps", "RandomWithSharing", "random search with parameter sharing")):
    METHODS.register(_name, f"nord.oneshot.methods.{_target}", description=_description)
