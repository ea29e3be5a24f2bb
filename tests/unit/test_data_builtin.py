"""Digits and TensorCurator, and the curator registry."""
import numpy as np
import pytest
import torch

from nord.data import DataCurator, Digits, TensorCurator, get_curator, list_curators
from nord.errors import ConfigurationError


@pytest.fixture(scope="module")
def digits():
    return Digits().load()


def test_digits_has_the_bundled_images(digits):
    assert digits.n_train + digits.n_valid + digits.n_test == 1797
    assert digits.input_shape == (1, 8, 8)
    assert digits.num_classes == 10
    assert digits.classes == tuple("0123456789")


def test_digits_test_fraction_sets_the_split():
    data = Digits(test_fraction=0.5)
    assert data.n_test == 899


def test_digits_split_is_stratified(digits):
    counts = torch.bincount(digits.tensors("test")[1], minlength=10)
    assert int(counts.min()) >= 35  # about 36 per class in 360 test images


def test_digits_split_depends_on_the_seed():
    a, b = Digits(seed=0).tensors("test")[1], Digits(seed=1).tensors("test")[1]
    assert not torch.equal(a, b)


def test_digits_same_seed_same_split(digits):
    assert torch.equal(Digits(seed=0).tensors("train")[0], digits.tensors("train")[0])


def test_training_split_is_normalised_per_channel(digits):
    x = digits.tensors("train")[0]
    assert abs(float(x.mean())) < 1e-4
    assert abs(float(x.std(correction=0)) - 1) < 1e-4


def test_unnormalised_digits_are_scaled_to_unit_range():
    x = Digits(normalise=False).tensors("train")[0]
    assert float(x.min()) == 0.0 and float(x.max()) == 1.0


def test_digits_batches_cover_the_training_set(digits):
    labels = torch.cat([y for _, y in digits.train_loader(batch_size=100, seed=0)])
    assert torch.equal(torch.sort(labels).values, torch.sort(digits.tensors("train")[1]).values)
    assert len(labels) == digits.n_train


def test_digits_refuses_a_test_fraction_outside_the_unit_interval():
    with pytest.raises(ConfigurationError, match="test_fraction"):
        Digits(test_fraction=1.0)


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    monkeypatch.setenv("NORD_DATA_ROOT", str(tmp_path / "data"))
    return tmp_path / "data"


def splits(data):
    return [tensor for part in ("train", "valid", "test") for tensor in data.tensors(part)]


def test_a_kept_digits_split_loads_the_arrays_a_fresh_split_makes(data_root, monkeypatch):
    fresh = Digits(seed=3, test_fraction=0.3)
    kept = fresh.kept_split()
    assert not kept.exists() and kept.parent == data_root / "digits"
    first = splits(fresh)
    assert kept.is_file()

    def no_split(self):
        raise AssertionError("split anew although the split was kept")
    monkeypatch.setattr(Digits, "_split", no_split)
    again = splits(Digits(seed=3, test_fraction=0.3))
    assert all(torch.equal(a, b) and a.dtype == b.dtype for a, b in zip(first, again))


def test_each_seed_fraction_and_stratification_keeps_its_own_split(data_root):
    names = {Digits(seed=seed, test_fraction=fraction, stratify=stratify).kept_split().name
             for seed in (0, 1) for fraction in (0.2, 0.25) for stratify in (True, False)}
    assert len(names) == 8
    from sklearn import __version__
    assert all(name.endswith(f"-sklearn{__version__}.npz") for name in names)


@pytest.mark.parametrize("content", [b"", b"not a numpy file", "other arrays", "a changed pixel",
                                     "another split's file", "one array"])
