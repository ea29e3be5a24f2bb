"""What scripts/setup.sh installs for this machine's GPUs: the torch build, and Horovod's.

    python3 scripts/gpu_setup.py            # says what it found and what it will install
    eval "$(python3 scripts/gpu_setup.py --shell)"   # NORD_* variables for setup.sh

- An NVIDIA GPU (``nvidia-smi`` lists one) gets a CUDA build of torch: the newest of
  ``NORD_TORCH_CUDA_BUILDS`` (default ``cu130 cu128 cu126``) that the driver supports (the
  "CUDA Version" nvidia-smi prints), from PyTorch's wheel index. Without a GPU, or with a
  driver older than every build, torch stays the CPU build.
- Horovod gets NCCL operations where there is a GPU, ``nvcc`` and NCCL (``nccl.h`` and
  ``libnccl.so``). Otherwise it is built with MPI and Gloo only, and nord's backend 'auto'
  trains on GPUs with torch.distributed (NCCL) instead.

Standard library only: it runs before the virtual environment has anything in it.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

TORCH_CUDA_BUILDS = ("cu130", "cu128", "cu126")
TORCH_INDEX = "https://download.pytorch.org/whl/{build}"


@dataclass
class Plan:
    """What to install, and why, in words for the set-up's output."""

    gpus: List[str]
    torch_index: str = ""            # empty: the CPU build from the usual index
    torch_build: str = ""            # 'cu128', or empty
    horovod_nccl: bool = False
    nccl_include: str = ""
    nccl_lib: str = ""
    cuda_home: str = ""
    says: List[str] = field(default_factory=list)

    def shell(self) -> str:
        """``NAME=value`` lines, quoted for a POSIX shell's ``eval``."""
        values = {"NORD_GPUS": "; ".join(self.gpus), "NORD_TORCH_INDEX": self.torch_index,
                  "NORD_TORCH_BUILD": self.torch_build,
                  "NORD_HOROVOD_NCCL": "1" if self.horovod_nccl else "0",
                  "NORD_NCCL_INCLUDE": self.nccl_include, "NORD_NCCL_LIB": self.nccl_lib,
                  "NORD_CUDA_HOME": self.cuda_home, "NORD_GPU_SAYS": " ".join(self.says)}
        return "\n".join(f"{name}={shlex.quote(value)}" for name, value in values.items())


def gpu_names(query_output: str) -> List[str]:
    """GPU names from ``nvidia-smi --query-gpu=name --format=csv,noheader`` (one a line)."""
    refusals = ("no devices", "nvidia-smi has failed")
    return [line.strip() for line in query_output.splitlines()
            if line.strip() and not line.lower().startswith(refusals)]


def driver_cuda_version(smi_output: str) -> Optional[Tuple[int, int]]:
    """The newest CUDA the driver supports, from plain ``nvidia-smi``'s "CUDA Version: 12.4"."""
    found = re.search(r"CUDA Version:\s*(\d+)\.(\d+)", smi_output)
    return (int(found.group(1)), int(found.group(2))) if found else None


def build_version(build: str) -> Tuple[int, int]:
    """'cu128' -> (12, 8); 'cu130' -> (13, 0)."""
    digits = build[2:]
    return int(digits[:-1]), int(digits[-1])


def torch_build(driver: Optional[Tuple[int, int]],
                builds: Sequence[str] = TORCH_CUDA_BUILDS) -> Optional[str]:
    """The newest build the driver can run (a driver runs builds up to its CUDA version)."""
    if driver is None:
        return None
    usable = [build for build in builds if build_version(build) <= driver]
    return max(usable, key=build_version) if usable else None


def find_nccl(roots: Sequence[str]) -> Optional[Tuple[str, str]]:
    """(include folder, lib folder) of the first root holding ``include/nccl.h`` and a
    ``libnccl.so`` (in ``lib``, ``lib64`` or ``lib/x86_64-linux-gnu``)."""
    for root in roots:
        include = os.path.join(root, "include")
        if not os.path.isfile(os.path.join(include, "nccl.h")):
            continue
        for lib in ("lib", "lib64", os.path.join("lib", "x86_64-linux-gnu")):
            folder = os.path.join(root, lib)
            if glob.glob(os.path.join(folder, "libnccl.so*")):
                return include, folder
    return None


