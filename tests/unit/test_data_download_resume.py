"""Resumable, locked, checked downloads (nord.data.download), against a file server on 127.0.0.1."""
import fcntl
import os
import subprocess
import threading
import time

import numpy as np
import pytest

from nord.data.download import (
    MIRROR_ENV,
    DownloadProgress,
    download_file,
    download_files,
    file_md5,
    read_checksums,
)
from nord.errors import ConfigurationError, CorruptDataError, DataError
from tests.helpers.datafiles import md5
from tests.helpers.disks import tmpfs
from tests.helpers.fileserver import FileServer, closed_port

SIZE = 50_000
KEPT = 20_000


@pytest.fixture(autouse=True)
def local_only(monkeypatch):
    """A proxy configured for the machine must not intercept the local server."""
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.delenv(MIRROR_ENV, raising=False)


@pytest.fixture
def served(tmp_path):
    """(folder served, the content of its file 'blob', that file's MD5)."""
    folder = tmp_path / "served"
    folder.mkdir()
    content = np.random.default_rng(0).integers(0, 256, SIZE, dtype=np.uint8).tobytes()
    (folder / "blob").write_bytes(content)
    return folder, content, md5(folder / "blob")


class Recorder(DownloadProgress):
    """Keeps every event, thread-safe, as (kind, *arguments)."""

    def __init__(self):
        self.events = []
        self.bytes = 0

    def present(self, file_name, path):
        self.events.append(("present", file_name))

    def note(self, file_name, message):
        self.events.append(("note", file_name, message))

    def start(self, file_name, url, offset, total):
        self.events.append(("start", file_name, offset, total))

    def advance(self, count):
        self.bytes += count

    def finish(self, file_name, path):
        self.events.append(("finish", file_name))

    def notes(self):
        return " | ".join(e[2] for e in self.events if e[0] == "note")


def seen(server):
    return [(r.range, r.status, r.sent) for r in server.gets]


@pytest.fixture
def small_disk(tmp_path):
    """A 64 kB file system, unmounted after the test."""
    with tmpfs(tmp_path / "small", "size=64k") as folder:
        yield folder


# -- resuming ----------------------------------------------------------------------------------
def test_a_truncated_part_is_continued_with_a_range_request(served, tmp_path):
    folder, content, checksum = served
    out = tmp_path / "out"
    out.mkdir()
    (out / "blob.part").write_bytes(content[:KEPT])
    progress = Recorder()
    with FileServer(folder) as server:
        download_file(server.url + "blob", out / "blob", checksum, progress=progress)
        assert seen(server) == [(f"bytes={KEPT}-", 206, SIZE - KEPT)]
    assert (out / "blob").read_bytes() == content
    assert not (out / "blob.part").exists()
    assert ("start", "blob", KEPT, SIZE) in progress.events and progress.bytes == SIZE - KEPT


def test_a_server_without_range_support_sends_it_all_and_the_part_starts_over(served, tmp_path):
    folder, content, checksum = served
    out = tmp_path / "out"
    out.mkdir()
    (out / "blob.part").write_bytes(content[:KEPT])
    progress = Recorder()
    with FileServer(folder, ranges=False) as server:
        download_file(server.url + "blob", out / "blob", checksum, progress=progress)
        assert seen(server) == [(f"bytes={KEPT}-", 200, SIZE)]
    assert (out / "blob").read_bytes() == content   # not the kept bytes twice
    assert "does not support resuming" in progress.notes()
    assert ("start", "blob", 0, SIZE) in progress.events


def test_a_broken_transfer_keeps_its_part_and_the_next_download_continues_it(served, tmp_path):
    folder, content, checksum = served
    out = tmp_path / "out"
    with FileServer(folder, cut_after=KEPT) as server:
        with pytest.raises(DataError, match=r"kept in .*blob\.part"):
            download_file(server.url + "blob", out / "blob", checksum)
    assert (out / "blob.part").stat().st_size == KEPT and not (out / "blob").exists()
    with FileServer(folder) as server:
        download_file(server.url + "blob", out / "blob", checksum)
        assert seen(server) == [(f"bytes={KEPT}-", 206, SIZE - KEPT)]
    assert (out / "blob").read_bytes() == content


