r"""What each kind of call costs on this machine: the measured inputs of the block-cost model.

For a loaded drafter $q$ / verifier $p$ pair on its device, `calibrate` measures

| kind | what is timed |
|---|---|
| `drafter_step` ($t_q$) | the drafter fed one token on top of a context, one row of logits kept |
| `drafter_k2` ($t_q^{(2)}$) | the drafter fed two tokens, one row kept (its first call after a fully accepted block) |
| `verifier_k<k>` ($t_p(k)$) | the verifier fed $k$ tokens on top of the same context, $k$ rows kept, $k = 1..K$ |
| `prefill_drafter`, `prefill_verifier` | a fresh session's decoder fed the whole context (the prompt's first call) |
| `encoder_drafter`, `encoder_verifier` | the encoder pass of an encoder-decoder model (`model.start`) |
| `prefill_<model>@<n>`, `encoder_<model>@<n>` | the same on a prompt of n tokens (`prefill_lengths`; `prefill_time` interpolates) |
| `overhead` | the engine's fixed per-call cost: plain decoding's wall time minus its model time, per call |
| `overhead_block` | what a speculative block costs beyond its calls (drafting, verification, the trace): speculative decoding's wall time minus its model time and per-call overheads, per verifier call (measured with `rule="spec"` at gamma = `max_k` - 1) |
| `target_<rule>@g<gamma>` | one block's target computation and verification for that rule (`block_targets` + `verify_block` on laws of the pair's vocabulary size), per rule and gamma the sweep runs (`rule_block_costs`) |

**Each rule's block.** Computing a rule's target costs more than SpecDecode's (OPT's TV distance,
the Token rules' acceptance sets, Lossy*'s normalising beta), so one `overhead_block` for every rule
under-prices the cascades. `rule_block_costs` times each rule's own target computation and
verification on a block of `gamma` laws of the pair's vocabulary size, and
`block_overhead_for(rule, gamma)` is `overhead_block` with SpecDecode's share (at the gamma it was
measured at) replaced by the rule's own at its gamma.

Calls are made exactly as `tutorial_lib.decoding.engine` makes these calls (`Session.feed` with the same `keep`, logits
copied back to the host), so the times include what the engine pays. Each call after the context
is cropped away again, so every repeat sees the same cache. One round runs every measurement once,
in a shuffled order (a machine that slows down mid-way slows every kind alike); after one warm-up
round, `repeats` rounds are recorded and each kind's time is the median over rounds.

**The bound.** `calibrate` also measures the machine's read bandwidth $B$ (on a CPU: a sum over 512 MiB
of fp32 on torch's threads, `models.kernel_paths.measure_read_bandwidth`) and keeps each model's bytes of
weights $W$ and kernel path, so every call reads against the least it can take, $W / B$
(`bound_s`, `call_over_bound`, the table's `vs_bound` column): near 1 a call is memory-bound and a
block of $k$ tokens should cost what one costs.

`Calibration` holds the raw samples, reads as a table (`table()`), prices a call of any kind
(`price`), feeds `tutorial_lib.maths.latency` (`t_q`, `t_p`, `speedup`, `best_gamma`) and is stored as JSON
(`save` / `load`). `Calibration.synthetic` builds one from chosen numbers, for what-if questions and
tests; `textbook()` is the same machine if scoring $k$ tokens cost one step (an accelerator's regime).
"""
from __future__ import annotations

import json
import math
import platform
import random
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from ..checks import check_whole_number
from ..maths import latency

__all__ = ["Calibration", "calibrate", "CALL_KINDS", "rule_key", "target_kind", "rule_block_costs", "sweep_rules", "interleaved_rounds"]

CALL_KINDS = ("drafter_step", "drafter_k2", "verifier", "prefill_drafter", "prefill_verifier", "encoder_drafter",
              "encoder_verifier", "overhead", "overhead_block")


def _verifier_key(k: int) -> str:
    return f"verifier_k{k}"


