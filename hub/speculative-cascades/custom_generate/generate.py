r"""Speculative cascades (Narasimhan et al., "Faster Cascades via Speculative Decoding", ICLR 2025) as a
transformers `custom_generate` method, in one file that needs only torch and transformers.

    model.generate(**inputs, assistant_model=drafter, custom_generate="<this repository or folder>",
                   trust_remote_code=True, rule="token_v2", alpha=0.3, gamma=5)

The drafter (`assistant_model`) has next-token law q, the model whose `generate` runs (the verifier) p. A
rule's target is pi = T(q, p) (Table 1 of the paper, and its token-specific rules: `RULES`, `target`). Per
block (Algorithm 4, GenSpecSample): draft `gamma` tokens x_j ~ q_j, score them with one call of the verifier,
keep x_j with probability min(1, pi_j(x_j) / q_j(x_j)) in order, replace the first rejected one by a draw
of norm(max(0, pi_j - q_j)), and after a fully kept block draw a bonus token from p (`verify_block`). Each
emitted token then follows min(q, pi) + sum(max(0, q - pi)) norm(max(0, pi - q)), which is pi whenever pi
sums to one (every rule but `lossy` with a fixed `beta`).

Temperature: the laws that are sampled (q, p, so the mixtures and OPT's TV term) are softmax(logits / T); the
decisions (max-probability tests, acceptance sets, BiLD's distance) use the T = 1 laws; T = 0 (`do_sample=
False`) is greedy: each sampled law is the one-hot vector of its argmax.

These are the rules, options and random draws of `tutorial_lib` (the project this folder comes from: its
`tl.generate(..., method="speculative")` gives the same tokens for the same seed), rewritten here so that the
folder runs anywhere transformers does. How transformers 5.23 calls it: `model.generate(..., custom_generate=
"<folder>")` calls `generate(model=model, **arguments)` below with every argument of the call, among them
`assistant_model` and `streamer`. `generate` takes its options out, keeps the drafter and the streamer, and
runs transformers' own `generate` with a callable (`SpeculativeCascade`) as the decoding loop: transformers
then prepares the generation config, the attention mask, an encoder-decoder's decoder start ids, `max_length`,
the logits processors and stopping criteria, and puts the prompt into the streamer, before the callable
decodes.
"""

from __future__ import annotations

import inspect
import math
import numbers
from typing import List, Optional, Sequence, Union

import torch
from transformers import DynamicCache, EncoderDecoderCache, GenerationMixin
from transformers.generation import GenerateDecoderOnlyOutput, GenerateEncoderDecoderOutput

__all__ = ["generate", "SpeculativeCascade", "RULES", "ALPHA_RANGES", "target", "verify_block"]

# ---- the rules: pi = T(q, p) ---------------------------------------------------------------------------

#: Every rule: the two ends, SpecDecode and lossy SpecDecode, the prefix rules of Table 1 (a defer / keep
#: decision per position, target (1 - delta) q + delta p), the token-specific rules (target
#: q 1_A + (1 - q(A)) p) and the constant mixture (alpha q + (1 - alpha) p).
RULES = (
    "drafter",
    "verifier",
    "spec",
    "lossy",
    "bild",
    "chow",
    "diff",
    "opt",
    "token_v1",
    "token_v2",
    "token_v3",
    "mixture",
)
PREFIX_RULES = ("bild", "chow", "diff", "opt")
TOKEN_RULES = ("token_v1", "token_v2", "token_v3")
#: The closed range of `alpha` per rule (`lossy`: [0, 1)); at one end the rule is SpecDecode, at the other the
#: drafter alone. `drafter`, `verifier` and `spec` ignore alpha.
ALPHA_RANGES = {
    "lossy": (0.0, 1.0),
    "bild": (0.0, 1.0),
    "chow": (0.0, 1.0),
    "diff": (-1.0, 1.0),
    "opt": (-math.inf, math.inf),
    "token_v1": (-1.0, 1.0),
    "token_v2": (-1.0, 1.0),
    "token_v3": (0.0, 1.0),
    "mixture": (0.0, 1.0),
}


