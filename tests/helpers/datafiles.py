"""Small data sets written exactly in their official formats, for the data tests.

IDX with its big-endian header (plain and gzip) as MNIST and Fashion-MNIST ship it; CIFAR-10
batches as protocol-2 pickles of dicts with bytes keys, in a ``cifar-10-batches-py/`` folder
and in a ``.tar.gz`` of it::

    arrays, names = write_mnist(folder, n_train=12, n_test=4)
    batches, archive = write_cifar_archive(root, per_batch=3, n_test=5)
"""
import gzip
import hashlib
import io
import pickle
import struct
import tarfile
from pathlib import Path

import numpy as np

IDX_STEMS = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
             "t10k-labels-idx1-ubyte")
CIFAR_BATCHES = tuple(f"data_batch_{k}" for k in range(1, 6)) + ("test_batch",)


def idx_bytes(array, type_code=0x08):
    array = np.asarray(array)
    dtype = {0x08: ">u1", 0x0B: ">i2", 0x0C: ">i4"}[type_code]
    header = bytes([0, 0, type_code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(dtype).tobytes()


def write_file(path, content, gz=False):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0: the same content gives the same .gz bytes, so checksums are stable
    path.write_bytes(gzip.compress(content, mtime=0) if gz else content)
    return path


def mnist_arrays(n_train=30, n_test=10, seed=0, side=28):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, (n_train, side, side), dtype=np.uint8), rng.integers(0, 10, n_train),
            rng.integers(0, 256, (n_test, side, side), dtype=np.uint8), rng.integers(0, 10, n_test))


def write_mnist(directory, gz=True, seed=0, **sizes):
    """The four IDX files in ``directory``; returns their arrays and their file names."""
    arrays = mnist_arrays(seed=seed, **sizes)
    names = []
    for stem, array in zip(IDX_STEMS, arrays):
        name = stem + (".gz" if gz else "")
        write_file(Path(directory) / name, idx_bytes(array), gz=gz)
        names.append(name)
    return arrays, names


def unchecked_unpacked_mnist(monkeypatch, n_train, n_test, side=28):
    """Let small unpacked MNIST files be read as a data set whose unpacked files no table
    covers (a plug-in's files, say): the official shape is theirs and MNIST's table names
    only the .gz files, for tests of what guards such files (the run's record of their MD5)."""
    from nord.data.datasets import MNIST, _IdxCurator
    from nord.data.download import MNIST_MD5
    monkeypatch.setattr(_IdxCurator, "official_shapes", {
        "train_images": (n_train, side, side), "train_labels": (n_train,),
        "test_images": (n_test, side, side), "test_labels": (n_test,)})
    monkeypatch.setattr(MNIST, "default_checksums", dict(MNIST_MD5))


def cifar_arrays(per_batch=4, n_test=6, seed=0):
    rng = np.random.default_rng(seed)
    train = [(rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8), rng.integers(0, 10, per_batch).tolist())
             for _ in range(5)]
    test = (rng.integers(0, 256, (n_test, 3072), dtype=np.uint8), rng.integers(0, 10, n_test).tolist())
    return train + [test]


def cifar_batch_bytes(data, labels, index=0):
    batch = {b"batch_label": b"batch %d" % index, b"labels": list(labels), b"data": data,
             b"filenames": [b"img_%d.png" % i for i in range(len(labels))]}
    return pickle.dumps(batch, protocol=2)


META_BYTES = pickle.dumps({b"num_cases_per_batch": 4, b"num_vis": 3072,
                           b"label_names": [b"airplane", b"automobile", b"bird", b"cat", b"deer", b"dog",
                                            b"frog", b"horse", b"ship", b"truck"]}, protocol=2)


def cifar_parts(seed=0, **sizes):
    batches = cifar_arrays(seed=seed, **sizes)
    parts = {name: cifar_batch_bytes(d, l, i) for i, (name, (d, l)) in enumerate(zip(CIFAR_BATCHES, batches))}
    parts["batches.meta"] = META_BYTES
    parts["readme.html"] = b"<html></html>"
    return batches, parts


def write_cifar_folder(root, seed=0, **sizes):
    batches, parts = cifar_parts(seed, **sizes)
    for name, content in parts.items():
        write_file(Path(root) / "cifar-10-batches-py" / name, content)
    return batches


def cifar_archive_bytes(parts):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        folder = tarfile.TarInfo("cifar-10-batches-py")
        folder.type = tarfile.DIRTYPE
        folder.mode = 0o755
        tar.addfile(folder)
        for name, content in parts.items():
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def write_cifar_archive(root, seed=0, **sizes):
    batches, parts = cifar_parts(seed, **sizes)
    path = write_file(Path(root) / "cifar-10-python.tar.gz", cifar_archive_bytes(parts))
    return batches, path


def md5(path):
    return hashlib.md5(Path(path).read_bytes()).hexdigest()
