"""The capacity-discovery answers (``GET /props``, ``GET /v1/models``) of the imitated servers.

Served only when a context window is set, each the way the real server does: llama-server under
``/props`` (``default_generation_settings.n_ctx``), vLLM as ``max_model_len`` on its ``/v1/models``
card; the other styles list the model on ``/v1/models`` without any context field.
"""

from __future__ import annotations

from typing import Any


def props_body(window: int, model_name: str) -> dict[str, Any]:
    """``GET /props`` of llama-server (the fields a client reads; n_ctx is the per-slot window)."""
    return {
        "default_generation_settings": {"params": {"n_predict": -1}, "n_ctx": window},
        "total_slots": 1,
        "model_alias": model_name,
        "model_path": f"/models/{model_name}.gguf",
        "modalities": {"vision": False, "audio": False},
        "build_info": "scripted",
    }


def models_body(window: int, model_name: str, style: str) -> dict[str, Any]:
    """``GET /v1/models``: OpenAI's list; vLLM's model card adds ``max_model_len``."""
    card: dict[str, Any] = {"id": model_name, "object": "model", "created": 0, "owned_by": "scripted"}
    if style == "vllm":
        card.update({"owned_by": "vllm", "root": model_name, "parent": None, "max_model_len": window})
    elif style == "llamacpp":
        card["owned_by"] = "llamacpp"
    return {"object": "list", "data": [card]}