def laws(logits: torch.Tensor, temperature: float):
    """`(scaled, unscaled)`: softmax(logits / T), which is sampled (the one-hot argmax at T = 0), and the
    T = 1 law, which decides. Half-precision logits are upcast first."""
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()

    def softmax(t: float) -> torch.Tensor:
        if t == 0.0:
            return torch.zeros_like(logits).scatter_(-1, logits.argmax(-1, keepdim=True), 1.0)
        shifted = logits - logits.max(-1, keepdim=True).values
        if t < torch.finfo(shifted.dtype).tiny:  # t itself would round to 0: divide in float64
            return torch.softmax(shifted.double() / t, dim=-1).to(shifted.dtype)
        return torch.softmax(shifted / t, dim=-1)

    scaled = softmax(temperature)
    return scaled, (scaled if temperature == 1.0 else softmax(1.0))


def _lossy_beta(q: torch.Tensor, p: torch.Tensor, alpha: float, iterations: int = 60) -> torch.Tensor:
    """Per position, the beta >= 1 - alpha at which the lossy target sums to one (bisection on 1 / beta)."""
    q64, p64 = q.double(), p.double()
    m = torch.minimum(q64, p64 / (1.0 - alpha))
    lo = q64.new_zeros(q.shape[:-1])
    hi = torch.full_like(lo, 1.0 / (1.0 - alpha))
    for _ in range(iterations):
        mid = (lo + hi) / 2
        over = torch.maximum(m, mid.unsqueeze(-1) * p64).sum(-1) > 1.0
        hi = torch.where(over, mid, hi)
        lo = torch.where(over, lo, mid)
    s = torch.where(m.sum(-1) >= 1.0 - 1e-12, torch.zeros_like(hi), hi)
    return (1.0 / s).to(q.dtype)  # s = 0 (the target is q itself) -> beta = inf


def target(rule: str, q, p, alpha: float, q_unscaled, p_unscaled, beta: Union[float, str] = 1.0):
    """`(pi, weight)`: the target pi = T(q, p) of `rule`, shape `(..., V)`, and how much of its mass comes
    from the verifier (NaN for `lossy`). `q`, `p` are the sampled laws, `q_unscaled`, `p_unscaled` the T = 1
    laws the decisions use.

    - `drafter`: q; `verifier`, `spec`: p
    - `lossy`: max(min(q, p / (1 - alpha)), p / beta); `beta="normalize"` picks per position the beta at
      which it sums to one (the project's Lossy*, not Tran-Thien's tuning)
    - `chow`: defer iff max q < 1 - alpha; `diff`: iff max q < max p - alpha; `opt`: iff
      max q < max p - alpha D_TV(p, q); `bild`: iff D_TV(q, p) > alpha; target (1 - delta) q + delta p
    - `token_v1`: A = {v: q(v) >= max p - alpha}; `token_v2`: A = {v: p(v) >= max p - alpha};
      `token_v3`: A = {v: p(v) >= (1 - alpha) max p}; target q 1_A + (1 - q(A)) p
    - `mixture`: alpha q + (1 - alpha) p (transformers' `assistant_ensemble_weight` is 1 - alpha)
    """
    qu, pu = q_unscaled, p_unscaled
    ones = q.new_ones(q.shape[:-1])
    if rule == "drafter":
        return q.clone(), torch.zeros_like(ones)
    if rule in ("verifier", "spec"):
        return p.clone(), ones
    if rule == "lossy":
        nan = torch.full_like(ones, float("nan"))
        if beta == "normalize":
            beta_t = _lossy_beta(q, p, alpha).unsqueeze(-1)
            pi = torch.maximum(torch.minimum(q, p / (1.0 - alpha)), p / beta_t)
            return pi / pi.sum(-1, keepdim=True), nan
        return torch.maximum(torch.minimum(q, p / (1.0 - alpha)), p / beta), nan
    if rule == "mixture":
        w = ones * (1.0 - alpha)
    elif rule == "chow":
        w = (qu.max(-1).values < 1.0 - alpha).to(q.dtype)
    elif rule == "diff":
        w = (qu.max(-1).values < pu.max(-1).values - alpha).to(q.dtype)
    elif rule == "opt":
        w = (qu.max(-1).values < pu.max(-1).values - alpha * (p - q).clamp_min(0).sum(-1)).to(q.dtype)
    elif rule == "bild":
        w = ((pu - qu).clamp_min(0).sum(-1) > alpha).to(q.dtype)
    else:
        top_p = pu.max(-1).values.unsqueeze(-1)
        if rule == "token_v1":
            in_set = qu >= top_p - alpha
        elif rule == "token_v2":
            in_set = pu >= top_p - alpha
        else:
            in_set = pu >= (1.0 - alpha) * top_p
        w = (1.0 - (q * in_set).sum(-1)).clamp_min(0)
        return q * in_set + w.unsqueeze(-1) * p, w
    return (1.0 - w.unsqueeze(-1)) * q + w.unsqueeze(-1) * p, w


