"""The offline GGUF aliases (`files.OFFLINE_MODELS`: SmolLM2-135M, the Qwen2.5-Coder pair) as engine models.

Registers a resolver with `adapter.load_model`, so every alias of `files.OFFLINE_MODELS`, including one
added at run time, loads from the converted safetensors of the cache (`files.offline_model_dir`, which
builds and checks them).
"""

from __future__ import annotations

from typing import Callable, Optional

import torch

from . import files
from .adapter import pretrained, register_resolver
from .language_model import LanguageModel

__all__ = ["load_offline", "offline_loader"]


def load_offline(
    alias: str, dtype: Optional[torch.dtype] = None, device: str = "cpu", *, device_map=None, max_memory=None
) -> LanguageModel:
    """The offline model `alias`, converted once into the cache, in `dtype` (default float32) on `device`
    (or placed by `device_map` / `max_memory`, passed to `from_pretrained`)."""
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
    )  # loaded when a model is, not with the package

    path = files.offline_model_dir(alias)
    model = pretrained(
        AutoModelForCausalLM,
        path,
        dtype=dtype or torch.float32,
        device=device,
        device_map=device_map,
        max_memory=max_memory,
    )
    return LanguageModel(model, AutoTokenizer.from_pretrained(path), name=alias)


def offline_loader(name: str) -> Optional[Callable]:
    """A `load_model` loader for an alias of `files.OFFLINE_MODELS` (`name` with or without a suffix), or None
    for any other name."""
    name = name.partition(":")[0]
    if name not in files.OFFLINE_MODELS:
        return None

    def load(suffix, dtype, device, **placement):
        if suffix:
            raise ValueError(f"{name}:{suffix}: the offline aliases take no suffix; pass {name!r}.")
        return load_offline(name, dtype, device, **placement)

    return load


register_resolver(offline_loader)
