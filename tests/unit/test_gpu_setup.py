"""scripts/gpu_setup.py: what set-up installs for a machine's GPUs, decided from nvidia-smi,
nvcc and NCCL; run here against stand-in programs and folders made by the test."""
import importlib.util
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_setup.py"
spec = importlib.util.spec_from_file_location("gpu_setup", SCRIPT)
gpu_setup = importlib.util.module_from_spec(spec)
sys.modules["gpu_setup"] = gpu_setup          # dataclasses look their module up there
spec.loader.exec_module(gpu_setup)

SMI = """+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 570.86.15              Driver Version: 570.86.15      CUDA Version: {cuda}     |
+-----------------------------------------------------------------------------------------+
"""


def program(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def nccl_folder(root: Path) -> Path:
    (root / "include").mkdir(parents=True)
    (root / "include" / "nccl.h").write_text("/* NCCL */\n")
    (root / "lib").mkdir()
    (root / "lib" / "libnccl.so.2").write_bytes(b"")
    return root


def test_the_driver_cuda_version_and_gpu_names_are_read_from_nvidia_smi():
    assert gpu_setup.driver_cuda_version(SMI.format(cuda="12.8")) == (12, 8)
    assert gpu_setup.driver_cuda_version("command not found") is None
    assert gpu_setup.gpu_names("NVIDIA H100 80GB HBM3\nNVIDIA H100 80GB HBM3\n") == [
        "NVIDIA H100 80GB HBM3"] * 2
    assert gpu_setup.gpu_names("No devices were found\n") == []


@pytest.mark.parametrize("driver, build", [
    ((13, 0), "cu130"), ((12, 9), "cu128"), ((12, 8), "cu128"), ((12, 6), "cu126"),
    ((12, 4), None), (None, None),
])
def test_the_torch_build_is_the_newest_the_driver_supports(driver, build):
    assert gpu_setup.torch_build(driver) == build


def test_without_a_gpu_torch_stays_the_cpu_build_and_horovod_has_no_nccl():
    plan = gpu_setup.plan([], None, "/usr/local/cuda/bin/nvcc", ("/inc", "/lib"))
    assert plan.torch_index == "" and not plan.horovod_nccl
    assert "no NVIDIA GPU" in plan.says[0]


def test_a_gpu_with_nvcc_and_nccl_gets_cuda_torch_and_horovod_with_nccl():
    plan = gpu_setup.plan(["NVIDIA H100 80GB HBM3"], (13, 0), "/usr/local/cuda-13.0/bin/nvcc",
                          ("/nccl/include", "/nccl/lib"))
    assert plan.torch_build == "cu130"
    assert plan.torch_index == "https://download.pytorch.org/whl/cu130"
    assert plan.horovod_nccl and plan.nccl_lib == "/nccl/lib"
    assert "torch's CUDA 13.0 build (cu130)" in plan.says[0] and "H100" in plan.says[0]
    assert "Horovod is built with NCCL operations" in plan.says[1]


@pytest.mark.parametrize("nvcc, nccl, missing", [
    (None, ("/i", "/l"), "Without nvcc,"), ("/usr/bin/nvcc", None, "Without NCCL,"),
    (None, None, "Without nvcc and NCCL,"),
])
def test_a_gpu_without_nvcc_or_nccl_makes_torch_the_gpu_backend(nvcc, nccl, missing):
    plan = gpu_setup.plan(["NVIDIA A100"], (12, 8), nvcc, nccl)
    assert plan.torch_build == "cu128" and not plan.horovod_nccl
    assert missing in plan.says[1]
    assert "backend 'auto' trains with torch.distributed" in plan.says[1]


def test_a_driver_older_than_every_build_keeps_the_cpu_build_and_says_why():
    plan = gpu_setup.plan(["Tesla V100"], (11, 4), "/usr/bin/nvcc", ("/i", "/l"))
    assert plan.torch_index == "" and not plan.horovod_nccl
    assert "driver supports CUDA 11.4" in plan.says[0] and "update the driver" in plan.says[0]


def test_nccl_is_found_in_a_cuda_toolkit_or_in_torchs_nvidia_wheel(tmp_path):
    wheel = nccl_folder(tmp_path / "site" / "nvidia" / "nccl")
    roots = gpu_setup.nccl_roots({}, str(tmp_path / "no-cuda"), [str(tmp_path / "site")])
    assert gpu_setup.find_nccl(roots) == (str(wheel / "include"), str(wheel / "lib"))
    assert gpu_setup.find_nccl([str(tmp_path / "no-cuda")]) is None


@pytest.mark.processes
def test_the_shell_lines_set_up_a_gpu_machine(tmp_path):
    """End to end: stand-in nvidia-smi and nvcc on PATH, NCCL in a site-packages folder."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    program(bin_, "nvidia-smi", 'case "$1" in --query-gpu*) echo "NVIDIA H100 80GB HBM3";; '
                                f'*) cat <<EOF\n{SMI.format(cuda="13.0")}EOF\n;; esac\n')
    program(bin_, "nvcc", "echo 'Cuda compilation tools, release 13.0'\n")
    nccl_folder(tmp_path / "site" / "nvidia" / "nccl")
    environ = dict(os.environ, PATH=f"{bin_}:/usr/bin:/bin", CUDA_HOME=str(tmp_path / "cuda"))
    environ.pop("NCCL_HOME", None)
    done = subprocess.run([sys.executable, str(SCRIPT), "--shell", "--site-packages",
                           str(tmp_path / "site")], capture_output=True, text=True, env=environ,
                          check=True)
    names = ("NORD_TORCH_INDEX", "NORD_HOROVOD_NCCL", "NORD_GPUS", "NORD_GPU_SAYS")
    shown = subprocess.run(["sh", "-c", done.stdout + "\nprintf '%s\\n' "
                            + " ".join(f'"${name}"' for name in names)],
                           capture_output=True, text=True, check=True).stdout
    values = dict(zip(names, shown.splitlines()))
    assert values["NORD_TORCH_INDEX"] == "https://download.pytorch.org/whl/cu130"
    assert values["NORD_HOROVOD_NCCL"] == "1" and values["NORD_GPUS"] == "NVIDIA H100 80GB HBM3"
    assert "Horovod is built with NCCL" in values["NORD_GPU_SAYS"]


@pytest.mark.processes
def test_this_machine_is_described_in_words():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip()          # a sentence about what was found, GPU or not
