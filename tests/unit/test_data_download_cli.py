"""`nord data download` and `nord data list`, against a file server on 127.0.0.1 serving small
data sets in their official formats, with a checksums file for them (they are not the official files)."""
import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nord.app.cli import main
from nord.data import MNIST
from nord.app.data_commands import CommandProgress
from nord.data.download import MIRROR_ENV, ROOT_ENV
from nord.errors import CorruptDataError, MissingDataError
from tests.helpers.datafiles import (cifar_archive_bytes, cifar_parts, md5,
                                     unchecked_unpacked_mnist, write_file, write_mnist)
from tests.helpers.disks import tmpfs
from tests.helpers.fileserver import FileServer, closed_port
from tests.helpers.signals import default_sigint

REPO = Path(__file__).resolve().parents[2]
IDX_NAMES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
             "t10k-labels-idx1-ubyte.gz")


@pytest.fixture(autouse=True)
def local_only(monkeypatch):
    """No proxy for the local server, and no data root or mirror from the machine's environment."""
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", MIRROR_ENV, ROOT_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def checksums_file(folder, names, path=None):
    path = path or folder.parent / f"{folder.name}.md5"
    path.write_text("".join(f"{md5(folder / name)}  {name}\n" for name in names))
    return path


def serve_mnist(tmp_path, n_train=100, n_test=20):
    folder = tmp_path / "served"
    _, names = write_mnist(folder, n_train=n_train, n_test=n_test)
    return folder, checksums_file(folder, names)


def serve_cifar(tmp_path):
    folder = tmp_path / "served"
    _, parts = cifar_parts(per_batch=20, n_test=10)
    write_file(folder / "cifar-10-python.tar.gz", cifar_archive_bytes(parts))
    return folder, checksums_file(folder, ["cifar-10-python.tar.gz"])


def nord(capsys, *argv):
    code = main(list(map(str, argv)))
    out, err = capsys.readouterr()
    return code, out, err


def download(capsys, name, root, server, sums, *more):
    return nord(capsys, "data", "download", name, "--root", root, "--mirror", server.url, "--checksums", sums,
                *more)


def one_line_error(err):
    assert err.count("\n") == 1 and err.startswith("nord data download: "), err
    assert "Traceback" not in err
    return err


def splits(out):
    match = re.search(r"reads: (\d+) train \+ (\d+) validation .*?, (\d+) test", out)
    assert match, out
    return tuple(int(n) for n in match.groups())


# -- downloads that work -----------------------------------------------------------------------
def test_mnist_downloads_checks_and_reads(tmp_path, capsys):
    folder, sums = serve_mnist(tmp_path)
    with FileServer(folder) as server:
        code, out, err = download(capsys, "mnist", tmp_path / "data", server, sums)
        assert sorted(r.path for r in server.gets) == sorted("/" + n for n in IDX_NAMES)
    assert code == 0, err
    raw = tmp_path / "data" / "MNIST" / "raw"
    assert sorted(os.listdir(raw)) == sorted(IDX_NAMES)
    assert all((raw / n).read_bytes() == (folder / n).read_bytes() for n in IDX_NAMES)
    train, valid, test = splits(out)
    assert train + valid == 100 and valid > 0 and test == 20
    assert "not the official ones" in out and out.count("MD5 matches") == 4


def test_a_run_reads_a_mirrors_files_with_the_checksums_they_were_downloaded_with(tmp_path, capsys):
    folder, sums = serve_mnist(tmp_path, n_train=60, n_test=20)
    with FileServer(folder) as server:
        code, out, err = download(capsys, "mnist", tmp_path / "data", server, sums)
    assert code == 0, err
    assert f"a run reads these files with --data-checksums {sums}" in out
    run = ["run", "--dataset", "mnist", "--data-root", tmp_path / "data", "--budget", "1",
           "--space-params", '{"layers": 1, "channels": [2, 4]}', "--batch-size", "32"]
    # the official MD5s do not match these files: refused, with the way out, and no journal
    code, _, err = nord(capsys, *run, "--journal", tmp_path / "official.db")
    assert code == 2 and "differs from the expected" in err and "--data-checksums FILE" in err
    assert not (tmp_path / "official.db").exists()
    code, out, err = nord(capsys, *run, "--journal", tmp_path / "mirror.db", "--data-checksums", sums)
    assert code == 0, err
    assert "done: 1 evaluations (1 evaluated; 0 failed)" in out
    code, out, _ = nord(capsys, "config", tmp_path / "mirror.db")
    # a repeat or a resume checks the same files, against the MD5s themselves
    assert all(md5(folder / name) in out for name in IDX_NAMES) and str(sums) not in out