def test_a_part_from_another_file_fails_the_checksum_and_is_deleted(served, tmp_path):
    folder, _, checksum = served
    out = tmp_path / "out"
    out.mkdir()
    (out / "blob.part").write_bytes(b"x" * KEPT)
    with FileServer(folder) as server:
        with pytest.raises(CorruptDataError) as error:
            download_file(server.url + "blob", out / "blob", checksum)
    message = str(error.value)
    assert f"expected {checksum}" in message and "continued a partial download" in message
    assert "again" in message
    assert os.listdir(out) == []


def test_a_complete_part_is_checked_without_fetching_the_file_again(served, tmp_path):
    folder, content, checksum = served
    out = tmp_path / "out"
    out.mkdir()
    (out / "blob.part").write_bytes(content)
    with FileServer(folder) as server:
        download_file(server.url + "blob", out / "blob", checksum)
        assert seen(server) == [(f"bytes={SIZE}-", 416, 0)]
    assert (out / "blob").read_bytes() == content and not (out / "blob.part").exists()


def test_a_part_longer_than_the_file_starts_over(served, tmp_path):
    folder, content, checksum = served
    out = tmp_path / "out"
    out.mkdir()
    (out / "blob.part").write_bytes(content + b"tail")
    progress = Recorder()
    with FileServer(folder) as server:
        download_file(server.url + "blob", out / "blob", checksum, progress=progress)
        assert seen(server) == [(f"bytes={SIZE + 4}-", 416, 0), (None, 200, SIZE)]
    assert (out / "blob").read_bytes() == content
    assert "does not fit" in progress.notes()


# -- what is there already ---------------------------------------------------------------------
def test_a_file_in_place_with_its_checksum_is_not_fetched(served, tmp_path):
    folder, content, checksum = served
    (tmp_path / "blob").write_bytes(content)
    progress = Recorder()
    with FileServer(folder) as server:
        download_file(server.url + "blob", tmp_path / "blob", checksum, progress=progress)
        assert server.gets == []
    assert progress.events == [("present", "blob")]


def test_a_damaged_file_in_place_is_fetched_again(served, tmp_path):
    folder, content, checksum = served
    (tmp_path / "blob").write_bytes(content[:-1] + b"!")
    progress = Recorder()
    with FileServer(folder) as server:
        download_file(server.url + "blob", tmp_path / "blob", checksum, progress=progress)
    assert (tmp_path / "blob").read_bytes() == content
    assert "downloading it again" in progress.notes()


def test_two_downloads_of_one_file_take_turns(served, tmp_path):
    folder, content, checksum = served
    out = tmp_path / "out"
    first, second = Recorder(), Recorder()
    errors = []

    def fetch(progress):
        try:
            download_file(server.url + "blob", out / "blob", checksum, timeout=20, progress=progress)
        except Exception as error:  # reported below, in the test's thread
            errors.append(error)

    with FileServer(folder, pause_at=KEPT) as server:
        threads = [threading.Thread(target=fetch, args=(first,))]
        threads[0].start()
        assert server.paused.wait(10), "the first download never reached the server"
        threads.append(threading.Thread(target=fetch, args=(second,)))
        threads[1].start()
        deadline = time.monotonic() + 10
        while "waiting" not in second.notes() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "another process is downloading it" in second.notes()
        server.resume()
        for thread in threads:
            thread.join(20)
        assert len(server.gets) == 1   # one transfer for both
    assert errors == []
    assert (out / "blob").read_bytes() == content
    assert ("finish", "blob") in first.events and ("present", "blob") in second.events


# -- failures ----------------------------------------------------------------------------------
def test_a_server_that_stops_sending_times_out(served, tmp_path):
    folder, _, checksum = served
    began = time.monotonic()
    with FileServer(folder, pause_at=0) as server:
        with pytest.raises(DataError, match="no answer within 0.5 s"):
            download_file(server.url + "blob", tmp_path / "blob", checksum, timeout=0.5)
    assert time.monotonic() - began < 10
    assert os.listdir(tmp_path) == ["served"]   # no empty .part left


