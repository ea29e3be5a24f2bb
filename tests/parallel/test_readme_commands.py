"""Every command line of the README runs as written on this machine (2 cores, root), at smoke
size: budgets and seeds are made small, nothing else changes. Each code block is an example
of its own, so each runs in a fresh folder, its lines in order.

Lines that need what this machine lacks are run by the tests named in ``ELSEWHERE``, which
take them from the README too or run the same command against a local stand-in.
"""
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.mpirun import MPI_ENV, REPO, requires_mpirun

README = (REPO / "README.md").read_text()

# lines run elsewhere, and why not here
ELSEWHERE = {
    "make ": "CI runs `make test`; tests/unit/test_readme.py checks the two targets exist",
    "hostfiles/cluster": "tests/parallel/test_hosts.py runs these lines over three hosts",
    "srun ": "tests/parallel/test_slurm.py runs srun and the sbatch templates under SLURM",
    "sbatch ": "tests/parallel/test_slurm.py submits the templates to a single-node SLURM",
    "nord data download": "needs the official servers; tests/unit/test_data_download_cli.py "
                          "runs it against a local server",
    "legacy": "tests/parallel/test_legacy_mpi.py and tests/unit/test_legacy_examples.py run "
              "the 2018 examples",
    "-m gpu": "needs a GPU: CI collects tests/unit/test_gpu.py, which skips without CUDA",
    "nord serve": "serves until stopped: tests/parallel/test_serve_browser.py runs it beside "
                  "real runs and reads it in Chromium",
    "ssh -N": "needs a login node to tunnel to; slurm/serve_hint.sh, which prints the line, is "
              "tested in tests/parallel/test_serve_browser.py",
}


def readme_blocks():
    """The README's shell code blocks as lists of command lines, continuation lines joined,
    comments dropped."""
    blocks = []
    for block in re.findall(r"```bash\n(.*?)```", README, re.S):
        commands = []
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                commands.append(" ".join(line.split()))
        blocks.append(commands)
    return blocks


def readme_commands():
    return [command for block in readme_blocks() for command in block]


def legacy_block(command):
    return command.startswith(("export NORD_LEGACY", "cd runs/legacy")) or "legacy" in command


def smoke(command, previous_run):
    """The command at smoke size: small budgets, seeds and epochs; '...' is the last run."""
    if "nord run ..." in command:
        command = command.replace("nord run ...", previous_run)
    small = "30" if "compare" in command else "6" if "resume" in command else "4"
    command = re.sub(r"--budget \d+", f"--budget {small}", command)
    command = re.sub(r"--seeds \d+", "--seeds 4", command)
    if re.search(r"\bnord run\b", command) and "--search-epochs" not in command:
        # (a weight-sharing search is small by its own flags: epochs of search, one result)
        command += (" --epochs 1" if "--epochs" not in command and "--scheduler" not in command
            and "--config" not in command else "")
        command += " --budget 4" if "--budget" not in command else ""
    if "experiments/experiment" in command and "--smoke" not in command:
        command += " --smoke"
    return command


def test_every_readme_line_is_run_here_or_by_a_named_test():
    for command in readme_commands():
        assert (any(key in command for key in ELSEWHERE) or legacy_block(command)
            or command.startswith(("nord ", "mpirun ", ".venv/bin/"))), command


@requires_mpirun
@pytest.mark.mpi
def test_the_readme_lines_run_as_written_at_smoke_size(tmp_path):
    env = dict(os.environ, PATH=f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}",
               PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    # root is this machine's peculiarity; oversubscription must come from the line itself
    env.update({key: MPI_ENV[key] for key in ("OMPI_ALLOW_RUN_AS_ROOT",
                                              "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")})
    env.pop("OMPI_MCA_rmaps_base_oversubscribe", None)
    ran = []
    for number, block in enumerate(readme_blocks()):
        folder = tmp_path / f"block{number}"
        folder.mkdir()
        for name in (".venv", "experiments", "hostfiles"):
            (folder / name).symlink_to(REPO / name)
        previous_run = ""
        for command in block:
            if any(key in command for key in ELSEWHERE) or legacy_block(command):
                continue
            if "horovodrun" in command and not (REPO / ".venv" / "bin" / "horovodrun").exists():
                continue
            line = smoke(command, previous_run)
            done = subprocess.run(line, shell=True, cwd=folder, env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
            assert done.returncode == 0, f"{command}\n(run as: {line})\n{done.stdout[-4000:]}"
            if re.match(r"nord run ", command):
                previous_run = line
            ran.append((folder, command))
    assert len(ran) >= 12, ran
    nord_block = next(folder for folder, command in ran if "runs/rea.db" in command)
    assert (nord_block / "reports" / "report.md").is_file()
