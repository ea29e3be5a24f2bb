"""The 2018 tables of parameter types per layer group (used to draw random parameters).

    from neural_nets.layers import parameters
    parameters['convolutions']['kernel_size']     # int

A type is ``int``, ``float`` or ``bool``; ``output_ratio`` of pooling is a range ``[low, high]``.
"""
__all__ = ["convolutions", "activations", "losses", "pooling", "dropout", "linear",
           "layer_parameters"]

convolutions = {name: int for name in ("in_channels", "out_channels", "kernel_size", "stride",
                                       "padding", "output_padding", "dilation", "groups")}
convolutions["bias"] = bool

activations = {name: float for name in ("min_value", "max_value", "min_val", "max_val", "init",
                                        "value", "threshold", "lambd", "negative_slope", "beta",
                                        "alpha", "lower", "upper")}
activations.update(inplace=bool, num_parameters=int, dim=int)

losses = {"p": int, "margin": float, "eps": float}
losses.update({name: bool for name in ("log_input", "full", "size_average", "reduce",
                                       "ignore_index", "swap")})

pooling = {name: int for name in ("kernel_size", "stride", "padding", "dilation", "output_size")}
pooling.update(count_include_pad=bool, ceil_mode=bool, return_indices=bool, norm_type=float,
               output_ratio=[0.0, 0.1])

dropout = {"p": float, "inplace": bool}

linear = {"in_features": int, "out_features": int, "bias": bool}

layer_parameters = {"convolutions": convolutions, "activations": activations, "losses": losses,
                    "pooling": pooling, "dropout": dropout, "linear": linear}
