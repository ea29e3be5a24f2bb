"""``nord data``: download data sets once, before a run, and list what is where.

::

    nord data download cifar10 --root data          # resumable, checked, then read once
    nord data download mnist --mirror http://fileserver/datasets/{name}/
    nord data list --root data

Files are checked against nord's table of the official MD5s; a mirror that serves other
files needs ``--checksums FILE``. Errors are one line on stderr and exit code 2 (130 after
Ctrl-C).

Details (progress, ``.part`` files, checksums from a mirror): docs/data.md.
"""
from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Mapping, NamedTuple, Optional, TextIO, Tuple

from nord.data.download import (
    CIFAR10_MD5,
    CIFAR10_URLS,
    FASHION_MNIST_MD5,
    FASHION_MNIST_UNPACKED_MD5,
    FASHION_MNIST_URLS,
    MIRROR_ENV,
    MNIST_MD5,
    MNIST_UNPACKED_MD5,
    MNIST_URLS,
    ROOT_ENV,
    DownloadProgress,
    base_urls,
    default_root,
    download_command,
    download_files,
    file_md5,
    format_bytes,
    gunzipped_md5,
    read_checksums,
)
from nord.data.files import (
    CIFAR10_ARCHIVE,
    CIFAR10_FOLDER,
    FASHION_MNIST_FOLDER,
    IDX_FILES,
    MNIST_FOLDER,
    find_cifar10,
    find_idx_files,
    idx_directories,
)
from nord.data.registry import CURATORS
from nord.errors import ConfigurationError, NordError
from nord.progress import ProgressDisplay

__all__ = ["register", "fetch", "load", "Fetched", "CommandProgress"]


class Fetched(NamedTuple):
    """What :func:`fetch` brought: the data set's registered name, its root, and the MD5s of
    ``--checksums`` its files were checked against (for :func:`load`; None: the official
    ones, which the curator knows, unpacked files included)."""

    name: str
    root: Path
    checksums: Optional[Dict[str, str]]


@dataclass(frozen=True)
class _Files:
    """What ``nord data download`` fetches for one data set, and where it looks for it."""

    urls: Tuple[str, ...]
    checksums: Mapping[str, str]
    downloads: Tuple[str, ...]
    target: Callable[[Path], Path]             # root -> the folder downloads go to
    places: Callable[[Path], List[Path]]       # root -> where the data set is looked for
    locate: Callable[[Path], Optional[Path]]   # root -> the folder or archive it is read from
    folder: str = ""                           # an IDX data set's folder under the root
    unpacked: Mapping[str, str] = field(default_factory=dict)   # its official files, gunzipped


_LABELS = ("train_labels", "test_labels")
"""The IDX files that tell MNIST from Fashion-MNIST: the same names, sizes and label set (0-9)
in both, but other labels; small enough to check at once."""


def _is_official(path: Path, files: _Files) -> bool:
    """Whether ``path`` is one of ``files``' official files (as downloaded, or unpacked, or
    recompressed by a packager: what it unpacks to is checked)."""
    try:
        if path.suffix != ".gz":
            return file_md5(path) == files.unpacked.get(path.name)
        return (file_md5(path) == files.checksums.get(path.name)
                or gunzipped_md5(path) == files.unpacked.get(path.stem))
    except OSError:   # unreadable: whose it is shows when it is read
        return False


def _whose(found: Mapping[str, Path]) -> Optional[str]:
    """The data set whose official files these IDX files are, known by their labels' MD5s;
    None when they are no data set's official files (a test copy, a subset, damaged)."""
    for name, files in _FILES.items():
        if files.unpacked and all(_is_official(found[key], files) for key in _LABELS):
            return name
    return None


def _idx_files(name: str, root: Path) -> Optional[Dict[str, Path]]:
    """The IDX files data set ``name`` is read from under ``root``: MNIST and Fashion-MNIST
    share their file names and a place (the root itself), and the other data set's official
    files are not this one."""
    return find_idx_files(root, _FILES[name].folder, lambda found: _whose(found) in (None, name))


def _idx(name: str, folder: str, urls: Tuple[str, ...], checksums: Mapping[str, str],
         unpacked: Mapping[str, str]) -> _Files:
    def locate(root: Path) -> Optional[Path]:
        found = _idx_files(name, root)
        return None if found is None else found["train_images"].parent

    return _Files(urls, checksums, tuple(stem + ".gz" for stem in IDX_FILES.values()),
                  lambda root: idx_directories(root, folder)[0],
                  lambda root: idx_directories(root, folder), locate, folder, unpacked)


