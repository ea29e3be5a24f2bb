"""The versions of the software a run used, recorded in its journal when it starts or resumes.

    from nord.journal import package_versions
    package_versions()   # {'python': '3.11.9', 'nord': '0.1.0', 'numpy': '1.26.4', ...}
"""
from __future__ import annotations

import platform
import sys
from importlib import metadata as importlib_metadata
from typing import Dict, Optional

from nord.version import __version__

__all__ = ["package_versions"]


def package_versions() -> Dict[str, Optional[str]]:
    """Versions of Python, nord, numpy, torch, mpi4py and the MPI library, without importing
    torch or starting MPI (the MPI library is named only when mpi4py's MPI is already loaded)."""
    versions: Dict[str, Optional[str]] = {"python": platform.python_version()}
    for package in ("nord", "numpy", "torch", "mpi4py", "horovod", "pygmo"):
        try:
            versions[package] = importlib_metadata.version(package)
        except importlib_metadata.PackageNotFoundError:
            versions[package] = None
    if versions["nord"] is None:   # a source tree that was never installed
        versions["nord"] = __version__
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None:
        try:
            versions["mpi"] = mpi.Get_library_version().strip().splitlines()[0]
        except Exception:  # noqa: BLE001 - a version string is not worth failing a run for
            versions["mpi"] = None
    return versions
