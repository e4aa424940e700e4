r"""The paper's rules as one table: one record per rule, which every wing reads.

A rule of Narasimhan et al. (ICLR 2025) is a target function $\pi = \mathbb{T}(q, p)$ of the drafter's
next-token law $q$ and the verifier's $p$. Its *family* says how the target is built from its *decision*:

| family     | `decide(q, p, alpha, q_unscaled, p_unscaled)` returns | target $\pi(v)$ |
|------------|---|---|
| `drafter`  | - | $q(v)$ |
| `verifier` | - | $p(v)$ (the verifier alone, and SpecDecode) |
| `lossy`    | - | $\max\{\min\{q(v), p(v)/(1-\alpha)\}, p(v)/\beta\}$ (Lemma 2) |
| `prefix`   | $\delta \in \{0, 1\}$ per position (True = defer) | $(1-\delta)\,q(v) + \delta\,p(v)$ (eq. 6) |
| `token`    | a set $A$, a mask over the vocabulary | $q(v)1(v\in A) + (1 - \sum_{u\in A} q(u))\,p(v)$ |
| `weight`   | a weight $r \in [0, 1]$ per position | $(1-r)\,q(v) + r\,p(v)$ |

and the paper's rules are

| rule       | family | decision |
|------------|---|---|
| `bild`     | prefix | $\delta = 1(D_{TV}(q, p) > \alpha)$ |
| `chow`     | prefix | $\delta = 1(\max_v q(v) < 1 - \alpha)$ |
| `diff`     | prefix | $\delta = 1(\max_v q(v) < \max_v p(v) - \alpha)$ |
| `opt`      | prefix | $\delta = 1(\max_v q(v) < \max_v p(v) - \alpha D_{TV}(p,q))$ |
| `token_v1` | token | $A = \{v: q(v) \ge \max_u p(u) - \alpha\}$ |
| `token_v2` | token | $A = \{v: p(v) \ge \max_u p(u) - \alpha\}$ |
| `token_v3` | token | $A = \{v: p(v) \ge (1 - \alpha)\max_u p(u)\}$ |
| `mixture`  | weight | $r = 1 - \alpha$ at every position (transformers' `assistant_ensemble_weight`) |

Decisions read the temperature-1 laws `q_unscaled`, `p_unscaled`, and OPT's TV term the sampled ones
(`targets`' docstring). Each record also holds the rule's names (its id, its short label, the curve label of
the paper's plots), its alpha range (at one end SpecDecode, at the other the drafter), its *live* range (where
its decisions change with alpha) and whether its low end is SpecDecode's law (Token-V3's $\alpha = 0$ still
accepts the verifier's argmax when drafted, so it is not).

`register_rule` adds a record in place: the names below (`RULES`, `TOKEN_RULES`, `ALPHA_RANGES`, ...) are
live views of the table, so a name read before a registration shows the new rule too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Dict, Optional, Tuple

from ..checks import check_choice

if TYPE_CHECKING:  # the table itself needs no torch: a widget can list the rules without loading it
    import torch

__all__ = [
    "Rule",
    "RULE_TABLE",
    "FAMILIES",
    "PANELS",
    "RULES",
    "PREFIX_RULES",
    "TOKEN_RULES",
    "WEIGHT_RULES",
    "ALPHA_RANGES",
    "LIVE_ALPHA_RANGES",
    "TableView",
    "TableMapping",
    "rule_names",
    "rule",
    "check_rule",
    "has_spec_end",
    "rule_of_curve",
    "curve_labels",
    "register_rule",
    "unregister_rule",
]

#: How a family builds its target from its decision (the module's first table).
FAMILIES = ("drafter", "verifier", "lossy", "prefix", "token", "weight")
#: The panels of the paper's plots that a rule's curve is drawn in (`views.reruns.family_figure`).
PANELS = ("baselines and sequential cascades", "deferral rules", "token-specific rules", "lossy and BiLD")
_PANEL_OF_FAMILY = {"prefix": "deferral rules", "token": "token-specific rules", "weight": "deferral rules"}

Range = Tuple[float, float]
#: decide(q, p, alpha, q_unscaled, p_unscaled): a tensor of shape (...) (prefix: bool, weight: float) or
#: (..., V) (token: bool).
Decide = Callable[..., "torch.Tensor"]


@dataclass(frozen=True)
class Rule:
    """One rule of the table: its names, its family and decision, and its alpha ranges."""

    #: The id every function takes (`rule="token_v3"`).
    name: str
    #: The short label of lessons, widgets and legends ("Token-V3").
    label: str
    family: str
    #: The decision its family reads (None for the drafter, verifier and lossy families).
    decide: Optional[Decide] = None
    #: Closed range of alpha it accepts (None: it ignores alpha).
    alpha_range: Optional[Range] = None
    #: Where its decisions change with alpha, SpecDecode end first (None: its alpha range).
    live_range: Optional[Range] = None
    #: Its law at the low end of its live range is SpecDecode's ($\pi = p$).
    spec_end: bool = False
    #: The label of its curve in the paper's plots and the sweeps' rows (None: no curve of its own).
    curve: Optional[str] = None
    #: The panel of the paper's plots its curve is drawn in.
    panel: Optional[str] = None
    #: One of the paper's rules (it cannot be replaced or removed).
    built_in: bool = True

    @property
    def live(self) -> Optional[Range]:
        return self.live_range if self.live_range is not None else self.alpha_range


def _max(x: "torch.Tensor") -> "torch.Tensor":
    return x.max(-1).values


def _bild(q, p, alpha, qu, pu):
    return (pu - qu).clamp_min(0).sum(-1) > alpha


def _chow(q, p, alpha, qu, pu):
    return _max(qu) < 1.0 - alpha


def _diff(q, p, alpha, qu, pu):
    return _max(qu) < _max(pu) - alpha


def _opt(q, p, alpha, qu, pu):
    return _max(qu) < _max(pu) - alpha * (p - q).clamp_min(0).sum(-1)


def _token_v1(q, p, alpha, qu, pu):
    return qu >= _max(pu).unsqueeze(-1) - alpha


def _token_v2(q, p, alpha, qu, pu):
    return pu >= _max(pu).unsqueeze(-1) - alpha


def _token_v3(q, p, alpha, qu, pu):
    return pu >= (1.0 - alpha) * _max(pu).unsqueeze(-1)


def _mixture(q, p, alpha, qu, pu):
    return q.new_full(q.shape[:-1], 1.0 - alpha)


def _speculative(name, label, family, decide, alpha_range, **more) -> Rule:
    return Rule(
        name,
        label,
        family,
        decide,
        alpha_range,
        curve=f"SpecCascade [{label}]",
        panel=_PANEL_OF_FAMILY[family],
        **more,
    )


#: Every rule, by id, in the order the package lists them. `register_rule` adds to it in place.
RULE_TABLE: Dict[str, Rule] = {
    r.name: r
    for r in (
        Rule("drafter", "drafter q", "drafter", curve="Drafter"),
        Rule("verifier", "verifier p", "verifier", curve="Verifier"),
        Rule("spec", "SpecDecode", "verifier", curve="SpecDecode", panel=PANELS[0]),
        Rule(
            "lossy",
            "Lossy",
            "lossy",
            None,
            (0.0, 1.0),
            spec_end=True,
            curve="SpecDecode [Lossy]",
            panel=PANELS[3],
        ),
        Rule("bild", "BiLD*", "prefix", _bild, (0.0, 1.0), spec_end=True, curve="BiLD*", panel=PANELS[3]),
        _speculative("chow", "Chow", "prefix", _chow, (0.0, 1.0), spec_end=True),
        _speculative("diff", "Diff", "prefix", _diff, (-1.0, 1.0), spec_end=True),
        # OPT accepts any alpha; its decisions change only in [-1, 1] at T = 1 (|max p - max q| <= D_TV(p, q))
        # and at T = 0 (where it emits Diff's tokens); at other T its range depends on the laws
        # (`alpha_grids.opt_live_range`).
        _speculative(
            "opt", "OPT", "prefix", _opt, (-math.inf, math.inf), live_range=(-1.0, 1.0), spec_end=True
        ),
        _speculative("token_v1", "Token-V1", "token", _token_v1, (-1.0, 1.0), spec_end=True),
        _speculative("token_v2", "Token-V2", "token", _token_v2, (-1.0, 1.0), spec_end=True),
        _speculative("token_v3", "Token-V3", "token", _token_v3, (0.0, 1.0)),
        Rule("mixture", "Mixture (constant weight)", "weight", _mixture, (0.0, 1.0), spec_end=True),
    )
}


class TableView(Sequence):
    """A tuple computed from `RULE_TABLE` at each use: a name bound to it never goes stale when a rule is
    registered. `compute()` returns the tuple."""

    def __init__(self, compute: Callable[[], tuple]):
        self._compute = compute

    def __getitem__(self, index):
        return self._compute()[index]

    def __len__(self) -> int:
        return len(self._compute())

    def __iter__(self):
        return iter(self._compute())

    def __contains__(self, item) -> bool:
        return item in self._compute()

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and not isinstance(other, str) and tuple(self) == tuple(other)

    __hash__ = None

    def __add__(self, other) -> tuple:
        return self._compute() + tuple(other)

    def __radd__(self, other) -> tuple:
        return tuple(other) + self._compute()

    def __repr__(self) -> str:
        return repr(self._compute())


class TableMapping(Mapping):
    """A dict computed from `RULE_TABLE` at each use (a live view, as `TableView`)."""

    def __init__(self, compute: Callable[[], dict]):
        self._compute = compute

    def __getitem__(self, key):
        return self._compute()[key]

    def __iter__(self):
        return iter(self._compute())

    def __len__(self) -> int:
        return len(self._compute())

    def __repr__(self) -> str:
        return repr(self._compute())


def rule_names(*families: str) -> TableView:
    """The ids of the rules of `families` (every rule if none), in table order, as a live view."""
    for family in families:
        check_choice(family, FAMILIES, "family")
    return TableView(
        lambda: tuple(r.name for r in RULE_TABLE.values() if not families or r.family in families)
    )


def curve_labels(*panels: str) -> TableView:
    """The curve labels of the rules drawn in `panels` (every rule with a curve if none), as a live view."""
    for panel in panels:
        check_choice(panel, PANELS, "panel")
    return TableView(
        lambda: tuple(
            r.curve for r in RULE_TABLE.values() if r.curve is not None and (not panels or r.panel in panels)
        )
    )


def _ranges(live: bool) -> TableMapping:
    return TableMapping(
        lambda: {
            r.name: (r.live if live else r.alpha_range)
            for r in RULE_TABLE.values()
            if r.alpha_range is not None
        }
    )


#: Every rule `targets.target_distribution` knows.
RULES = rule_names()
#: Rules that make one defer/keep decision per prefix and target the mixture of equation (6).
PREFIX_RULES = rule_names("prefix")
#: Rules that accept a set of drafter tokens and defer the rest of the mass to `p`.
TOKEN_RULES = rule_names("token")
#: Rules with a weight $r \in [0, 1]$ per position instead of a decision (`mixture`, DIVERSED's ensemble).
WEIGHT_RULES = rule_names("weight")
#: Closed ranges of alpha for each rule that takes one (`lossy` excludes 1). At one end the rule is
#: SpecDecode (target `p`, except Token-V3), at the other the drafter alone.
ALPHA_RANGES = _ranges(live=False)
#: Where each rule's decisions change with alpha (SpecDecode end first): `ALPHA_RANGES`, except OPT's
#: $[-1, 1]$.
LIVE_ALPHA_RANGES = _ranges(live=True)


def check_rule(name) -> str:
    """A rule id of the table (`RULES`)."""
    return check_choice(name, RULES, "rule")


def rule(name) -> Rule:
    """The record of rule `name`."""
    return RULE_TABLE[check_rule(name)]


def has_spec_end(name: str) -> bool:
    """Whether rule `name`'s law at the low end of its live range is SpecDecode's (False for a name the table
    does not hold: rows of a rule registered in another session)."""
    return name in RULE_TABLE and RULE_TABLE[name].spec_end


def rule_of_curve(label: str) -> Rule:
    """The record whose curve is `label` ("SpecCascade [Token-V3]" -> token_v3)."""
    for record in RULE_TABLE.values():
        if record.curve == label:
            return record
    raise ValueError(f"no rule draws the curve {label!r}; curves of rules: {', '.join(curve_labels())}.")


def register_rule(
    name: str,
    decide: Decide,
    *,
    family: str = "prefix",
    alpha_range: Range = (-math.inf, math.inf),
    label: Optional[str] = None,
    curve: Optional[str] = None,
    spec_end: bool = False,
) -> str:
    r"""Add a rule to the table (or replace one added before) and return its name (`rule(name)` is its
    record).

    `family` says what `decide(q, p, alpha, q_unscaled, p_unscaled)` returns and how the target is built
    from it (the module's first table): `"prefix"` a boolean of shape `(...)`, True = defer; `"token"` a
    boolean acceptance set of shape `(..., V)`; `"weight"` the weight $r \in [0, 1]$ on $p$ (a dynamic
    ensemble such as DIVERSED's). The rule then works wherever a rule id does (`targets`, the engines, the
    sweeps by its curve label, the claims, the widgets and the figures), and Algorithm 4 is exact for it
    like for any target, provided `decide` looks only at the two laws (never at the draft).
    `alpha_range` bounds the alpha it accepts (and is its live range); `label` (default `name`) names it in
    legends and widgets, `curve` (default "SpecCascade [label]") in the sweeps' rows; `spec_end=True` says
    that at the low end of its range its target is $p$. The paper's rules cannot be replaced.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name={name!r}: a rule needs a name made of letters, digits and '_'.")
    if name in RULE_TABLE and RULE_TABLE[name].built_in:
        raise ValueError(f"name={name!r} is one of the paper's rules; give the new rule another name.")
    if family not in _PANEL_OF_FAMILY:
        raise ValueError(f"family={family!r}: a registered rule is one of {', '.join(_PANEL_OF_FAMILY)}.")
    if not callable(decide):
        raise TypeError(
            f"decide={decide!r} is not callable; pass a function decide(q, p, alpha, q_unscaled, p_unscaled)."
        )
    low, high = (float(a) for a in alpha_range)
    if not low < high:
        raise ValueError(f"alpha_range={alpha_range!r} is empty; pass (low, high) with low < high.")
    label = name if label is None else str(label)
    record = _speculative(name, label, family, decide, (low, high), spec_end=bool(spec_end), built_in=False)
    if curve is not None:
        record = replace(record, curve=str(curve))
    for other in RULE_TABLE.values():
        if other.name != name and (other.curve == record.curve or other.label == record.label):
            raise ValueError(
                f"rule {other.name!r} already has the label {other.label!r} or curve {other.curve!r}; "
                "pass another `label` or `curve`."
            )
    RULE_TABLE[name] = record
    return name


def unregister_rule(name: str) -> None:
    """Remove a rule added by `register_rule` (a name never registered is an error)."""
    if name not in RULE_TABLE or RULE_TABLE[name].built_in:
        added = [r.name for r in RULE_TABLE.values() if not r.built_in]
        raise ValueError(f"name={name!r} was not registered; registered rules: {', '.join(added) or 'none'}.")
    del RULE_TABLE[name]