def rule_key(rule: str, beta=1.0) -> str:
    """The name a rule's block cost is stored under: the rule, or `lossy*` for lossy SpecDecode with
    the normalising beta (Lossy*: its target solves for beta at every position)."""
    return "lossy*" if rule == "lossy" and str(beta) == "normalize" else str(rule)


def target_kind(rule: str, gamma: int, beta=1.0) -> str:
    """The calibration kind of `rule`'s block cost at block size `gamma`."""
    return f"target_{rule_key(rule, beta)}@g{int(gamma)}"


@dataclass
class Calibration:
    """Measured seconds per call of each kind (`samples[kind]`: one value per recorded round)."""
    samples: Dict[str, List[float]]
    drafter: str = "drafter"
    verifier: str = "verifier"
    device: str = "cpu"
    dtypes: Dict[str, str] = field(default_factory=dict)
    threads: int = 1
    context_tokens: int = 0
    repeats: int = 0
    machine: str = ""
    torch_version: str = ""
    note: str = ""
    read_bandwidth: float = 0.0
    weight_bytes: Dict[str, int] = field(default_factory=dict)
    kernel_paths: Dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if "drafter_step" not in self.samples or _verifier_key(1) not in self.samples:
            raise ValueError("a calibration needs at least `drafter_step` and `verifier_k1` samples.")
        for kind, values in self.samples.items():
            if not values or not all(math.isfinite(v) and v >= 0 for v in values):
                raise ValueError(f"samples[{kind!r}] must be a non-empty list of finite times >= 0.")

    # ---- the numbers ------------------------------------------------------------------------
    def median(self, kind: str) -> float:
        if kind not in self.samples:
            raise KeyError(f"no {kind!r} in this calibration; it holds {sorted(self.samples)}.")
        return statistics.median(self.samples[kind])

    @property
    def max_k(self) -> int:
        """The largest k whose $t_p(k)$ was measured (so `best_gamma` looks up to gamma = max_k - 1)."""
        k = 1
        while _verifier_key(k + 1) in self.samples:
            k += 1
        return k

    @property
    def overhead_s(self) -> float:
        """The engine's fixed cost per model call (0 if it was not measured)."""
        return self.median("overhead") if "overhead" in self.samples else 0.0

    @property
    def block_overhead_s(self) -> float:
        """The engine's cost per speculative block beyond its calls' (0 if it was not measured), as
        measured with SpecDecode's rule; `block_overhead_for` prices another rule's block."""
        return self.median("overhead_block") if "overhead_block" in self.samples else 0.0

    @property
    def rule_blocks(self) -> Dict[str, List[int]]:
        """The rules (`rule_key`) whose block costs were measured, each with its gammas."""
        out: Dict[str, List[int]] = {}
        for kind in self.samples:
            if kind.startswith("target_"):
                rule, _, gamma = kind[len("target_"):].rpartition("@g")
                out.setdefault(rule, []).append(int(gamma))
        return {rule: sorted(gammas) for rule, gammas in out.items()}

    def block_overhead_for(self, rule: str, gamma: int, beta=1.0) -> float:
        """The engine's cost per speculative block of `rule` at block size `gamma` beyond its calls:
        `overhead_block` (measured with SpecDecode at gamma = `max_k` - 1) with SpecDecode's target
        and verification there replaced by this rule's at `gamma` (module docstring). Without an
        `overhead_block` it is 0; a calibration that has one but not this rule's block cost is refused
        (it would price the rule as SpecDecode)."""
        if "overhead_block" not in self.samples:
            return 0.0
        key, reference = target_kind(rule, gamma, beta), target_kind("spec", self.max_k - 1)
        missing = [k for k in (key, reference) if k not in self.samples]
        if missing:
            raise ValueError(f"this calibration has no block cost {' or '.join(missing)} (it has "
                             f"{self.rule_blocks or 'none'}), so rule {rule!r} at gamma={gamma} would be priced as "
                             "SpecDecode; add them with calibration.rule_block_costs(calibration, rules, vocab_size).")
        return max(self.block_overhead_s - self.median(reference) + self.median(key), 0.0)

    def t_q(self, with_overhead: bool = True) -> float:
        """$t_q$: one drafter step, seconds (plus the engine's per-call overhead unless told not to)."""
        return self.median("drafter_step") + (self.overhead_s if with_overhead else 0.0)

    def t_p(self, k: int, with_overhead: bool = True) -> float:
        """$t_p(k)$: one verifier call scoring k tokens; beyond the measured k, the straight line
        through the last two measured points (a compute-bound verifier grows about linearly)."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k={k!r}: a verifier call scores a whole number k >= 1 of tokens.")
        top = self.max_k
        if k <= top:
            seconds = self.median(_verifier_key(k))
        else:
            last, before = self.median(_verifier_key(top)), self.median(_verifier_key(max(top - 1, 1)))
            seconds = last + (k - top) * max(last - before, 0.0)
        return seconds + (self.overhead_s if with_overhead else 0.0)

    def t_q2(self, with_overhead: bool = True) -> Optional[float]:
        r"""$t_q^{(2)}$: the drafter fed two tokens (None if not measured: the model then takes $\Delta_q = 0$)."""
        if "drafter_k2" not in self.samples:
            return None
        return self.median("drafter_k2") + (self.overhead_s if with_overhead else 0.0)

    def bound_s(self, role: str) -> float:
        """The least a call of `role` ("drafter" or "verifier") can take: its weights' bytes over the read
        bandwidth (nan where either was not measured)."""
        if role not in ("drafter", "verifier"):
            raise ValueError(f"role={role!r}: choose 'drafter' or 'verifier'.")
        size = self.weight_bytes.get(role, 0)
        return size / self.read_bandwidth if size and self.read_bandwidth > 0 else math.nan

    def call_over_bound(self, role: str) -> float:
        """A one-token call of `role` (no engine overhead) as a multiple of its bound."""
        seconds = self.median("drafter_step") if role == "drafter" else self.median(_verifier_key(1))
        return seconds / self.bound_s(role)

    @property
    def cost_ratio(self) -> float:
        """$c = t_q / t_p(1)$, the textbook's drafter/verifier cost ratio."""
        return self.t_q() / self.t_p(1)

    def price(self, kind: str, k: int = 1) -> float:
        """Seconds for one call of `kind` (one of `CALL_KINDS`; `verifier` scores `k` tokens), no overhead."""
        if kind not in CALL_KINDS:
            raise ValueError(f"kind={kind!r} is unknown; choose one of {', '.join(CALL_KINDS)}.")
        if kind == "verifier":
            return self.t_p(k, with_overhead=False)
        if kind == "overhead":
            return self.overhead_s
        if kind == "overhead_block":
            return self.block_overhead_s
        if kind.startswith("encoder") and kind not in self.samples:
            return 0.0  # decoder-only models have no encoder pass
        return self.median(kind)

    # ---- the block-cost model on these numbers ----------------------------------------------
    def time_per_token(self, gamma: int, acceptance: float) -> float:
        r"""$\tau(\gamma)$ of `latency.block_time_per_token` with this machine's $t_q$, $t_p(k)$ (overhead included)."""
        return latency.block_time_per_token(gamma, acceptance, self.t_q(), self.t_p, self.t_q2())

    def speedup(self, gamma: int, acceptance: float) -> float:
        """Predicted speed-up of gamma over plain verifier decoding, $t_p(1) / \\tau(\\gamma)$."""
        return latency.predicted_speedup(gamma, acceptance, self.t_q(), self.t_p, self.t_q2())

    def best_gamma(self, acceptance: float, max_gamma: Optional[int] = None) -> int:
        """The block size the model says is fastest at acceptance `acceptance` (0: do not speculate)."""
        return latency.best_gamma(acceptance, self.t_q(), self.t_p, self.max_k - 1 if max_gamma is None else max_gamma,
                                  self.t_q2())

    def prefill_fit(self, kind: str) -> Tuple[float, float]:
        """`(intercept, slope)` of a prefill or encoder pass's seconds against the prompt length: the
        least-squares line through every round at every length measured (`context_tokens` and
        `prefill_lengths`), with the slope held at >= 0 (a longer prompt never costs less: a
        negative least-squares slope, which only noise between close lengths gives, becomes the flat
        line at the mean). One length measured: the flat line at its median."""
        points = [(self.context_tokens, v) for v in self.samples[kind]]
        points += [(int(key.rpartition("@")[2]), v) for key in self.samples if key.startswith(kind + "@")
                   for v in self.samples[key]]
        lengths = np.array([p[0] for p in points], float)
        seconds = np.array([p[1] for p in points], float)
        if np.ptp(lengths) == 0:
            return self.median(kind), 0.0
        slope, intercept = np.polyfit(lengths, seconds, 1)
        if slope < 0:
            return float(seconds.mean()), 0.0
        return float(intercept), float(slope)

    def prefill_time(self, kind: str, n_tokens: Optional[int] = None) -> float:
        """Seconds of a prefill or encoder pass (`kind` such as `"prefill_verifier"`) on a prompt of
        `n_tokens`, from `prefill_fit` (monotone in the length); the median at `context_tokens` where
        `n_tokens` is None."""
        if n_tokens is None:
            return self.median(kind)
        intercept, slope = self.prefill_fit(kind)
        return max(intercept + slope * n_tokens, 0.0)

    def textbook(self) -> "Calibration":
        """The same machine if scoring k tokens cost one step: $t_p(k) = t_p(1)$ for every measured k
        (and the drafter fed two tokens costs one step)."""
        samples = {kind: list(v) for kind, v in self.samples.items()}
        if "drafter_k2" in samples:
            samples["drafter_k2"] = list(self.samples["drafter_step"])
        for k in range(2, self.max_k + 1):
            samples[_verifier_key(k)] = list(self.samples[_verifier_key(1)])
        return Calibration(**{**asdict(self), "samples": samples, "note": "t_p(k) = t_p(1) (textbook pricing)"})

    # ---- reading and storing ----------------------------------------------------------------
    def table(self):
        """One row per call kind: median, quartiles, rounds, and the time relative to $t_p(1)$."""
        import pandas as pd
        rows, reference = [], self.median(_verifier_key(1))
        bounds = {"drafter_step": self.bound_s("drafter"), "drafter_k2": self.bound_s("drafter")}
        for kind, values in self.samples.items():
            k = int(kind[len("verifier_k"):]) if kind.startswith("verifier_k") else None
            q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else (values[0],) * 3
            bound = self.bound_s("verifier") if k else bounds.get(kind, math.nan)
            rows.append({"kind": "verifier" if k else kind, "k": k, "median_s": statistics.median(values),
                         "q25_s": q1, "q75_s": q3, "n": len(values),
                         "vs_t_p(1)": statistics.median(values) / reference if reference > 0 else math.nan,
                         "vs_bound": statistics.median(values) / bound if bound > 0 else math.nan})
        return pd.DataFrame(rows).astype({"k": "Int64"})

    def to_dict(self) -> dict:
        return asdict(self)

    def save(self, path: Union[str, Path]) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1))
        return path

    @classmethod
    def from_dict(cls, data: Mapping) -> "Calibration":
        return cls(**dict(data))

    @classmethod
    def load(cls, path: Union[str, Path]) -> "Calibration":
        return cls.from_dict(json.loads(Path(path).read_text()))

    @classmethod
    def synthetic(cls, t_q: float, t_p: Union[Sequence[float], Callable[[int], float]], *, max_k: int = 8,
                  overhead: float = 0.0, others: Optional[Mapping[str, float]] = None,
                  note: str = "synthetic") -> "Calibration":
        """A calibration from chosen numbers: `t_p` is a function of k or the list $t_p(1), t_p(2), \\dots$;
        `others` gives the seconds of other kinds (`drafter_k2`, `prefill_verifier`, `encoder_drafter`,
        `target_<rule>@g<gamma>`, ...)."""
        cost = latency.verifier_cost(t_p)
        if not callable(t_p):
            max_k = len(t_p)
        else:
            max_k = check_whole_number(max_k, "max_k", 1)
        others = dict(others or {})
        unknown = [kind for kind in others if (kind not in CALL_KINDS and not kind.startswith("target_"))
                   or kind in ("verifier", "drafter_step", "overhead")]
        if unknown:
            raise ValueError(f"others={unknown}: give t_q, t_p and overhead as arguments, other kinds from "
                             f"{', '.join(k for k in CALL_KINDS if k not in ('verifier', 'drafter_step', 'overhead'))}.")
        samples = {"drafter_step": [float(t_q)], "overhead": [float(overhead)],
                   **{_verifier_key(k): [cost(k)] for k in range(1, max_k + 1)},
                   **{kind: [float(seconds)] for kind, seconds in others.items()}}
        return cls(samples, drafter="synthetic q", verifier="synthetic p", note=note)


