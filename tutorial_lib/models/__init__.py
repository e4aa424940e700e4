"""Models: drafter / verifier pairs behind one interface (next-token logits over a croppable KV cache).

- `adapter`      - `load_model` / `load_pair` with the registries backends add themselves to
  (`register_loader`, `register_resolver`, `register_wrapper`), tiny random models, and the interface of
  `language_model`, re-exported.
- `language_model` - `LanguageModel` (a `transformers` model), `Session` (its KV cache), `ModelPair`,
  `check_compatible`.
- `files`        - the offline GGUF models shipped in registry packages, converted once to safetensors and
  checked in the cache.
- `kernel_paths` - which kernel computes a model's calls here (fp32, fp32-gemv, fp32-packed, bf16, int8 for a
  drafter), chosen by a probe, and the bound it is measured against (bytes of weights over the read
  bandwidth).
- `drafter_paths` - the drafter's kernel path, chosen by a generation's cost (a prompt's prefill and one-row
  steps), every drafter path a candidate.
- `grouped_attention` - a block's attention over grouped key/value heads without copying the cache (the
  query heads of a group folded into its rows), put on every model `kernel_paths` puts on a CPU path.
- `processor_class` - the class of processor a CPU measurement belongs to (avx2, avx512, amx; bf16 units).
- `layer_skip`   - `<model>:layers=N`: a drafter made of a decoder-only model's first N layers
  (self-speculation).
- `offline`      - those offline aliases (`smollm2-135m`, `qwen2.5-coder-0.5b`, `qwen2.5-coder-1.5b`) as
  engine models.
- `toy`          - the toy world's next-token tables as engine models (`ToyModel`, `toy_pair`, `toy-*`
  aliases).
- `synthetic_t5` - the small T5 pair trained offline on the synthetic translation task (`synthetic-t5-*`).

Importing this package registers every backend, so `load_model("toy-drafter")` works wherever
`load_model` is reached from. The public names of `adapter` and `language_model` (and `toy_pair`) are
re-exported here: `tl.models.load_pair(...)`.
"""

from . import (
    adapter,
    drafter_paths,
    files,
    grouped_attention,
    kernel_paths,
    language_model,
    layer_skip,
    offline,
    processor_class,
    synthetic_t5,
    toy,
)
from .adapter import *  # noqa: F401,F403  (the interface, re-exported)
from .adapter import __all__ as _adapter_names
from .language_model import LanguageModel, ModelPair, Session, check_compatible
from .toy import ToyModel, toy_pair

__all__ = [
    *_adapter_names,
    "LanguageModel",
    "ModelPair",
    "Session",
    "check_compatible",
    "ToyModel",
    "toy_pair",
    "adapter",
    "drafter_paths",
    "files",
    "grouped_attention",
    "kernel_paths",
    "language_model",
    "layer_skip",
    "offline",
    "processor_class",
    "synthetic_t5",
    "toy",
]