# ---- Algorithm 4's accept / reject step ------------------------------------------------------------------


def acceptance_probability(pi, q, tokens) -> torch.Tensor:
    """min(1, pi(x) / q(x)) of the drafted `tokens` x (a token q gives probability 0 is accepted)."""
    pi_x = pi.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    q_x = q.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    ratio = torch.where(q_x > 0, pi_x / torch.where(q_x > 0, q_x, torch.ones_like(q_x)), torch.ones_like(q_x))
    return ratio.clamp(max=1.0)


def residual(pi, q) -> torch.Tensor:
    """norm(max(0, pi - q)), the law a rejected draft is replaced from (norm(pi) where it has no mass: then
    no draft is ever rejected, and no NaN is made)."""
    excess = (pi - q).clamp_min(0)
    mass = excess.sum(-1, keepdim=True)
    safe = torch.where(mass > 0, mass, torch.ones_like(mass))
    return torch.where(mass > 0, excess / safe, pi / pi.sum(-1, keepdim=True))


def sample(law: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One token id per row of `law` `(..., V)`."""
    flat = law.reshape(-1, law.shape[-1])
    return torch.multinomial(flat, 1, generator=generator).reshape(law.shape[:-1])


def verify_block(pi, q, drafts, generator, bonus=None, stop_tokens=()):
    """Algorithm 4 on one block: `pi`, `q` `(n, V)`, `drafts` the n drafted ids. Keeps drafts j = 0, 1, ...
    with probability min(1, pi_j(x_j) / q_j(x_j)) (one uniform coin each), stops at the first rejection and
    draws its replacement from `residual(pi_j, q_j)`, or, when every draft was kept, draws a bonus token from
    `bonus` `(V,)` (when given). An accepted stop token ends the block. Returns `(n_accepted, rejected,
    extra)`, `extra` the replacement or bonus token, -1 for none."""
    drafts = torch.as_tensor(drafts, dtype=torch.long)
    keep = acceptance_probability(pi, q, drafts)
    for j in range(len(drafts)):
        coin = torch.rand((1,), generator=generator, dtype=torch.float64)
        if not bool(coin < keep[j : j + 1].to(torch.float64)):
            return j, True, int(sample(residual(pi[j : j + 1], q[j : j + 1]), generator)[0])
        if int(drafts[j]) in stop_tokens:
            return j + 1, False, -1
    if bonus is None:
        return len(drafts), False, -1
    return len(drafts), False, int(sample(bonus.unsqueeze(0), generator)[0])


# ---- one model's decoding state: a croppable KV cache -----------------------------------------------------


def _vocab_size(model) -> int:
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is not None and getattr(head, "weight", None) is not None:
        return int(head.weight.shape[0])
    return int(model.config.get_text_config().vocab_size)


class _Session:
    """One prompt in one model: the tokens its cache holds, `feed(tokens) -> float32 logits`, `crop`."""

    def __init__(self, model, prompt: List[int]):
        self.model, self.tokens, self._logits = model, [], {}
        self.device = model.get_input_embeddings().weight.device
        self.vocab = _vocab_size(model)
        self.encoder_outputs = None
        self.is_encoder_decoder = bool(model.config.is_encoder_decoder)
        if self.is_encoder_decoder:  # its encoder reads the prompt once
            with torch.inference_mode():
                ids = torch.tensor([prompt], device=self.device)
                self.encoder_outputs = model.get_encoder()(input_ids=ids)
            self.cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        else:
            self.cache = DynamicCache()
        self.logits_to_keep = "logits_to_keep" in inspect.signature(model.forward).parameters

    def feed(self, tokens: Sequence[int], keep: Optional[int] = None) -> torch.Tensor:
        """The next-token logits after each of the last `keep` (default: all) of `tokens`, fed after the
        cached ones: shape `(keep, V)`."""
        tokens = [int(t) for t in tokens]
        keep = len(tokens) if keep is None else keep
        ids = torch.tensor([tokens], device=self.device)
        with torch.inference_mode():
            if self.is_encoder_decoder:
                out = self.model(
                    encoder_outputs=self.encoder_outputs,
                    decoder_input_ids=ids,
                    past_key_values=self.cache,
                    use_cache=True,
                )
            elif self.logits_to_keep:
                out = self.model(
                    input_ids=ids, past_key_values=self.cache, use_cache=True, logits_to_keep=keep
                )
            else:
                out = self.model(input_ids=ids, past_key_values=self.cache, use_cache=True)
        self.cache = out.past_key_values
        self.tokens.extend(tokens)
        logits = out.logits[0, -keep:].float().cpu()[..., : self.vocab]
        first = len(self.tokens) - logits.shape[0]
        self._logits = {i: row for i, row in self._logits.items() if i >= len(self.tokens) - 32}
        self._logits.update((first + i, row) for i, row in enumerate(logits))
        return logits

    def last_logits(self) -> Optional[torch.Tensor]:
        return self._logits.get(len(self.tokens) - 1)

    def crop(self, length: int) -> None:
        if length < len(self.tokens):
            self.cache.crop(length - len(self.tokens))  # transformers crops by minus the tokens to drop
            del self.tokens[length:]
            self._logits = {i: row for i, row in self._logits.items() if i < length}


class _Row:
    """One prompt's speculative decoding: both sessions, the sequence, the random stream."""

    def __init__(self, drafter, verifier, prompt, prefix, *, temperature, max_new_tokens, seed, eos, put):
        self.models = {"drafter": drafter, "verifier": verifier}
        self.prompt, self.seq, self.n_prefix = prompt, list(prefix), len(prefix)
        self.temperature, self.max_new_tokens, self.eos, self.put = temperature, max_new_tokens, eos, put
        self.generator = torch.Generator().manual_seed(seed)
        self.sessions = {}
        self.done = False

    def session(self, which: str) -> _Session:
        if which not in self.sessions:
            self.sessions[which] = _Session(self.models[which], self.prompt)
        return self.sessions[which]

    @property
    def remaining(self) -> int:
        return self.max_new_tokens - (len(self.seq) - self.n_prefix)

    def score(self, which: str, drafts: Sequence[int] = ()) -> torch.Tensor:
        """One call of a model on what it has not seen yet plus `drafts`: logits `(len(drafts) + 1, V)`."""
        session, drafts = self.session(which), list(drafts)
        backlog = self.seq[len(session.tokens) :]
        if backlog:
            return session.feed(backlog + drafts, keep=len(drafts) + 1)
        last = session.last_logits()
        if last is None:  # it has seen everything but kept no logits: feed the last token again
            session.crop(len(session.tokens) - 1)
            return session.feed(self.seq[len(session.tokens) :] + drafts, keep=len(drafts) + 1)
        return last.unsqueeze(0) if not drafts else torch.cat([last.unsqueeze(0), session.feed(drafts)])

    def emit(self, token: int) -> None:
        self.seq.append(token)
        if self.put is not None:
            self.put(token)
        if token in self.eos or self.remaining <= 0:
            self.done = True

    def block(self, rule, alpha, beta, gamma, bonus) -> None:
        """Algorithm 4, once: draft, one verifier call, accept / reject, residual or bonus, crop."""
        n = min(gamma, self.remaining)
        drafts, q_rows, qu_rows = [], [], []
        logits = self.score("drafter")[-1]
        for j in range(n):
            if j:
                logits = self.session("drafter").feed([drafts[-1]])[-1]
            q_j, qu_j = laws(logits, self.temperature)
            drafts.append(int(sample(q_j, self.generator)))
            q_rows.append(q_j)
            qu_rows.append(qu_j)
        q, q_unscaled = torch.stack(q_rows), torch.stack(qu_rows)
        # without a bonus token the verifier need not see the last draft
        p_all, pu_all = laws(
            self.score("verifier", drafts if bonus != "none" else drafts[:-1]), self.temperature
        )
        pi, _ = target(rule, q, p_all[:n], alpha, q_unscaled, pu_all[:n], beta)
        bonus_law = p_all[n] if bonus != "none" and n < self.remaining else None
        n_accepted, _, extra = verify_block(pi, q, drafts, self.generator, bonus_law, self.eos)
        for x in drafts[:n_accepted]:
            self.emit(x)
        if extra >= 0:
            self.emit(extra)
        for session in self.sessions.values():  # crop each cache to the prefix that agrees with the sequence
            agree = next(
                (i for i, (a, b) in enumerate(zip(session.tokens, self.seq)) if a != b),
                min(len(session.tokens), len(self.seq)),
            )
            session.crop(agree)

    def run(self, rule, alpha, beta, gamma, bonus) -> List[int]:
        while not self.done:
            self.block(rule, alpha, beta, gamma, bonus)
        return self.seq[self.n_prefix :]


# ---- the callable transformers runs, and the folder's entry point ----------------------------------------

#: Logits processors `generate` builds from an option, by class name -> the option to drop (the method samples
#: from softmax(logits / T) itself; transformers adds `top_k=50` to every `do_sample=True` call by default).
REFUSED_PROCESSORS = {
    "TopKLogitsWarper": "top_k (transformers' default is 50 with do_sample=True: pass top_k=None)",
    "TopPLogitsWarper": "top_p",
    "MinPLogitsWarper": "min_p",
    "TypicalLogitsWarper": "typical_p",
    "EpsilonLogitsWarper": "epsilon_cutoff",
    "EtaLogitsWarper": "eta_cutoff",
    "RepetitionPenaltyLogitsProcessor": "repetition_penalty",
    "NoRepeatNGramLogitsProcessor": "no_repeat_ngram_size",
    "MinLengthLogitsProcessor": "min_length (or min_new_tokens)",
    "MinNewTokensLengthLogitsProcessor": "min_new_tokens",
    "NoBadWordsLogitsProcessor": "bad_words_ids",
    "SuppressTokensLogitsProcessor": "suppress_tokens",
    "SuppressTokensAtBeginLogitsProcessor": "begin_suppress_tokens",
    "ForcedBOSTokenLogitsProcessor": "forced_bos_token_id",
    "ForcedEOSTokenLogitsProcessor": "forced_eos_token_id",
}
_ALLOWED_PROCESSORS = ("TemperatureLogitsWarper",)  # honoured: the method samples at T itself
_ALLOWED_CRITERIA = ("MaxLengthCriteria", "EosTokenCriteria")  # honoured: max_new_tokens and the EOS ids
#: The model inputs `generate` prepares that the method replaces with its own (caches, masks, positions).
PASSED_THROUGH = (
    "attention_mask",
    "position_ids",
    "logits_to_keep",
    "use_cache",
    "past_key_values",
    "encoder_outputs",
    "cache_position",
)
#: The options of the method, keyword arguments of `model.generate(...)`.
OPTIONS = ("rule", "alpha", "gamma", "beta", "bonus", "seed")
#: Options of `tutorial_lib`'s `tl.speculative_cascade` that this folder does not run, and why.
ELSEWHERE = {
    "method": "the other methods (token_cascade, oracle, seq_cascade, bild) are tutorial_lib's",
    "aggregate": "the sequence cascade is tutorial_lib's (method='seq_cascade')",
    "bild_threshold": "the original Big-Little Decoder is tutorial_lib's (method='bild')",
    "bild_fallback": "the original Big-Little Decoder is tutorial_lib's (method='bild')",
    "batch_size": "the folder decodes the rows of a batch one after the other",
    "drafter": "pass the drafter as assistant_model=...",
}


def _refuse_what_cannot_be_honoured(config, logits_processor, stopping_criteria, model_kwargs, synced_gpus):
    if (config.num_beams or 1) > 1:
        raise ValueError(
            f"num_beams={config.num_beams}: beam search keeps several hypotheses, a speculative cascade one "
            "sampled sequence; pass num_beams=1."
        )
    if (config.num_return_sequences or 1) > 1:
        raise ValueError(
            f"num_return_sequences={config.num_return_sequences}: pass 1 (repeat the prompt in the batch for "
            "several samples; row i draws from seed + i)."
        )
    for option in ("output_scores", "output_logits", "output_attentions", "output_hidden_states"):
        if getattr(config, option, False):
            raise ValueError(f"{option}=True: the speculative cascade returns the sequences only; drop it.")
    for processor in logits_processor or ():
        name = type(processor).__name__
        if name not in _ALLOWED_PROCESSORS:
            option = REFUSED_PROCESSORS.get(name, f"the logits processor {name}")
            raise ValueError(
                f"{option}: the cascade samples from softmax(logits / temperature) of each model, as the "
                f"paper's rules are defined; generate set {name} from it. Drop that option."
            )
    for criterion in stopping_criteria or ():
        name = type(criterion).__name__
        if name not in _ALLOWED_CRITERIA:
            raise ValueError(
                f"the stopping criterion {name} (from max_time, stop_strings or stopping_criteria) cannot "
                "stop the cascade; it stops at max_new_tokens and the EOS ids only. Drop it."
            )
    if synced_gpus:
        raise ValueError("synced_gpus=True: the cascade runs on one process; pass synced_gpus=False.")
    unknown = sorted(set(model_kwargs) - set(PASSED_THROUGH))
    if unknown:
        raise ValueError(f"model inputs {unknown}: the cascade feeds each model token ids only; drop them.")
    cache = model_kwargs.get("past_key_values")
    if cache is not None and cache.get_seq_length() > 0:
        raise ValueError(
            "past_key_values holds a filled cache: the cascade keeps a cache per model itself; pass the "
            "whole prompt instead."
        )


def special_token_ids(config):
    """`(eos, pad)` from the generation config's public `eos_token_id` / `pad_token_id`: the EOS ids as a
    tuple (empty for none) and the pad id (None for none; transformers' own default, the first EOS id, when
    only EOS ids are set)."""

    def ids(value) -> tuple:
        if value is None:
            return ()
        if isinstance(value, torch.Tensor):
            return tuple(int(t) for t in value.reshape(-1).tolist())
        if isinstance(value, (list, tuple, set, frozenset)):
            return tuple(int(t) for t in value)
        return (int(value),)

    eos, pad = ids(config.eos_token_id), ids(config.pad_token_id)
    return eos, (pad[0] if pad else (eos[0] if eos else None))


def _check_options(rule, alpha, gamma, beta, bonus, seed):
    rule = "spec" if rule is None else rule
    if rule not in RULES:
        raise ValueError(f"rule={rule!r} is unknown; use one of {', '.join(RULES)}.")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not math.isfinite(alpha):
        raise ValueError(f"alpha={alpha!r}: pass a finite number (the rule's threshold).")
    alpha = float(alpha)
    low, high = ALPHA_RANGES.get(rule, (-math.inf, math.inf))
    if rule == "lossy" and not 0.0 <= alpha < 1.0:
        raise ValueError(f"alpha={alpha} is outside [0, 1) for rule 'lossy' (it divides p by 1 - alpha).")
    if not low <= alpha <= high:
        raise ValueError(
            f"alpha={alpha} is outside the range [{low}, {high}] of rule {rule!r}; at {low} the rule is "
            f"SpecDecode-like and at {high} drafter-only."
        )
    if gamma == "auto":
        raise ValueError(
            "gamma='auto' (block sizes from the pair's measured call costs) is tutorial_lib's; pass a whole "
            "number gamma >= 1 here."
        )
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Integral) or gamma < 1:
        raise ValueError(f"gamma={gamma!r}: pass a whole number of drafts per block, >= 1.")
    if beta != "normalize":
        if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not math.isfinite(beta):
            raise ValueError(f"beta={beta!r}: pass a number >= 1 - alpha, or 'normalize' (Lossy*).")
        if rule == "lossy" and not (beta >= 1.0 - alpha - 1e-12 and beta > 0):
            raise ValueError(
                f"beta={beta} is below 1 - alpha = {1 - alpha:.6g}; the lossy target needs more."
            )
        beta = float(beta)
    if bonus not in ("verifier", "none"):
        why = " (bonus='target' is tutorial_lib's)" if bonus == "target" else ""
        raise ValueError(f"bonus={bonus!r}: use 'verifier' (the paper's) or 'none'{why}.")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0):
        raise ValueError(f"seed={seed!r}: pass a whole number >= 0, or None.")
    return rule, alpha, int(gamma), beta, bonus, None if seed is None else int(seed)