def test_an_unreachable_server_is_named_with_the_way_to_a_mirror(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/"
    with pytest.raises(DataError) as error:
        download_files({"blob": "0" * 32}, tmp_path / "out", [url])
    message = str(error.value)
    assert f"cannot reach {url}blob" in message and "--mirror URL" in message and "mirror=..." in message
    assert not (tmp_path / "out" / "blob.part").exists()


@pytest.mark.processes
def test_a_file_too_big_for_the_disk_is_refused_before_writing(served, small_disk):
    folder, content, _ = served
    (folder / "big").write_bytes(content * 4)
    with FileServer(folder) as server:
        with pytest.raises(DataError, match="not enough space for big") as error:
            download_file(server.url + "big", small_disk / "big", md5(folder / "big"))
    assert "--root DIR" in str(error.value)
    assert os.listdir(small_disk) == []


@pytest.mark.processes
def test_a_disk_that_fills_up_keeps_what_was_written(served, small_disk):
    folder, content, _ = served
    (folder / "big").write_bytes(content * 4)
    with FileServer(folder, length=False) as server:   # the size is not known in advance
        with pytest.raises(DataError, match="is full") as error:
            download_file(server.url + "big", small_disk / "big", md5(folder / "big"))
    kept = small_disk / "big.part"
    assert kept.stat().st_size > 0 and f"kept in {kept}" in str(error.value)
    assert kept.read_bytes() == (content * 4)[:kept.stat().st_size]


def test_a_checksum_mismatch_names_the_file_both_checksums_and_what_to_do(served, tmp_path):
    folder, _, checksum = served
    with FileServer(folder) as server:
        with pytest.raises(CorruptDataError) as error:
            download_file(server.url + "blob", tmp_path / "out" / "blob", "0" * 32)
    message = str(error.value)
    assert "blob" in message and f"MD5 {checksum}" in message and "expected " + "0" * 32 in message
    assert "deleted" in message and "--mirror" in message
    assert os.listdir(tmp_path / "out") == []


# -- checksum files ----------------------------------------------------------------------------
@pytest.mark.processes
def test_checksum_files_in_md5sum_format_are_read(tmp_path):
    a, b = tmp_path / "a.gz", tmp_path / "b"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    listing = subprocess.run(["md5sum", "--binary", str(a)], capture_output=True, text=True, check=True).stdout
    listing += subprocess.run(["md5sum", str(b)], capture_output=True, text=True, check=True).stdout
    (tmp_path / "MD5SUMS").write_text("# the mirror's files\n\n" + listing)
    assert read_checksums(tmp_path / "MD5SUMS") == {"a.gz": file_md5(a), "b": file_md5(b)}


@pytest.mark.parametrize("text, problem", [
    ("not a checksum  file\n", "line 1"),
    (f"{'a' * 32}  x\n{'b' * 32}  dir/x\n", "two checksums"),
])
def test_bad_checksum_files_are_refused(tmp_path, text, problem):
    (tmp_path / "MD5SUMS").write_text(text)
    with pytest.raises(ConfigurationError, match=problem):
        read_checksums(tmp_path / "MD5SUMS")


def test_the_next_url_is_tried_after_one_that_fails_and_that_is_said_not_warned(served, tmp_path, caplog):
    folder, content, checksum = served
    progress = Recorder()
    with FileServer(folder) as server, caplog.at_level("WARNING"):
        download_files({"blob": checksum}, tmp_path / "out", [f"http://127.0.0.1:{closed_port()}/", server.url],
                       progress=progress)
    assert (tmp_path / "out" / "blob").read_bytes() == content
    assert "cannot reach" in progress.notes() and "trying the next URL" in progress.notes()
    assert caplog.records == []   # a command's output is its own: no stray log lines


def test_a_file_put_in_place_while_waiting_for_the_lock_is_not_fetched(served, tmp_path):
    folder, content, checksum = served
    progress, done = Recorder(), []
    with FileServer(folder) as server, open(tmp_path / "blob.part", "a+b") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)   # as another process downloading it would
        waiter = threading.Thread(target=lambda: done.append(
            download_file(server.url + "blob", tmp_path / "blob", checksum, progress=progress)))
        waiter.start()
        deadline = time.monotonic() + 10
        while "waiting" not in progress.notes() and time.monotonic() < deadline:
            time.sleep(0.01)
        (tmp_path / "blob").write_bytes(content)       # the other process finished (and kept its .part)
        fcntl.flock(holder.fileno(), fcntl.LOCK_UN)
        waiter.join(10)
        assert server.gets == []
    assert done == [tmp_path / "blob"] and progress.events[-1] == ("present", "blob")
    assert not (tmp_path / "blob.part").exists()   # the empty .part is not left behind
