"""Speculative cascades (Narasimhan et al., ICLR 2025) as a transformers `custom_generate` method.

Each emitted token follows the rule's target pi = T(q, p) of the drafter's law q and the verifier's law p:
a draft x ~ q is kept with probability min(1, pi(x) / q(x)), else replaced by a draw of norm(max(0, pi - q))
(Algorithm 4). transformers 5.23 calls `generate(model=..., **arguments)` with every argument of
`model.generate(...)`; the options below are taken out, the rest goes to transformers' own input preparation,
which then runs `tutorial_lib`'s callable (`tl.speculative_cascade`) as the decoding loop.
"""

from transformers.generation.utils import GenerationMixin

import tutorial_lib as tl

#: The options of the method (tl.generate's), passed as keyword arguments of model.generate(...).
OPTIONS = (
    "rule",
    "alpha",
    "gamma",
    "method",
    "beta",
    "bonus",
    "aggregate",
    "bild_threshold",
    "bild_fallback",
    "batch_size",
    "drafter",
)


def generate(model, *args, **kwargs):
    """`model.generate(**inputs, assistant_model=drafter, custom_generate="<this folder>",
    trust_remote_code=True, rule="token_v2", alpha=0.3, gamma=5)`: see README.md beside this folder."""
    options = {name: kwargs.pop(name) for name in OPTIONS if name in kwargs}
    cascade = tl.speculative_cascade(**options)
    return GenerationMixin.generate(model, *args, custom_generate=cascade, **kwargs)