def _prompts(model, input_ids, inputs_tensor, attention_mask) -> List[List[int]]:
    """Each row's prompt without its padding (the tokens whose attention mask is 1, in order)."""
    source = inputs_tensor if model.config.is_encoder_decoder else input_ids
    mask = torch.ones_like(source) if attention_mask is None else attention_mask.to(source.device)
    rows = [row[keep.bool()].tolist() for row, keep in zip(source, mask)]
    if any(not row for row in rows):
        raise ValueError(
            "a row of the batch is all padding (its attention_mask is 0 everywhere); give it a prompt."
        )
    return rows


class SpeculativeCascade:
    """The decoding loop `generate` hands to transformers' `generate` (`custom_generate=<this callable>`):
    transformers calls it with the prepared `input_ids`, logits processors, stopping criteria, generation
    config and model inputs; the drafter and the streamer are held here, since transformers hands a callable
    neither."""

    def __init__(
        self,
        drafter,
        streamer=None,
        *,
        rule="spec",
        alpha=None,
        gamma=5,
        beta=1.0,
        bonus="verifier",
        seed=None,
    ):
        alpha = 0.0 if alpha is None else alpha
        self.rule, self.alpha, self.gamma, self.beta, self.bonus, self.seed = _check_options(
            rule, alpha, gamma, beta, bonus, seed
        )
        if drafter is None:
            raise ValueError("no drafter: pass assistant_model=<the small model> to generate.")
        self.drafter, self.streamer = drafter, streamer

    def __call__(
        self,
        model,
        input_ids,
        logits_processor=None,
        stopping_criteria=None,
        generation_config=None,
        synced_gpus=False,
        inputs_tensor=None,
        **model_kwargs,
    ):
        config = generation_config if generation_config is not None else model.generation_config
        _refuse_what_cannot_be_honoured(
            config, logits_processor, stopping_criteria, model_kwargs, synced_gpus
        )
        if _vocab_size(self.drafter) != _vocab_size(model):
            raise ValueError(
                f"the drafter's vocabulary has {_vocab_size(self.drafter)} tokens and the verifier's "
                f"{_vocab_size(model)}: speculation compares q(x) with p(x) id by id; pass a drafter of the "
                "verifier's family (the same tokenizer)."
            )
        prompts = _prompts(model, input_ids, inputs_tensor, model_kwargs.get("attention_mask"))
        if model.config.is_encoder_decoder and input_ids.shape[1] != 1:
            raise ValueError(
                "decoder_input_ids: the cascade starts every answer from the decoder start token."
            )
        streamer = self.streamer
        if streamer is not None and len(prompts) > 1:
            raise ValueError(
                f"a streamer takes one sequence, and this batch has {len(prompts)}; stream one prompt at a "
                "time."
            )
        temperature = 0.0
        if config.do_sample:
            temperature = float(config.temperature if config.temperature is not None else 1.0)
        max_new_tokens = int(config.max_length) - input_ids.shape[1]
        eos, pad = special_token_ids(config)
        seed = self.seed
        if seed is None:  # greedy calls stay deterministic (mixtures and lossy targets still draw at T = 0)
            seed = 0 if temperature == 0.0 else int(torch.randint(0, 2**62, (1,)))
        put = None if streamer is None else (lambda token: streamer.put(torch.tensor([token])))
        outputs = []
        for i, prompt in enumerate(prompts):
            if max_new_tokens < 1:
                outputs.append([])
                continue
            prefix = input_ids[i].tolist() if model.config.is_encoder_decoder else prompt
            row = _Row(
                self.drafter,
                model,
                prompt,
                prefix,
                temperature=temperature,
                max_new_tokens=max_new_tokens,
                seed=seed + i,
                eos=frozenset(eos),
                put=put,
            )
            outputs.append(row.run(self.rule, self.alpha, self.beta, self.gamma, self.bonus))
        if streamer is not None:
            streamer.end()
        width = max(len(t) for t in outputs)
        if pad is None and any(len(t) < width for t in outputs):
            raise ValueError(
                "rows stopped at different lengths and there is no pad_token_id; pass pad_token_id=..."
            )
        new = torch.full((len(outputs), width), 0 if pad is None else pad, dtype=input_ids.dtype)
        for i, tokens in enumerate(outputs):
            new[i, : len(tokens)] = torch.tensor(tokens, dtype=input_ids.dtype)
        sequences = torch.cat([input_ids, new.to(input_ids.device)], dim=1)
        if not config.return_dict_in_generate:
            return sequences
        kind = GenerateEncoderDecoderOutput if model.config.is_encoder_decoder else GenerateDecoderOnlyOutput
        return kind(sequences=sequences)


def generate(model, *args, assistant_model=None, streamer=None, **kwargs):
    """`model.generate(**inputs, assistant_model=drafter, custom_generate="<this folder>",
    trust_remote_code=True, rule="token_v2", alpha=0.3, gamma=5)`: see README.md beside this folder.

    The options (`OPTIONS`) are taken out of the arguments; the rest go to transformers' `generate`, which
    prepares the inputs and runs `SpeculativeCascade` as its decoding loop."""
    for name, why in ELSEWHERE.items():
        if name in kwargs and not (name == "method" and kwargs[name] == "speculative"):
            raise ValueError(f"{name}={kwargs[name]!r}: {why}; this folder runs Algorithm 4 with a rule.")
    kwargs.pop("method", None)
    options = {name: kwargs.pop(name) for name in OPTIONS if name in kwargs}
    cascade = SpeculativeCascade(assistant_model, streamer, **options)
    return GenerationMixin.generate(model, *args, streamer=streamer, custom_generate=cascade, **kwargs)