_FILES: Dict[str, _Files] = {
    "mnist": _idx("mnist", MNIST_FOLDER, MNIST_URLS, MNIST_MD5, MNIST_UNPACKED_MD5),
    "fashion-mnist": _idx("fashion-mnist", FASHION_MNIST_FOLDER, FASHION_MNIST_URLS,
                          FASHION_MNIST_MD5, FASHION_MNIST_UNPACKED_MD5),
    "cifar10": _Files(CIFAR10_URLS, CIFAR10_MD5, (CIFAR10_ARCHIVE,), lambda root: root,
                      lambda root: [root / CIFAR10_FOLDER, root / CIFAR10_ARCHIVE], find_cifar10),
}
"""Data set name (as registered in nord.data.registry) -> its files."""


def _names() -> List[str]:
    """The downloadable data sets as help texts list them: registered names with their aliases."""
    return [CURATORS.entry(name).label for name in sorted(_FILES)]


def _downloadable(name: str) -> str:
    """The registered name of ``name``, if nord can download it."""
    entry = CURATORS.find(name)
    if entry is None:
        raise ConfigurationError(f"unknown data set {name!r}; nord can download: {', '.join(_names())}")
    if entry.name not in _FILES:
        raise ConfigurationError(
            f"{entry.name} has no files to download: {entry.description or 'it is registered in code'}. "
            f"nord can download: {', '.join(_names())}")
    return entry.name


def _root(root: Optional[str]) -> Path:
    return Path(root).expanduser() if root else default_root()


# ---------------------------------------------------------------------------------------------
# progress
# ---------------------------------------------------------------------------------------------
class CommandProgress(DownloadProgress):
    """How ``nord data download`` shows a download: a tqdm bar when ``stream`` is a terminal,
    else a line at most every ``interval`` seconds. Events are said on ``out``.

    Args:
        stream: where the bar or the progress lines go (stderr).
        out: where what happens to each file is said (stdout).
        interval: seconds between two progress lines off a terminal.
        clock: the time source (seconds), for the interval.
    """

    def __init__(self, stream: Optional[TextIO] = None, out: Optional[TextIO] = None, interval: float = 5.0,
                 clock: Callable[[], float] = time.monotonic):
        self.display = ProgressDisplay(stream if stream is not None else sys.stderr, interval,
                                       clock)
        self.out = out if out is not None else sys.stdout
        self.clock = clock
        self._file = ""
        self._done = self._total = self._began = None

    def say(self, message: str) -> None:
        if self.out is None:
            return
        try:
            print(message, file=self.out, flush=True)
        except BrokenPipeError:   # `| head` went away: the download goes on, unsaid
            self.out = None

    def present(self, file_name, path):
        self.say(f"{file_name}: already in {path.parent} with the right checksum; not downloaded")

    def note(self, file_name, message):
        self.say(f"{file_name}: {message}")

    def start(self, file_name, url, offset, total):
        verb = (f"resuming at {format_bytes(offset)} of {format_bytes(total)}" if offset
                else f"downloading {format_bytes(total)}")
        self.say(f"{file_name}: {verb} from {url}")
        self._file, self._done, self._total = file_name, offset, total
        self._began = self.clock()
        self.display.wait()   # the line above says where it starts
        if self.display.live:
            self.display.bar(total=total, initial=offset, desc=file_name, unit="B",
                             unit_scale=True)

    def advance(self, count):
        self._done += count
        if self.display.current is not None:
            self.display.current.update(count)
        elif self.display.due():
            share = f" ({100 * self._done / self._total:.0f}%)" if self._total else ""
            self.display.write(
                f"{self._file}: {format_bytes(self._done)} of {format_bytes(self._total)}{share}")

    def finish(self, file_name, path):
        self.close()
        took = f" in {self.clock() - self._began:.1f} s" if self._began is not None else ""
        self.say(f"{file_name}: {format_bytes(path.stat().st_size)}{took}, MD5 matches")

    def close(self) -> None:
        """Take the bar off the screen (after an error too)."""
        self.display.close()


