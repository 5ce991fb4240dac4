#!/usr/bin/env bash
# Builds the ColBERT (PyLate) environment of envs/colbert.yaml (CUDA 13; or ENV_FILE, e.g. its
# CUDA-12 variant envs/colbert-cuda12.yaml) as a plain virtual environment, without conda: every
# pin installed with --no-deps, so nothing outside the list can come in.
# Usage: bash benchmarks/colbert_env.sh VENV [PYTHON [ENV_FILE]]
#   e.g. bash benchmarks/colbert_env.sh /tmp/colbert-venv python3.11
# tests/engines/test_colbert_pylate.py runs PyLate for real in it (ISQAFLOW_COLBERT_PYTHON).
set -euo pipefail
venv="${1:?usage: colbert_env.sh VENV [PYTHON]}"
python="${2:-python3}"
here="$(cd "$(dirname "$0")/.." && pwd)"
env_file="${3:-$here/envs/colbert.yaml}"
pins=$(sed -n 's/^ *- \([A-Za-z0-9_.-]*==[^ #]*\).*/\1/p' "$env_file")
start=$(date +%s)
"$python" -m venv "$venv"
# uv installs the pins (downloads side by side: ~3 GB of CUDA wheels); pip checks them.  No
# bytecode is compiled here: the processes that use the environment compile what they import,
# once, where PYTHONDONTWRITEBYTECODE is unset (the Makefile's recipes unset it).
"$venv/bin/pip" install --quiet uv==0.9.30
"$venv/bin/uv" pip install --quiet --python "$venv/bin/python" --no-deps $pins
"$venv/bin/pip" check
echo "colbert environment: $(echo "$pins" | wc -l) packages in $(( $(date +%s) - start )) s, $(du -sh "$venv" | cut -f1) at $venv"
