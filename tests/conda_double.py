"""A stand-in for ``conda`` on machines without it: answers what Snakemake asks before it
uses conda (``info --json``, ``--version``, the channel priority) and "creates" environments
(an empty prefix; refusing, as conda-forge's solver does on a machine without a GPU, a CUDA
build without ``CONDA_OVERRIDE_CUDA`` or below the file's ``cuda-version``), recording every
call, so that ``--sdm conda`` commands plan and create
their environments here as they would on a cluster's login node."""

from __future__ import annotations

from pathlib import Path

SCRIPT = r"""#!/bin/sh
echo "$*" >> "{log}"
case "$*" in
  "--version") echo "conda 24.11.3";;
  "info --json") echo '{{"conda_version": "24.11.3", "platform": "linux-64", "root_prefix": "/opt/conda", "conda_prefix": "/opt/conda", "active_prefix": null, "envs_dirs": ["/opt/conda/envs"], "pkgs_dirs": ["/opt/conda/pkgs"]}}';;
  "config --get channel_priority --json") echo '{{"get": {{"channel_priority": "strict"}}, "rc_path": "", "success": true, "warnings": []}}';;
  "env create "*)
    prefix=""; file=""; prev=""
    for a in "$@"; do
      [ "$prev" = "--prefix" ] && prefix="$a"
      {{ [ "$prev" = "--file" ] || [ "$prev" = "-f" ]; }} && file="$a"
      prev="$a"
    done
    # as conda-forge's solver on a machine without a GPU: a CUDA build (pytorch=...=cuda*)
    # depends on the virtual package __cuda, which only CONDA_OVERRIDE_CUDA provides there, and
    # cuda-version=N constrains __cuda >= N
    if [ -n "$file" ] && grep -q "=cuda\*" "$file" && [ -z "${{CONDA_OVERRIDE_CUDA:-}}" ]; then
      echo "LibMambaUnsatisfiableError: nothing provides __cuda needed by pytorch (conda double)" >&2; exit 1
    fi
    need=$( [ -n "$file" ] && sed -n 's/^ *- cuda-version=\([0-9]*\).*/\1/p' "$file" )
    if [ -n "$need" ] && [ -n "${{CONDA_OVERRIDE_CUDA:-}}" ] && [ "${{CONDA_OVERRIDE_CUDA%%.*}}" -lt "$need" ]; then
      echo "LibMambaUnsatisfiableError: __cuda=$CONDA_OVERRIDE_CUDA conflicts with cuda-version=$need (conda double)" >&2; exit 1
    fi
    if [ -n "$prefix" ]; then mkdir -p "$prefix/conda-meta" "$prefix/bin"; touch "$prefix/conda-meta/history"; fi
    ;;
  "clean "*) ;;
  *) echo "conda double: unexpected call: $*" >&2; exit 1;;
esac
"""


def install(folder: Path) -> Path:
    """Write ``folder/conda``; calls go to ``folder/calls.log``.  Put ``folder`` first on PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    conda = folder / "conda"
    conda.write_text(SCRIPT.format(log=folder / "calls.log"))
    conda.chmod(0o755)
    return folder


def calls(folder: Path) -> list[str]:
    log = folder / "calls.log"
    return log.read_text().splitlines() if log.exists() else []
