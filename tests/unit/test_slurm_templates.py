"""The sbatch templates in slurm/ stay usable where no SLURM runs (tests/parallel/test_slurm.py
submits them to a real one)."""
import re
import shlex
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = sorted((REPO / "slurm").glob("*.sbatch"))
README = (REPO / "README.md").read_text()


def test_there_is_a_template_per_launcher():
    assert [path.name for path in TEMPLATES] == ["mpirun.sbatch", "srun.sbatch"]


@pytest.mark.processes
@pytest.mark.parametrize("template", TEMPLATES, ids=lambda path: path.name)
def test_a_template_is_valid_bash(template):
    done = subprocess.run(["bash", "-n", str(template)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda path: path.name)
def test_a_template_asks_for_resources_and_runs_its_arguments_on_every_rank(template):
    text = template.read_text()
    options = re.findall(r"^#SBATCH (--[\w-]+)", text, re.M)
    assert {"--nodes", "--ntasks-per-node", "--time", "--output"} <= set(options), options
    launch = [line for line in text.splitlines() if re.match(r"^(srun|mpirun) ", line)]
    assert len(launch) == 1 and launch[0].endswith('"$@"'), launch


def test_srun_template_uses_pmix_and_ends_the_step_on_a_failed_task():
    launch = next(line for line in (REPO / "slurm" / "srun.sbatch").read_text().splitlines()
                  if line.startswith("srun "))
    assert "--mpi=pmix" in launch and "--kill-on-bad-exit=1" in launch


def test_the_readme_submits_the_templates_there_are():
    section = README.split("### SLURM", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    submitted = {shlex.split(line)[1] for line in block.splitlines() if line.startswith("sbatch ")}
    assert submitted == {f"slurm/{path.name}" for path in TEMPLATES}
