"""Downloading data set files, resumable and verified against their MD5 checksums (stdlib only).

The official locations and checksums are constants here. A mirror replaces the base
URL, by argument or by the ``NORD_DATA_MIRROR`` environment variable::

    from nord.data.download import MNIST_MD5, MNIST_URLS, base_urls, download_files
    download_files(MNIST_MD5, "data/MNIST/raw", base_urls(MNIST_URLS, name="mnist"))

On the command line: ``nord data download mnist --root data``.
Details (mirrors, ``.part`` files, resuming, several ranks): docs/data.md.
"""
from __future__ import annotations

import errno
import gzip
import hashlib
import http.client
import logging
import os
import re
import shlex
import shutil
import socket
import urllib.error
import urllib.parse
import urllib.request
import zlib
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from nord.errors import ConfigurationError, CorruptDataError, DataError

try:  # POSIX; elsewhere concurrent downloads of one file are not serialised
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

logger = logging.getLogger(__name__)

__all__ = [
    "MIRROR_ENV",
    "ROOT_ENV",
    "MIRROR_HINT",
    "MNIST_URLS",
    "MNIST_MD5",
    "MNIST_UNPACKED_MD5",
    "FASHION_MNIST_URLS",
    "FASHION_MNIST_MD5",
    "FASHION_MNIST_UNPACKED_MD5",
    "CIFAR10_URLS",
    "CIFAR10_MD5",
    "DownloadProgress",
    "default_root",
    "base_urls",
    "download_command",
    "file_md5",
    "gunzipped_md5",
    "format_bytes",
    "read_checksums",
    "download_file",
    "download_files",
]

PathLike = Union[str, os.PathLike]

MIRROR_ENV = "NORD_DATA_MIRROR"
"""Environment variable: base URL used instead of the official ones."""

ROOT_ENV = "NORD_DATA_ROOT"
"""Environment variable: the default data directory of file-based curators."""

MIRROR_HINT = f"--mirror URL on the command line, mirror=... in Python, or ${MIRROR_ENV}"
"""How a mirror is given, in the words of both the command line and Python (for messages)."""

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
MNIST_UNPACKED_MD5 = {
    "train-images-idx3-ubyte": "6bbc9ace898e44ae57da46a324031adb",
    "train-labels-idx1-ubyte": "a25bea736e30d166cdddb491f175f624",
    "t10k-images-idx3-ubyte": "2646ac647ad5339dbf082846283269ea",
    "t10k-labels-idx1-ubyte": "27ae3e4e09519cfbb04c329615203637",
}
"""What the official ``.gz`` files unpack to (``gunzip``), to check an unpacked copy."""

FASHION_MNIST_URLS: Tuple[str, ...] = ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",)
FASHION_MNIST_MD5 = {
    "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
    "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
    "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
    "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
}
FASHION_MNIST_UNPACKED_MD5 = {
    "train-images-idx3-ubyte": "f4a8712d7a061bf5bd6d2ca38dc4d50a",
    "train-labels-idx1-ubyte": "9018921c3c673c538a1fc5bad174d6f9",
    "t10k-images-idx3-ubyte": "8181f5470baa50b63fa0f6fddb340f0a",
    "t10k-labels-idx1-ubyte": "15d484375f8d13e6eb1aabb0c3f46965",
}
"""What the official ``.gz`` files unpack to (``gunzip``), to check an unpacked copy."""

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
_MD5_LINE = re.compile(r"^([0-9a-fA-F]{32})\s+\*?(.+?)\s*$")
_CONTENT_RANGE = re.compile(r"^\s*bytes\s+(?:(\d+)-(\d+)|\*)/(\d+|\*)\s*$")


