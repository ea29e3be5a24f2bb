"""Readers of the official formats, and the MNIST / Fashion-MNIST / CIFAR-10 curators.

The files are small and written in the official layouts by :mod:`tests.helpers.datafiles`.
"""
import gzip
import os
import pickle

import numpy as np
import pytest

from nord.data import CIFAR10, MNIST, FashionMNIST
from nord.data.files import (check_idx_layout, read_cifar10, read_idx, read_idx_labels,
                             read_idx_pair)
from nord.errors import CorruptDataError, MissingDataError
from tests.helpers.datafiles import (
    cifar_archive_bytes,
    cifar_batch_bytes,
    cifar_parts,
    idx_bytes,
    md5,
    write_cifar_archive,
    write_cifar_folder,
    write_file,
    write_mnist,
)


# -- IDX -------------------------------------------------------------------------------------
@pytest.mark.parametrize("gz", [False, True])
def test_idx_images_round_trip(tmp_path, gz):
    images = np.random.default_rng(0).integers(0, 256, (5, 28, 28), dtype=np.uint8)
    path = write_file(tmp_path / ("x.gz" if gz else "x"), idx_bytes(images), gz=gz)
    assert np.array_equal(read_idx(path, ndim=3), images)


def test_idx_wider_types_are_read_big_endian(tmp_path):
    values = np.array([1, -2, 300, -40000], dtype=np.int32)
    path = write_file(tmp_path / "v", idx_bytes(values, type_code=0x0C))
    assert read_idx(path).tolist() == values.tolist()


def test_truncated_idx_file_names_the_file(tmp_path):
    content = idx_bytes(np.zeros((5, 28, 28), np.uint8))
    path = write_file(tmp_path / "train-images-idx3-ubyte", content[:-100])
    with pytest.raises(CorruptDataError, match="train-images-idx3-ubyte: truncated"):
        read_idx(path, ndim=3)


def test_truncated_gzip_file_names_the_file(tmp_path):
    path = write_file(tmp_path / "x.gz", idx_bytes(np.zeros((50, 28, 28), np.uint8)), gz=True)
    path.write_bytes(path.read_bytes()[:-30])
    with pytest.raises(CorruptDataError, match=r"x\.gz: damaged gzip"):
        read_idx(path)


def test_corrupted_gzip_file_is_refused(tmp_path):
    path = write_file(tmp_path / "x.gz", idx_bytes(np.arange(200, dtype=np.uint8).reshape(2, 10, 10)), gz=True)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptDataError, match="x.gz"):
        read_idx(path)


def test_trailing_bytes_are_refused(tmp_path):
    path = write_file(tmp_path / "x", idx_bytes(np.zeros((2, 4, 4), np.uint8)) + b"\0")
    with pytest.raises(CorruptDataError, match="1 unexpected bytes"):
        read_idx(path)


def test_bad_magic_number_is_refused(tmp_path):
    path = write_file(tmp_path / "x", b"\x12\x34\x08\x01" + b"\0" * 8)
    with pytest.raises(CorruptDataError, match="not an IDX file"):
        read_idx(path)


def test_wrong_number_of_dimensions_is_refused(tmp_path):
    path = write_file(tmp_path / "labels", idx_bytes(np.zeros((3, 2), np.uint8)))
    with pytest.raises(CorruptDataError, match="2 dimensions, expected 1"):
        read_idx(path, ndim=1)


def test_gz_name_on_a_plain_file_is_refused(tmp_path):
    path = write_file(tmp_path / "x.gz", idx_bytes(np.zeros(3, np.uint8)))
    with pytest.raises(CorruptDataError, match="not a gzip file"):
        read_idx(path)


def test_labels_out_of_range_are_refused(tmp_path):
    path = write_file(tmp_path / "labels", idx_bytes(np.array([1, 2, 12], np.uint8)))
    with pytest.raises(CorruptDataError, match="labels must be in 0..9"):
        read_idx_labels(path, 10)


def test_image_and_label_counts_must_agree(tmp_path):
    images = write_file(tmp_path / "i", idx_bytes(np.zeros((4, 2, 2), np.uint8)))
    labels = write_file(tmp_path / "l", idx_bytes(np.zeros(3, np.uint8)))
    with pytest.raises(CorruptDataError, match="4 images but .* 3 labels"):
        read_idx_pair(images, labels, 10)


