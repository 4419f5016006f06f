"""Files and secrets (issue 16): read_file holds to its folder while the disk changes under it, reads
no hard link to an outside file, and no printed or logged command shows a secret."""

from __future__ import annotations

import os
import threading

import pytest

from agentkit.tools.builtin import SandboxError, make_read_file


@pytest.fixture
def sandbox(tmp_path):
    root = tmp_path / "allowed"
    (root / "sub").mkdir(parents=True)
    (root / "notes.txt").write_text("inside\n")
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    return root


def test_read_file_refuses_a_hard_link_to_an_outside_file(sandbox) -> None:
    os.link(sandbox.parent / "secret.txt", sandbox / "hard.txt")
    with pytest.raises(SandboxError, match="hard links"):
        make_read_file(sandbox)(path="hard.txt")


def test_read_file_follows_links_inside_and_refuses_chains_that_leave(sandbox) -> None:
    os.symlink("sub", sandbox / "alias")  # a folder link that stays inside
    (sandbox / "sub" / "deep.txt").write_text("deep\n")
    os.symlink("../notes.txt", sandbox / "sub" / "up.txt")  # relative, still inside
    os.symlink("../../secret.txt", sandbox / "sub" / "out.txt")  # relative, leaves
    os.symlink(sandbox / "loop1", sandbox / "loop2")
    os.symlink(sandbox / "loop2", sandbox / "loop1")
    read = make_read_file(sandbox)
    assert read(path="alias/deep.txt") == "deep\n"
    assert read(path="alias/up.txt") == "inside\n"
    with pytest.raises(SandboxError):
        read(path="alias/out.txt")
    with pytest.raises(SandboxError, match="symbolic links"):
        read(path="loop1")


def test_read_file_never_leaks_while_a_file_flips_to_an_outside_symlink(sandbox) -> None:
    """The check-then-open race: another process swaps the file for a link to a secret as fast as it
    can; 3 of 3000 reads leaked it before."""
    target = sandbox / "flip.txt"
    target.write_text("harmless")
    stop = threading.Event()

    def flipper() -> None:
        spare = sandbox / ".spare"
        while not stop.is_set():
            try:
                os.symlink(sandbox.parent / "secret.txt", spare)
                os.replace(spare, target)  # now a link to the secret
                spare.write_text("harmless")
                os.replace(spare, target)  # a plain file again
            except OSError:
                pass

    thread = threading.Thread(target=flipper, daemon=True)
    thread.start()
    read = make_read_file(sandbox)
    leaked = ok = 0
    try:
        for _ in range(3000):
            try:
                text = read(path="flip.txt")
            except (SandboxError, OSError, ValueError):
                continue
            leaked += "SECRET" in text
            ok += text == "harmless"
    finally:
        stop.set()
        thread.join()
    assert leaked == 0
    assert ok > 0  # the reads did happen


def test_serve_dry_run_masks_the_api_key_everywhere(tmp_path) -> None:
    import json

    from typer.testing import CliRunner

    from agentkit.cli.main import app
    from agentkit.serving import mask_secrets

    (tmp_path / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
        "num_key_value_heads": 4, "num_hidden_layers": 2, "vocab_size": 128, "torch_dtype": "bfloat16"}))
    args = ["serve", str(tmp_path), "--dry-run", "--gpu", "h100", "--vllm-version", "0.11.0",
            "--api-key", "sk-VERYSECRET", "--", "--hf-token=hf_SECRET2", "--max-num-seqs", "8"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "SECRET" not in result.output
    assert result.output.count("***") == 2
    assert "--max-num-seqs 8" in result.output
    assert mask_secrets(["vllm", "--max-num-batched-tokens", "8192", "--token", "t", "--api-key=k"]) == \
        ["vllm", "--max-num-batched-tokens", "8192", "--token", "***", "--api-key=***"]
