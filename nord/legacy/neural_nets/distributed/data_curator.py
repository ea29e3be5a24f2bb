"""The 2018 ``get_cifar10_distributed``: each rank's share of CIFAR-10.

    trainloader, trainsampler, testloader, testsampler, classes = get_cifar10_distributed(size, rank)
    for epoch in range(epochs):
        trainsampler.set_epoch(epoch)
        for images, labels in trainloader:
            ...

nord's loaders shard by themselves, so each "sampler" returned is its loader (it has
``set_epoch``, which is what 2018 programs called on the sampler). The training shards
give every rank the same number of batches; the test shards are disjoint blocks.
"""
from nord.legacy.neural_nets.local.data_curator import CLASSES, default_curator

__all__ = ["get_cifar10_distributed"]


def get_cifar10_distributed(size, rank, train_batch=128, test_batch=128, curator=None):
    """``(trainloader, trainsampler, testloader, testsampler, classes)`` for rank ``rank`` of ``size``."""
    curator = default_curator() if curator is None else curator
    train = curator.train_loader(batch_size=train_batch, rank=rank, size=size, shuffle=True)
    test = curator.test_loader(batch_size=test_batch, rank=rank, size=size)
    return train, train, test, test, CLASSES
