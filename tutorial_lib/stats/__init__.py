r"""What the rows say, with intervals.

- `intervals`       - every interval of the tables, one way: items resampled, the percentile interval, one
  rule for tiny and constant samples, bounds that hold for a selection of configurations at once.
- `pricing`         - a sweep's rows priced from their counted calls with its stored calibration, per rule;
  the model's signed error against wall time.
- `analysis`        - a sweep's curves, the paper's table and answer lengths, latency per task and pooled.
- `hardware`        - every latency claim re-priced over the drafter's relative cost c; where verdicts flip;
  what each latency verdict timed, per task then pooled, beside the quality rows' texts.
- `report`          - the reruns' result files and the README regions rendered from them
  (`python -m tutorial_lib.stats.report`).
- `paired`          - paired bootstrap differences to the verifier and SpecDecode (corpus BLEU from
  sacrebleu's statistics).
- `curve_bootstrap` - the paper's table with bootstrap intervals over items.
- `claims`          - the paper's T5 and Gemma claims checked (holds / does not hold / not resolved).
- `token_curves`    - the passes of a pair over answers, cached, curves, areas and matched-rejection losses
  (notebook 08).
- `token_report`    - what notebook 08 reads off them: its profiles, rankings, points below the envelope, the
  toy check.
- `deferral_passes` - decoding-time features of notebook 08's positions, one more pass of the pair, cached
  (10).
- `learned_deferral` - a learned deferral rule: trained by item, curves, paired differences, the constant
  mixture (10).
- `dynamic_weight`  - DIVERSED's dynamic weight: a learned weight per position as a rule, its held-out curve
  (10).
"""

import importlib

__all__ = [
    "analysis",
    "claims",
    "curve_bootstrap",
    "deferral_passes",
    "dynamic_weight",
    "hardware",
    "intervals",
    "learned_deferral",
    "paired",
    "pricing",
    "report",
    "token_curves",
    "token_report",
]


def __getattr__(name: str):
    if name in __all__:  # a module of this wing, loaded on first use
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}; its modules: {', '.join(__all__)}")
