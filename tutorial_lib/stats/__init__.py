r"""What the rows say, with intervals.

- `analysis`        - a sweep's curves, the paper's table and answer lengths.
- `paired`          - paired bootstrap differences to the verifier and SpecDecode (corpus BLEU from sacrebleu's statistics).
- `curve_bootstrap` - the paper's table with bootstrap intervals over items.
- `claims`          - the paper's T5 and Gemma claims checked (holds / does not hold / not resolved).
- `token_curves`    - the passes of a pair over answers, cached, curves, areas and matched-rejection losses (notebook 08).
- `token_report`    - what notebook 08 reads off them: its profiles, rankings, points below the envelope, the toy check.
- `deferral_passes` - decoding-time features of notebook 08's positions, one more pass of the pair, cached (10).
- `learned_deferral` - a learned deferral rule: trained by item, curves, paired differences, the constant mixture (10).
"""
import importlib

__all__ = ['analysis', 'paired', 'curve_bootstrap', 'claims', 'token_curves', 'deferral_passes', 'learned_deferral']


def __getattr__(name: str):
    if name in __all__:  # a module of this wing, loaded on first use
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}; its modules: {', '.join(__all__)}")