class DownloadProgress:
    """What a download reports while it runs; every method here does nothing.

    Subclass it to show progress (nord's command line draws a bar on a terminal and
    writes a line every few seconds elsewhere) and pass an instance as ``progress=``.
    """

    def present(self, file_name: str, path: Path) -> None:
        """``path`` is already in place with the expected checksum: nothing is downloaded."""

    def note(self, file_name: str, message: str) -> None:
        """Something worth telling (waiting for another process, starting over, ...)."""

    def start(self, file_name: str, url: str, offset: int, total: Optional[int]) -> None:
        """A transfer begins at byte ``offset`` (> 0: resumed) of ``total`` (None: unknown)."""

    def advance(self, count: int) -> None:
        """``count`` more bytes were written."""

    def finish(self, file_name: str, path: Path) -> None:
        """The file is complete, its checksum matches, and it is in place at ``path``."""


def default_root() -> Path:
    """``$NORD_DATA_ROOT``, else ``~/.cache/nord/data``."""
    return Path(os.environ.get(ROOT_ENV) or Path.home() / ".cache" / "nord" / "data").expanduser()


def base_urls(defaults: Sequence[str], mirror: Optional[str] = None, name: str = "") -> Tuple[str, ...]:
    """The base URLs to try: ``mirror``, else ``$NORD_DATA_MIRROR``, else ``defaults``.

    ``{name}`` in a mirror is replaced by ``name``.
    """
    chosen = mirror or os.environ.get(MIRROR_ENV)
    if chosen:
        if urllib.parse.urlsplit(chosen).scheme.lower() not in ("http", "https", "file"):
            given = "--mirror" if mirror else f"${MIRROR_ENV}"
            raise ConfigurationError(
                f"{given} {chosen!r} is not a URL nord can download from; give one that starts "
                "with http://, https:// or file://")
        return (chosen.replace("{name}", name),)
    return tuple(defaults)


def download_command(name: str, root: Optional[PathLike] = None) -> str:
    """The shell command that downloads data set ``name`` into ``root``, for messages."""
    command = f"nord data download {name}"
    return command if root is None else f"{command} --root {shlex.quote(str(root))}"


def _join(base: str, file_name: str) -> str:
    return base if base.endswith(file_name) else base.rstrip("/") + "/" + file_name


def _stream_md5(stream: BinaryIO) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    for chunk in iter(lambda: stream.read(_CHUNK), b""):
        digest.update(chunk)
    return digest.hexdigest()


def file_md5(path: PathLike) -> str:
    """Hex MD5 of a file, read in chunks (the official checksums are MD5: integrity, not security)."""
    with open(path, "rb") as stream:
        return _stream_md5(stream)


def gunzipped_md5(path: PathLike) -> Optional[str]:
    """Hex MD5 of what a ``.gz`` file unpacks to; None when it is not a whole gzip file."""
    try:
        with gzip.open(path, "rb") as stream:
            return _stream_md5(stream)
    except (OSError, EOFError, zlib.error):
        return None


def read_checksums(path: PathLike) -> Dict[str, str]:
    """File name -> MD5 from a file in the format ``md5sum`` writes (``<md5>  <name>``).

    Only the last part of each name counts (``mnist/t10k-labels-idx1-ubyte.gz`` gives
    ``t10k-labels-idx1-ubyte.gz``); empty lines and lines starting with ``#`` are skipped.

    Raises:
        ConfigurationError: a line that is not ``<32 hex digits> <name>``, or a name given
            two different checksums.
        OSError: the file cannot be read.
    """
    table: Dict[str, str] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _MD5_LINE.match(line.strip())
        if match is None:
            raise ConfigurationError(
                f"{path}, line {number}: expected '<md5> <file name>' as md5sum writes it; got {line.strip()!r}")
        md5, name = match.group(1).lower(), match.group(2).replace("\\", "/").rsplit("/", 1)[-1]
        if table.get(name, md5) != md5:
            raise ConfigurationError(f"{path} gives {name} two checksums ({table[name]} and {md5}); keep one")
        table[name] = md5
    return table


