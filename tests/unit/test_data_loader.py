"""TensorLoader and the loaders a curator hands out."""
import numpy as np
import pytest
import torch

from nord.data import TensorCurator, TensorLoader
from nord.errors import ConfigurationError


def make(n=23, features=3):
    x = torch.arange(n * features, dtype=torch.float32).reshape(n, features)
    y = torch.arange(n, dtype=torch.int64)  # y identifies the sample
    return x, y


def seen(loader):
    return torch.cat([y for _, y in loader]).tolist()


def test_len_is_the_number_of_batches_yielded():
    loader = TensorLoader(*make(23), batch_size=5, shuffle=True, seed=0)
    assert len(loader) == 5
    assert len(list(loader)) == 5


def test_batches_pair_samples_with_their_labels():
    x, y = make(23)
    for xb, yb in TensorLoader(x, y, batch_size=4, shuffle=True, seed=1):
        assert torch.equal(xb, x[yb])


def test_one_epoch_covers_every_sample_once():
    assert sorted(seen(TensorLoader(*make(23), batch_size=4, shuffle=True, seed=1))) == list(range(23))


def test_without_shuffle_batches_are_in_order():
    assert seen(TensorLoader(*make(10), batch_size=3)) == list(range(10))


def test_each_pass_is_a_new_epoch():
    loader = TensorLoader(*make(50), batch_size=8, shuffle=True, seed=2)
    assert seen(loader) != seen(loader)


def test_set_epoch_reproduces_an_epoch():
    loader = TensorLoader(*make(50), batch_size=8, shuffle=True, seed=2)
    loader.set_epoch(3)
    first = seen(loader)
    loader.set_epoch(3)
    assert seen(loader) == first


def test_automatic_and_explicit_epochs_agree():
    auto = TensorLoader(*make(50), batch_size=8, shuffle=True, seed=2)
    explicit = TensorLoader(*make(50), batch_size=8, shuffle=True, seed=2)
    orders_auto = [seen(auto) for _ in range(3)]
    orders_explicit = []
    for epoch in range(3):
        explicit.set_epoch(epoch)
        orders_explicit.append(seen(explicit))
    assert orders_auto == orders_explicit


@pytest.mark.parametrize("n,size,batch_size", [(23, 3, 4), (10, 4, 64), (100, 3, 7), (9, 3, 1)])
def test_ranks_together_see_the_set_once_in_equal_batch_counts(n, size, batch_size):
    x, y = make(n)
    loaders = [TensorLoader(x, y, batch_size, rank=r, size=size, shuffle=True, seed=5) for r in range(size)]
    assert len({len(loader) for loader in loaders}) == 1
    assert sorted(sum((seen(loader) for loader in loaders), [])) == list(range(n))


def test_num_samples_counts_this_ranks_share():
    x, y = make(23)
    loaders = [TensorLoader(x, y, 4, rank=r, size=3, shuffle=True) for r in range(3)]
    assert [loader.num_samples for loader in loaders] == [len(seen(loader)) for loader in loaders]


def test_training_set_up_with_an_empty_batch_is_refused():
    with pytest.raises(ConfigurationError, match="empty"):
        TensorLoader(*make(3), batch_size=1, rank=0, size=2, shuffle=True)


def test_indices_restrict_the_loader_to_a_subset():
    loader = TensorLoader(*make(20), batch_size=3, indices=[1, 5, 7, 19], shuffle=True, seed=0)
    assert sorted(seen(loader)) == [1, 5, 7, 19]


def test_a_rank_without_samples_yields_nothing():
    loader = TensorLoader(*make(10), 4, rank=2, size=3, indices=[0, 1], shuffle=True, equal_batches=False)
    assert len(loader) == 0 and list(loader) == []


def test_iter_fixes_its_epoch_before_set_epoch_is_called_again():
    loader = TensorLoader(*make(40), batch_size=8, shuffle=True, seed=2)
    reference = TensorLoader(*make(40), batch_size=8, shuffle=True, seed=2)
    started = iter(loader)
    loader.set_epoch(7)
    assert torch.cat([y for _, y in started]).tolist() == seen(reference)  # epoch 0


def test_mismatched_lengths_are_refused():
    x, y = make(10)
    with pytest.raises(ConfigurationError, match="same number"):
        TensorLoader(x, y[:9], 2)


@pytest.mark.parametrize("batch_size", [0, -3, 2.5])
def test_bad_batch_size_is_refused(batch_size):
    with pytest.raises(ConfigurationError, match="batch_size"):
        TensorLoader(*make(10), batch_size)


def test_rank_outside_size_is_refused():
    with pytest.raises(ConfigurationError, match="rank"):
        TensorLoader(*make(10), 2, rank=3, size=3)


