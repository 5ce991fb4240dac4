"""docs/paper-scale.md's step-by-step block runs in order, as a dry run, on a copy of the repository.

Each line of the block runs as written in one bash session (``set -euo pipefail``), except
the few that cannot run here, each replaced by what stands in for it:

* the submit host's ``.venv`` is this test's interpreter environment (which has the same
  Snakemake and executor plugin: the ``pip install`` line's pins must equal pyproject's);
* the SciMRC file (a browser download) is a stub;
* the weights cache (``HF_HOME``) is a temporary folder;
* ``conda`` is a stand-in (tests/conda_double.py) that records the environments it is asked
  to create (both the workflow's and the serving one must be);
* the run's last line runs as its ``-n`` form.

A line the table below does not know fails the test, so the block and the test stay in step.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml
from conda_double import calls, install

from isqaflow import cuda
from workflow_utils import REPO, copy_repo, env

DOC = REPO / "docs" / "paper-scale.md"
MARKER = "<!-- paper-scale-steps -->"
PAPER_COMMAND = (
    ".venv/bin/snakemake --profile profiles/slurm --configfile config/paper.yaml --sdm conda"
)


def steps() -> list[str]:
    text = DOC.read_text()
    assert MARKER in text, f"{DOC}: no {MARKER} block"
    block = text.split(MARKER, 1)[1]
    match = re.match(r"\s*```bash\n(.*?)\n```", block, re.S)
    assert match, f"{DOC}: the {MARKER} marker is not followed by a bash block"
    return [
        line
        for line in match.group(1).splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def pyproject_pins() -> dict[str, str]:
    text = (REPO / "pyproject.toml").read_text()
    return dict(re.findall(r'"([A-Za-z0-9_.-]+)==([^"]+)"', text))


def stand_in(line: str, hf_home: Path) -> str:
    """What runs here for a line of the block (see the module docstring)."""
    code = line.split("  #", 1)[0].strip()
    if code == "python3 -m venv .venv":
        return f"ln -s {sys.prefix} .venv"
    if code.startswith(".venv/bin/pip install "):
        pins = dict(arg.split("==") for arg in code.split()[2:])
        expected = pyproject_pins()
        assert pins == {name: expected[name] for name in pins}, (pins, "differ from pyproject.toml")
        assert set(pins) == {"snakemake", "snakemake-executor-plugin-slurm"}
        return "true"
    if code.startswith("export HF_HOME="):
        return f"export HF_HOME={hf_home}"
    if code.startswith("export "):
        return code
    if code.startswith("mkdir -p "):
        return code
    if code.startswith("cp ") and code.endswith(" resources/local/scimrc/scimrc_train_dev.json"):
        return "echo '[]' > resources/local/scimrc/scimrc_train_dev.json"
    if code.endswith("--conda-create-envs-only") and PAPER_COMMAND in code:
        return code
    if re.fullmatch(
        r'conda env create -n \S+ -f "\$\(\.venv/bin/python src/isqaflow/cuda\.py \S+ serving\)"',
        code,
    ):
        return code
    if code == PAPER_COMMAND + " -n":
        return code
    if code == PAPER_COMMAND:
        return code + " -n"
    raise AssertionError(f"{DOC}: a line this test has no stand-in for: {line!r}")


def test_block_names_every_environment_variable_the_profile_and_config_read():
    lines = steps()
    exported = {m.group(1) for line in lines for m in [re.match(r"export (\w+)=", line)] if m}
    assert {
        "SLURM_ACCOUNT",
        "SLURM_CPU_PARTITION",
        "SLURM_GPU_PARTITION",
        "OPENAI_API_KEY",
        "HF_TOKEN",
        "HF_HOME",
    } <= exported
    assert "$SLURM_ACCOUNT" in (REPO / "profiles/slurm/config.yaml").read_text()
    # the serving environment and the workflow's own, in that order before the plan
    order = [
        i
        for i, line in enumerate(lines)
        if "--conda-create-envs-only" in line or "conda env create" in line
    ]
    plan = lines.index(PAPER_COMMAND + " -n")
    assert len(order) == 2 and max(order) < plan < lines.index(PAPER_COMMAND)
    # the serving file for the config's cuda (isqaflow.cuda), not one written into the docs
    assert "src/isqaflow/cuda.py config/paper.yaml serving" in " ".join(lines)
    assert "CONDA_OVERRIDE_CUDA" not in " ".join(lines)  # the workflow sets it from cuda:


def test_the_paper_scale_steps_run_in_order_as_a_dry_run(tmp_path):
    workdir = copy_repo(tmp_path / "checkout")
    script = ["set -euo pipefail"]
    for line in steps():
        script += [f"echo '+ {line.replace(chr(39), '')}'", stand_in(line, tmp_path / "hf-home")]
    run_env = {
        k: v for k, v in env().items() if not k.startswith(("SLURM_", "OPENAI_", "HF_TOKEN"))
    }
    conda = install(tmp_path / "conda")
    run_env["PATH"] = f"{conda}:{run_env['PATH']}"
    result = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=workdir,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    # the plan and the run's dry form, each with its job table; nothing submitted
    assert "Job stats:" in output, output[-6000:]
    assert output.count("This was a dry-run (flag -n)") == 2
    assert "fetch_weights" in output and "sbatch --parsable" not in output  # nothing submitted
    created = [c for c in calls(conda) if c.startswith("env create")]
    rules_text = " ".join(p.read_text() for p in (REPO / "rules").rglob("*.smk"))
    paper_cuda = cuda.setting(yaml.safe_load((REPO / "config/paper.yaml").read_text()))
    rule_envs = (
        set(re.findall(r'"(?:\.\./)+(envs/\w+\.yaml)"', rules_text))
        | {
            cuda.env_file(name, paper_cuda)
            for name in re.findall(r'conda_env\("(\w+)"\)', rules_text)
        }
    ) - {"envs/tracking.yaml"}  # rule track_run's: only with tracking.enabled (off in paper.yaml)
    assert len(rule_envs) >= 2 and sum("--prefix" in c for c in created) == len(rule_envs), (
        created,
        rule_envs,
    )
    assert "env create -n isqaflow-serving -f envs/serving.yaml" in created
