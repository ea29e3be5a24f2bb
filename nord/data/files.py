"""Readers of the official data set file formats (numpy only; no torchvision).

IDX (MNIST, Fashion-MNIST), plain or gzip, and CIFAR-10's python pickles, from the extracted
folder or straight out of the archive; every header and field is checked, and anything wrong
raises :class:`~nord.errors.CorruptDataError` naming the file::

    from nord.data.files import read_idx, read_cifar10

    images = read_idx("data/MNIST/raw/train-images-idx3-ubyte.gz", ndim=3)   # (60000, 28, 28) uint8
    x_train, y_train, x_test, y_test, classes = read_cifar10("data/cifar-10-batches-py")

Where the files are looked for under a data root is also said here, once, for the curators
and the command line (``nord data list``) alike: :func:`find_idx_files`, :func:`find_cifar10`.

Details (the formats and their checks): docs/data.md.
"""
from __future__ import annotations

import gzip
import io
import os
import pickle
import tarfile
import zlib
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from nord.errors import CorruptDataError, MissingDataError

__all__ = [
    "IDX_TYPES",
    "read_idx",
    "check_idx_layout",
    "read_idx_labels",
    "read_idx_pair",
    "IDX_FILES",
    "MNIST_FOLDER",
    "FASHION_MNIST_FOLDER",
    "idx_directories",
    "find_idx_files",
    "CIFAR10_FOLDER",
    "CIFAR10_ARCHIVE",
    "CIFAR10_TRAIN_BATCHES",
    "CIFAR10_TEST_BATCH",
    "CIFAR10_META",
    "CIFAR10_CLASSES",
    "read_cifar_batch",
    "read_cifar10",
    "cifar10_folder_complete",
    "find_cifar10",
]

PathLike = Union[str, os.PathLike]

IDX_TYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
"""IDX type code -> numpy dtype (the format is big-endian)."""

_GZIP_MAGIC = b"\x1f\x8b"


