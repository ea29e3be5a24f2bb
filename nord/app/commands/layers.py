"""``nord layers``: the layer types descriptors may use, with their parameters.

    nord layers
"""
from __future__ import annotations

# Every other nord module is imported inside the command that needs it: `nord --help`,
# `nord list` and a refused flag must answer without loading torch, sqlite or matplotlib.


def _layers(args) -> int:
    from nord.architecture.layers import get_layer_spec, list_layers
    for name in list_layers():
        spec = get_layer_spec(name)
        params = ", ".join(p for p, _ in spec.params)
        print(f"{name:22s} {str(spec.target):28s} ({params})")
    return 0


def register(commands) -> None:
    """Add ``nord layers`` to the ``nord`` command's subcommands."""
    layers = commands.add_parser(
        "layers", help="the layer types descriptors may use",
        description="List the layer types a NeuralDescriptor may use, one a line: the "
                    "registered name, the torch class it builds and the parameters it takes. "
                    "nord.architecture.layers.register_layer adds your own.")
    layers.set_defaults(handler=_layers)