# ---------------------------------------------------------------------------------------------
# the work, with plain arguments
# ---------------------------------------------------------------------------------------------
def fetch(name: str, root: Optional[str] = None, mirror: Optional[str] = None,
          checksums: Optional[str] = None, timeout: float = 60.0,
          progress: Optional[CommandProgress] = None) -> Fetched:
    """Download the files of data set ``name`` unless they are in place (no torch).

    Args:
        name: a data set name or alias, in any spelling the registry accepts.
        root: the data root (default ``$NORD_DATA_ROOT`` or ``~/.cache/nord/data``).
        mirror: base URL instead of the official ones (default ``$NORD_DATA_MIRROR``).
        checksums: a file of MD5s (``md5sum`` format) for a mirror whose files are not the
            official ones.
        timeout: seconds without an answer before a request fails.
        progress: shows the downloads (default: :class:`CommandProgress` on stderr).

    Returns:
        The registered name, the root and the checksum table the files were checked against.

    Raises:
        ConfigurationError: an unknown name, a timeout that is not > 0, a checksums file
            without a mirror or with a file missing.
        DataError: the download failed (the message says why and what to do).
    """
    canonical = _downloadable(name)
    if (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout) or timeout <= 0):
        raise ConfigurationError(
            f"--timeout must be a finite number of seconds > 0 (how long a request may wait for an "
            f"answer); got {timeout!r}. Default: 60")
    files = _FILES[canonical]
    progress = progress if progress is not None else CommandProgress()
    root = _root(root)
    urls = base_urls(files.urls, mirror, canonical)
    table = dict(files.checksums)
    if checksums is not None:
        if not (mirror or os.environ.get(MIRROR_ENV)):
            raise ConfigurationError(
                "--checksums is for a mirror whose files differ from the official ones; give the mirror "
                f"with --mirror URL (or ${MIRROR_ENV}). The official servers' files have the official "
                "checksums, which nord knows")
        try:
            table = read_checksums(checksums)
        except OSError as error:
            raise ConfigurationError(f"cannot read --checksums {checksums}: {error.strerror or error}") from None
        absent = [f for f in files.downloads if f not in table]
        if absent:
            raise ConfigurationError(f"{checksums} gives no checksum for {', '.join(absent)}; add a line "
                                     "'<md5>  <file name>' for each")
        progress.say(f"{canonical}: checking against the checksums in {checksums}, not the official ones "
                     f"(a run reads these files with --data-checksums {checksums})")
    target = files.target(root)
    place = files.locate(root)
    if place is not None and not all((target / f).is_file() for f in files.downloads):
        progress.say(f"{canonical}: already in {place}; not downloaded (reading it below checks it)")
        return Fetched(canonical, root, None if checksums is None else table)
    progress.say(f"{canonical}: {len(files.downloads)} file{'s' if len(files.downloads) > 1 else ''} "
                 f"into {target}, from {urls[0]}" + (f" (else {', '.join(urls[1:])})" if urls[1:] else ""))
    made = [folder for folder in (target, *target.parents) if not folder.exists()]
    try:
        download_files(table, target, urls, names=files.downloads, timeout=timeout, progress=progress)
    except BaseException:
        for folder in made:   # deepest first: only the folders this download made, if still empty
            try:
                folder.rmdir()
            except OSError:
                break
        raise
    return Fetched(canonical, root, None if checksums is None else table)


def load(name: str, root: Path, checksums: Optional[Mapping[str, str]]):
    """Read data set ``name`` from ``root`` once (imports torch), checking files against
    ``checksums`` (None: the official ones); returns the loaded curator."""
    from nord.data.registry import get_curator
    return get_curator(name, root=root, checksums=checksums).load()


