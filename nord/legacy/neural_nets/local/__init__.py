"""The 2018 ``neural_nets.local`` package: CIFAR-10 loaders and the single-process evaluator."""
