"""Example data of the lessons: drafter/verifier pairs (notebooks 01-02) and toy-world contexts (03-05).

An `Example` holds temperature-1 next-token distributions $q$ (drafter) and $p$ (verifier) over a few
labelled tokens, for one context or for several weighted ones; `toy_examples` names six of them
(three hand-made, three contexts of the toy world with their truth $P$), `toy_world_inputs` holds every
context of the toy world weighted by its visits under $P$, `example_from_distributions` wraps any pair
(for example a real model pair's next-token distributions).

The lemma notebooks work on whole toy worlds: `default_world`, `reshaped_world` (a drafter or
verifier sharpened or flattened, built once per setting), and a context dropdown (`context_options`,
`default_context`: the most visited blind spot).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

from ..maths import laws
from .toyworld import ToyWorld

__all__ = [
    "Example",
    "toy_examples",
    "toy_world_inputs",
    "get_example",
    "single_example",
    "example_from_distributions",
    "default_world",
    "reshaped_world",
    "world_key",
    "world_from_key",
    "context_name",
    "check_context",
    "context_options",
    "default_context",
]


# --------------------------------------------------------------------------------------------
# Pairs (q, p) at temperature 1
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Example:
    """A drafter/verifier pair of temperature-1 next-token distributions over `labels`.

    `q`, `p` have shape `(V,)` for one context or `(C, V)` for several, with `weight` `(C,)` saying
    how often each context is visited (used to average rejection rates). `truth` is the true next-token
    distribution $P$ where it is known (the toy world), drawn as markers.
    """

    name: str
    q: torch.Tensor
    p: torch.Tensor
    labels: Tuple[str, ...]
    description: str = ""
    truth: Optional[torch.Tensor] = None
    weight: Optional[torch.Tensor] = None

    def __post_init__(self):
        laws.tv_distance(self.p, self.q)  # validates both as distributions over one vocabulary
        if len(self.labels) != self.q.shape[-1]:
            raise ValueError(
                f"example {self.name!r} has {len(self.labels)} labels for a vocabulary of "
                f"{self.q.shape[-1]} tokens; pass one label per token."
            )
        if self.q.ndim == 2 and (self.weight is None or tuple(self.weight.shape) != (self.q.shape[0],)):
            raise ValueError(
                f"example {self.name!r} holds {self.q.shape[0]} contexts; pass `weight` of "
                "shape (C,) saying how often each is visited."
            )

    @property
    def n_contexts(self) -> int:
        return 1 if self.q.ndim == 1 else self.q.shape[0]

    def context_weights(self) -> torch.Tensor:
        """`(C,)` weights summing to one (one context: `[1.0]`)."""
        if self.n_contexts == 1:
            return torch.ones(1, dtype=torch.float64)
        return self.weight / self.weight.sum()


def _example(name, q, p, labels, description, truth=None, weight=None) -> Example:
    def f64(x):
        return None if x is None else torch.as_tensor(x, dtype=torch.float64)

    return Example(name, f64(q), f64(p), tuple(labels), description, f64(truth), f64(weight))


_STORY_WORDS = ("sat", "ran", "slept", "sang", "ate", "<eos>")  # next word after "the cat"


@functools.lru_cache(maxsize=4)
def _toy_examples(seed: int) -> Tuple[Example, ...]:
    world = ToyWorld(seed=seed)
    table = world.contexts()
    max_q, max_p = table.q.max(-1).values, table.p.max(-1).values

    def from_context(name: str, row: int, description: str) -> Example:
        a, b = table.contexts[row]
        where = f" (toy world, after '{world.tokens[a]} {world.tokens[b]}')"
        return _example(
            name, table.q[row], table.p[row], world.tokens, description + where, truth=table.P[row]
        )

    # Among commonly visited contexts (>= 0.02 visits per sequence), where the verifier is surest
    # of itself relative to the drafter.
    common = table.weight >= 0.02
    confident_p = int(torch.where(common, max_p - max_q, torch.full_like(max_p, -math.inf)).argmax())
    blind_rows = table.blind.nonzero().flatten()
    blind = int(blind_rows[table.weight[blind_rows].argmax()])
    start = table.contexts.index((0, 0))
    return (
        # The toy drafter never exceeds max q = 0.44, so agreement and a confident drafter are hand-made.
        _example(
            "agree",
            [0.70, 0.12, 0.08, 0.05, 0.03, 0.02],
            [0.74, 0.10, 0.07, 0.04, 0.03, 0.02],
            _STORY_WORDS,
            "both models are confident of the same word after 'the cat'",
        ),
        _example(
            "confident drafter, unsure verifier",
            [0.80, 0.08, 0.05, 0.04, 0.02, 0.01],
            [0.30, 0.25, 0.20, 0.13, 0.08, 0.04],
            _STORY_WORDS,
            "the drafter is sure of 'sat', the verifier spreads its mass",
        ),
        from_context(
            "unsure drafter, confident verifier",
            confident_p,
            "the verifier is far surer than the drafter, and right",
        ),
        from_context(
            "verifier blind spot",
            blind,
            "the verifier confidently predicts a wrong word; the drafter is close to P",
        ),
        from_context("both unsure", start, "the first word of a sentence: both models spread their mass"),
        _example(
            "disjoint",
            [0.6, 0.4, 0.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.5, 0.3, 0.2],
            _STORY_WORDS,
            "no word both models allow: D_TV(p, q) = 1",
        ),
    )


def toy_examples(seed: int = 0) -> Dict[str, Example]:
    """The named single-context examples (a fresh dict each call; add your own to it).

    Three hand-made pairs over six words (`agree`, `confident drafter, unsure verifier`, `disjoint`)
    and three contexts of `ToyWorld(seed=seed)` with their truth $P$.
    """
    return {example.name: example for example in _toy_examples(seed)}


@functools.lru_cache(maxsize=4)
def toy_world_inputs(seed: int = 0) -> Example:
    """Every reachable context of `ToyWorld(seed=seed)`, weighted by its visits under $P$.

    Averages over it are the per-token rates of `world.evaluate(..., prefixes="truth")`.
    """
    world = ToyWorld(seed=seed)
    table = world.contexts()
    return _example(
        "toy world (every context)",
        table.q_unscaled,
        table.p_unscaled,
        world.tokens,
        f"all {len(table.contexts)} contexts of the toy world, weighted by visits under P",
        truth=table.P,
        weight=table.weight,
    )


def get_example(example: Union[str, Example], examples: Optional[Dict[str, Example]] = None) -> Example:
    """`example` itself, or the example of that name in `examples` (default `toy_examples()`)."""
    if isinstance(example, Example):
        return example
    examples = toy_examples() if examples is None else examples
    if example not in examples:
        raise ValueError(
            f"unknown example {example!r}; choose one of: {', '.join(map(repr, examples))}, "
            "or build one with `example_from_distributions`."
        )
    return examples[example]


def single_example(example: Union[str, Example], examples: Optional[Dict[str, Example]] = None) -> Example:
    """`get_example`, for views of one pair: an example of several contexts is refused."""
    example = get_example(example, examples)
    if example.n_contexts != 1:
        raise ValueError(
            f"example {example.name!r} holds {example.n_contexts} contexts; this view shows "
            "one pair (q, p): pick a single-context example."
        )
    return example


def example_from_distributions(
    name: str, q, p, labels: Union[Sequence[str], Callable[[int], str], None] = None, description: str = ""
) -> Example:
    """An example from any pair of temperature-1 next-token distributions of shape `(V,)`.

    `labels` names the tokens: a sequence of `V` strings, a function from token id to text (for
    example `lambda i: tokenizer.decode([i])`, called once per token of the vocabulary), or `None`
    for `#id`. The views compute on the whole vocabulary and draw only its most probable tokens.
    """
    q, p = torch.as_tensor(q, dtype=torch.float64), torch.as_tensor(p, dtype=torch.float64)
    if q.ndim != 1:
        raise ValueError(f"q has shape {tuple(q.shape)}; pass one next-token distribution of shape (V,).")
    V = q.shape[-1]
    if labels is None:
        labels = [f"#{i}" for i in range(V)]
    elif callable(labels):
        labels = [labels(i) for i in range(V)]
    return _example(name, q, p, labels, description)


# --------------------------------------------------------------------------------------------
# Toy worlds and their contexts (notebooks 03-05)
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=32)
def world_from_key(settings: Tuple[Tuple[str, object], ...]) -> ToyWorld:
    """The `ToyWorld` of these settings, built once per process (`world_key` gives the key)."""
    return ToyWorld(**dict(settings))


def world_key(world: ToyWorld) -> Tuple[Tuple[str, object], ...]:
    """A hashable key of `world`'s settings, for caches."""
    return tuple(sorted(world.settings.items()))