# ---------------------------------------------------------------------------------------------
# one file
# ---------------------------------------------------------------------------------------------
def format_bytes(count: Optional[float]) -> str:
    """A size for people: ``'512 bytes'``, ``'170.5 MB'`` (powers of 1000), ``'? bytes'`` for None."""
    if count is None:
        return "? bytes"
    for unit in ("bytes", "kB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1000
    return ""  # pragma: no cover


def _matches(path: Path, md5: str) -> bool:
    return path.is_file() and file_md5(path) == md5


def _lock(stream: BinaryIO, wait: bool) -> bool:
    """Take the exclusive lock on ``stream``'s file; False when another process holds it."""
    if fcntl is None:  # pragma: no cover - Windows
        return True
    try:
        fcntl.flock(stream.fileno(), fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except OSError as error:
        if error.errno in (errno.EAGAIN, errno.EACCES) and not wait:
            return False
        # a file system without locks (some network file systems): go on unlocked
        logger.debug("no lock on %s (%s); concurrent downloads of it are not serialised", stream.name, error)
    return True


@contextmanager
def _closed_at_the_end(stream: BinaryIO):
    """Close ``stream`` when the block ends. Closing flushes what the stream still buffers; after
    a failure that is what a full disk refused a moment ago, and the second refusal would hide
    the first (the one that says what was kept and what to do), so it is dropped."""
    try:
        yield stream
    except BaseException:
        with suppress(OSError):
            stream.close()
        raise
    stream.close()


def _claim(part: Path, destination: Path, md5: str, progress: DownloadProgress) -> Optional[BinaryIO]:
    """The ``.part`` file, open for appending under an exclusive lock; None when the destination
    turned up complete while this process waited for the lock."""
    while True:
        if _matches(destination, md5):
            return None
        stream = open(part, "a+b")
        try:
            if not _lock(stream, wait=False):
                progress.note(destination.name, "another process is downloading it; waiting for it to finish")
                _lock(stream, wait=True)
            if not (part.exists() and os.path.samestat(os.fstat(stream.fileno()), part.stat())):
                stream.close()   # the holder renamed or deleted the .part before it let go: look again
                continue
            if not _matches(destination, md5):
                return stream
            # another process finished between the first look and the open
            if os.fstat(stream.fileno()).st_size == 0:
                part.unlink(missing_ok=True)
            stream.close()
            return None
        except BaseException:
            stream.close()
            raise


def _content_range(header: Optional[str]) -> Tuple[Optional[int], Optional[int]]:
    """(first byte, total size) of a ``Content-Range`` header; None where it does not say."""
    match = _CONTENT_RANGE.match(header or "")
    if match is None:
        return None, None
    first = int(match.group(1)) if match.group(1) is not None else None
    total = int(match.group(3)) if match.group(3) != "*" else None
    return first, total


def _length(response) -> Optional[int]:
    value = response.headers.get("Content-Length")
    return int(value) if value and value.strip().isdigit() else None


class _LocalError(DataError):
    """The disk, not the server, failed: another URL would not help."""


def _file_error(error: OSError, path: Path) -> DataError:
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return _LocalError(f"the disk holding {path.parent} is full ({error.strerror}). Free some space, or "
                           "download into another root (--root DIR on the command line, root=... in Python)")
    return _LocalError(f"cannot write {path}: {error.strerror or error}. Choose a data root you can write "
                       "(--root DIR on the command line, root=... in Python)")


def _open(url: str, offset: int, timeout: float):
    headers = {"User-Agent": "nord-data/0.1"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)


def _network_error(url: str, error: BaseException, timeout: float) -> DataError:
    if isinstance(error, urllib.error.HTTPError):
        return DataError(f"{url}: the server answered {error.code} {error.reason}")
    if isinstance(error, ValueError):
        return DataError(f"{url} is not a URL nord can fetch ({error}); URLs start with http://, https:// "
                         "or file://")
    reason = error.reason if isinstance(error, urllib.error.URLError) else error
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return DataError(f"{url}: no answer within {timeout:g} s")
    if isinstance(error, urllib.error.URLError):
        return DataError(f"cannot reach {url} ({getattr(reason, 'strerror', None) or reason})")
    return DataError(f"{url}: the connection broke ({type(error).__name__}: {error})")


def _transfer(url: str, stream: BinaryIO, part: Path, md5: str, timeout: float,
              progress: DownloadProgress) -> Tuple[str, int]:
    """Bring ``part`` (open as ``stream``) to the whole file at ``url``, continuing what it
    holds where the server allows. Returns the file's MD5 and the bytes it held before."""
    name = part.name[: -len(".part")]
    kept = os.fstat(stream.fileno()).st_size
    digest = hashlib.md5(usedforsecurity=False)
    stream.seek(0)
    for chunk in iter(lambda: stream.read(_CHUNK), b""):
        digest.update(chunk)

    def start_over(reason: str) -> None:
        nonlocal kept, digest
        progress.note(name, f"{reason}; starting over")
        stream.truncate(0)
        kept, digest = 0, hashlib.md5(usedforsecurity=False)

    try:
        try:
            response = _open(url, kept, timeout)
        except urllib.error.HTTPError as error:
            if error.code != 416 or not kept:
                raise
            _, total = _content_range(error.headers.get("Content-Range"))
            error.close()
            if total == kept and digest.hexdigest() == md5:
                return md5, kept  # the partial file was complete already
            start_over(f"the partial file ({format_bytes(kept)}) does not fit the server's "
                       f"({format_bytes(total)})")
            response = _open(url, 0, timeout)
        with response:
            total = _length(response)
            if kept and response.status == 206:
                first, whole = _content_range(response.headers.get("Content-Range"))
                if first != kept:
                    response.close()
                    start_over(f"the server sent the file from byte {first}, not from byte {kept}")
                    return _transfer(url, stream, part, md5, timeout, progress)
                total = whole if whole is not None else (None if total is None else kept + total)
            elif kept:
                start_over("the server does not support resuming (it ignored the Range request)")
            progress.start(name, url, kept, total)
            if total is not None:
                free = shutil.disk_usage(part.parent).free
                if free < total - kept:
                    raise _LocalError(
                        f"not enough space for {name} in {part.parent}: it needs {format_bytes(total - kept)} more, "
                        f"{format_bytes(free)} are free. Free some space, or download into another root "
                        "(--root DIR on the command line, root=... in Python)")
            written = kept
            # read1: what has arrived, so that progress moves and a broken transfer keeps it all
            read = getattr(response, "read1", response.read)
            while True:
                try:
                    chunk = read(_CHUNK)
                except (OSError, http.client.HTTPException) as error:
                    raise _network_error(url, error, timeout) from error
                if not chunk:
                    break
                try:
                    stream.write(chunk)
                    stream.flush()
                except OSError as error:
                    raise _file_error(error, part) from error
                digest.update(chunk)
                written += len(chunk)
                progress.advance(len(chunk))
            if total is not None and written != total:
                raise DataError(f"{url}: the connection closed after {format_bytes(written)} of {format_bytes(total)}")
    except DataError:
        raise
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as error:
        raise _network_error(url, error, timeout) from error
    return digest.hexdigest(), kept


def download_file(url: str, destination: PathLike, md5: str, timeout: float = 60.0,
                  progress: Optional[DownloadProgress] = None) -> Path:
    """Download ``url`` to ``destination`` and keep it if its MD5 is ``md5``.

    A destination already there with this MD5 is not downloaded again; one with another MD5
    is replaced. A ``<destination>.part`` left by a download that broke off is continued.

    Args:
        url: what to fetch (http, https or file).
        destination: the final path; its folder is created.
        md5: expected hex MD5; a download is never kept unverified.
        timeout: seconds without progress before giving up.
        progress: told what happens (see :class:`DownloadProgress`).

    Returns:
        ``destination``.

    Raises:
        CorruptDataError: the checksum does not match; the downloaded file is deleted.
        DataError: the download failed (network, HTTP status, disk); what was received is
            kept in ``<destination>.part`` for the next try.
    """
    if not md5:
        raise ConfigurationError(f"no checksum given for {url}; nord keeps no unverified download")
    md5 = md5.lower()
    progress = progress if progress is not None else DownloadProgress()
    destination = Path(destination)
    name = destination.name
    part = destination.with_name(name + ".part")
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
        stream = _claim(part, destination, md5, progress)
    except OSError as error:
        raise _file_error(error, destination) from error
    if stream is None:
        progress.present(name, destination)
        return destination
    with _closed_at_the_end(stream):  # closing it lets a waiting process in: only after the rename below
        try:
            if destination.exists():
                progress.note(name, f"{destination} has MD5 {file_md5(destination)}, not {md5}: "
                                    "downloading it again")
            got, resumed = _transfer(url, stream, part, md5, timeout, progress)
            if got != md5:
                part.unlink(missing_ok=True)
                stale = (f" It continued a partial download of {format_bytes(resumed)}, which may have come from "
                         "another version of the file." if resumed else "")
                raise CorruptDataError(
                    f"{name} downloaded from {url} has MD5 {got}, expected {md5}; the file was deleted.{stale} "
                    f"Run the download again to fetch it afresh, or use another mirror ({MIRROR_HINT})")
            os.replace(part, destination)
        except CorruptDataError:
            raise
        except DataError as error:
            kept = os.fstat(stream.fileno()).st_size
            if not kept:
                part.unlink(missing_ok=True)  # an empty .part helps no one
                raise
            raise type(error)(f"{error}. The {format_bytes(kept)} received are kept in {part}; the next download "
                              "continues from there") from error.__cause__
        except BaseException:
            if os.fstat(stream.fileno()).st_size == 0:
                part.unlink(missing_ok=True)
            raise
    logger.info("downloaded %s to %s", url, destination)
    progress.finish(name, destination)
    return destination


def download_files(checksums: Mapping[str, str], directory: PathLike, urls: Sequence[str],
                   names: Optional[Iterable[str]] = None, timeout: float = 60.0,
                   progress: Optional[DownloadProgress] = None) -> List[Path]:
    """Download several files into ``directory``, trying the base ``urls`` in order.

    Args:
        checksums: file name -> expected MD5.
        directory: where the files go.
        urls: base URLs; a file is ``<base>/<file name>``. The next base is tried only
            when a download fails, never after a checksum mismatch.
        names: which files of ``checksums`` to fetch (default all).
        timeout: per-request timeout in seconds.
        progress: told what happens to each file (see :class:`DownloadProgress`).

    Raises:
        CorruptDataError: a checksum mismatch.
        DataError: a file could be fetched from none of the URLs.
    """
    directory = Path(directory)
    progress = progress if progress is not None else DownloadProgress()
    paths = []
    for file_name in (list(checksums) if names is None else list(names)):
        if file_name not in checksums:
            raise ConfigurationError(f"no checksum known for {file_name!r}; give one in the checksum table")
        failures = []
        for number, base in enumerate(urls, 1):
            url = _join(base, file_name)
            try:
                paths.append(download_file(url, directory / file_name, checksums[file_name], timeout,
                                           progress))
                break
            except (CorruptDataError, _LocalError):
                raise
            except DataError as error:
                logger.info("%s", error)
                failures.append(str(error))
                if number < len(urls):
                    progress.note(file_name, f"{error}; trying the next URL")
        else:
            raise DataError(f"could not download {file_name}: {'; '.join(failures)}. Check the network and "
                            f"the server; another server is given with {MIRROR_HINT}")
    return paths
