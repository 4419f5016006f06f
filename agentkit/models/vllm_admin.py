"""A vLLM server's own routes (health, model list, runtime LoRA, tokenize), over plain HTTP.

Kept apart from `vllm_server` (which starts servers) so that the `vllm:` model and the launcher can both
use it without importing each other.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["VLLMAdmin", "VLLMAdminError"]


class VLLMAdminError(RuntimeError):
    """A non-2xx answer from a server route; `status` is the HTTP status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class VLLMAdmin:
    """The server's own routes (health, model list, runtime LoRA), over plain HTTP."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.root_url = self.base_url.removesuffix("/v1")
        self.api_key = api_key
        self.timeout = timeout

    def _request(self, method: str, url: str, payload: dict[str, Any] | None = None,
                 timeout: float | None = None) -> tuple[int, bytes]:
        data = json.dumps(payload).encode() if payload is not None else None
        request = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.api_key and self.api_key != "EMPTY":
            request.add_header("Authorization", f"Bearer {self.api_key}")
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as err:
            body = err.read()
            raise VLLMAdminError(f"{method} {url} → {err.code}: {_error_message(body)}", err.code) from None

    def health(self, timeout: float = 2.0) -> bool:
        """True when `/health` answers 200; False when nothing (healthy) answers yet."""
        try:
            status, _ = self._request("GET", f"{self.root_url}/health", timeout=timeout)
        except (VLLMAdminError, OSError):
            return False
        return status == 200

    def models(self) -> list[dict[str, Any]]:
        """The entries of `/v1/models`: the base model and every loaded LoRA adapter."""
        _, body = self._request("GET", f"{self.base_url}/models")
        return list(json.loads(body).get("data", []))

    def model_ids(self) -> list[str]:
        """The ids of the models the server serves (the base model and loaded adapters)."""
        return [entry["id"] for entry in self.models()]

    def load_lora_adapter(self, name: str, path: str | Path) -> str:
        """POST /v1/load_lora_adapter; the server reads the PEFT directory at `path` (its own filesystem)."""
        _, body = self._request("POST", f"{self.base_url}/load_lora_adapter",
                                {"lora_name": name, "lora_path": str(path)})
        return body.decode(errors="replace")

    def unload_lora_adapter(self, name: str) -> str:
        """POST /v1/unload_lora_adapter: the server drops the adapter named `name`."""
        _, body = self._request("POST", f"{self.base_url}/unload_lora_adapter", {"lora_name": name})
        return body.decode(errors="replace")

    def tokenize(self, payload: dict[str, Any]) -> dict[str, Any]:
        """POST /tokenize: `{"messages": [...], "add_generation_prompt": ..., "tools": [...]}` (the chat template
        applied by the server) or `{"prompt": TEXT}`; the answer has `tokens` and `max_model_len`."""
        _, body = self._request("POST", f"{self.root_url}/tokenize", payload)
        answer: dict[str, Any] = json.loads(body)
        return answer

    def chat(self, payload: dict[str, Any]) -> dict[str, Any]:
        """A raw `/v1/chat/completions` call (for probes that need fields the Model protocol hides)."""
        _, body = self._request("POST", f"{self.base_url}/chat/completions", payload)
        answer: dict[str, Any] = json.loads(body)
        return answer


def _error_message(body: bytes) -> str:
    try:
        parsed = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return body.decode(errors="replace")[:500]
    if isinstance(parsed, dict):
        error = parsed.get("error", parsed)
        if isinstance(error, dict):
            return str(error.get("message", error))
        return str(parsed.get("message", error))
    return str(parsed)
