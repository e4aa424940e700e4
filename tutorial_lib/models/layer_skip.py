"""A cheaper drafter made from a decoder-only model: its first N layers (self-speculation by layer skipping).

`load_model("smollm2-135m:layers=16")` is SmolLM2-135M's first 16 blocks, then its own final norm and head:
this module registers the resolver that reads the `:layers=N` suffix of any name `load_model` knows.
`layer_skip_drafter(lm, n)` makes one from a model already loaded (the drafter then shares the verifier's
tokenizer, so `ModelPair(layer_skip_drafter(verifier, 16), verifier)` loads the weights once).
"""

from __future__ import annotations

import copy
from typing import Callable, Optional

from .adapter import load_model, register_resolver

from .language_model import LanguageModel

__all__ = ["SUFFIX", "layer_skip_drafter", "layer_skip_loader", "split_layers"]

#: The suffix that names a layer-skipped drafter: `<model>:layers=<N>`.
SUFFIX = ":layers="


def split_layers(name: str):
    """(`base`, `n_layers`) of a name `<base>:layers=<N>`; (`name`, None) for a name without the suffix."""
    if SUFFIX not in name:
        return name, None
    base, _, count = name.rpartition(SUFFIX)
    if not count.isdigit() or not base:
        raise ValueError(
            f"{name!r}: a layer-skipped drafter is named '<model>:layers=<N>' with N a whole number "
            "of layers to keep, e.g. 'smollm2-135m:layers=16'."
        )
    return base, int(count)


def layer_skip_drafter(lm: LanguageModel, n_layers: int) -> LanguageModel:
    """A cheaper drafter made from a decoder-only model: its first `n_layers` blocks, then its own
    final norm and head (self-speculation by layer skipping). Same tokenizer, so it pairs with `lm`."""
    layers = getattr(getattr(lm.model, "model", None), "layers", None)
    if layers is None or lm.is_encoder_decoder:
        raise ValueError(
            f"{lm.name} is not a decoder-only transformers model with `model.layers`; "
            "layer skipping needs one."
        )
    if not 1 <= n_layers < len(layers):
        raise ValueError(
            f"n_layers={n_layers}: keep between 1 and {len(layers) - 1} of {lm.name}'s {len(layers)} layers."
        )
    net = copy.deepcopy(lm.model)
    net.model.layers = net.model.layers[:n_layers]
    net.config.num_hidden_layers = n_layers
    if getattr(net.config, "layer_types", None):
        net.config.layer_types = net.config.layer_types[:n_layers]
    # made from `lm`: the same token ids (`derived_from`), so the pair is accepted without a tokenizer too
    return LanguageModel(
        net,
        lm.tokenizer,
        name=f"{lm.name}:layers={n_layers}",
        eos_token_id=lm.eos_token_id,
        vocabulary=lm.vocabulary,
        derived_from=lm,
    )


def layer_skip_loader(name: str) -> Optional[Callable]:
    """A `load_model` loader for `<model>:layers=<N>` (the model by its own name, then cut), or None."""
    base, n_layers = split_layers(name)
    if n_layers is None:
        return None

    def load(suffix, dtype, device, **placement):
        return layer_skip_drafter(load_model(base, dtype=dtype, device=device, **placement), n_layers)

    return load


register_resolver(layer_skip_loader)