# -- MNIST and Fashion-MNIST curators -------------------------------------------------------------
def test_mnist_loads_from_the_torchvision_folder(tmp_path):
    (x, y, xt, yt), names = write_mnist(tmp_path / "MNIST" / "raw")
    data = MNIST(tmp_path, verify=False, valid_fraction=0)
    assert data.input_shape == (1, 28, 28)
    assert data.n_train == 30 and data.n_test == 10
    assert data.tensors("train")[1].tolist() == y.tolist()


def test_mnist_pixels_keep_their_values_before_normalisation(tmp_path):
    (x, _, _, _), _ = write_mnist(tmp_path, gz=False)
    data = MNIST(tmp_path, normalise=False, verify=False, valid_fraction=0)
    assert np.allclose(data.tensors("train")[0][:, 0].numpy(), x / 255.0)


def test_fashion_mnist_has_its_class_names(tmp_path):
    write_mnist(tmp_path / "FashionMNIST" / "raw")
    data = FashionMNIST(tmp_path, verify=False, valid_fraction=0)
    assert data.classes[0] == "T-shirt/top" and data.classes[9] == "Ankle boot"


def test_missing_mnist_says_which_files_go_where_and_where_to_get_them(tmp_path):
    with pytest.raises(MissingDataError) as error:
        MNIST(tmp_path, valid_fraction=0).load()
    message = str(error.value)
    assert "train-images-idx3-ubyte.gz" in message and "t10k-labels-idx1-ubyte.gz" in message
    assert str(tmp_path / "MNIST" / "raw") in message
    assert "https://ossci-datasets.s3.amazonaws.com/mnist/train-images-idx3-ubyte.gz" in message
    assert "download=True" in message


def test_files_come_from_one_complete_folder_never_mixed(tmp_path):
    # A complete copy at the root, and the preferred folder lacking one file: the loader
    # takes the complete copy as a whole instead of mixing the two.
    (x_root, _, _, _), _ = write_mnist(tmp_path, seed=0)
    _, names = write_mnist(tmp_path / "FashionMNIST" / "raw", seed=1)
    (tmp_path / "FashionMNIST" / "raw" / names[3]).unlink()
    data = FashionMNIST(tmp_path, normalise=False, verify=False, valid_fraction=0)
    assert np.allclose(data.tensors("train")[0][:, 0].numpy(), x_root / 255.0)


def test_truncated_mnist_file_gives_corrupt_data_error_naming_it(tmp_path):
    _, names = write_mnist(tmp_path, gz=False)
    path = tmp_path / "t10k-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(CorruptDataError, match="t10k-images-idx3-ubyte"):
        MNIST(tmp_path, verify=False, valid_fraction=0).load()


def test_verify_refuses_a_file_whose_checksum_differs(tmp_path):
    _, names = write_mnist(tmp_path)
    with pytest.raises(CorruptDataError, match="MD5"):
        MNIST(tmp_path, valid_fraction=0).load()  # the official checksums do not fit the generated files


def test_verify_accepts_files_matching_the_given_checksums(tmp_path):
    _, names = write_mnist(tmp_path)
    checksums = {name: md5(tmp_path / name) for name in names}
    assert MNIST(tmp_path, checksums=checksums, valid_fraction=0).n_train == 30


# -- CIFAR-10 ------------------------------------------------------------------------------------
def test_cifar_folder_round_trip(tmp_path):
    batches = write_cifar_folder(tmp_path)
    x_train, y_train, x_test, y_test, classes = read_cifar10(tmp_path / "cifar-10-batches-py")
    assert x_train.shape == (20, 3, 32, 32) and x_test.shape == (6, 3, 32, 32)
    assert np.array_equal(x_train[:4].reshape(4, -1), batches[0][0])
    assert y_test.tolist() == batches[5][1]
    assert classes[0] == "airplane"


def test_cifar_channels_are_the_three_1024_pixel_planes(tmp_path):
    batches = write_cifar_folder(tmp_path)
    x_train = read_cifar10(tmp_path / "cifar-10-batches-py")[0]
    first = batches[0][0][0]
    assert np.array_equal(x_train[0, 1].ravel(), first[1024:2048])  # green plane, row-major


