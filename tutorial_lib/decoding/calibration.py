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
| `overhead_block` | what a speculative block costs beyond its calls (drafting, verification, the trace): speculative decoding's wall time minus its model time and per-call overheads, per verifier call |

exactly as `tutorial_lib.engine` makes these calls (`Session.feed` with the same `keep`, logits
copied back to the host), so the times include what the engine pays. Each call after the context
is cropped away again, so every repeat sees the same cache. One round runs every measurement once,
in a shuffled order (a machine that slows down mid-way slows every kind alike); after one warm-up
round, `repeats` rounds are recorded and each kind's time is the median over rounds.

`Calibration` holds the raw samples, reads as a table (`table()`), prices a call of any kind
(`price`), feeds `tutorial_lib.latency` (`t_q`, `t_p`, `speedup`, `best_gamma`) and is stored as JSON
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
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Union

import torch

from ..checks import check_whole_number
from ..maths import latency

__all__ = ["Calibration", "calibrate", "CALL_KINDS"]

CALL_KINDS = ("drafter_step", "drafter_k2", "verifier", "prefill_drafter", "prefill_verifier", "encoder_drafter",
              "encoder_verifier", "overhead", "overhead_block")


def _verifier_key(k: int) -> str:
    return f"verifier_k{k}"


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
        """The engine's cost per speculative block beyond its calls' (0 if it was not measured)."""
        return self.median("overhead_block") if "overhead_block" in self.samples else 0.0

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

    def prefill_time(self, kind: str, n_tokens: Optional[int] = None) -> float:
        """Seconds of a prefill or encoder pass (`kind` such as `"prefill_verifier"`) on a prompt of
        `n_tokens`: linear in the prompt length through the lengths measured (`context_tokens` and
        `prefill_lengths`), continued beyond them by the nearest segment; the median at
        `context_tokens` where only that length was measured or `n_tokens` is None."""
        points = {self.context_tokens: self.median(kind)}
        points.update((int(key.rpartition("@")[2]), self.median(key)) for key in self.samples
                      if key.startswith(kind + "@"))
        if n_tokens is None or len(points) == 1:
            return self.median(kind)
        lengths = sorted(points)
        i = max(1, min(len(lengths) - 1, sum(1 for L in lengths if L <= n_tokens)))
        (x0, x1), (y0, y1) = lengths[i - 1:i + 1], (points[lengths[i - 1]], points[lengths[i]])
        return max(y0 + (y1 - y0) * (n_tokens - x0) / (x1 - x0), 0.0)

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
        for kind, values in self.samples.items():
            k = int(kind[len("verifier_k"):]) if kind.startswith("verifier_k") else None
            q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else (values[0],) * 3
            rows.append({"kind": "verifier" if k else kind, "k": k, "median_s": statistics.median(values),
                         "q25_s": q1, "q75_s": q3, "n": len(values),
                         "vs_t_p(1)": statistics.median(values) / reference if reference > 0 else math.nan})
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
        `others` gives the seconds of other kinds (`drafter_k2`, `prefill_verifier`, `encoder_drafter`, ...)."""
        cost = latency.verifier_cost(t_p)
        if not callable(t_p):
            max_k = len(t_p)
        else:
            max_k = check_whole_number(max_k, "max_k", 1)
        others = dict(others or {})
        unknown = [kind for kind in others if kind not in CALL_KINDS or kind in ("verifier", "drafter_step", "overhead")]
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


def calibrate(pair, verifier=None, *, max_k: int = 8, repeats: int = 5, context_tokens: int = 64,
              overhead_tokens: int = 8, prefill_lengths: Sequence[int] = (), seed: int = 0,
              progress: bool = True, decode: Optional[Callable] = None) -> Calibration:
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
    `tl.calibrate(pair, ...)` (`engine.calibrate`) passes the engine's `generate`.
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

    from tqdm.auto import tqdm
    samples: Dict[str, List[float]] = {kind: [] for kind in measurements}
    rng = random.Random(seed)
    for round_ in tqdm(range(repeats + 1), desc="calibrating", disable=not progress):
        order = list(measurements)
        rng.shuffle(order)
        for kind in order:
            seconds = measurements[kind]()
            if round_:               # round 0 warms up kernels, allocators and caches
                samples[kind].append(seconds)
    return Calibration(samples, drafter=drafter.name, verifier=verifier.name, device=str(verifier.device),
                       dtypes={"drafter": str(drafter.dtype).replace("torch.", ""),
                               "verifier": str(verifier.dtype).replace("torch.", "")},
                       threads=torch.get_num_threads(), context_tokens=context_tokens, repeats=repeats,
                       machine=f"{platform.machine()} {platform.processor()}".strip(),
                       torch_version=torch.__version__)