# -- the curator's loaders -------------------------------------------------------------------
def curator(n_train=37, n_test=11, valid_fraction=0.0):
    rng = np.random.default_rng(0)
    return TensorCurator(rng.normal(size=(n_train, 2, 4, 4)), rng.integers(0, 3, n_train),
                         rng.normal(size=(n_test, 2, 4, 4)), rng.integers(0, 3, n_test),
                         valid_fraction=valid_fraction)


def test_train_loader_yields_float32_images_and_int64_labels():
    xb, yb = next(iter(curator().train_loader(batch_size=8)))
    assert xb.dtype == torch.float32 and xb.shape == (8, 2, 4, 4)
    assert yb.dtype == torch.int64 and yb.shape == (8,)


def test_test_shards_are_disjoint_and_cover_the_test_set():
    data = curator(n_test=11)
    x_test, _ = data.tensors("test")
    rows = []
    for r in range(3):
        rows += [xb for xb, _ in data.test_loader(batch_size=2, rank=r, size=3)]
    assert torch.equal(torch.cat(rows), x_test)


def test_test_loader_gives_fewer_samples_than_ranks_to_some_ranks_only():
    data = curator(n_test=2)
    counts = [sum(len(y) for _, y in data.test_loader(4, rank=r, size=3)) for r in range(3)]
    assert counts == [1, 1, 0]


def test_fraction_uses_the_same_seeded_subset_on_every_rank():
    data = curator(n_train=100)
    ranks = [data.train_loader(batch_size=4, rank=r, size=2, seed=3, fraction=0.3) for r in range(2)]
    assert ranks[0].total_samples == ranks[1].total_samples == 30
    union = [tuple(x.flatten().tolist()) for loader in ranks for xb, _ in loader for x in xb]
    assert len(set(union)) == 30


def test_train_loader_refuses_bad_fraction():
    with pytest.raises(ConfigurationError, match="fraction"):
        curator().train_loader(fraction=0)


def test_tensors_can_move_to_a_device_once():
    data = curator()
    first = data.tensors("train", device="cpu")
    assert first[0] is data.tensors("train", device="cpu")[0]


def test_meta_device_loader_slices_on_that_device():
    # "meta" stands in for an accelerator: the batch must stay where the data is.
    data = curator()
    xb, yb = next(iter(data.train_loader(batch_size=4, device="meta")))
    assert xb.device.type == "meta" and yb.device.type == "meta"


# --- the validation split ----------------------------------------------------------------------
def test_validation_is_a_stratified_seeded_hold_out_of_the_training_split():
    rng = np.random.default_rng(1)
    labels = np.repeat([0, 1, 2], [50, 30, 20])
    x = rng.normal(size=(100, 1, 2, 2))
    data = TensorCurator(x, labels, x[:5], labels[:5], valid_fraction=0.2, split_seed=4)
    assert (data.n_train, data.n_valid) == (80, 20)
    _, y_valid = data.tensors("valid")
    assert np.bincount(y_valid.numpy()).tolist() == [10, 6, 4]
    again = TensorCurator(x, labels, x[:5], labels[:5], valid_fraction=0.2, split_seed=4)
    assert torch.equal(again.tensors("valid")[0], data.tensors("valid")[0])
    other = TensorCurator(x, labels, x[:5], labels[:5], valid_fraction=0.2, split_seed=5)
    assert not torch.equal(other.tensors("valid")[0], data.tensors("valid")[0])
    assert data.split == {"source": "held out of the training split, stratified",
                          "fraction": 0.2, "seed": 4, "n_valid": 20}


def test_the_held_out_samples_are_not_trained_on_and_normalise_nothing():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(60, 1, 3, 3))
    labels = rng.integers(0, 3, 60)
    data = TensorCurator(x, labels, x[:4], labels[:4], valid_fraction=0.25, normalise=False)
    train = {tuple(v.flatten().tolist()) for v in data.tensors("train")[0]}
    valid = {tuple(v.flatten().tolist()) for v in data.tensors("valid")[0]}
    assert not train & valid and len(train) + len(valid) == 60


def test_an_official_validation_split_is_used_as_given():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(20, 1, 2, 2)), rng.integers(0, 2, 20)
    data = TensorCurator(x, y, x[:3], y[:3], x_valid=x[:7], y_valid=y[:7])
    assert (data.n_train, data.n_valid, data.split["source"]) == (20, 7, "official")


def test_validation_shards_cover_the_validation_set_once():
    data = curator(n_train=60, valid_fraction=0.25)
    seen = sum(len(yb) for r in range(3)
               for _, yb in data.test_loader(batch_size=4, rank=r, size=3, split="valid"))
    assert seen == data.n_valid == 15


@pytest.mark.parametrize("fraction", [-0.1, 1.0, 1.5, "0.1", True])
def test_a_bad_valid_fraction_is_refused(fraction):
    with pytest.raises(ConfigurationError, match="valid_fraction"):
        curator(valid_fraction=fraction)