def test_cifar_archive_reads_like_the_folder(tmp_path):
    batches, path = write_cifar_archive(tmp_path / "a")
    write_cifar_folder(tmp_path / "f")
    from_archive = read_cifar10(path)
    from_folder = read_cifar10(tmp_path / "f" / "cifar-10-batches-py")
    for a, b in zip(from_archive[:4], from_folder[:4]):
        assert np.array_equal(a, b)


def test_cifar_curator_prefers_the_extracted_folder(tmp_path):
    write_cifar_folder(tmp_path, per_batch=2)
    write_cifar_archive(tmp_path, per_batch=3)
    assert CIFAR10(tmp_path, verify=False, valid_fraction=0).n_train == 10


def test_cifar_curator_reads_the_archive(tmp_path):
    write_cifar_archive(tmp_path)
    data = CIFAR10(tmp_path, verify=False, valid_fraction=0)
    assert data.input_shape == (3, 32, 32)
    assert data.classes[9] == "truck"


def test_truncated_cifar_archive_names_the_file(tmp_path):
    _, path = write_cifar_archive(tmp_path)
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    with pytest.raises(CorruptDataError, match="cifar-10-python.tar.gz"):
        CIFAR10(tmp_path, verify=False, valid_fraction=0).load()


def test_archive_without_a_batch_is_refused(tmp_path):
    _, parts = cifar_parts()
    del parts["data_batch_3"]
    path = write_file(tmp_path / "cifar-10-python.tar.gz", cifar_archive_bytes(parts))
    with pytest.raises(CorruptDataError, match="missing data_batch_3"):
        read_cifar10(path)


def test_truncated_cifar_batch_names_the_file(tmp_path):
    write_cifar_folder(tmp_path)
    path = tmp_path / "cifar-10-batches-py" / "data_batch_2"
    path.write_bytes(path.read_bytes()[:-50])
    with pytest.raises(CorruptDataError, match="data_batch_2"):
        read_cifar10(tmp_path / "cifar-10-batches-py")


def test_batch_with_too_few_labels_is_refused(tmp_path):
    write_cifar_folder(tmp_path)
    data = np.zeros((4, 3072), np.uint8)
    write_file(tmp_path / "cifar-10-batches-py" / "test_batch", cifar_batch_bytes(data, [1, 2, 3]))
    with pytest.raises(CorruptDataError, match="test_batch: 4 images but 3 labels"):
        read_cifar10(tmp_path / "cifar-10-batches-py")


def test_batch_with_wrong_image_size_is_refused(tmp_path):
    write_cifar_folder(tmp_path)
    data = np.zeros((4, 3000), np.uint8)
    write_file(tmp_path / "cifar-10-batches-py" / "data_batch_1", cifar_batch_bytes(data, [1, 2, 3, 4]))
    with pytest.raises(CorruptDataError, match="data_batch_1: 'data' must be a uint8 array"):
        read_cifar10(tmp_path / "cifar-10-batches-py")


def test_batches_pickled_by_numpy_1_are_read(tmp_path):
    # The official files name numpy.core.multiarray (numpy 1.x); numpy 2 writes numpy._core.
    write_cifar_folder(tmp_path)
    data = np.arange(3072 * 2, dtype=np.uint64).astype(np.uint8).reshape(2, 3072)
    content = cifar_batch_bytes(data, [3, 4]).replace(b"numpy._core.multiarray\n", b"numpy.core.multiarray\n")
    assert b"numpy.core.multiarray" in content
    write_file(tmp_path / "cifar-10-batches-py" / "test_batch", content)
    x_test = read_cifar10(tmp_path / "cifar-10-batches-py")[2]
    assert np.array_equal(x_test.reshape(2, -1), data)


class _Exploit:
    def __reduce__(self):
        return (os.system, ("echo should-never-run",))


def test_pickle_that_would_run_code_is_refused(tmp_path):
    write_cifar_folder(tmp_path)
    write_file(tmp_path / "cifar-10-batches-py" / "data_batch_4",
               pickle.dumps({b"data": _Exploit(), b"labels": []}, protocol=2))
    with pytest.raises(CorruptDataError, match="data_batch_4.*refusing to load"):
        read_cifar10(tmp_path / "cifar-10-batches-py")


def test_missing_cifar_says_where_to_put_it(tmp_path):
    with pytest.raises(MissingDataError) as error:
        CIFAR10(tmp_path, valid_fraction=0).load()
    message = str(error.value)
    assert str(tmp_path / "cifar-10-python.tar.gz") in message
    assert "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz" in message