def default_world() -> ToyWorld:
    """The package's default `ToyWorld` (built once per process)."""
    return world_from_key(())


def reshaped_world(world: Optional[ToyWorld] = None, **changes) -> ToyWorld:
    """`world` with some settings changed (for example `drafter_sharpness=3.0`), built once per setting.

    Only the changed models differ: the truth, the blind spots and the noise draws come from the
    same seed, so a sharper drafter has the same argmax everywhere.
    """
    world = world or default_world()
    unknown = set(changes) - set(world.settings)
    if unknown:
        raise ValueError(
            f"unknown ToyWorld setting(s) {sorted(unknown)}; use some of {sorted(world.settings)}."
        )
    return world_from_key(tuple(sorted({**world.settings, **changes}.items())))


def check_context(world: ToyWorld, context_index) -> int:
    """`context_index` as a row of `world.contexts()`, or a `ValueError` that says which rows exist."""
    n = len(world.contexts().contexts)
    try:
        whole = not isinstance(context_index, bool) and float(context_index).is_integer()
    except (TypeError, ValueError):
        whole = False
    if not whole or not 0 <= int(context_index) < n:
        raise ValueError(
            f"context_index={context_index!r}: use an integer row in [0, {n}) of "
            "world.contexts() (see `context_options`)."
        )
    return int(context_index)


def context_name(world: ToyWorld, table, row: int) -> str:
    """`'a b'` for the context of `row` in `table`, with " (blind spot)" where the verifier is blind."""
    a, b = table.contexts[row]
    return f"'{world.tokens[a]} {world.tokens[b]}'" + (" (blind spot)" if bool(table.blind[row]) else "")


def context_options(world: Optional[ToyWorld] = None, top: Optional[int] = None) -> List[Tuple[str, int]]:
    """`(label, row)` pairs for a dropdown, most visited context first (rows of `world.contexts()`)."""
    world = world or default_world()
    t = world.contexts()
    order = t.weight.argsort(descending=True).tolist()[:top]
    return [(f"{context_name(world, t, row)}: {float(t.weight[row]):.3f} visits", row) for row in order]


def default_context(world: Optional[ToyWorld] = None) -> int:
    """The most visited blind-spot context (where the verifier is confidently wrong), else the most
    visited."""
    world = world or default_world()
    t = world.contexts()
    rows = t.blind.nonzero().flatten() if t.blind.any() else torch.arange(len(t.contexts))
    return int(rows[t.weight[rows].argmax()])