def test_an_unreadable_or_foreign_kept_split_is_made_anew_and_replaced(data_root, content):
    expected = splits(Digits(seed=2))
    kept = Digits(seed=2).kept_split()
    if content == "another split's file":   # a whole, valid file, of seed 1
        other = Digits(seed=1)
        other.load()
        kept.write_bytes(other.kept_split().read_bytes())
        other.kept_split().unlink()
    elif content == "one array":
        with open(kept, "wb") as file:
            np.save(file, np.zeros(3))
    elif content == "other arrays":
        np.savez(kept, x_train=np.zeros((3, 8, 8), np.float32), y_train=np.zeros(3, np.int64),
                 x_test=np.zeros((1, 8, 8), np.float32), y_test=np.zeros(1, np.int64))
    elif content == "a changed pixel":
        with np.load(kept) as arrays:
            changed = dict(arrays)
        changed["x_train"][0, 0, 0] += 1
        np.savez(kept, **changed)
    else:
        kept.write_bytes(content)
    assert all(torch.equal(a, b) for a, b in zip(expected, splits(Digits(seed=2))))
    with np.load(kept) as arrays:
        assert len(arrays["x_train"]) + len(arrays["x_test"]) == 1797
    assert [path.name for path in kept.parent.iterdir()] == [kept.name]   # no part left


@pytest.mark.slow
def test_no_damage_to_a_kept_split_gets_past_its_reader(data_root):
    """Every one-bit flip of the file's first 64 bytes and of its zip directory: the reader
    gives the split it was written as, or None (split anew); it never raises."""
    from nord.data.builtin import _read_split
    expected = [array.copy() for array in Digits(seed=5)._split()]
    Digits(seed=5).load()
    kept = Digits(seed=5).kept_split()
    whole = kept.read_bytes()
    places = list(range(64)) + list(range(len(whole) - 200, len(whole)))
    damaged = data_root / "digits" / kept.name
    for place in places:
        for bit in range(8):
            flipped = bytearray(whole)
            flipped[place] ^= 1 << bit
            damaged.write_bytes(bytes(flipped))
            split = _read_split(damaged)
            assert split is None or all(np.array_equal(a, b) for a, b in zip(split, expected)), (
                place, bit)


def test_digits_load_where_the_data_root_cannot_be_written(tmp_path, monkeypatch):
    blocked = tmp_path / "a file"
    blocked.write_text("the data root's parent is a file, so nothing can be written under it")
    monkeypatch.setenv("NORD_DATA_ROOT", str(blocked / "data"))
    assert Digits(seed=4).n_test == 360
    assert not (blocked / "data").exists()


def test_loading_is_deferred_to_first_use():
    data = Digits()
    assert not data.loaded
    assert data.input_shape == (1, 8, 8)
    assert data.loaded


def test_describe_is_json_ready(digits):
    import json

    summary = json.loads(json.dumps(digits.describe()))
    assert summary["input_shape"] == [1, 8, 8] and summary["n_train"] == digits.n_train


# -- TensorCurator -------------------------------------------------------------------------------
def arrays(n_train=20, n_test=6, shape=(3, 5, 5), classes=4, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n_train,) + shape).astype(np.float32), rng.integers(0, classes, n_train),
            rng.normal(size=(n_test,) + shape).astype(np.float32), rng.integers(0, classes, n_test))


def test_tensor_curator_takes_numpy_arrays():
    data = TensorCurator(*arrays(), valid_fraction=0)
    assert data.input_shape == (3, 5, 5)
    assert data.n_train == 20 and data.n_test == 6


def test_tensor_curator_takes_torch_tensors():
    data = TensorCurator(*(torch.as_tensor(a) for a in arrays()))
    assert data.tensors("train")[1].dtype == torch.int64


def test_tensor_curator_adds_a_channel_to_grey_images():
    x, y, xt, yt = arrays(shape=(5, 5))
    assert TensorCurator(x, y, xt, yt).input_shape == (1, 5, 5)


def test_tensor_curator_accepts_feature_vectors():
    x, y, xt, yt = arrays(shape=(7,))
    assert TensorCurator(x, y, xt, yt).input_shape == (7,)


def test_tensor_curator_never_writes_into_the_users_arrays():
    x, y, xt, yt = arrays()
    before = x.copy()
    TensorCurator(x, y, xt, yt)
    assert np.array_equal(x, before)


