"""Child processes that take Ctrl-C as a terminal would deliver it.

A shell without job control starts background commands with SIGINT ignored, and children
inherit that; nord then rightly leaves SIGINT alone (a background job is not Ctrl-C's to stop).
A test that sends SIGINT must therefore give its child the default disposition itself, or it
depends on how the suite was launched.
"""
import signal


def default_sigint() -> None:
    """``preexec_fn`` for subprocess.Popen: SIGINT back to its default in the child."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
