"""The settings of notebook 09's timings (`SPEED_PROFILES`, `speed_profile`), the pair each one loads
(`load_speed_pair`) and the prompts it times (`PROMPTS`, `speed_prompts`)."""

from __future__ import annotations

from typing import Dict, List, Mapping

__all__ = ["PROMPTS", "SPEED_PROFILES", "speed_profile", "load_speed_pair"]

PROMPTS = {
    "code: reverse words": "Write a Python function that reverses the order of the words in a sentence, "
    "with a docstring and two doctest examples.",
    "code: binary search": "Implement binary search over a sorted list in Python and explain its running "
    "time.",
    "maths: train": "A train travels 180 km in 2 hours and then 120 km in 1.5 hours. What is its average "
    "speed over the whole trip? Show your working.",
    "explain: caching": "Explain to a new programmer what a cache is and why it makes programs faster.",
}

#: A drafter named `perturbed:<noise>` is the verifier with Gaussian noise on its weights
#: (`models.perturbed`): the same cost per step ($c \approx 1$), and drafts the verifier keeps most of the
#: time.
SPEED_PROFILES = {
    # 20 new tokens: the whole lesson at its defaults took 191 s with 32 beside one other job; the Qwen
    # profile and benchmarks/engine_speed.py measure longer answers.
    "default": dict(
        drafter="perturbed:0.05",
        verifier="smollm2-135m",
        dtype="float32",
        device="cpu",
        n_prompts=2,
        max_new_tokens=20,
        gammas=[1, 3, 5],
        repeats=2,
        calibration_repeats=5,
        max_k=8,
        context_tokens=64,
    ),
    "qwen": dict(
        drafter="qwen2.5-coder-0.5b",
        verifier="qwen2.5-coder-1.5b",
        dtype="float32",
        device="cpu",
        n_prompts=2,
        max_new_tokens=64,
        gammas=[1, 3, 5],
        repeats=1,
        calibration_repeats=5,
        max_k=8,
        context_tokens=64,
    ),
    # Any pair of one family from the hub, on a GPU (same tokenizer; needs a network the first time).
    "hub": dict(
        drafter="Qwen/Qwen2.5-0.5B-Instruct",
        verifier="Qwen/Qwen2.5-1.5B-Instruct",
        dtype="bfloat16",
        device="cuda",
        n_prompts=4,
        max_new_tokens=128,
        gammas=[1, 3, 5, 7],
        repeats=2,
        calibration_repeats=10,
        max_k=12,
        context_tokens=96,
    ),
    # CI: two tiny random transformers, prompts of token ids, seconds.
    "smoke": dict(
        drafter="perturbed:0.3",
        verifier="tiny-random-llama:0",
        dtype="float32",
        device="cpu",
        n_prompts=2,
        max_new_tokens=12,
        gammas=[1, 3],
        repeats=1,
        calibration_repeats=2,
        max_k=4,
        context_tokens=16,
    ),
}
for _settings in SPEED_PROFILES.values():
    # which kernel computes each model's calls (`models.kernel_paths`): None keeps them as loaded; "auto"
    # or a path name (one for both, or a pair (drafter, verifier)) goes to `load_pair(kernel_paths=...)`
    _settings.setdefault("kernel_paths", None)


def speed_profile(name: str = "default", **overrides) -> dict:
    """The settings of one profile; keyword arguments that are not None replace settings."""
    if name not in SPEED_PROFILES:
        raise ValueError(f"profile={name!r} is unknown; choose one of {', '.join(SPEED_PROFILES)}.")
    settings = dict(SPEED_PROFILES[name], profile=name)
    unknown = set(overrides) - set(settings)
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}; a profile has {sorted(settings)}.")
    settings.update({k: v for k, v in overrides.items() if v is not None})
    return settings


def load_speed_pair(settings: Mapping):
    """The profile's pair: named models, or a verifier with a perturbed copy of itself as drafter. Named
    models on `kernel_paths="auto"` in fp32 are loaded as `load_pair(..., dtype="auto")` loads them."""
    from ...models.adapter import load_model, load_pair, perturbed
    from ...models.language_model import ModelPair

    drafter, verifier = settings["drafter"], settings["verifier"]
    paths, gamma = settings.get("kernel_paths"), max(settings.get("gammas") or [5])
    if drafter.startswith("perturbed:"):
        big = load_model(verifier, dtype=settings["dtype"], device=settings["device"])
        pair = ModelPair(perturbed(big, float(drafter.split(":", 1)[1]), seed=1), big)
        if paths is not None:
            from ...models.kernel_paths import put_on_path

            both = paths if isinstance(paths, (tuple, list)) else (paths, paths)
            for lm, path, role in zip(pair, both, ("drafter", "verifier")):
                if path is not None:
                    put_on_path(lm, path, gamma=gamma, role=role)
        return pair
    if paths == "auto" and settings["dtype"] in ("float32", "auto"):
        # what a user following the README loads: `dtype="auto"`, its block size and its drafter's rule
        return load_pair(drafter, verifier, dtype="auto", device=settings["device"])
    return load_pair(
        drafter, verifier, dtype=settings["dtype"], device=settings["device"], kernel_paths=paths, gamma=gamma
    )


def speed_prompts(verifier, n: int) -> Dict[str, List[int]]:
    """The first `n` prompts as token ids: chat-formatted where the verifier has a chat template."""
    if n < 1 or n > len(PROMPTS):
        raise ValueError(f"n_prompts={n}: choose between 1 and {len(PROMPTS)}.")
    out = {}
    for label, text in list(PROMPTS.items())[:n]:
        if verifier.tokenizer is None:  # a tiny random model: a few token ids from the text's length
            out[label] = [(len(text) * (i + 3)) % verifier.vocab_size for i in range(6)]
        elif getattr(verifier.tokenizer, "chat_template", None):
            out[label] = verifier.chat_prompt(text)
        else:
            out[label] = verifier.encode(text)
    return out
