"""Downloads with checksum verification, served by a local HTTP server on 127.0.0.1."""
import functools
import http.server
import threading
from pathlib import Path

import pytest

from nord.data import CIFAR10, MNIST
from nord.data.download import MIRROR_ENV, base_urls, download_file, download_files
from nord.errors import CorruptDataError, DataError, MissingDataError
from tests.helpers.datafiles import cifar_archive_bytes, cifar_parts, md5, write_file, write_mnist


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path, monkeypatch):
    """(folder served, base URL) of a file server running for one test."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(served))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    # a proxy configured for the machine must not intercept the local server
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    yield served, f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


def leftovers(folder):
    return [p.name for p in Path(folder).rglob("*") if p.is_file()]


def test_download_keeps_a_file_with_the_right_checksum(server, tmp_path):
    served, url = server
    source = write_file(served / "blob", b"nord" * 1000)
    path = download_file(url + "blob", tmp_path / "out" / "blob", md5(source))
    assert path.read_bytes() == source.read_bytes()


def test_checksum_mismatch_raises_and_leaves_nothing(server, tmp_path):
    served, url = server
    write_file(served / "blob", b"nord" * 1000)
    with pytest.raises(CorruptDataError, match="MD5"):
        download_file(url + "blob", tmp_path / "out" / "blob", "0" * 32)
    assert leftovers(tmp_path / "out") == []


def test_missing_file_on_the_server_raises_and_leaves_nothing(server, tmp_path):
    _, url = server
    with pytest.raises(DataError, match="404"):
        download_file(url + "absent", tmp_path / "out" / "absent", "0" * 32)
    assert leftovers(tmp_path / "out") == []


def test_next_mirror_is_tried_when_one_fails(server, tmp_path):
    served, url = server
    source = write_file(served / "blob", b"x" * 10)
    paths = download_files({"blob": md5(source)}, tmp_path / "out", [url + "nowhere/", url])
    assert paths == [tmp_path / "out" / "blob"]


def test_mirror_argument_beats_the_environment_which_beats_the_defaults(monkeypatch):
    monkeypatch.setenv(MIRROR_ENV, "http://env/{name}/")
    assert base_urls(("http://official/",), name="mnist") == ("http://env/mnist/",)
    assert base_urls(("http://official/",), mirror="http://arg/", name="mnist") == ("http://arg/",)
    monkeypatch.delenv(MIRROR_ENV)
    assert base_urls(("http://official/",), name="mnist") == ("http://official/",)


def serve_mnist(served):
    arrays, names = write_mnist(served, n_train=12, n_test=4)
    return arrays, {name: md5(served / name) for name in names}


def test_mnist_downloads_verifies_and_loads(server, tmp_path):
    served, url = server
    (x, y, _, _), checksums = serve_mnist(served)
    data = MNIST(tmp_path / "data", download=True, mirror=url, checksums=checksums, valid_fraction=0)
    assert data.tensors("train")[1].tolist() == y.tolist()
    assert sorted(leftovers(tmp_path / "data" / "MNIST" / "raw")) == sorted(checksums)


def test_mnist_mirror_from_the_environment(server, tmp_path, monkeypatch):
    served, url = server
    (served / "mnist").mkdir()
    _, checksums = serve_mnist(served / "mnist")
    monkeypatch.setenv(MIRROR_ENV, url + "{name}/")
    assert MNIST(tmp_path, download=True, checksums=checksums, valid_fraction=0).n_train == 12


def test_mnist_download_with_a_wrong_checksum_raises_and_keeps_nothing(server, tmp_path):
    served, url = server
    _, checksums = serve_mnist(served)
    checksums["t10k-images-idx3-ubyte.gz"] = "f" * 32
    with pytest.raises(CorruptDataError, match="t10k-images-idx3-ubyte.gz"):
        MNIST(tmp_path / "data", download=True, mirror=url, checksums=checksums, valid_fraction=0).load()
    kept = leftovers(tmp_path / "data")
    assert "t10k-images-idx3-ubyte.gz" not in kept
    assert not [name for name in kept if name.endswith(".part")]


def test_failed_download_says_where_to_put_the_files(server, tmp_path):
    _, url = server  # serves nothing
    with pytest.raises(MissingDataError) as error:
        MNIST(tmp_path, download=True, mirror=url, checksums={f"{s}.gz": "0" * 32 for s in (
            "train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
            "t10k-labels-idx1-ubyte")}).load()
    assert "download failed" in str(error.value)
    assert str(tmp_path / "MNIST" / "raw") in str(error.value)


def test_only_missing_files_are_downloaded(server, tmp_path):
    served, url = server
    _, checksums = serve_mnist(served)
    target = tmp_path / "MNIST" / "raw"
    target.mkdir(parents=True)
    for name in list(checksums)[:3]:
        (target / name).write_bytes((served / name).read_bytes())
        (served / name).unlink()  # the server no longer has it: it must not be asked for
    assert MNIST(tmp_path, download=True, mirror=url, checksums=checksums, valid_fraction=0).n_test == 4


def test_cifar_downloads_the_archive_and_loads_it(server, tmp_path):
    served, url = server
    batches, parts = cifar_parts(per_batch=3, n_test=5)
    archive = write_file(served / "cifar-10-python.tar.gz", cifar_archive_bytes(parts))
    data = CIFAR10(tmp_path, download=True, mirror=url, checksums={archive.name: md5(archive)},
                   valid_fraction=0)
    assert data.n_train == 15 and data.n_test == 5
    assert (tmp_path / "cifar-10-python.tar.gz").is_file()


def test_cifar_download_with_a_wrong_checksum_deletes_the_partial_archive(server, tmp_path):
    served, url = server
    _, parts = cifar_parts()
    write_file(served / "cifar-10-python.tar.gz", cifar_archive_bytes(parts))
    with pytest.raises(CorruptDataError, match="file was deleted"):
        CIFAR10(tmp_path / "data", download=True, mirror=url, checksums={"cifar-10-python.tar.gz": "1" * 32}, valid_fraction=0).load()
    assert leftovers(tmp_path / "data") == []