def _read_bytes(path: Path) -> bytes:
    """The file's content, gunzipped when it is gzip (recognised by content, not name)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise MissingDataError(f"{path} does not exist") from None
    if raw[:2] != _GZIP_MAGIC:
        if path.suffix == ".gz":
            raise CorruptDataError(f"{path}: named .gz but is not a gzip file; delete it and fetch it again")
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as error:
        raise CorruptDataError(
            f"{path}: damaged gzip file ({error}); it is truncated or corrupted -- delete it and fetch it again"
        ) from None


def read_idx(path: PathLike, ndim: Optional[int] = None) -> np.ndarray:
    """Read an IDX file (plain or gzip) into a native-endian numpy array.

    Args:
        path: the file.
        ndim: expected number of dimensions (3 for images, 1 for labels), or None.

    Raises:
        MissingDataError: no such file.
        CorruptDataError: bad magic number, unexpected type or rank, or a length that does
            not match the header (truncated file or trailing bytes).
    """
    path = Path(path)
    data = _read_bytes(path)
    if len(data) < 4:
        raise CorruptDataError(f"{path}: {len(data)} bytes is too short for an IDX header (truncated?)")
    if data[0] != 0 or data[1] != 0 or data[2] not in IDX_TYPES:
        raise CorruptDataError(
            f"{path}: not an IDX file (magic number 0x{data[:4].hex()}; expected 0x0000TTNN with type TT in "
            f"{', '.join(f'{k:02x}' for k in IDX_TYPES)})"
        )
    dtype, rank = IDX_TYPES[data[2]], data[3]
    if rank == 0 or (ndim is not None and rank != ndim):
        raise CorruptDataError(f"{path}: IDX file has {rank} dimensions, expected {ndim}")
    header = 4 + 4 * rank
    if len(data) < header:
        raise CorruptDataError(f"{path}: truncated inside the IDX header ({len(data)} of {header} bytes)")
    shape = tuple(int(d) for d in np.frombuffer(data, dtype=">u4", count=rank, offset=4))
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    found = len(data) - header
    if found < expected:
        raise CorruptDataError(
            f"{path}: truncated: the header announces shape {shape} ({expected} bytes of data), "
            f"the file holds {found}; delete it and fetch it again"
        )
    if found > expected:
        raise CorruptDataError(
            f"{path}: {found - expected} unexpected bytes after the data of shape {shape}; "
            "the file is corrupted or not an IDX file"
        )
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)
    return array.astype(dtype.newbyteorder("="))


def check_idx_layout(path: PathLike, shape: Tuple[int, ...]) -> None:
    """Check that a plain (not gzip) IDX file holds unsigned bytes of exactly ``shape``: its
    magic number (``0x0801`` = 2049 for a vector, ``0x0803`` = 2051 for images), each
    dimension, and a length equal to what its header claims. Only the header is read.

    For files that no checksum covers (MNIST's official MD5s name the ``.gz`` files), this is
    what can be checked offline: a file of another data set, a truncated copy or a subset is
    refused before it is read.

    Raises:
        CorruptDataError: naming the file, the rule it breaks and what it holds.
    """
    path = Path(path)
    rank = len(shape)
    header_size = 4 + 4 * rank
    with open(path, "rb") as handle:
        header = handle.read(header_size)
        handle.seek(0, os.SEEK_END)
        length = handle.tell()
    magic = 0x0800 + rank
    if not header:
        raise CorruptDataError(f"{path}: the file is empty (0 bytes); delete it and fetch the "
                               "official .gz")
    if len(header) < 4 or int.from_bytes(header[:4], "big") != magic:
        raise CorruptDataError(
            f"{path}: the magic number must be {magic} (0x{magic:08x}: unsigned bytes in {rank} "
            f"dimension{'s' if rank > 1 else ''}); the file starts with 0x{header[:4].hex()}. It "
            "is not this data set's file: delete it and fetch the official .gz")
    if len(header) < header_size:
        raise CorruptDataError(f"{path}: truncated inside the IDX header ({len(header)} of "
                               f"{header_size} bytes); delete it and fetch the official .gz")
    found = tuple(int(d) for d in np.frombuffer(header, dtype=">u4", count=rank, offset=4))
    if found != tuple(shape):
        raise CorruptDataError(
            f"{path}: the header must announce shape {tuple(shape)} (the official file's); it "
            f"announces {found}. A subset or another data set is not read under this name: "
            "fetch the official .gz, or check your own files with --data-checksums FILE")
    expected = header_size + int(np.prod(shape, dtype=np.int64))
    if length != expected:
        raise CorruptDataError(
            f"{path}: the file must be {expected} bytes long (its header and shape {tuple(shape)}); "
            f"it is {length}: {'truncated' if length < expected else 'it has trailing bytes'}. "
            "Delete it and fetch the official .gz")


def read_idx_labels(path: PathLike, num_classes: int) -> np.ndarray:
    """Read an IDX label vector as int64, checking every label is in ``0..num_classes-1``."""
    labels = read_idx(path, ndim=1)
    if labels.dtype.kind not in "iu":
        raise CorruptDataError(f"{path}: labels must be integers; the file holds {labels.dtype}")
    labels = labels.astype(np.int64)
    if len(labels) and (labels.min() < 0 or labels.max() >= num_classes):
        raise CorruptDataError(
            f"{path}: labels must be in 0..{num_classes - 1}; found {labels.min()}..{labels.max()}"
        )
    return labels


def read_idx_pair(images_path: PathLike, labels_path: PathLike, num_classes: int
                  ) -> Tuple[np.ndarray, np.ndarray]:
    """Images ``(N, H, W)`` and labels ``(N,)`` from two IDX files that must agree on N."""
    images = read_idx(images_path, ndim=3)
    labels = read_idx_labels(labels_path, num_classes)
    if len(images) != len(labels):
        raise CorruptDataError(
            f"{images_path} holds {len(images)} images but {labels_path} holds {len(labels)} labels; "
            "one of them is from another data set or damaged"
        )
    return images, labels


IDX_FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
"""The four IDX files of MNIST and Fashion-MNIST, without their ``.gz``."""

MNIST_FOLDER = "MNIST"
FASHION_MNIST_FOLDER = "FashionMNIST"


def idx_directories(root: PathLike, folder: str) -> List[Path]:
    """Where IDX files are looked for, in order: ``<root>/<folder>/raw`` (where downloads go, as
    in torchvision), ``<root>/<folder>``, ``<root>``."""
    root = Path(root)
    return [root / folder / "raw", root / folder, root]


def find_idx_files(root: PathLike, folder: str,
                   accept: Optional[Callable[[Dict[str, Path]], bool]] = None
                   ) -> Optional[Dict[str, Path]]:
    """The four IDX files (keys of :data:`IDX_FILES`) from the first of :func:`idx_directories`
    that holds all of them, each plain or ``.gz`` (and whose four ``accept`` takes, when
    given); None when none does. Files are never mixed from two folders."""
    for directory in idx_directories(root, folder):
        found = {}
        for key, stem in IDX_FILES.items():
            found[key] = next((directory / n for n in (stem + ".gz", stem) if (directory / n).is_file()), None)
        if all(found.values()) and (accept is None or accept(found)):
            return found
    return None


# --------------------------------------------------------------------------------------
# CIFAR-10
# --------------------------------------------------------------------------------------
CIFAR10_FOLDER = "cifar-10-batches-py"
CIFAR10_ARCHIVE = "cifar-10-python.tar.gz"
CIFAR10_TRAIN_BATCHES = tuple(f"data_batch_{k}" for k in range(1, 6))
CIFAR10_TEST_BATCH = "test_batch"
CIFAR10_META = "batches.meta"
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
_CIFAR_PIXELS = 3 * 32 * 32


def _numpy_globals() -> Dict[Tuple[str, str], object]:
    # numpy 2 moved numpy.core to numpy._core; the official files (pickled by numpy 1.x
    # under Python 2) name the old module. Resolve both to the real functions here rather
    # than importing names found in the file.
    core = getattr(np, "_core", None) or np.core
    allowed = {
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("_codecs", "encode"): __import__("codecs").encode,  # bytes in protocol-2 pickles
    }
    for module in ("numpy.core", "numpy._core"):
        allowed[(module + ".multiarray", "_reconstruct")] = core.multiarray._reconstruct
        allowed[(module + ".multiarray", "scalar")] = core.multiarray.scalar
        allowed[(module + ".numeric", "_frombuffer")] = core.numeric._frombuffer
    return allowed


class _ArrayUnpickler(pickle.Unpickler):
    """An unpickler that can build numpy arrays and builtin containers, nothing else."""

    _allowed = None

    def find_class(self, module, name):
        if _ArrayUnpickler._allowed is None:
            _ArrayUnpickler._allowed = _numpy_globals()
        try:
            return _ArrayUnpickler._allowed[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}: not part of a CIFAR batch") from None


def _unpickle(data: bytes, source: str) -> dict:
    try:
        obj = _ArrayUnpickler(io.BytesIO(data), encoding="bytes").load()
    except Exception as error:  # noqa: BLE001 - any failure to parse means a damaged file
        raise CorruptDataError(f"{source}: not a readable CIFAR pickle ({type(error).__name__}: {error})") from None
    if not isinstance(obj, dict):
        raise CorruptDataError(f"{source}: expected a pickled dict, found {type(obj).__name__}")
    return obj


def _field(batch: dict, key: str, source: str):
    for candidate in (key.encode(), key):
        if candidate in batch:
            return batch[candidate]
    raise CorruptDataError(f"{source}: the batch has no {key!r} entry (keys: {sorted(map(repr, batch))})")


def read_cifar_batch(data: bytes, source: str, num_classes: int = 10) -> Tuple[np.ndarray, np.ndarray]:
    """Parse one pickled CIFAR batch: images ``(N, 3, 32, 32)`` uint8 and labels ``(N,)`` int64.

    Args:
        data: the pickle's bytes.
        source: the file's name, for error messages.
        num_classes: labels must be in ``0..num_classes-1``.
    """
    batch = _unpickle(data, source)
    images = _field(batch, "data", source)
    labels = _field(batch, "labels", source)
    if (not isinstance(images, np.ndarray) or images.dtype != np.uint8 or images.ndim != 2
            or images.shape[1] != _CIFAR_PIXELS):
        described = f"{type(images).__name__} {getattr(images, 'dtype', '')} {getattr(images, 'shape', '')}"
        raise CorruptDataError(f"{source}: 'data' must be a uint8 array (N, {_CIFAR_PIXELS}); found {described}")
    try:
        labels = np.asarray(labels)
    except Exception:  # noqa: BLE001
        raise CorruptDataError(f"{source}: 'labels' is not a list of integers") from None
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise CorruptDataError(f"{source}: 'labels' must be a list of integers; found {labels.dtype} {labels.shape}")
    if len(labels) != len(images):
        raise CorruptDataError(f"{source}: {len(images)} images but {len(labels)} labels")
    labels = labels.astype(np.int64)
    if len(labels) and (labels.min() < 0 or labels.max() >= num_classes):
        raise CorruptDataError(f"{source}: labels must be in 0..{num_classes - 1}; found {labels.min()}..{labels.max()}")
    return images.reshape(-1, 3, 32, 32), labels


def _read_meta(data: bytes, source: str) -> Tuple[str, ...]:
    meta = _unpickle(data, source)
    names = _field(meta, "label_names", source)
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, (bytes, str)) for n in names):
        raise CorruptDataError(f"{source}: 'label_names' must be a list of strings")
    return tuple(n.decode("utf-8", "replace") if isinstance(n, bytes) else n for n in names)


def _cifar_parts_from_folder(folder: Path) -> Dict[str, bytes]:
    parts = {}
    for name in CIFAR10_TRAIN_BATCHES + (CIFAR10_TEST_BATCH, CIFAR10_META):
        path = folder / name
        if path.is_file():
            parts[name] = path.read_bytes()
    return parts


def _cifar_parts_from_archive(archive: Path) -> Dict[str, bytes]:
    wanted = {f"{CIFAR10_FOLDER}/{name}": name
              for name in CIFAR10_TRAIN_BATCHES + (CIFAR10_TEST_BATCH, CIFAR10_META)}
    parts = {}
    try:
        # Members are read in place; nothing is extracted, so no path in the archive
        # can write anywhere.
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                name = wanted.get(member.name.lstrip("./"))
                if name is not None and member.isfile():
                    stream = tar.extractfile(member)
                    parts[name] = stream.read()
                    if len(parts[name]) != member.size:
                        raise EOFError(f"member {member.name} is truncated")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as error:
        raise CorruptDataError(
            f"{archive}: damaged archive ({type(error).__name__}: {error}); delete it and fetch it again"
        ) from None
    return parts


def cifar10_folder_complete(root: PathLike) -> bool:
    """Whether ``<root>/cifar-10-batches-py`` holds the five training batches and the test batch."""
    folder = Path(root) / CIFAR10_FOLDER
    return all((folder / n).is_file() for n in CIFAR10_TRAIN_BATCHES + (CIFAR10_TEST_BATCH,))


def find_cifar10(root: PathLike) -> Optional[Path]:
    """Where CIFAR-10 is read from: the extracted ``<root>/cifar-10-batches-py`` when complete,
    else the archive ``<root>/cifar-10-python.tar.gz`` (read in place), else None."""
    root = Path(root)
    if cifar10_folder_complete(root):
        return root / CIFAR10_FOLDER
    return root / CIFAR10_ARCHIVE if (root / CIFAR10_ARCHIVE).is_file() else None


def read_cifar10(source: PathLike, num_classes: int = 10
                 ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Tuple[str, ...]]:
    """Read CIFAR-10 (python version) from its extracted folder or its ``.tar.gz`` archive.

    Args:
        source: the ``cifar-10-batches-py`` folder or the ``cifar-10-python.tar.gz`` file.
        num_classes: labels must be in ``0..num_classes-1``.

    Returns:
        ``x_train (50000, 3, 32, 32) uint8, y_train (50000,) int64, x_test, y_test, classes``
        (class names from ``batches.meta`` when present, else the official ones).

    Raises:
        MissingDataError: ``source`` does not exist.
        CorruptDataError: a batch missing from the folder or archive, or any damaged file.
    """
    source = Path(source)
    if source.is_dir():
        parts = _cifar_parts_from_folder(source)
        where = lambda name: str(source / name)  # noqa: E731
    elif source.is_file():
        parts = _cifar_parts_from_archive(source)
        where = lambda name: f"{source}:{CIFAR10_FOLDER}/{name}"  # noqa: E731
    else:
        raise MissingDataError(f"{source} does not exist")
    missing = [n for n in CIFAR10_TRAIN_BATCHES + (CIFAR10_TEST_BATCH,) if n not in parts]
    if missing:
        raise CorruptDataError(
            f"{source}: incomplete CIFAR-10 copy, missing {', '.join(missing)}; fetch "
            f"{CIFAR10_ARCHIVE} again"
        )
    train = [read_cifar_batch(parts[n], where(n), num_classes) for n in CIFAR10_TRAIN_BATCHES]
    x_test, y_test = read_cifar_batch(parts[CIFAR10_TEST_BATCH], where(CIFAR10_TEST_BATCH), num_classes)
    classes = _read_meta(parts[CIFAR10_META], where(CIFAR10_META)) if CIFAR10_META in parts else CIFAR10_CLASSES
    if len(classes) != num_classes:
        raise CorruptDataError(f"{where(CIFAR10_META)}: {len(classes)} class names, expected {num_classes}")
    x_train = np.concatenate([x for x, _ in train])
    y_train = np.concatenate([y for _, y in train])
    return x_train, y_train, x_test, y_test, classes