# ---- measuring ------------------------------------------------------------------------------

def _pair(pair, verifier):
    from ..models.adapter import LanguageModel, ModelPair
    if verifier is None and isinstance(pair, ModelPair):
        return pair.drafter, pair.verifier
    if verifier is None and isinstance(pair, (tuple, list)) and len(pair) == 2:
        pair, verifier = pair
    if not (isinstance(pair, LanguageModel) and isinstance(verifier, LanguageModel)):
        raise ValueError("calibrate needs a loaded drafter/verifier pair: pass `tl.load_pair(...)` or "
                         f"two LanguageModels (got {type(pair).__name__} and {type(verifier).__name__}).")
    return pair, verifier


def _synchronize(*devices: torch.device) -> None:
    for device in set(devices):
        if device.type == "cuda":
            torch.cuda.synchronize(device)


def _decoder_context(model, context: List[int]) -> List[int]:
    """What the decoder holds after `context`: the prompt itself, or (encoder-decoder) the decoder's
    start token and as many answer tokens as the prompt has."""
    prefix = model.decoder_prefix(context)
    return prefix + context if model.is_encoder_decoder else prefix


def _context_ids(model, n: int, seed: int) -> List[int]:
    """`n` token ids (deterministic from `seed`): the cost of a forward pass does not depend on which."""
    generator = torch.Generator().manual_seed(seed)
    low = 0 if model.is_toy else min(10, model.vocab_size - 1)   # skip the usual special ids
    return torch.randint(low, model.vocab_size, (n,), generator=generator).tolist()