def test_cifar_folder_checksums_are_verified(tmp_path):
    write_cifar_folder(tmp_path)
    with pytest.raises(CorruptDataError, match="data_batch_1: MD5"):
        CIFAR10(tmp_path, valid_fraction=0).load()  # the official per-batch checksums do not fit generated batches


# -- unpacked IDX files: their layout, then the MD5 of the unpacked official file ----------
@pytest.mark.parametrize("content, rule", [
    (idx_bytes(np.zeros((5, 28, 28))), "announce shape (6, 28, 28) (the official file's); it "
                                       "announces (5, 28, 28)"),
    (idx_bytes(np.zeros((6, 32, 32))), "announces (6, 32, 32)"),
    (idx_bytes(np.zeros((6, 28, 28)), type_code=0x0C), "magic number must be 2051 (0x00000803"),
    (idx_bytes(np.zeros(6 * 28 * 28)), "magic number must be 2051"),
    (idx_bytes(np.zeros((6, 28, 28)))[:-1], "must be 4720 bytes long (its header and shape "
                                            "(6, 28, 28)); it is 4719: truncated"),
    (idx_bytes(np.zeros((6, 28, 28))) + b"\0", "it is 4721: it has trailing bytes"),
    (gzip.compress(idx_bytes(np.zeros((6, 28, 28))), mtime=0), "the file starts with 0x1f8b"),
    (b"\0\0\x08", "the file starts with 0x000008"),
    (b"", "the file is empty (0 bytes)"),
    (idx_bytes(np.zeros((6, 28, 28)))[:10], "truncated inside the IDX header (10 of 16 bytes)"),
])
def test_an_idx_file_of_another_layout_is_refused_naming_it_and_the_rule(tmp_path, content, rule):
    path = write_file(tmp_path / "train-images-idx3-ubyte", content)
    with pytest.raises(CorruptDataError) as error:
        check_idx_layout(path, (6, 28, 28))
    assert str(path) in str(error.value) and rule in str(error.value)


def test_idx_layout_of_labels_is_magic_2049_and_the_count(tmp_path):
    path = write_file(tmp_path / "t10k-labels-idx1-ubyte", idx_bytes(np.arange(7) % 10))
    check_idx_layout(path, (7,))
    with pytest.raises(CorruptDataError, match="announces \\(7,\\)"):
        check_idx_layout(path, (10000,))
    path.write_bytes(idx_bytes(np.arange(7) % 10, type_code=0x0B))
    with pytest.raises(CorruptDataError, match="magic number must be 2049"):
        check_idx_layout(path, (7,))


def test_an_unpacked_copy_of_another_layout_is_refused_for_its_layout(tmp_path):
    """What is wrong with a damaged unpacked copy is named (here: not the official shape)
    before its MD5 is compared."""
    write_mnist(tmp_path / "MNIST" / "raw", gz=False, n_train=40, n_test=10)
    with pytest.raises(CorruptDataError) as error:
        MNIST(tmp_path, valid_fraction=0).load()
    assert "train-images-idx3-ubyte: the header must announce shape (60000, 28, 28)" in str(
        error.value)


def test_an_unpacked_copy_of_the_official_layout_is_checked_against_the_official_md5(tmp_path):
    """Random images in the official layout are not MNIST: the MD5 of the unpacked official
    file refuses them."""
    write_mnist(tmp_path / "MNIST" / "raw", gz=False, n_train=60000, n_test=10000)
    with pytest.raises(CorruptDataError) as error:
        MNIST(tmp_path, valid_fraction=0).load()
    message = str(error.value)
    assert "train-images-idx3-ubyte: MD5" in message
    assert "differs from the expected 6bbc9ace898e44ae57da46a324031adb" in message


DEBIAN_FASHION_MNIST = "/usr/share/datasets/fashion-mnist"
"""Debian's dataset-fashion-mnist (scripts/setup.sh installs it): the official files,
recompressed, so their .gz MD5s differ from the official archives' but not what they unpack to."""

needs_debian_copy = pytest.mark.skipif(
    not os.path.isdir(DEBIAN_FASHION_MNIST),
    reason=f"{DEBIAN_FASHION_MNIST} is missing: scripts/setup.sh installs dataset-fashion-mnist")


