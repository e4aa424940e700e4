"""Measuring a loaded pair: `calibrate` times every call kind on the pair's device, in interleaved rounds
(`interleaved_rounds`) so that a drift of the machine falls on every kind alike."""

from __future__ import annotations

import platform
import random
import time
from typing import Callable, Dict, List, Optional, Sequence

import torch

from ...checks import check_whole_number
from .record import Calibration, verifier_key

__all__ = ["calibrate", "interleaved_rounds"]


def _pair(pair, verifier):
    from ...models.language_model import LanguageModel, ModelPair

    if verifier is None and isinstance(pair, ModelPair):
        return pair.drafter, pair.verifier
    if verifier is None and isinstance(pair, (tuple, list)) and len(pair) == 2:
        pair, verifier = pair
    if not (isinstance(pair, LanguageModel) and isinstance(verifier, LanguageModel)):
        raise ValueError(
            "calibrate needs a loaded drafter/verifier pair: pass `tl.load_pair(...)` or "
            f"two LanguageModels (got {type(pair).__name__} and {type(verifier).__name__})."
        )
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
    low = 0 if model.is_toy else min(10, model.vocab_size - 1)  # skip the usual special ids
    return torch.randint(low, model.vocab_size, (n,), generator=generator).tolist()


#: Rounds `interleaved_rounds` stops at, whatever `min_seconds` asks.
MAX_ROUNDS = 2000


def interleaved_rounds(
    measurements: Dict,
    repeats: int,
    *,
    seed: int = 0,
    progress: bool = True,
    desc: str = "calibrating",
    min_seconds: float = 0.0,
) -> Dict:
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
            if round_:  # round 0 warms up kernels, allocators and caches
                samples[key].append(seconds)
        if round_ == 0:
            started = time.perf_counter()
        round_ += 1
        if round_ > bar.total:
            bar.total = round_
        bar.update(1)
    bar.close()
    return samples


MAX_CONTEXT_TOKENS = 4096  # cached tokens under a timed call: past this a call takes minutes on a CPU