#: Rounds `interleaved_rounds` stops at, whatever `min_seconds` asks.
MAX_ROUNDS = 2000


def interleaved_rounds(measurements: Dict, repeats: int, *, seed: int = 0, progress: bool = True,
                       desc: str = "calibrating", min_seconds: float = 0.0) -> Dict:
    """`{key: [seconds, ...]}`: every measurement (a function returning seconds) once per round, in a
    shuffled order, for `repeats` rounds after a warm-up round, so that a drift of the machine falls on
    every kind alike; then more rounds until `min_seconds` have passed since the warm-up (at most
    `MAX_ROUNDS`). Calls of a millisecond make 5 rounds last seconds, and a slow spell of the machine that
    long moves every median (a 3-second calibration of the small T5 pair read 1.2-1.4x the step times of
    the one 20 minutes before it, while its sweep's own times agreed within 7%); rounds spread over a
    minute keep the median off such a spell."""
    from tqdm.auto import tqdm
    if min_seconds < 0:
        raise ValueError(f"min_seconds={min_seconds!r}: pass a duration in seconds, 0 or more.")
    samples = {key: [] for key in measurements}
    rng = random.Random(seed)
    bar = tqdm(total=repeats + 1, desc=desc, disable=not progress)
    round_, started = 0, None
    while round_ <= repeats or (time.perf_counter() - started < min_seconds and round_ <= MAX_ROUNDS):
        order = list(measurements)
        rng.shuffle(order)
        for key in order:
            seconds = measurements[key]()
            if round_:               # round 0 warms up kernels, allocators and caches
                samples[key].append(seconds)
        if round_ == 0:
            started = time.perf_counter()
        round_ += 1
        if round_ > bar.total:
            bar.total = round_
        bar.update(1)
    bar.close()
    return samples


