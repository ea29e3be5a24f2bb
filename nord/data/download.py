"""Downloading data set files, each verified against its MD5 checksum (stdlib only).

The official locations and checksums are constants here. A mirror replaces the base
URL, by argument or by the ``NORD_DATA_MIRROR`` environment variable; a file is fetched
from ``<base>/<file name>``, and ``{name}`` in a mirror is replaced by the data set's
name (``mnist``, ``fashion-mnist``, ``cifar10``), so one mirror can serve several::

    export NORD_DATA_MIRROR=http://fileserver.cluster/datasets/{name}/

    from nord.data.download import MNIST_MD5, MNIST_URLS, download_files
    download_files(MNIST_MD5, "data/MNIST/raw", base_urls(MNIST_URLS, name="mnist"))

A file is written to a temporary name next to its destination and renamed only when
its checksum matches, so a failed or concurrent download (several MPI ranks) never
leaves a partial file under the real name.
"""
from __future__ import annotations

import hashlib
import http.client
import logging
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from nord.errors import ConfigurationError, CorruptDataError, DataError

logger = logging.getLogger(__name__)

__all__ = [
    "MIRROR_ENV",
    "ROOT_ENV",
    "MNIST_URLS",
    "MNIST_MD5",
    "FASHION_MNIST_URLS",
    "FASHION_MNIST_MD5",
    "CIFAR10_URLS",
    "CIFAR10_MD5",
    "default_root",
    "base_urls",
    "file_md5",
    "download_file",
    "download_files",
]

PathLike = Union[str, os.PathLike]

MIRROR_ENV = "NORD_DATA_MIRROR"
"""Environment variable: base URL used instead of the official ones."""

ROOT_ENV = "NORD_DATA_ROOT"
"""Environment variable: the default data directory of file-based curators."""

# Official locations, tried in order (the first MNIST one is the mirror PyTorch uses,
# as the original site often refuses automated downloads).
MNIST_URLS: Tuple[str, ...] = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "http://yann.lecun.com/exdb/mnist/",
)
MNIST_MD5 = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}

FASHION_MNIST_URLS: Tuple[str, ...] = ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",)
FASHION_MNIST_MD5 = {
    "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
    "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
    "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
    "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
}

CIFAR10_URLS: Tuple[str, ...] = ("https://www.cs.toronto.edu/~kriz/",)
CIFAR10_MD5 = {
    # the archive that is downloaded ...
    "cifar-10-python.tar.gz": "c58f30108f718f92721af3b95e74349a",
    # ... and the files inside it, to check an extracted copy
    "data_batch_1": "c99cafc152244af753f735de768cd75f",
    "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
    "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
    "data_batch_4": "634d18415352ddfa80567beed471001a",
    "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
    "test_batch": "40351d587109b95175f43aff81a1287e",
    "batches.meta": "5ff9c542aee3614f3951f8cda6e48888",
}

_CHUNK = 1 << 20


def default_root() -> Path:
    """``$NORD_DATA_ROOT``, else ``~/.cache/nord/data``."""
    return Path(os.environ.get(ROOT_ENV) or Path.home() / ".cache" / "nord" / "data").expanduser()


def base_urls(defaults: Sequence[str], mirror: Optional[str] = None, name: str = "") -> Tuple[str, ...]:
    """The base URLs to try: ``mirror``, else ``$NORD_DATA_MIRROR``, else ``defaults``.

    ``{name}`` in a mirror is replaced by ``name``.
    """
    chosen = mirror or os.environ.get(MIRROR_ENV)
    if chosen:
        return (chosen.replace("{name}", name),)
    return tuple(defaults)


def _join(base: str, file_name: str) -> str:
    return base if base.endswith(file_name) else base.rstrip("/") + "/" + file_name


def file_md5(path: PathLike) -> str:
    """Hex MD5 of a file, read in chunks (the official checksums are MD5: integrity, not security)."""
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download_file(url: str, destination: PathLike, md5: str, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``destination`` if its MD5 is ``md5``.

    Args:
        url: what to fetch (http, https or file).
        destination: the final path; its folder is created.
        md5: expected hex MD5; a download is never kept unverified.
        timeout: seconds without progress before giving up.

    Returns:
        ``destination``.

    Raises:
        CorruptDataError: the checksum does not match; the partial file is deleted.
        DataError: the download failed (network, HTTP status); nothing is left behind.
    """
    if not md5:
        raise ConfigurationError(f"no checksum given for {url}; nord keeps no unverified download")
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=destination.name + ".", suffix=".part", dir=destination.parent)
    temporary = Path(temporary)
    digest = hashlib.md5(usedforsecurity=False)
    received = 0
    try:
        with os.fdopen(handle, "wb") as out:
            request = urllib.request.Request(url, headers={"User-Agent": "nord-data/0.1"})
            with urllib.request.urlopen(request, timeout=timeout) as response:
                for chunk in iter(lambda: response.read(_CHUNK), b""):
                    out.write(chunk)
                    digest.update(chunk)
                    received += len(chunk)
        got = digest.hexdigest()
        if got != md5.lower():
            raise CorruptDataError(
                f"downloaded {url} ({received} bytes) has MD5 {got}, expected {md5}; the partial file was "
                f"deleted. The server sent a different or damaged file: try again, or another mirror "
                f"(argument mirror=... or ${MIRROR_ENV})."
            )
        os.replace(temporary, destination)
    except CorruptDataError:
        temporary.unlink(missing_ok=True)
        raise
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as error:
        temporary.unlink(missing_ok=True)
        raise DataError(f"could not download {url}: {error}") from error
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    logger.info("downloaded %s (%d bytes) to %s", url, received, destination)
    return destination


def download_files(checksums: Mapping[str, str], directory: PathLike, urls: Sequence[str],
                   names: Optional[Iterable[str]] = None, timeout: float = 60.0) -> List[Path]:
    """Download several files into ``directory``, trying the base ``urls`` in order.

    Args:
        checksums: file name -> expected MD5.
        directory: where the files go.
        urls: base URLs; a file is ``<base>/<file name>``. The next base is tried only
            when a download fails, never after a checksum mismatch.
        names: which files of ``checksums`` to fetch (default all).
        timeout: per-request timeout in seconds.

    Raises:
        CorruptDataError: a checksum mismatch.
        DataError: a file could be fetched from none of the URLs.
    """
    directory = Path(directory)
    paths = []
    for file_name in (list(checksums) if names is None else list(names)):
        if file_name not in checksums:
            raise ConfigurationError(f"no checksum known for {file_name!r}; give one in the checksum table")
        failures = []
        for base in urls:
            url = _join(base, file_name)
            try:
                paths.append(download_file(url, directory / file_name, checksums[file_name], timeout))
                break
            except CorruptDataError:
                raise
            except DataError as error:
                logger.warning("%s", error)
                failures.append(str(error))
        else:
            raise DataError(f"could not download {file_name}: " + "; ".join(failures))
    return paths