def nccl_roots(environ: Dict[str, str], cuda_home: str, site_packages: Sequence[str]) -> List[str]:
    """Where NCCL is looked for: $NCCL_HOME, $HOROVOD_NCCL_HOME, the CUDA toolkit, /usr,
    and the nvidia-nccl wheel that CUDA builds of torch install."""
    roots = [environ.get("NCCL_HOME", ""), environ.get("HOROVOD_NCCL_HOME", ""), cuda_home,
             "/usr", "/usr/local"]
    roots += [os.path.join(folder, "nvidia", "nccl") for folder in site_packages]
    return [root for root in roots if root]


def plan(gpus: List[str], driver: Optional[Tuple[int, int]], nvcc: Optional[str],
         nccl: Optional[Tuple[str, str]], builds: Sequence[str] = TORCH_CUDA_BUILDS) -> Plan:
    """What to install for these facts (each found by :func:`detect`)."""
    made = Plan(gpus=list(gpus))
    if not gpus:
        made.says.append("no NVIDIA GPU (nvidia-smi lists none): torch is the CPU build, "
                         "Horovod has MPI and Gloo.")
        return made
    version = "?" if driver is None else f"{driver[0]}.{driver[1]}"
    build = torch_build(driver, builds)
    if build is None:
        made.says.append(
            f"NVIDIA GPU(s) {', '.join(gpus)}, but the driver supports CUDA {version} and "
            f"torch's CUDA builds ({', '.join(builds)}) need a newer one: torch stays the CPU "
            "build (update the driver, or set NORD_TORCH_CUDA_BUILDS).")
    else:
        made.torch_build, made.torch_index = build, TORCH_INDEX.format(build=build)
        major, minor = build_version(build)
        made.says.append(f"NVIDIA GPU(s) {', '.join(gpus)} (driver supports CUDA {version}): "
                         f"torch's CUDA {major}.{minor} build ({build}) from {made.torch_index}.")
    if nvcc and nccl and build is not None:
        made.horovod_nccl = True
        made.nccl_include, made.nccl_lib = nccl
        made.cuda_home = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        made.says.append(f"nvcc ({nvcc}) and NCCL ({nccl[1]}) are here: Horovod is built "
                         "with NCCL operations for GPUs, as well as MPI and Gloo.")
    else:
        missing = [name for name, present in (("nvcc", nvcc), ("NCCL", nccl)) if not present]
        if build is None:
            missing.append("a CUDA build of torch")
        made.says.append(f"Without {' and '.join(missing)}, Horovod is built with MPI and Gloo "
                         "only, so on GPUs backend 'auto' trains with torch.distributed (NCCL).")
    return made


def _run(command: Sequence[str]) -> str:
    try:
        return subprocess.run(list(command), capture_output=True, text=True, timeout=60,
                              check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def detect(environ: Optional[Dict[str, str]] = None,
           site_packages: Sequence[str] = ()) -> Plan:
    """Look at this machine (nvidia-smi, nvcc, NCCL) and make the :class:`Plan`."""
    environ = dict(os.environ if environ is None else environ)
    builds = tuple(environ.get("NORD_TORCH_CUDA_BUILDS", " ".join(TORCH_CUDA_BUILDS)).split())
    path = environ.get("PATH", os.defpath)
    smi = shutil.which("nvidia-smi", path=path)
    gpus, driver = [], None
    if smi:
        gpus = gpu_names(_run([smi, "--query-gpu=name", "--format=csv,noheader"]))
        driver = driver_cuda_version(_run([smi]))
    cuda_home = environ.get("CUDA_HOME", "/usr/local/cuda")
    nvcc = shutil.which("nvcc", path=f"{path}{os.pathsep}{os.path.join(cuda_home, 'bin')}")
    if nvcc and "CUDA_HOME" not in environ:
        cuda_home = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    nccl = find_nccl(nccl_roots(environ, cuda_home, site_packages))
    return plan(gpus, driver, nvcc, nccl, builds)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shell", action="store_true",
                        help="print NORD_* assignments for a shell's eval")
    parser.add_argument("--site-packages", action="append", default=[],
                        help="a site-packages folder to look for NCCL in (repeatable)")
    args = parser.parse_args(argv)
    made = detect(site_packages=args.site_packages)
    print(made.shell() if args.shell else "\n".join(made.says))
    return 0


if __name__ == "__main__":
    sys.exit(main())
