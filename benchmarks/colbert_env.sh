#!/usr/bin/env bash
# Builds the ColBERT (PyLate) environment of envs/colbert.yaml as a plain virtual
# environment, without conda: every pin installed with --no-deps, so nothing outside
# the list can come in.  Usage: bash benchmarks/colbert_env.sh VENV [PYTHON]
#   e.g. bash benchmarks/colbert_env.sh /tmp/colbert-venv python3.11
# tests/engines/test_colbert_pylate.py runs PyLate for real in it (ISQAFLOW_COLBERT_PYTHON).
set -euo pipefail
venv="${1:?usage: colbert_env.sh VENV [PYTHON]}"
python="${2:-python3}"
here="$(cd "$(dirname "$0")/.." && pwd)"
pins=$(sed -n 's/^ *- \([A-Za-z0-9_.-]*==[^ #]*\).*/\1/p' "$here/envs/colbert.yaml")
start=$(date +%s)
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --no-deps $pins
"$venv/bin/pip" check
echo "colbert environment: $(echo "$pins" | wc -l) packages in $(( $(date +%s) - start )) s, $(du -sh "$venv" | cut -f1) at $venv"