# ---------------------------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------------------------
def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def _download(args) -> int:
    progress = CommandProgress()
    where = None
    try:
        canonical = _downloadable(args.name)
        where = _FILES[canonical].target(_root(args.root))
        name, root, table = fetch(args.name, args.root, args.mirror, args.checksums, args.timeout, progress)
        data = load(name, root, table)
    except KeyboardInterrupt:
        progress.close()
        kept = f"; what was received is kept as .part files in {where}" if where is not None else ""
        print(f"nord data download: interrupted{kept}, and the same command continues from there",
              file=sys.stderr)
        return 130
    except NordError as error:
        progress.close()
        print(f"nord data download: {_one_line(error)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        raise   # the reader of stdout went away: main exits quietly
    except OSError as error:
        progress.close()
        print(f"nord data download: {error.strerror or error}: {error.filename or ''}", file=sys.stderr)
        return 2
    shape = "x".join(str(d) for d in data.input_shape)
    print(f"{name} reads: {data.n_train} train + {data.n_valid} validation (held out of the training "
          f"images), {data.n_test} test; samples {shape}, {data.num_classes} classes")
    return 0


def _partials(folder: Path) -> List[Path]:
    return sorted(folder.glob("*.part")) if folder.is_dir() else []


def _list(args) -> int:
    root = _root(args.root)
    print(f"data root: {root} (--root DIR, or ${ROOT_ENV}); 'present' means the files are there "
          "(MNIST's and Fashion-MNIST's, which share their names, told apart by their labels' "
          "MD5s), `nord data download NAME` checks them")
    width = max(len(name) for name in CURATORS.names())
    for entry in CURATORS.entries():
        files = _FILES.get(entry.name)
        if files is None:
            print(f"{entry.name:{width}s}  -        {entry.description or 'registered in code'}")
            continue
        place = files.locate(root)
        if place is not None:
            print(f"{entry.name:{width}s}  {_idx_state(entry.name, place, root)}")
            continue
        looked = ", ".join(str(p) for p in files.places(root))
        partial = "".join(f"; partial download {p} ({format_bytes(p.stat().st_size)})"
                          for p in _partials(files.target(root)))
        print(f"{entry.name:{width}s}  missing  looked for in {looked}{partial}"
              f"{_others_there(entry.name, root)}; `{download_command(entry.name, root)}` "
              "fetches it")
    return 0


def _idx_state(name: str, place: Path, root: Path) -> str:
    """The state and place of data set ``name`` found at ``place``: for IDX files, whether
    they are its official files, or others in its own folder, or others whose data set
    nothing tells (in the data root itself, where both IDX data sets look)."""
    files = _FILES[name]
    if not files.unpacked:
        return f"present  {place}"
    if _whose(_idx_files(name, root)) == name:
        return f"present  {place}"
    if place != root:   # its own folder: the files are meant as this data set's
        return (f"present  {place} (not the official files: a run reads them with "
                "--data-checksums FILE)")
    return (f"unknown  {place} holds IDX files that are no data set's official ones, so "
            f"whose they are is not known; put {name}'s in {files.target(root)}")


def _others_there(name: str, root: Path) -> str:
    """Where data set ``name`` is looked for and another's official files are instead."""
    files = _FILES[name]
    if not files.unpacked:
        return ""
    found = find_idx_files(root, files.folder,
                           lambda found: _whose(found) not in (None, name))
    if found is None:
        return ""
    return f"; {found['train_images'].parent} holds {_whose(found)}'s official files"


def register(subparsers) -> None:
    """Add ``nord data`` (``download``, ``list``) to the ``nord`` command's subparsers."""
    data = subparsers.add_parser("data", help="download data sets, list what is where",
                                 description="Download data sets before a run, and list what is where.")
    commands = data.add_subparsers(dest="data_command", required=True, metavar="{download,list}")
    names = ", ".join(_names())
    download = commands.add_parser(
        "download", help="download a data set, check it, and read it once",
        description=f"Download a data set ({names}) into the data root, check every file against its "
                    "MD5, and read the data set once. Files already in place are not fetched again; a "
                    "download that broke off continues where it stopped.")
    download.add_argument("name", help=f"one of: {names} (any case, '-' or '_')")
    download.add_argument("--root", default=None,
                          help=f"the data root (default ${ROOT_ENV}, else ~/.cache/nord/data)")
    download.add_argument("--mirror", default=None,
                          help=f"base URL instead of the official ones; {{name}} in it becomes the data set's "
                               f"name (default ${MIRROR_ENV})")
    download.add_argument("--checksums", default=None, metavar="FILE",
                          help="with --mirror: MD5s of the mirror's files ('<md5>  <file name>' lines, as "
                               "md5sum writes them), when they are not the official files")
    download.add_argument("--timeout", type=float, default=60.0,
                          help="seconds without an answer before a request fails (default 60)")
    download.set_defaults(handler=_download)
    listing = commands.add_parser("list", help="the data sets, where each is looked for, and whether it is there",
                                  description="List the data sets nord reads, where each is "
                                              "looked for under the data root, and whether its "
                                              "files are there ('nord data download NAME' "
                                              "checks them).")
    listing.add_argument("--root", default=None,
                         help=f"the data root (default ${ROOT_ENV}, else ~/.cache/nord/data)")
    listing.set_defaults(handler=_list)

