r"""Decoding with a drafter / verifier pair: one engine, lockstep batches, and what a call costs.

- `engine`        - `generate`: Algorithm 4 (speculative cascades, SpecDecode, Lossy, BiLD), sequential,
  oracle and sequence-level cascades; `calibrate` (the call costs, with the engine's own loop timed).
- `generation`    - what every decoder returns: a `Generation` and, per emitted token, a `TraceStep`.
- `options`       - the checked options `generate` and the batch decoders share.
- `gamma_policy`  - `gamma="auto"` (`AutoGamma`): the block size the block-cost model prefers.
- `calibration`   - measured call costs of a loaded pair (`Calibration`, as a table and JSON).
- `shared_prefix` - one pass over the prompts' shared prefix, copied into every batch.
- `lockstep`      - the steps lockstep decoding at gamma = 1 shares: prefill chunks, rows, one step, a row's
  `Generation`.
- `batch`         - `generate_batch` / `prefill_batch`: many prompts of one configuration in lockstep.
- `block_batch`   - the batch's blocks of any gamma (ragged acceptance, realigned caches), encoder-decoders,
  cascades.
- `config_batch`  - `generate_configs`: many configurations of one chunk of prompts in one batch.
- `speed_runs`    - measured speed-ups beside the block-cost model's (notebook 09,
  `benchmarks/engine_speed.py`).
- `speed_tables`  - those measurements as tables: the engine benchmark's methods and aims (verdicts from the
  numbers), batches.
- `peer_tables`   - llama.cpp as the production peer: its output read, and the committed llama.cpp run
  (`benchmarks/llama_cpp_peer.py`) as a table beside our engine's figures.
- `hf_generate`   - `speculative_cascade`: the engine as transformers'
  `model.generate(..., custom_generate=...)`.
"""

import importlib

__all__ = [
    "engine",
    "generation",
    "options",
    "gamma_policy",
    "calibration",
    "shared_prefix",
    "lockstep",
    "batch",
    "block_batch",
    "config_batch",
    "speed_runs",
    "speed_tables",
    "peer_tables",
    "hf_generate",
]


def __getattr__(name: str):
    if name in __all__:  # a module of this wing, loaded on first use
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}; its modules: {', '.join(__all__)}")
