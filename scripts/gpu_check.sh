#!/usr/bin/env bash
# One-command GPU check of the training stack: tests/benchmarks/bench_gpu_train.py on cuda, for a machine with
# torch/transformers/accelerate preinstalled but not agentkit's core deps (pydantic & co., and peft 0.21.2 as
# tested here, travel as wheels in .whl/: carry [".whl"]). Writes $OUT/bench_gpu_train.json and .log, and the
# same two steps on a model of the default's shape (494M) to bench_gpu_train_qwen0.5b.json.
# The wheels (git-ignored), fetched where pip works, for the machine's CPython 3.12:
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_17_x86_64 -d .whl pydantic==2.14.3 pydantic-core==2.50.4 annotated-types==0.8.0 \
#     typing-inspection==0.4.5 typing-extensions==4.16.0 peft==0.21.2
#   bash scripts/gpu_check.sh        # from the repo root; 1.5 min on an H100 (2026-11-27)
set -u -o pipefail
OUT=${OUT:-$PWD/gpu-check-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
nvidia-smi -L || true
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
timeout 420 python3 tests/benchmarks/bench_gpu_train.py --device "${DEVICE:-cuda}" --out "$OUT/bench_gpu_train.json" 2>&1 | tee "$OUT/bench_gpu_train.log"
timeout 240 python3 tests/benchmarks/bench_gpu_train.py --device "${DEVICE:-cuda}" --size qwen0.5b --only lora_step full_step --out "$OUT/bench_gpu_train_qwen0.5b.json" 2>&1 | tee "$OUT/bench_gpu_train_qwen0.5b.log"