def calibrate(pair, verifier=None, *, max_k: int = 8, repeats: int = 5, context_tokens: int = 64,
              overhead_tokens: int = 8, prefill_lengths: Sequence[int] = (), seed: int = 0,
              progress: bool = True, decode: Optional[Callable] = None, min_seconds: float = 0.0,
              bandwidth: Optional[float] = None) -> Calibration:
    """Measure the call costs of a loaded pair on its device (see the module docstring).

    `pair` is a `ModelPair` (or pass drafter and verifier). `max_k`: measure $t_p(k)$ for k = 1..max_k
    (gamma up to max_k - 1). `repeats` rounds after a warm-up round; `context_tokens` cached tokens
    under every measured call (about a prompt plus part of an answer); `overhead_tokens` tokens of
    plain decoding per round to measure the engine's per-call overhead, and (max_k >= 2) a few blocks of
    speculative decoding at gamma = max_k - 1 for its per-block overhead (0: measure neither).
    `prefill_lengths`: other prompt lengths at which prefills and encoder passes are timed too
    (kinds `prefill_verifier@n`, ...), so `Calibration.prefill_time` prices any prompt length.
    `decode`: the decoding loop whose overheads are measured (`engine.generate`); it is passed in, not
    imported, because the engine itself calibrates through this module (`gamma="auto"`).
    `tl.calibrate(pair, ...)` (`engine.calibrate`) passes the engine's `generate`. `min_seconds`: go on
    with more rounds until the measurement has lasted that long (`interleaved_rounds`; a sweep's
    calibration asks for a minute, `pricing.calibrate_for_sweep`). `bandwidth`: the read bandwidth in bytes
    per second if already known (default: measured here on a CPU, in about a second; 0 skips it).
    """
    drafter, verifier = _pair(pair, verifier)

    def whole(value, name, least):
        # numpy integers and whole floats are whole numbers too; every refusal stays a ValueError here
        try:
            return check_whole_number(value, name, least)
        except TypeError as error:
            raise ValueError(str(error)) from None

    repeats, max_k = whole(repeats, "repeats", 1), whole(max_k, "max_k", 1)
    context_tokens, overhead_tokens = whole(context_tokens, "context_tokens", 1), whole(overhead_tokens, "overhead_tokens", 0)
    prefill_lengths = [whole(n, "prefill_lengths[i]", 1) for n in prefill_lengths]
    if overhead_tokens and decode is None:
        raise ValueError("overhead_tokens > 0 times the engine's loop: pass decode=tl.generate, call tl.calibrate(...) "
                         "(which does), or pass overhead_tokens=0 to time the model calls only.")
    generate = decode
    from ..models.adapter import check_compatible
    check_compatible(drafter, verifier)
    context = _context_ids(verifier, context_tokens, seed)
    extra = _context_ids(verifier, max_k, seed + 1)
    sessions = {}
    for which, model in (("drafter", drafter), ("verifier", verifier)):
        session = model.start(context)
        session.feed(_decoder_context(model, context), keep=1)   # the cached context
        sessions[which] = session

    def timed(fn) -> float:
        start = time.perf_counter()
        fn()
        _synchronize(drafter.device, verifier.device)
        return time.perf_counter() - start

    def step(which: str, k: int, keep: Optional[int] = None) -> float:
        session = sessions[which]
        length = session.length
        try:
            return timed(lambda: session.feed(extra[:k], keep=k if keep is None else keep))
        finally:
            session.crop(length)

    def prefill(model, prompt) -> float:
        session = model.start(prompt)      # (an encoder-decoder's encoder pass is timed on its own)
        return timed(lambda: session.feed(_decoder_context(model, prompt), keep=1))

    def encoder(model, prompt) -> float:
        return timed(lambda: model.start(prompt))

    def overhead() -> float:
        # a short prompt: the overhead does not depend on the context, the prefill's time would only add noise
        g = generate(drafter, verifier, context[:4], method="verifier", max_new_tokens=overhead_tokens,
                     eos_token_id=(), seed=seed)
        return max(g.wall_time_s - g.verifier_time_s, 0.0) / g.n_verifier_calls

    def block_overhead() -> float:
        per_call = overhead()   # measured beside it, so both see the machine in the same state
        g = generate(drafter, verifier, context[:4], method="speculative", rule="spec", gamma=max_k - 1,
                     max_new_tokens=max(overhead_tokens, 4 * max_k), eos_token_id=(), seed=seed)  # a few blocks
        spare = g.wall_time_s - g.drafter_time_s - g.verifier_time_s
        return max(spare - per_call * (g.n_drafter_calls + g.n_verifier_calls), 0.0) / g.n_verifier_calls

    measurements: Dict[str, Callable[[], float]] = {"drafter_step": lambda: step("drafter", 1),
                                                     "drafter_k2": lambda: step("drafter", 2, keep=1)}
    measurements.update({_verifier_key(k): (lambda k=k: step("verifier", k)) for k in range(1, max_k + 1)})
    for which, model in (("drafter", drafter), ("verifier", verifier)):
        for n in [context_tokens, *sorted(set(prefill_lengths) - {context_tokens})]:
            prompt, at = (context, "") if n == context_tokens else (_context_ids(verifier, n, seed + 2), f"@{n}")
            measurements[f"prefill_{which}{at}"] = lambda model=model, prompt=prompt: prefill(model, prompt)
            if model.is_encoder_decoder:
                measurements[f"encoder_{which}{at}"] = lambda model=model, prompt=prompt: encoder(model, prompt)
    if overhead_tokens:
        measurements["overhead"] = overhead
        if max_k >= 2:
            measurements["overhead_block"] = block_overhead

    samples = interleaved_rounds(measurements, repeats, seed=seed, progress=progress, min_seconds=min_seconds)
    from ..models import kernel_paths
    if bandwidth is None:
        on_cpu = verifier.device.type == "cpu" and drafter.device.type == "cpu"
        bandwidth = kernel_paths.measure_read_bandwidth(megabytes=512) if on_cpu else 0.0
    sizes, paths = {}, {}
    for role, model in (("drafter", drafter), ("verifier", verifier)):
        if not getattr(model, "is_toy", False) and isinstance(getattr(model, "model", None), torch.nn.Module):
            sizes[role] = kernel_paths.weight_bytes(model.model)
            paths[role] = kernel_paths.path_of(model.model)
    return Calibration(samples, read_bandwidth=float(bandwidth), weight_bytes=sizes, kernel_paths=paths,
                       drafter=drafter.name, verifier=verifier.name, device=str(verifier.device),
                       dtypes={"drafter": str(drafter.dtype).replace("torch.", ""),
                               "verifier": str(verifier.dtype).replace("torch.", "")},
                       threads=torch.get_num_threads(), context_tokens=context_tokens, repeats=repeats,
                       machine=f"{platform.machine()} {platform.processor()}".strip(),
                       torch_version=torch.__version__)


