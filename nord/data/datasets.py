"""Curators of file-based data sets: MNIST, Fashion-MNIST and CIFAR-10, in their official formats.

::

    from nord.data import CIFAR10, MNIST

    mnist = MNIST("data")                    # data/MNIST/raw/train-images-idx3-ubyte.gz, ...
    cifar = CIFAR10("data", download=True)   # data/cifar-10-python.tar.gz, fetched and verified

Details (where files are looked for, downloads, checksums): docs/data.md.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

from nord.data.curator import DataCurator, RawData
from nord.data.download import (
    CIFAR10_MD5,
    CIFAR10_URLS,
    FASHION_MNIST_MD5,
    FASHION_MNIST_UNPACKED_MD5,
    FASHION_MNIST_URLS,
    MIRROR_HINT,
    MNIST_MD5,
    MNIST_UNPACKED_MD5,
    MNIST_URLS,
    base_urls,
    default_root,
    download_command,
    download_files,
    file_md5,
    gunzipped_md5,
)
from nord.data.files import (
    CIFAR10_ARCHIVE,
    CIFAR10_CLASSES,
    CIFAR10_FOLDER,
    CIFAR10_TEST_BATCH,
    CIFAR10_TRAIN_BATCHES,
    FASHION_MNIST_FOLDER,
    IDX_FILES,
    MNIST_FOLDER,
    check_idx_layout,
    cifar10_folder_complete,
    find_idx_files,
    idx_directories,
    read_cifar10,
    read_idx_pair,
)
from nord.errors import ConfigurationError, CorruptDataError, DataError, MissingDataError

logger = logging.getLogger(__name__)

__all__ = ["FileCurator", "MNIST", "FashionMNIST", "CIFAR10"]

PathLike = Union[str, os.PathLike]


class FileCurator(DataCurator):
    """Shared parts of curators that read files: root, download, mirror, checksums.

    Args:
        root: data directory; default ``$NORD_DATA_ROOT`` or ``~/.cache/nord/data``.
        download: fetch missing files from ``mirror`` or the official URLs.
        mirror: base URL replacing the official ones (``{name}`` is replaced by the data
            set's name); default ``$NORD_DATA_MIRROR``.
        checksums: file name -> MD5, replacing the official table (for a mirror with other
            files, or tests); it must name every file that is read.
        verify: check files that have a checksum in the table on every load.
        timeout: seconds per download request.
        normalise, valid_fraction, split_seed: see :class:`~nord.data.curator.DataCurator`.
    """

    default_urls: Tuple[str, ...] = ()
    default_checksums: Mapping[str, str] = {}

    def __init__(self, root: Optional[PathLike] = None, download: bool = False, mirror: Optional[str] = None,
                 checksums: Optional[Mapping[str, str]] = None, verify: bool = True, timeout: float = 60.0,
                 normalise: bool = True, valid_fraction: float = 0.1, split_seed: int = 0):
        super().__init__(normalise=normalise, valid_fraction=valid_fraction, split_seed=split_seed)
        self.root = Path(root).expanduser() if root is not None else default_root()
        self.download = bool(download)
        self.mirror = mirror
        self.checksums = dict(self.default_checksums if checksums is None else checksums)
        self.own_checksums = checksums is not None
        self.verify = bool(verify)
        self.timeout = float(timeout)
        self.files: Dict[str, str] = {}   # each file read (relative to root) -> its MD5

    def describe(self) -> Dict[str, object]:
        """:meth:`DataCurator.describe`, with ``files``: the MD5 of every file the data was
        read from (by path below ``root``): what a run records, so that a resume on other
        data is refused, naming the file. Loads the data set."""
        described = super().describe()
        return {**described, "files": dict(self.files)}

    def urls(self) -> Tuple[str, ...]:
        """Base URLs that downloads try, in order."""
        return base_urls(self.default_urls, self.mirror, self.name)

    def _fetch_hint(self) -> str:
        """How to fetch the files, in the words of the command line and of Python."""
        return (f"run `{download_command(self.name, self.root)}` (download=True in Python; a mirror by "
                f"{MIRROR_HINT})")

    def _verify(self, path: Path) -> None:
        """Note the MD5 of a file that is read (:attr:`files`) and check it against the table."""
        got = file_md5(path)
        try:
            name = path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            name = str(path)
        self.files[name] = got
        if not self.verify:
            return
        expected = self.checksums.get(path.name)
        if not expected:
            # a file the official table checks must be checked by a table given instead
            if self.own_checksums and path.name in self.default_checksums:
                raise ConfigurationError(
                    f"{path} is read, but the checksums given (--data-checksums, checksums= in Python) "
                    f"have no MD5 for {path.name}; add a line '<md5>  {path.name}' as md5sum writes it")
            if not self.own_checksums:
                logger.warning(
                    "%s has no official MD5 (the %s table names %s), so it was read unchecked; "
                    "a run records its MD5 %s. Check it with --data-checksums FILE", path,
                    self.name, ", ".join(sorted(self.default_checksums)), got)
            return
        if got == expected.lower():
            return
        if self.own_checksums:
            what = (f"differs from {expected}, its MD5 in the checksums given (--data-checksums, "
                    "checksums= in Python); the file is damaged or not the one they describe")
        else:
            unpacked = gunzipped_md5(path) if path.suffix == ".gz" else None
            if unpacked is not None and unpacked == self.checksums.get(path.stem, "").lower():
                # a packager's recompressed copy (Debian's): its content is the official file
                logger.info("%s is not the official archive but unpacks to the official %s "
                            "(MD5 %s)", path, path.stem, unpacked)
                return
            self._refuse_another_data_set(path, got, unpacked)
            what = (f"differs from the expected {expected}; the file is damaged or not the {self.name} "
                    "file")
        raise CorruptDataError(
            f"{path}: MD5 {got} {what}. Delete it and {self._fetch_hint()}; or load it as it is with "
            "verify=False (Python only: the command line always verifies)."
            + ("" if self.own_checksums else " Files from a mirror whose files differ are checked "
               "against its MD5s with --data-checksums FILE (checksums= in Python).")
        )

    def _refuse_another_data_set(self, path: Path, got: str, unpacked: Optional[str]) -> None:
        """Raise CorruptDataError if ``path`` (MD5 ``got``; ``unpacked``: what a ``.gz``
        unpacks to) is another data set's official file (MNIST's and Fashion-MNIST's share
        their names): it is not to be deleted but moved."""
        found = _official_file(got) or (unpacked and _official_file(unpacked))
        if not found or found[0] is type(self):
            return
        other = found[0](root=self.root)
        place = other.directories()[0] if hasattr(other, "directories") else self.root
        raise CorruptDataError(
            f"{path} holds {other.name}'s official {found[1]}, not {self.name}'s: the folder "
            f"holds {other.name}. Do not delete it: move {other.name}'s files to {place} (where "
            f"{other.name} looks first), then {self._fetch_hint()}")

    def _fetch(self, names: Sequence[str], directory: Path) -> None:
        try:
            download_files(self.checksums, directory, self.urls(), names=names, timeout=self.timeout)
        except CorruptDataError:
            raise
        except DataError as error:
            raise MissingDataError(f"{self._missing_message()}\nThe download failed: {error}") from error

    def _missing_message(self) -> str:  # pragma: no cover - overridden
        return f"{self.name}: files not found under {self.root}"


class _IdxCurator(FileCurator):
    """MNIST-style data: four IDX files, 28x28 grey images."""

    folder: str = ""
    class_names: Tuple[str, ...] = ()
    stems = IDX_FILES
    official_shapes = {"train_images": (60000, 28, 28), "train_labels": (60000,),
                       "test_images": (10000, 28, 28), "test_labels": (10000,)}
    """The shape of each official file (MNIST and Fashion-MNIST alike): what an unpacked copy
    must hold (checked before its MD5, to name what is wrong with a damaged one)."""

    def directories(self) -> List[Path]:
        """Folders searched, in order; the first is where downloads go."""
        return idx_directories(self.root, self.folder)

    @staticmethod
    def _in(directory: Path, stem: str) -> Optional[Path]:
        for name in (stem + ".gz", stem):
            if (directory / name).is_file():
                return directory / name
        return None

    def find_files(self) -> Optional[Dict[str, Path]]:
        """The four files from the first folder that holds all of them, or None."""
        return find_idx_files(self.root, self.folder)

    def _missing_message(self) -> str:
        target = self.directories()[0]
        urls = self.urls()
        names = [stem + ".gz" for stem in self.stems.values()]
        looked = ", ".join(str(d) for d in self.directories())
        links = "\n".join(f"  {urls[0].rstrip('/')}/{n}" for n in names) if urls else ""
        return (
            f"{type(self).__name__}: files not found. Expected {', '.join(names)} (or the same without .gz) "
            f"together in one of: {looked}.\nPut them in {target}, from:\n{links}\n"
            f"or {self._fetch_hint()}."
        )

    def _load(self) -> RawData:
        found = self.find_files()
        if found is None:
            if not self.download:
                raise MissingDataError(self._missing_message())
            target = self.directories()[0]
            absent = [stem + ".gz" for stem in self.stems.values() if self._in(target, stem) is None]
            self._fetch(absent, target)
            found = self.find_files()
            if found is None:  # pragma: no cover - download_files raises first
                raise MissingDataError(self._missing_message())
        for key, path in found.items():
            if self.verify and path.suffix != ".gz" and not self.own_checksums:
                # an unpacked copy of the official file: a damaged one is refused for what is
                # wrong with it (truncated, another shape) before its MD5 is compared
                check_idx_layout(path, self.official_shapes[key])
            self._verify(path)
        n = len(self.class_names)
        x_train, y_train = read_idx_pair(found["train_images"], found["train_labels"], n)
        x_test, y_test = read_idx_pair(found["test_images"], found["test_labels"], n)
        if x_train.shape[1:] != x_test.shape[1:]:
            raise CorruptDataError(
                f"{found['train_images']} holds {x_train.shape[1:]} images but {found['test_images']} "
                f"holds {x_test.shape[1:]}; they come from different data sets"
            )
        logger.info("%s: read %d train and %d test images from %s", self.name, len(x_train), len(x_test),
                    found["train_images"].parent)
        return RawData(x_train, y_train, x_test, y_test, classes=self.class_names, scale=1 / 255)


class MNIST(_IdxCurator):
    """MNIST handwritten digits: 60,000 + 10,000 grey 28x28 images, 10 classes (IDX files).

    Arguments: see :class:`FileCurator`.
    """

    name = "mnist"
    folder = MNIST_FOLDER
    class_names = tuple(str(k) for k in range(10))
    default_urls = MNIST_URLS
    default_checksums = {**MNIST_MD5, **MNIST_UNPACKED_MD5}


class FashionMNIST(_IdxCurator):
    """Fashion-MNIST: 60,000 + 10,000 grey 28x28 images of clothes, 10 classes (IDX files).

    Arguments: see :class:`FileCurator`.
    """

    name = "fashion-mnist"
    folder = FASHION_MNIST_FOLDER
    class_names = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
                   "Bag", "Ankle boot")
    default_urls = FASHION_MNIST_URLS
    default_checksums = {**FASHION_MNIST_MD5, **FASHION_MNIST_UNPACKED_MD5}


class CIFAR10(FileCurator):
    """CIFAR-10: 50,000 + 10,000 colour 32x32 images, 10 classes (the python version).

    Arguments: see :class:`FileCurator`.
    """

    name = "cifar10"
    default_urls = CIFAR10_URLS
    default_checksums = CIFAR10_MD5

    @property
    def folder(self) -> Path:
        return self.root / CIFAR10_FOLDER

    @property
    def archive(self) -> Path:
        return self.root / CIFAR10_ARCHIVE

    def _folder_complete(self) -> bool:
        return cifar10_folder_complete(self.root)

    def _missing_message(self) -> str:
        urls = self.urls()
        link = f"{urls[0].rstrip('/')}/{CIFAR10_ARCHIVE}" if urls else CIFAR10_ARCHIVE
        partial = (f" ({self.folder} exists but lacks some of data_batch_1..5, test_batch)"
                   if self.folder.is_dir() else "")
        return (
            f"CIFAR10: files not found. Expected the extracted folder {self.folder} (data_batch_1..5, "
            f"test_batch, batches.meta) or the archive {self.archive}{partial}.\n"
            f"Download {link} into {self.root}, or {self._fetch_hint()}."
        )

    def _load(self) -> RawData:
        if self._folder_complete():
            source = self.folder
            for name in CIFAR10_TRAIN_BATCHES + (CIFAR10_TEST_BATCH, "batches.meta"):
                if (self.folder / name).is_file():
                    self._verify(self.folder / name)
        else:
            if not self.archive.is_file():
                if not self.download:
                    raise MissingDataError(self._missing_message())
                self._fetch([CIFAR10_ARCHIVE], self.root)
            source = self.archive
            self._verify(self.archive)
        x_train, y_train, x_test, y_test, classes = read_cifar10(source, num_classes=len(CIFAR10_CLASSES))
        logger.info("cifar10: read %d train and %d test images from %s", len(x_train), len(x_test), source)
        return RawData(x_train, y_train, x_test, y_test, classes=classes, scale=1 / 255)


def _official_file(md5: str):
    """``(curator class, file name)`` of the official file with this MD5, or None."""
    for cls in (MNIST, FashionMNIST, CIFAR10):
        for name, known in cls.default_checksums.items():
            if known == md5:
                return cls, name
    return None