@pytest.fixture(scope="module")
def unpacked_fashion_mnist(tmp_path_factory):
    """Debian's Fashion-MNIST, gunzipped: a real unpacked copy of the official files."""
    folder = tmp_path_factory.mktemp("fashion-mnist")
    for name in os.listdir(DEBIAN_FASHION_MNIST):
        with gzip.open(os.path.join(DEBIAN_FASHION_MNIST, name)) as packed:
            (folder / name[:-len(".gz")]).write_bytes(packed.read())
    return folder


@needs_debian_copy
def test_a_real_unpacked_copy_of_the_official_files_passes_their_md5s(unpacked_fashion_mnist,
                                                                      caplog):
    data = FashionMNIST(unpacked_fashion_mnist, valid_fraction=0, normalise=False)
    assert (data.n_train, data.n_test) == (60000, 10000)
    assert "no official MD5" not in caplog.text and "unchecked" not in caplog.text
    assert sorted(data.files) == sorted(name for name in os.listdir(unpacked_fashion_mnist))


@needs_debian_copy
def test_a_real_copy_with_one_changed_pixel_is_refused(unpacked_fashion_mnist, tmp_path):
    for name in os.listdir(unpacked_fashion_mnist):
        content = (unpacked_fashion_mnist / name).read_bytes()
        if name == "t10k-images-idx3-ubyte":
            content = content[:-1] + bytes([content[-1] ^ 1])
        (tmp_path / name).write_bytes(content)
    with pytest.raises(CorruptDataError) as error:
        FashionMNIST(tmp_path, valid_fraction=0).load()
    assert f"{tmp_path / 't10k-images-idx3-ubyte'}: MD5" in str(error.value)
    assert "differs from the expected 8181f5470baa50b63fa0f6fddb340f0a" in str(error.value)


@needs_debian_copy
@pytest.mark.parametrize("packed", [False, True], ids=["unpacked", "recompressed"])
def test_another_data_sets_official_files_are_named_and_not_to_be_deleted(
        unpacked_fashion_mnist, packed):
    """MNIST and Fashion-MNIST share file names: MNIST finding Fashion-MNIST's files says
    whose they are and where they go, instead of telling the user to delete them."""
    folder = DEBIAN_FASHION_MNIST if packed else unpacked_fashion_mnist
    with pytest.raises(CorruptDataError) as error:
        MNIST(folder, valid_fraction=0).load()
    message = str(error.value)
    assert "holds fashion-mnist's official train-images-idx3-ubyte, not mnist's" in message
    assert f"Do not delete it: move fashion-mnist's files to {folder}/FashionMNIST/raw" in message


@needs_debian_copy
def test_a_recompressed_gz_is_read_when_it_unpacks_to_the_official_file(caplog):
    """A packager's .gz (other bytes than the official archive) holds the official file: it is
    accepted for its content, and the run records the MD5 of the file it read."""
    import logging
    caplog.set_level(logging.INFO, logger="nord.data.datasets")
    data = FashionMNIST(DEBIAN_FASHION_MNIST, valid_fraction=0)
    assert data.n_train == 60000
    assert "is not the official archive but unpacks to the official train-images-idx3-ubyte" in (
        caplog.text)
    assert data.files["train-images-idx3-ubyte.gz"] == md5(
        os.path.join(DEBIAN_FASHION_MNIST, "train-images-idx3-ubyte.gz"))


def test_a_gz_that_unpacks_to_other_data_is_refused_for_its_archive_md5(tmp_path):
    """The unpacked MD5 accepts only the official content: a .gz of other images is refused
    for the archive's MD5, as before."""
    write_mnist(tmp_path, n_train=40, n_test=10)
    with pytest.raises(CorruptDataError, match="differs from the expected f68b3c2dcbeaaa9f"):
        MNIST(tmp_path, valid_fraction=0).load()


def test_the_verified_gz_is_read_when_an_unpacked_copy_lies_beside_it(tmp_path):
    """A folder that holds both reads the .gz (its MD5 checked); the unpacked copy is ignored,
    whatever it holds."""
    raw = tmp_path / "MNIST" / "raw"
    (x, _, _, _), names = write_mnist(raw, n_train=40, n_test=10)
    write_file(raw / "train-images-idx3-ubyte", b"not an IDX file")
    data = MNIST(tmp_path, normalise=False, valid_fraction=0,
                 checksums={name: md5(raw / name) for name in names})
    assert np.allclose(data.tensors("train")[0][:, 0].numpy(), x / 255.0)