def calibrate(
    pair,
    verifier=None,
    *,
    max_k: int = 8,
    repeats: int = 5,
    context_tokens: int = 64,
    overhead_tokens: int = 8,
    prefill_lengths: Sequence[int] = (),
    seed: int = 0,
    progress: bool = True,
    decode: Optional[Callable] = None,
    min_seconds: float = 0.0,
    bandwidth: Optional[float] = None,
) -> Calibration:
    """Measure the call costs of a loaded pair on its device (see the docstring of `calibration`).

    `pair` is a `ModelPair` (or pass drafter and verifier). `max_k`: measure $t_p(k)$ for k = 1..max_k
    (gamma up to max_k - 1). `repeats` rounds after a warm-up round; `context_tokens` cached tokens
    under every measured call (about a prompt plus part of an answer); `overhead_tokens` tokens of
    plain decoding per round to measure the engine's per-call overhead, and (max_k >= 2) a few blocks of
    speculative decoding at gamma = max_k - 1 for its per-block overhead (0: measure neither).
    `prefill_lengths`: other prompt lengths at which prefills and encoder passes are timed too
    (kinds `prefill_verifier@n`, ...), so `Calibration.prefill_time` prices any prompt length.
    `decode`: the decoding loop whose overheads are measured (`engine.generate`); it is passed in, not
    imported, because the engine itself calibrates through `calibration` (`gamma="auto"`).
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
    context_tokens, overhead_tokens = (
        whole(context_tokens, "context_tokens", 1),
        whole(overhead_tokens, "overhead_tokens", 0),
    )
    if context_tokens > MAX_CONTEXT_TOKENS:
        raise ValueError(
            f"context_tokens={context_tokens}: calibration times calls over that many cached tokens, "
            f"repeated for every k; use at most {MAX_CONTEXT_TOKENS} (a prompt plus an answer is 64-512)."
        )
    prefill_lengths = [whole(n, "prefill_lengths[i]", 1) for n in prefill_lengths]
    if overhead_tokens and decode is None:
        raise ValueError(
            "overhead_tokens > 0 times the engine's loop: pass decode=tl.generate, call tl.calibrate(...) "
            "(which does), or pass overhead_tokens=0 to time the model calls only."
        )
    generate = decode
    from ...models.language_model import check_compatible

    check_compatible(drafter, verifier)
    context = _context_ids(verifier, context_tokens, seed)
    extra = _context_ids(verifier, max_k, seed + 1)
    sessions = {}
    for which, model in (("drafter", drafter), ("verifier", verifier)):
        session = model.start(context)
        session.feed(_decoder_context(model, context), keep=1)  # the cached context
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
        session = model.start(prompt)  # (an encoder-decoder's encoder pass is timed on its own)
        return timed(lambda: session.feed(_decoder_context(model, prompt), keep=1))

    def encoder(model, prompt) -> float:
        return timed(lambda: model.start(prompt))

    def overhead() -> float:
        # a short prompt: the overhead does not depend on the context, the prefill's time would only add noise
        g = generate(
            drafter,
            verifier,
            context[:4],
            method="verifier",
            max_new_tokens=overhead_tokens,
            eos_token_id=(),
            seed=seed,
        )
        return max(g.wall_time_s - g.verifier_time_s, 0.0) / g.n_verifier_calls

    def block_overhead() -> float:
        per_call = overhead()  # measured beside it, so both see the machine in the same state
        g = generate(
            drafter,
            verifier,
            context[:4],
            method="speculative",
            rule="spec",
            gamma=max_k - 1,
            max_new_tokens=max(overhead_tokens, 4 * max_k),
            eos_token_id=(),
            seed=seed,
        )  # a few blocks
        spare = g.wall_time_s - g.drafter_time_s - g.verifier_time_s
        return max(spare - per_call * (g.n_drafter_calls + g.n_verifier_calls), 0.0) / g.n_verifier_calls

    measurements: Dict[str, Callable[[], float]] = {
        "drafter_step": lambda: step("drafter", 1),
        "drafter_k2": lambda: step("drafter", 2, keep=1),
    }
    measurements.update({verifier_key(k): (lambda k=k: step("verifier", k)) for k in range(1, max_k + 1)})
    for which, model in (("drafter", drafter), ("verifier", verifier)):
        for n in [context_tokens, *sorted(set(prefill_lengths) - {context_tokens})]:
            prompt, at = (
                (context, "") if n == context_tokens else (_context_ids(verifier, n, seed + 2), f"@{n}")
            )
            measurements[f"prefill_{which}{at}"] = lambda model=model, prompt=prompt: prefill(model, prompt)
            if model.is_encoder_decoder:
                measurements[f"encoder_{which}{at}"] = lambda model=model, prompt=prompt: encoder(
                    model, prompt
                )
    if overhead_tokens:
        measurements["overhead"] = overhead
        if max_k >= 2:
            measurements["overhead_block"] = block_overhead

    samples = interleaved_rounds(measurements, repeats, seed=seed, progress=progress, min_seconds=min_seconds)
    from ...models import kernel_paths

    if bandwidth is None:
        on_cpu = verifier.device.type == "cpu" and drafter.device.type == "cpu"
        bandwidth = kernel_paths.measure_read_bandwidth(megabytes=512) if on_cpu else 0.0
    sizes, paths = {}, {}
    for role, model in (("drafter", drafter), ("verifier", verifier)):
        if not getattr(model, "is_toy", False) and isinstance(getattr(model, "model", None), torch.nn.Module):
            sizes[role] = kernel_paths.weight_bytes(model.model)
            paths[role] = kernel_paths.path_of(model.model)
    return Calibration(
        samples,
        read_bandwidth=float(bandwidth),
        weight_bytes=sizes,
        kernel_paths=paths,
        drafter=drafter.name,
        verifier=verifier.name,
        device=str(verifier.device),
        dtypes={
            "drafter": str(drafter.dtype).replace("torch.", ""),
            "verifier": str(verifier.dtype).replace("torch.", ""),
        },
        threads=torch.get_num_threads(),
        context_tokens=context_tokens,
        repeats=repeats,
        machine=f"{platform.machine()} {platform.processor()}".strip(),
        torch_version=torch.__version__,
    )