# ---- each rule's block ------------------------------------------------------------------------

def sweep_rules(rows) -> List[tuple]:
    """`(rule, beta, alpha, gamma)` of every speculative rule a sweep's rows run (one alpha each: the
    median of its grid; the cost of a target does not depend on alpha's value), plus SpecDecode at
    each gamma."""
    import pandas as pd
    table = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    if "method" not in table or table.empty:
        return []
    speculative = table[table["method"] == "speculative"]
    out = []
    for (rule, beta, gamma), part in speculative.groupby(["rule", "beta", "gamma"], sort=True):
        out.append((str(rule), beta, float(np.median(part["alpha"].astype(float))), int(gamma)))
    return out


def _random_laws(n: int, vocab_size: int, generator: torch.Generator) -> torch.Tensor:
    """`n` peaked laws over `vocab_size` tokens (a language model's are far from uniform)."""
    logits = 4.0 * torch.randn(n, vocab_size, generator=generator, dtype=torch.float32)
    return torch.softmax(logits, dim=-1)


def rule_block_costs(calibration: Calibration, rules: Sequence[tuple], vocab_size: int, *, repeats: int = 30,
                     seed: int = 0, progress: bool = True) -> Calibration:
    """A copy of `calibration` with each rule's block cost (`target_<rule>@g<gamma>`, seconds, one
    sample per round): `rules` are `(rule, beta, alpha, gamma)` (`sweep_rules`); SpecDecode at the
    gamma `overhead_block` was measured at is added, since `block_overhead_for` subtracts it. Each
    round times, in a shuffled order, `verification.block_targets` and `verification.verify_block`
    on one block of `gamma` random peaked laws of `vocab_size` tokens without input checks (the
    engine's work per block that depends on the rule, as the engine runs it), at the calibration's
    thread count; the first round warms up. The time is the process's CPU time divided by the thread
    count, which jobs sharing the machine do not inflate as they inflate wall time (it assumes the
    threads share the work evenly)."""
    from ..maths.targets import trusted_inputs
    from ..maths.verification import block_targets, verify_block
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 2:
        raise ValueError(f"vocab_size={vocab_size!r}: pass the number of tokens the pair's laws range over.")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 5:
        raise ValueError(f"repeats={repeats!r}: take the median of at least 5 rounds.")
    wanted = {target_kind(r, g, b): (r, b, a, g) for r, b, a, g in rules}
    reference = target_kind("spec", calibration.max_k - 1)
    if reference not in calibration.samples:   # kept where measured before: the other rules' costs were taken beside it
        wanted.setdefault(reference, ("spec", 1.0, 0.0, calibration.max_k - 1))
    generator = torch.Generator().manual_seed(seed)
    blocks = {}
    for kind, (rule, beta, alpha, gamma) in wanted.items():
        q, p = _random_laws(gamma, vocab_size, generator), _random_laws(gamma, vocab_size, generator)
        drafts = torch.multinomial(q, 1, generator=generator).T                     # (1, gamma)
        beta_value = beta if str(beta) == "normalize" else float(beta)
        blocks[kind] = (rule, beta_value, float(alpha), q, p, drafts)

    n_threads = max(1, int(calibration.threads or 1))

    def one_block(rule, beta, alpha, q, p, drafts) -> float:
        # CPU time of this process over its threads, not wall time: other jobs on a loaded machine
        # would otherwise be priced into every rule (the calibration's calls were timed on a quiet one)
        start = time.process_time()
        with trusted_inputs():   # as the engine runs it: its laws are valid by construction
            pi, _ = block_targets(rule, q, p, alpha, q_unscaled=q, p_unscaled=p, beta=beta)
            verify_block(pi.unsqueeze(0), q.unsqueeze(0), drafts, generator)
        return (time.process_time() - start) / n_threads

    from tqdm.auto import tqdm
    threads = torch.get_num_threads()
    torch.set_num_threads(n_threads)
    samples: Dict[str, List[float]] = {kind: [] for kind in blocks}
    rng = random.Random(seed)
    try:
        for round_ in tqdm(range(repeats + 1), desc="timing each rule's block", disable=not progress):
            order = list(blocks)
            rng.shuffle(order)
            for kind in order:
                seconds = one_block(*blocks[kind])
                if round_:
                    samples[kind].append(seconds)
    finally:
        torch.set_num_threads(threads)
    merged = {**{k: list(v) for k, v in calibration.samples.items()}, **samples}
    note = (calibration.note + "; " if calibration.note else "") + \
        f"rule_block_costs: {len(samples)} rule blocks at V = {vocab_size}, {repeats} rounds"
    return Calibration(**{**calibration.to_dict(), "samples": merged, "note": note})
