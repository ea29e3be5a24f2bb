"""Small real file systems for tests of full and read-only disks: a tmpfs mounted in a folder.

::

    with tmpfs(tmp_path / "small", "size=64k") as folder:   # 64 kB, then ENOSPC
        ...
    with tmpfs(tmp_path / "ro", "ro") as folder:            # EROFS, even for root

Mounting needs root; where this process may not mount, the test is skipped with the reason.
"""
import contextlib
import os
import subprocess

import pytest


@contextlib.contextmanager
def tmpfs(folder, options: str):
    """Mount a tmpfs with mount ``options`` on ``folder`` (created) for the block; unmount after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root (run the tests as root)")
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"this process may not mount a tmpfs: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)