SMALL_RUN = ("--space-params", '{"layers": 1, "channels": [2, 4]}', "--batch-size", "32",
             "--epochs", "1", "--threads", "1")


def journal_files(path):
    return {name: (path.parent / name).read_bytes() for name in os.listdir(path.parent)
            if name.startswith(path.name)}


def test_a_resume_on_other_data_is_refused_naming_the_file(tmp_path, capsys, monkeypatch):
    """Files that no table covers: the run records the MD5 of every file it read, and a
    resume after a file changed is refused."""
    unchecked_unpacked_mnist(monkeypatch, n_train=40, n_test=10)
    raw = tmp_path / "data" / "MNIST" / "raw"
    write_mnist(raw, gz=False, n_train=40, n_test=10)
    journal = tmp_path / "r.db"
    code, _, err = nord(capsys, "run", "--dataset", "mnist", "--data-root", tmp_path / "data",
                        "--budget", "1", "--journal", journal, *SMALL_RUN)
    assert code == 0, err
    from nord.journal import Journal
    with Journal(journal) as record:
        files = record.metadata()["dataset"]["files"]
    assert files == {f"MNIST/raw/{name}": md5(raw / name) for name in
                     ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                      "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
    write_mnist(raw, gz=False, seed=1, n_train=40, n_test=10)   # other images, same names
    before = journal_files(journal)
    code, _, err = nord(capsys, "resume", journal, "--budget", "2")
    assert code == 2
    assert "MNIST/raw/t10k-images-idx3-ubyte with MD5" in err and "data changed" in err
    assert journal_files(journal) == before


def test_a_run_records_its_data_folder_absolute_and_its_checksums_as_md5s(tmp_path, capsys,
                                                                          monkeypatch):
    """A resume from another folder finds the data; editing the data and the .md5 file
    together lets no other data into the run."""
    raw = tmp_path / "work" / "data" / "MNIST" / "raw"
    _, names = write_mnist(raw, n_train=40, n_test=10)
    checksums_file(raw, names, path=tmp_path / "work" / "mine.md5")
    monkeypatch.chdir(tmp_path / "work")
    code, _, err = nord(capsys, "run", "--dataset", "mnist", "--data-root", "data",
                        "--data-checksums", "mine.md5", "--budget", "1", "--journal", "r.db",
                        *SMALL_RUN)
    assert code == 0, err
    journal = tmp_path / "work" / "r.db"
    monkeypatch.chdir(tmp_path)
    code, out, err = nord(capsys, "resume", journal, "--budget", "2")
    assert code == 0, err
    assert "done: 2 evaluations" in out
    write_mnist(raw, seed=1, n_train=40, n_test=10)
    checksums_file(raw, names, path=tmp_path / "work" / "mine.md5")   # edited to match
    before = journal_files(journal)
    code, _, err = nord(capsys, "resume", journal, "--budget", "3")
    assert code == 2 and "differs from" in err and "its MD5 in the checksums given" in err
    assert journal_files(journal) == before


def test_data_checksums_that_leave_a_file_out_are_refused_not_skipped(tmp_path, capsys):
    raw = tmp_path / "data" / "MNIST" / "raw"
    _, names = write_mnist(raw, n_train=30, n_test=10)
    sums = checksums_file(raw, names[1:], path=tmp_path / "partial.md5")   # one left out
    code, _, err = nord(capsys, "run", "--dataset", "mnist", "--data-root", tmp_path / "data",
                        "--data-checksums", sums, "--journal", tmp_path / "r.db")
    assert code == 2
    assert f"have no MD5 for {names[0]}; add a line '<md5>  {names[0]}'" in err
    assert not (tmp_path / "r.db").exists()
    # a file that differs from the given MD5 is named as such, not as an official file
    sums.write_text(sums.read_text() + f"{'0' * 32}  {names[0]}\n")
    code, _, err = nord(capsys, "run", "--dataset", "mnist", "--data-root", tmp_path / "data",
                        "--data-checksums", sums, "--journal", tmp_path / "r.db")
    assert code == 2 and f"differs from {'0' * 32}, its MD5 in the checksums given" in err
    assert not (tmp_path / "r.db").exists()


def test_data_checksums_are_refused_for_a_data_set_without_files(tmp_path, capsys):
    code, _, err = nord(capsys, "run", "--dataset", "digits", "--data-checksums", tmp_path / "x.md5")
    assert code == 2 and "--data-checksums points at a data set's files, but digits is built in" in err
    code, _, err = nord(capsys, "run", "--space", "nasbench201", "--data-checksums", tmp_path / "x.md5")
    assert code == 2 and "a NAS-Bench-201 run looks results up in the benchmark's table" in err
    code, _, err = nord(capsys, "run", "--dataset", "mnist", "--data-checksums", tmp_path / "x.md5",
                        "--journal", tmp_path / "r.db")
    assert code == 2 and f"cannot read the data checksums {tmp_path / 'x.md5'} (--data-checksums)" in err
    assert not (tmp_path / "r.db").exists()


def test_cifar10_downloads_its_archive_and_reads_it(tmp_path, capsys):
    folder, sums = serve_cifar(tmp_path)
    with FileServer(folder) as server:
        code, out, err = download(capsys, "CIFAR-10", tmp_path / "data", server, sums)
    assert code == 0, err
    assert (tmp_path / "data" / "cifar-10-python.tar.gz").is_file()
    train, valid, test = splits(out)
    assert train + valid == 100 and test == 10 and "3x32x32" in out


def test_any_spelling_of_a_registered_name_is_accepted(tmp_path, capsys):
    folder, sums = serve_mnist(tmp_path)
    with FileServer(folder) as server:
        code, _, err = download(capsys, "Fashion_MNIST", tmp_path / "data", server, sums)
    assert code == 0, err
    assert sorted(os.listdir(tmp_path / "data" / "FashionMNIST" / "raw")) == sorted(IDX_NAMES)


def test_a_second_download_fetches_nothing_and_says_so(tmp_path, capsys):
    folder, sums = serve_mnist(tmp_path)
    with FileServer(folder) as server:
        assert download(capsys, "mnist", tmp_path / "data", server, sums)[0] == 0
        before = len(server.gets)
        code, out, _ = download(capsys, "mnist", tmp_path / "data", server, sums)
        assert len(server.gets) == before
    assert code == 0 and out.count("with the right checksum; not downloaded") == 4
    assert splits(out)[2] == 20


@pytest.mark.skipif(not os.path.isdir("/usr/share/datasets/fashion-mnist"),
                    reason="scripts/setup.sh installs Debian's dataset-fashion-mnist")
def test_a_packagers_copy_of_the_official_files_is_checked_by_content(capsys):
    """Debian's Fashion-MNIST (recompressed .gz files) is in place: it is checked against
    the official files' MD5s, unpacked, with no table of the user's named or needed."""
    code, out, err = nord(capsys, "data", "download", "fashion-mnist", "--root",
                          "/usr/share/datasets/fashion-mnist")
    assert code == 0, err
    assert "already in /usr/share/datasets/fashion-mnist; not downloaded" in out
    assert "54000 train + 6000 validation" in out and "10000 test" in out


def test_data_found_elsewhere_under_the_root_is_not_downloaded(tmp_path, capsys):
    folder, sums = serve_mnist(tmp_path)
    place = tmp_path / "data" / "MNIST"   # torchvision's other place
    _, unpacked = write_mnist(place, gz=False, n_train=100, n_test=20)
    # the mirror's table covers the unpacked copies too (else they are refused unchecked)
    sums.write_text(sums.read_text() + checksums_file(place, unpacked).read_text())
    with FileServer(folder) as server:
        code, out, err = download(capsys, "mnist", tmp_path / "data", server, sums)
        assert server.gets == []
    assert code == 0, err
    assert f"already in {tmp_path / 'data' / 'MNIST'}; not downloaded" in out


def test_a_partial_download_is_resumed(tmp_path, capsys):
    folder, sums = serve_mnist(tmp_path, n_train=300)
    raw = tmp_path / "data" / "MNIST" / "raw"
    raw.mkdir(parents=True)
    images = (folder / IDX_NAMES[0]).read_bytes()
    (raw / (IDX_NAMES[0] + ".part")).write_bytes(images[:50_000])
    with FileServer(folder) as server:
        code, out, err = download(capsys, "mnist", tmp_path / "data", server, sums)
        first = server.gets[0]
    assert code == 0, err
    assert (first.path, first.range, first.status, first.sent) == (
        "/" + IDX_NAMES[0], "bytes=50000-", 206, len(images) - 50_000)
    assert f"{IDX_NAMES[0]}: resuming at 50.0 kB" in out
    assert (raw / IDX_NAMES[0]).read_bytes() == images


def test_a_server_without_range_support_starts_the_part_over(tmp_path, capsys):
    folder, sums = serve_mnist(tmp_path, n_train=300)
    raw = tmp_path / "data" / "MNIST" / "raw"
    raw.mkdir(parents=True)
    images = (folder / IDX_NAMES[0]).read_bytes()
    (raw / (IDX_NAMES[0] + ".part")).write_bytes(images[:50_000])
    with FileServer(folder, ranges=False) as server:
        code, out, err = download(capsys, "mnist", tmp_path / "data", server, sums)
        assert server.gets[0].sent == len(images)
    assert code == 0, err
    assert "does not support resuming" in out and "starting over" in out
    assert (raw / IDX_NAMES[0]).read_bytes() == images


# -- downloads that fail: one line, exit code 2 ------------------------------------------------
def test_a_corrupted_file_is_deleted_and_named_with_both_checksums(tmp_path, capsys):
    folder, sums = serve_mnist(tmp_path)
    good = md5(folder / IDX_NAMES[2])
    sums.write_text(sums.read_text().replace(good, "0" * 32))
    with FileServer(folder) as server:
        code, _, err = download(capsys, "mnist", tmp_path / "data", server, sums)
    assert code == 2
    one_line_error(err)
    assert IDX_NAMES[2] in err and f"MD5 {good}, expected {'0' * 32}" in err
    assert "deleted" in err and "again" in err and "--mirror" in err
    assert IDX_NAMES[2] not in os.listdir(tmp_path / "data" / "MNIST" / "raw")
    assert not list((tmp_path / "data").rglob("*.part"))


def test_an_unknown_name_lists_the_valid_ones(capsys):
    code, _, err = nord(capsys, "data", "download", "imagenet")
    assert code == 2
    one_line_error(err)
    assert "'imagenet'" in err and "cifar10, fashion-mnist, mnist" in err


def test_a_built_in_data_set_has_nothing_to_download(capsys):
    code, _, err = nord(capsys, "data", "download", "digits")
    assert code == 2 and "digits has no files to download" in one_line_error(err)


@pytest.mark.parametrize("timeout", ["0", "-5", "nan", "inf"])
def test_a_timeout_that_is_not_positive_is_refused_before_any_download(tmp_path, capsys, timeout):
    url = f"http://127.0.0.1:{closed_port()}/"   # never reached: refused first
    code, _, err = nord(capsys, "data", "download", "mnist", "--root", tmp_path, "--mirror", url,
                        "--timeout", timeout)
    assert code == 2
    assert "--timeout must be a finite number of seconds > 0" in one_line_error(err)
    assert "cannot reach" not in err and os.listdir(tmp_path) == []


def test_an_unreachable_mirror_is_named_with_the_way_out(tmp_path, capsys):
    url = f"http://127.0.0.1:{closed_port()}/"
    code, _, err = nord(capsys, "data", "download", "cifar10", "--root", tmp_path, "--mirror", url)
    assert code == 2
    one_line_error(err)
    assert f"cannot reach {url}cifar-10-python.tar.gz" in err and "--mirror URL" in err
    assert "Check the network and the server; another server is given with" in err
    assert os.listdir(tmp_path) == []


def test_a_failed_download_leaves_no_folders_it_made(tmp_path, capsys):
    url = f"http://127.0.0.1:{closed_port()}/"
    code, _, err = nord(capsys, "data", "download", "mnist", "--root", tmp_path / "new" / "root",
                        "--mirror", url)
    assert code == 2 and "cannot reach" in err
    assert os.listdir(tmp_path) == []   # neither MNIST/raw nor the new root


@pytest.mark.parametrize("mirror", ["ftp://example.org/data/", "notaurl"])
def test_a_mirror_nord_cannot_download_from_is_refused_first(tmp_path, capsys, mirror):
    code, _, err = nord(capsys, "data", "download", "mnist", "--root", tmp_path, "--mirror", mirror)
    assert code == 2
    assert f"--mirror '{mirror}' is not a URL nord can download from" in one_line_error(err)
    assert os.listdir(tmp_path) == []


def test_a_server_that_stops_answering_times_out(tmp_path, capsys):
    folder, sums = serve_mnist(tmp_path)
    with FileServer(folder, pause_at=0) as server:
        code, _, err = download(capsys, "mnist", tmp_path / "data", server, sums, "--timeout", 0.5)
    assert code == 2 and "no answer within 0.5 s" in one_line_error(err)


def test_a_root_inside_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    code, _, err = nord(capsys, "data", "download", "mnist", "--root", tmp_path / "file" / "data")
    assert code == 2
    assert "cannot write" in one_line_error(err) and "--root DIR" in err


@pytest.mark.processes
def test_a_read_only_root_is_refused(tmp_path, capsys):
    folder, sums = serve_mnist(tmp_path)
    with tmpfs(tmp_path / "read-only", "ro") as root, FileServer(folder) as server:
        code, _, err = download(capsys, "mnist", root, server, sums)
        assert server.gets == []
    assert code == 2
    assert "Read-only file system" in one_line_error(err) and "--root DIR" in err


@pytest.mark.processes
def test_a_full_disk_is_a_clear_error(tmp_path, capsys):
    folder, sums = serve_cifar(tmp_path)
    (folder / "cifar-10-python.tar.gz").write_bytes(os.urandom(200_000))
    checksums_file(folder, ["cifar-10-python.tar.gz"], sums)
    with tmpfs(tmp_path / "small", "size=64k") as root, FileServer(folder) as server:
        code, _, err = download(capsys, "cifar10", root, server, sums)
    assert code == 2 and "not enough space for cifar-10-python.tar.gz" in one_line_error(err)


def test_checksums_are_for_mirrors_only(tmp_path, capsys):
    folder, sums = serve_mnist(tmp_path)
    code, _, err = nord(capsys, "data", "download", "mnist", "--root", tmp_path, "--checksums", sums)
    assert code == 2 and "--checksums is for a mirror" in one_line_error(err)


def test_a_checksums_file_must_cover_every_file(tmp_path, capsys):
    folder, _ = serve_mnist(tmp_path)
    sums = checksums_file(folder, IDX_NAMES[:3])
    code, _, err = nord(capsys, "data", "download", "mnist", "--root", tmp_path, "--mirror", "http://x/",
                        "--checksums", sums)
    assert code == 2 and f"gives no checksum for {IDX_NAMES[3]}" in one_line_error(err)


@pytest.mark.processes
def test_ctrl_c_keeps_the_part_and_says_how_to_go_on(tmp_path):
    folder, sums = serve_mnist(tmp_path, n_train=300)
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(no_proxy="127.0.0.1", PYTHONPATH=str(REPO))
    with FileServer(folder, pause_at=30_000) as server:
        command = subprocess.Popen(
            [sys.executable, "-m", "nord", "data", "download", "mnist", "--root", str(tmp_path / "data"),
             "--mirror", server.url, "--checksums", str(sums)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            preexec_fn=default_sigint)
        part = tmp_path / "data" / "MNIST" / "raw" / (IDX_NAMES[0] + ".part")
        try:
            assert server.paused.wait(60), "the download never reached the server"
            deadline = time.monotonic() + 60
            while (not part.exists() or part.stat().st_size < 30_000) and time.monotonic() < deadline:
                time.sleep(0.02)
            command.send_signal(signal.SIGINT)
            out, err = command.communicate(timeout=60)
        finally:
            command.kill()
    assert command.returncode == 130, err
    assert err.count("\n") == 1 and "interrupted" in err and "the same command continues" in err, err
    assert part.stat().st_size == 30_000


# -- progress ----------------------------------------------------------------------------------
class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_off_a_terminal_progress_is_a_line_every_few_seconds_at_most():
    stream, out, clock = io.StringIO(), io.StringIO(), FakeClock()
    progress = CommandProgress(stream=stream, out=out, interval=5.0, clock=clock)
    progress.start("blob", "http://x/blob", 0, 1_000_000)
    for _ in range(1000):          # 1000 chunks over 20 seconds
        clock.now += 0.02
        progress.advance(1000)
    lines = stream.getvalue().splitlines()
    assert 3 <= len(lines) <= 4, lines
    assert lines[-1].startswith("blob: ") and "%" in lines[-1] and "\r" not in stream.getvalue()


def test_on_a_terminal_progress_is_a_live_bar():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream, out = Terminal(), io.StringIO()
    progress = CommandProgress(stream=stream, out=out)
    progress.start("blob", "http://x/blob", 200, 1000)
    for _ in range(8):
        progress.advance(100)
    progress.close()
    assert "\r" in stream.getvalue() and "blob" in stream.getvalue()
    assert "resuming at 200 bytes of 1.0 kB" in out.getvalue()


# -- light imports -----------------------------------------------------------------------------
def run_python(code, **env):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO), **env), timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.processes
def test_help_does_not_import_torch():
    out = run_python(
        "import sys\nfrom nord.app.cli import main\n"
        "for argv in (['--help'], ['data', 'download', '--help']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "print('torch' in sys.modules)\n")
    assert out.rstrip().endswith("False")
    assert "cifar10, fashion-mnist, mnist" in " ".join(out.split())


@pytest.mark.processes
def test_the_download_imports_torch_only_to_read_the_data(tmp_path):
    folder, sums = serve_mnist(tmp_path)
    with FileServer(folder) as server:
        out = run_python(
            "import sys\nfrom nord.app.data_commands import fetch, load\n"
            f"name, root, table = fetch('mnist', {str(tmp_path / 'data')!r}, {server.url!r}, {str(sums)!r})\n"
            "print('before', 'torch' in sys.modules)\nload(name, root, table)\n"
            "print('after', 'torch' in sys.modules)\n", no_proxy="127.0.0.1")
    assert "before False" in out and "after True" in out


# -- list --------------------------------------------------------------------------------------
def test_list_says_what_is_where(tmp_path, capsys):
    write_mnist(tmp_path / "MNIST" / "raw", n_train=10, n_test=5)
    (tmp_path / "cifar-10-python.tar.gz.part").write_bytes(b"x" * 1500)
    code, out, _ = nord(capsys, "data", "list", "--root", tmp_path)
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert rows["mnist"].split()[1] == "present" and str(tmp_path / "MNIST" / "raw") in rows["mnist"]
    assert rows["fashion-mnist"].split()[1] == "missing"
    assert str(tmp_path / "FashionMNIST" / "raw") in rows["fashion-mnist"]
    assert "cifar-10-python.tar.gz.part (1.5 kB)" in rows["cifar10"]
    assert f"nord data download cifar10 --root {tmp_path}" in rows["cifar10"]
    assert "built in" in rows["digits"]


OFFICIAL = {"mnist": ("MNIST_MD5", "MNIST_UNPACKED_MD5"),
            "fashion-mnist": ("FASHION_MNIST_MD5", "FASHION_MNIST_UNPACKED_MD5")}
OTHER = {"mnist": "fashion-mnist", "fashion-mnist": "mnist"}
DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")


def make_official(monkeypatch, name, folder, names):
    """Small IDX files in ``folder`` taken for data set ``name``'s official files: its table of
    official MD5s (of the .gz files, or of what they unpack to) names theirs."""
    from nord.data import download as tables
    packed, unpacked = (getattr(tables, table) for table in OFFICIAL[name])
    for file_name in names:
        table = packed if file_name.endswith(".gz") else unpacked
        monkeypatch.setitem(table, file_name, md5(folder / file_name))


@pytest.mark.parametrize("gz", [True, False], ids=["gz", "unpacked"])
@pytest.mark.parametrize("name", ["fashion-mnist", "mnist"])
def test_list_tells_mnist_and_fashion_mnist_apart_by_their_files(tmp_path, capsys, monkeypatch,
                                                                 name, gz):
    """Both ship four IDX files of the same names, sizes and labels 0-9, and both look in the
    data root itself: the files there are the data set whose official labels they hold."""
    _, names = write_mnist(tmp_path, gz=gz, n_train=12, n_test=6, seed=3)
    make_official(monkeypatch, name, tmp_path, names)
    code, out, _ = nord(capsys, "data", "list", "--root", tmp_path)
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert rows[name].split()[1:] == ["present", str(tmp_path)]
    other = rows[OTHER[name]]
    assert other.split()[1] == "missing"
    assert f"; {tmp_path} holds {name}'s official files;" in other
    assert f"nord data download {OTHER[name]} --root {tmp_path}" in other


@pytest.mark.skipif(not DEBIAN_FASHION_MNIST.is_dir(),
                    reason=f"{DEBIAN_FASHION_MNIST} is missing: scripts/setup.sh installs "
                           "dataset-fashion-mnist")
def test_list_knows_a_real_fashion_mnist_folder_by_the_official_checksums(tmp_path, capsys):
    """Debian's copy of the official Fashion-MNIST (recompressed: its .gz files unpack to the
    official files) is Fashion-MNIST, not MNIST, by the MD5s nord knows."""
    for label_file in ("train-labels-idx1-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        (tmp_path / label_file).write_bytes((DEBIAN_FASHION_MNIST / label_file).read_bytes())
    for image_file in ("train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz"):
        (tmp_path / image_file).symlink_to(DEBIAN_FASHION_MNIST / image_file)
    code, out, _ = nord(capsys, "data", "list", "--root", tmp_path)
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert rows["fashion-mnist"].split()[1:] == ["present", str(tmp_path)]
    assert rows["mnist"].split()[1] == "missing"
    assert f"{tmp_path} holds fashion-mnist's official files" in rows["mnist"]


def test_list_does_not_guess_whose_unofficial_files_lie_in_the_root(tmp_path, capsys):
    """IDX files that are no data set's official ones, in the place both look: neither is said
    to be present; in a data set's own folder they are its files, not the official ones."""
    write_mnist(tmp_path, n_train=12, n_test=6)
    code, out, _ = nord(capsys, "data", "list", "--root", tmp_path)
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert rows["mnist"].split()[1] == rows["fashion-mnist"].split()[1] == "unknown"
    assert f"put mnist's in {tmp_path / 'MNIST' / 'raw'}" in rows["mnist"]
    write_mnist(tmp_path / "FashionMNIST", n_train=12, n_test=6)
    code, out, _ = nord(capsys, "data", "list", "--root", tmp_path)
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert rows["fashion-mnist"].split()[1:3] == ["present", str(tmp_path / "FashionMNIST")]
    assert "not the official files" in rows["fashion-mnist"]
    assert rows["mnist"].split()[1] == "unknown"


def test_download_does_not_take_the_other_data_sets_files_for_its_own(tmp_path, capsys,
                                                                       monkeypatch):
    """Fashion-MNIST's official files in the root are not MNIST: `nord data download mnist`
    fetches MNIST into its own folder, where MNIST looks first, and reads it from there."""
    root = tmp_path / "data"
    _, names = write_mnist(root, n_train=12, n_test=6, seed=3)
    make_official(monkeypatch, "fashion-mnist", root, names)
    folder, sums = serve_mnist(tmp_path)
    with FileServer(folder) as server:
        code, out, err = download(capsys, "mnist", root, server, sums)
    assert code == 0, err
    assert "already in" not in out and splits(out)[2] == 20
    assert sorted(os.listdir(root / "MNIST" / "raw")) == sorted(IDX_NAMES)


# -- the library's messages name the command line's way too ------------------------------------
def test_missing_files_name_the_download_command(tmp_path):
    with pytest.raises(MissingDataError) as error:
        MNIST(tmp_path).load()
    assert f"nord data download mnist --root {tmp_path}" in str(error.value)
    assert "download=True" in str(error.value) and "--mirror URL" in str(error.value)


def test_a_damaged_file_names_the_download_command_and_the_python_only_way(tmp_path):
    _, names = write_mnist(tmp_path / "MNIST" / "raw", n_train=10, n_test=5)
    checksums = {name: md5(tmp_path / "MNIST" / "raw" / name) for name in names}
    checksums[names[0]] = "0" * 32
    with pytest.raises(CorruptDataError) as error:
        MNIST(tmp_path, checksums=checksums).load()
    message = str(error.value)
    assert f"nord data download mnist --root {tmp_path}" in message
    assert "verify=False (Python only" in message


@pytest.mark.processes
def test_a_download_whose_output_reader_goes_away_finishes_quietly(tmp_path):
    """`nord data download ... | head -1`: the download finishes; no error is printed."""
    folder, sums = serve_mnist(tmp_path)
    with FileServer(folder) as server:
        process = subprocess.Popen(
            [sys.executable, "-m", "nord", "data", "download", "mnist", "--root",
             str(tmp_path / "data"), "--mirror", server.url, "--checksums", str(sums)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(REPO),
            env=dict(os.environ, PYTHONPATH=str(REPO)))
        process.stdout.close()   # the reader is gone before the first line
        _, err = process.communicate(timeout=120)
    assert process.returncode == 141 and err == "", err
    raw = tmp_path / "data" / "MNIST" / "raw"
    assert all((raw / name).read_bytes() == (folder / name).read_bytes() for name in IDX_NAMES)