def test_tensor_curator_normalises_with_training_statistics():
    x, y, xt, yt = arrays()
    x[:, 0] = x[:, 0] * 10 + 5
    data = TensorCurator(x, y, xt, yt, valid_fraction=0)
    expected = (xt[:, 0] - x[:, 0].mean()) / x[:, 0].std()
    assert np.allclose(data.tensors("test")[0][:, 0].numpy(), expected, atol=1e-4)


def test_tensor_curator_counts_classes_from_the_labels():
    x, y, xt, yt = arrays(classes=4)
    y[0] = 6
    data = TensorCurator(x, y, xt, yt)
    assert data.num_classes == 7
    assert data.classes[6] == "6"


def test_tensor_curator_uses_given_class_names():
    x, y, xt, yt = arrays(classes=2)
    assert TensorCurator(x, y, xt, yt, classes=["cat", "dog"]).classes == ("cat", "dog")


def test_label_beyond_the_classes_is_refused():
    x, y, xt, yt = arrays(classes=4)
    y[0] = 3
    with pytest.raises(ConfigurationError, match="only 2 classes"):
        TensorCurator(x, y, xt, yt, classes=["a", "b"])


def test_different_train_and_test_shapes_are_refused():
    x, y, _, yt = arrays()
    with pytest.raises(ConfigurationError, match="one shape"):
        TensorCurator(x, y, np.zeros((6, 3, 4, 4)), yt)


def test_label_count_must_match_sample_count():
    x, y, xt, yt = arrays()
    with pytest.raises(ConfigurationError, match="y_train has 19 labels for 20 samples"):
        TensorCurator(x, y[:19], xt, yt)


def test_float_labels_are_refused_with_the_fix():
    x, y, xt, yt = arrays()
    with pytest.raises(ConfigurationError, match="astype"):
        TensorCurator(x, y.astype(np.float32), xt, yt)


def test_negative_labels_are_refused():
    x, y, xt, yt = arrays()
    y[3] = -1
    with pytest.raises(ConfigurationError, match="negative"):
        TensorCurator(x, y, xt, yt)


def test_five_dimensional_samples_are_refused():
    x, y, xt, yt = arrays()
    with pytest.raises(ConfigurationError, match="shape"):
        TensorCurator(x[:, None], y, xt[:, None], yt)


def test_nan_samples_are_refused():
    x, y, xt, yt = arrays()
    x[2, 0, 0, 0] = np.nan
    with pytest.raises(ConfigurationError, match="NaN"):
        TensorCurator(x, y, xt, yt)


def test_empty_training_set_is_refused():
    x, y, xt, yt = arrays()
    with pytest.raises(ConfigurationError, match="empty"):
        TensorCurator(x[:0], y[:0], xt, yt)


def test_non_numeric_samples_are_refused():
    x, y, xt, yt = arrays()
    with pytest.raises(ConfigurationError):
        TensorCurator(np.array([["a"]] * 20, dtype=object), y, xt, yt)


# -- registry --------------------------------------------------------------------------------------
def test_registry_lists_the_built_in_data_sets():
    assert {"digits", "mnist", "fashion-mnist", "cifar10"} <= set(list_curators())


def test_registry_builds_by_name_ignoring_case_and_dashes():
    assert isinstance(get_curator("Digits", seed=1), Digits)
    assert type(get_curator("FashionMNIST", root=".")).__name__ == "FashionMNIST"


def test_unknown_data_set_lists_the_valid_names():
    with pytest.raises(ConfigurationError, match="digits"):
        get_curator("imagenet")


def test_a_subclass_needs_only_a_load_method():
    from nord.data import RawData

    class Tiny(DataCurator):
        name = "tiny"

        def _load(self):
            return RawData(np.ones((4, 1, 2, 2)), np.array([0, 1, 0, 1]), np.ones((2, 1, 2, 2)), np.array([1, 0]))

    assert Tiny().num_classes == 2
