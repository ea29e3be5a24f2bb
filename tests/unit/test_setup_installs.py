"""What set-up installs is whole: every installed package has what it declares it needs (the
Horovod build brings its run-time needs, cffi among them, so pip's resolver has nothing to say
on a fresh machine)."""
import subprocess
import sys

import pytest


@pytest.mark.processes
def test_every_installed_package_has_what_it_declares():
    done = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
