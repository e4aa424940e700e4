r"""Attention over grouped key/value heads without copying them: a verifier's block of $k > 1$ rows costs
in attention what its rows cost, not a copy of the whole cache.

A decoder with grouped-query attention ($H$ query heads sharing $H_{kv}$ key/value heads, $r = H / H_{kv}$)
computes one row (one drafted token) on the grouped heads as they are (transformers' `pack_gqa`). For $k > 1$
rows on top of a cache, transformers' `sdpa` attention needs a causal mask, and with a mask on a CPU it
repeats every key and value head $r$ times (`repeat_kv`): a copy of the layer's whole cache, $r$ times over,
on every call of a block. `benchmarks/verifier_block_profile.py` measured attention beyond its linear layers
at 11.8 ms for one row and 22.6 ms for six on the Qwen2.5-Coder-1.5B verifier (28 layers, $r = 6$, 75 tokens
of context, AVX-512).

`grouped_sdpa_attention` folds the $r$ query heads of each group into the rows instead: queries
$(b, H, k, d) \to (b, H_{kv}, r k, d)$ (head $h = g r + j$ reads key/value head $g$, as `repeat_kv` pairs
them), the mask's $k$ rows tiled $r$ times (row $j k + i$ of group $g$ is row $i$ of head $g r + j$), one
`scaled_dot_product_attention` over the $H_{kv}$ heads, and the result unfolded back to $(b, k, H, d)$. The
same sums as `sdpa` on the repeated heads (each query row meets its own head's keys and values under its own
mask row), so the model's law is unchanged up to summation order, as on every fp32 kernel path.

`use_grouped_attention(model)` registers it with transformers under `GROUPED_SDPA`, with `sdpa`'s mask
builder (a custom name without one gets no mask at all, and $k > 1$ rows on a cache would then see the cache
cut to $k$ columns), and puts a model whose attention is `sdpa` and whose heads are grouped on it. Anything
it cannot fold (no groups, one row, no mask, a mask per head, a position bias, a paged cache, dropout) goes
to `sdpa` as before.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import nn

__all__ = ["GROUPED_SDPA", "grouped_sdpa_attention", "use_grouped_attention", "attention_of"]

GROUPED_SDPA = "tutorial_lib_grouped_sdpa"


def _foldable(module, query, attention_mask, dropout, kwargs) -> bool:
    groups = getattr(module, "num_key_value_groups", 1)
    rows = query.shape[2]
    return (
        groups > 1
        and rows > 1
        and attention_mask is not None
        and attention_mask.ndim == 4
        and attention_mask.shape[1] == 1
        and attention_mask.shape[2] in (1, rows)
        and dropout == 0.0
        and kwargs.get("position_bias") is None
        and kwargs.get("cache") is None
        and kwargs.get("softcap") is None
        and not kwargs.get("output_attentions")
    )


def grouped_sdpa_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """transformers' attention interface (`AttentionInterface`): `sdpa` with the query heads of each key/value
    group folded into its rows where a block of rows carries a mask; returns (output `(b, k, H, d)`, None)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if not _foldable(module, query, attention_mask, dropout, kwargs):
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    groups = module.num_key_value_groups
    batch, heads, rows, dim = query.shape
    kv_heads = key.shape[1]
    folded = query.reshape(batch, kv_heads, groups * rows, dim)  # heads g*r..g*r+r-1 share key head g
    mask = attention_mask[:, :, :, : key.shape[-2]]
    if mask.shape[2] == rows:  # one mask row per query row: the same rows for each head of the group
        mask = mask.repeat(1, 1, groups, 1)
    out = F.scaled_dot_product_attention(folded, key, value, attn_mask=mask, scale=scaling)
    out = out.reshape(out.shape[0], heads, rows, value.shape[-1])
    return out.transpose(1, 2).contiguous(), None


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    AttentionInterface.register(GROUPED_SDPA, grouped_sdpa_attention)
    AttentionMaskInterface.register(GROUPED_SDPA, ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])


def use_grouped_attention(model: nn.Module) -> bool:
    """Put `model` (a transformers model on `sdpa` attention with grouped key/value heads) on
    `grouped_sdpa_attention`; whether it is on it."""
    config = getattr(model, "config", None)
    if getattr(config, "_attn_implementation", None) not in ("sdpa", GROUPED_SDPA):
        return False
    heads, kv_heads = getattr(config, "num_attention_heads", 0), getattr(config, "num_key_value_heads", 0)
    if not kv_heads or heads == kv_heads or not hasattr(model, "set_attn_implementation"):
        return False
    _register()
    if config._attn_implementation != GROUPED_SDPA:
        model.set_attn_implementation(GROUPED_SDPA)
    return config._attn_implementation == GROUPED_SDPA


def attention_of(model: nn.Module) -> str:
    """The attention a transformers model computes with: "grouped" (`grouped_sdpa_attention`) or the
    implementation's own name ("sdpa", "eager", ...)."""
    name = getattr(getattr(model, "config", None), "_attn_implementation", None) or "unknown"
    return "grouped" if name == GROUPED_SDPA else name
