r"""Speculative cascades inside transformers' `model.generate(..., custom_generate=speculative_cascade(...))`.

Every token the callable emits is Algorithm 4's (GenSpecSample) with the rule's target
$$\pi_t = \mathbb{T}(q_t, p_t), \qquad x \sim q_t \text{ kept with probability } \min\{1, \pi_t(x)/q_t(x)\},
\text{ else replaced by } x' \sim \mathrm{norm}(\max\{0, \pi_t - q_t\}),$$
so it follows $\pi_t$ (`accept_reject.output_distribution(pi, q)` for the lossy rule at `beta=1`): the drafter
is the `assistant_model` of the call, the verifier the model whose `generate` runs. The decoding itself is
the package's: `engine.generate` for one prompt (streamed token by token), `batch.generate_batch` (the
block batch) for several, so the tokens are `tl.generate`'s.

**transformers 5.23's contract** (read from `transformers/generation/utils.py`). With a callable
`custom_generate`, `generate` does its usual preparation (the generation config merged with the keyword
arguments, the attention mask, an encoder-decoder's encoder outputs and decoder start ids, `max_length`, the
logits processors and stopping criteria, an empty cache), puts the prompt into the `streamer`, then calls
`custom_generate(model, input_ids, logits_processor=..., stopping_criteria=..., generation_config=...,
**extra, **model_kwargs)` and returns its result. `extra` holds `inputs_tensor` when the callable's signature
names it (an encoder-decoder's encoder input ids) and every keyword argument of the call whose name the
callable's signature has and `_sample`'s has not (here `seed`). In 5.23 that extraction replaces the dict that
held `assistant_model` and `streamer`, so a callable never receives them, and no public route brings them:
`SpeculativeCascade` reads them from the `generate` call that called it, in one named fallback
(`generate_call_arguments`), which `tests/test_hub_folder.py` checks against transformers' contract. The EOS
and pad ids come from the generation config's public `eos_token_id` / `pad_token_id` (`special_token_ids`).

A folder in the Hub's layout (`<folder>/custom_generate/generate.py`, `requirements.txt` beside it) loads
with `custom_generate="<folder>", trust_remote_code=True`: its `generate(model, **arguments)` receives every
argument of the call, `assistant_model` and `streamer` among them. The project's folder,
`hub/speculative-cascades`, is self-contained (torch and transformers only): it holds the rules and
Algorithm 4 again, with this module's options and random draws, so its tokens are this callable's.

What a call can set that the engine cannot honour (beam search, `top_k` / `top_p` and the other logits
processors, stopping criteria besides the length and EOS, scores or hidden states in the output, several
return sequences, a filled cache) is refused with a `ValueError` that names the option.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from typing import List, Optional, Tuple, Union

import torch

from ..models.language_model import LanguageModel, check_compatible
from .batch import generate_batch
from .block_batch import BLOCK_BONUS, CASCADE_METHODS
from .engine import generate
from .gamma_policy import AutoGamma
from .lockstep import BATCH_METHODS
from .options import check_generate_options

__all__ = [
    "SpeculativeCascade",
    "speculative_cascade",
    "PASSED_THROUGH",
    "REFUSED_PROCESSORS",
    "special_token_ids",
    "generate_call_arguments",
]

#: The model inputs `generate` prepares that the engine replaces with its own (caches, masks, positions).
PASSED_THROUGH = (
    "attention_mask",
    "position_ids",
    "logits_to_keep",
    "use_cache",
    "past_key_values",
    "encoder_outputs",
    "cache_position",
)
#: Logits processors `generate` builds from an option, by class name -> the option to drop (the engine samples
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
_ALLOWED_PROCESSORS = ("TemperatureLogitsWarper",)  # honoured: the engine samples at T itself
_ALLOWED_CRITERIA = ("MaxLengthCriteria", "EosTokenCriteria")  # honoured: max_new_tokens and the EOS ids
_WRAPPER = "_tutorial_lib_language_model"


def _language_model(model) -> LanguageModel:
    """The package's view of a transformers model, made once per model (a `gamma="auto"` calibration is
    kept per view). Its name starts with '~' so that timings measured here stay in memory, never in the
    shared cache; its `vocabulary` label is the vocabulary size, the one check transformers makes of an
    assistant without a tokenizer."""
    if isinstance(model, LanguageModel):
        return model
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "get_output_embeddings"):
        raise TypeError(
            f"{type(model).__name__} is not a transformers model; pass assistant_model=<a model "
            "of the verifier's family> (AutoModelForCausalLM / AutoModelForSeq2SeqLM)."
        )
    held = model.__dict__.get(_WRAPPER)
    if held is None:
        name = getattr(getattr(model, "config", None), "_name_or_path", "") or type(model).__name__
        # transformers' assisted generation takes a pair's ids to agree when the vocabulary sizes do
        label = ("transformers generate", model.config.vocab_size)
        held = LanguageModel(model, None, name=f"~{name}", vocabulary=label)
        model.__dict__[_WRAPPER] = held
    return held


def generate_call_arguments() -> dict:
    """`assistant_model` and `streamer` of the `GenerationMixin.generate` call below on the stack; empty when
    there is none (the callable called directly).

    The one fallback of this module: transformers 5.23 hands a `custom_generate` *callable* neither argument
    (`_extract_generation_mode_kwargs` keeps only the keys the callable's signature adds to `_sample`'s, taken
    from `**kwargs`, where these two never are: they are named parameters of `generate`), and offers no public
    route to them, so they are read from the locals of that `generate` call. A folder loaded by name gets them
    as arguments (`hub/speculative-cascades`); `speculative_cascade(drafter=...)` is the public route for the
    drafter. `tests/test_hub_folder.py::test_transformers_still_hides_assistant_and_streamer_from_a_callable`
    fails when transformers starts passing them (then drop this function) or renames them."""
    from transformers.generation.utils import GenerationMixin

    code = inspect.unwrap(GenerationMixin.generate).__code__
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            return {k: frame.f_locals.get(k) for k in ("assistant_model", "streamer")}
        frame = frame.f_back
    return {}


def special_token_ids(config) -> Tuple[Tuple[int, ...], Optional[int]]:
    """`(eos, pad)` from the generation config's public `eos_token_id` / `pad_token_id`: the EOS ids as a
    tuple (empty for none) and the pad id (None for none); as transformers' `generate` does, the pad id
    defaults to the first EOS id when only EOS ids are set."""

    def ids(value) -> Tuple[int, ...]:
        if value is None:
            return ()
        if isinstance(value, torch.Tensor):
            return tuple(int(t) for t in value.reshape(-1).tolist())
        if isinstance(value, (list, tuple, set, frozenset)):
            return tuple(int(t) for t in value)
        return (int(value),)

    eos, pad = ids(config.eos_token_id), ids(config.pad_token_id)
    return eos, (pad[0] if pad else (eos[0] if eos else None))


def _refuse_what_cannot_be_honoured(config, logits_processor, stopping_criteria, model_kwargs, synced_gpus):
    if (config.num_beams or 1) > 1:
        raise ValueError(
            f"num_beams={config.num_beams}: beam search keeps several hypotheses, a speculative "
            "cascade one sampled sequence; pass num_beams=1."
        )
    if (config.num_return_sequences or 1) > 1:
        raise ValueError(
            f"num_return_sequences={config.num_return_sequences}: pass 1 (repeat the prompt in "
            "the batch for several samples; row i draws from seed + i)."
        )
    for option in ("output_scores", "output_logits", "output_attentions", "output_hidden_states"):
        if getattr(config, option, False):
            raise ValueError(
                f"{option}=True: the speculative cascade returns the sequences only (their laws "
                "are in tl.generate's per-token trace); drop it."
            )
    for processor in logits_processor or ():
        name = type(processor).__name__
        if name not in _ALLOWED_PROCESSORS:
            option = REFUSED_PROCESSORS.get(name, f"the logits processor {name}")
            raise ValueError(
                f"{option}: the cascade samples from softmax(logits / temperature) of each "
                f"model, as the paper's rules are defined; generate set {name} from it. Drop "
                "that option."
            )
    for criterion in stopping_criteria or ():
        name = type(criterion).__name__
        if name not in _ALLOWED_CRITERIA:
            raise ValueError(
                f"the stopping criterion {name} (from max_time, stop_strings or "
                "stopping_criteria) cannot stop the cascade; it stops at max_new_tokens and "
                "the EOS ids only. Drop it."
            )
    if synced_gpus:
        raise ValueError("synced_gpus=True: the cascade runs on one process; pass synced_gpus=False.")
    unknown = sorted(set(model_kwargs) - set(PASSED_THROUGH))
    if unknown:
        raise ValueError(f"model inputs {unknown}: the cascade feeds each model token ids only; drop them.")
    cache = model_kwargs.get("past_key_values")
    if cache is not None and cache.get_seq_length() > 0:
        raise ValueError(
            "past_key_values holds a filled cache: the cascade keeps a cache per model itself; "
            "pass the whole prompt instead."
        )


def _prompts(model, input_ids, inputs_tensor, attention_mask) -> List[List[int]]:
    """Each row's prompt without its padding (the rows of the attention mask that are 1, in order)."""
    source = inputs_tensor if model.config.is_encoder_decoder else input_ids
    if model.config.is_encoder_decoder and input_ids.shape[1] != 1:
        raise ValueError(
            "decoder_input_ids: the cascade starts every answer from the decoder start token; "
            "drop decoder_input_ids."
        )
    mask = torch.ones_like(source) if attention_mask is None else attention_mask.to(source.device)
    rows = [row[keep.bool()].tolist() for row, keep in zip(source, mask)]
    if any(not row for row in rows):
        raise ValueError(
            "a row of the batch is all padding (its attention_mask is 0 everywhere); give it a prompt."
        )
    return rows


@dataclass(frozen=True)
class SpeculativeCascade:
    """A `custom_generate` callable:
    `model.generate(**inputs, assistant_model=drafter, custom_generate=cascade)`.

    The options are `tl.generate`'s (`rule`, `alpha`, `gamma` with `"auto"`, `method`, `beta`, `bonus`,
    `aggregate`, `bild_threshold`, `bild_fallback`); `drafter` replaces the call's `assistant_model` when
    given; `seed` fixes the draws (a call's `seed=` overrides it; without either, one is drawn from torch's
    global generator, so `torch.manual_seed` makes a call reproducible, as for transformers' sampling; a
    greedy call uses seed 0, since a mixture or lossy target draws even at `T = 0`). Row
    i of a batch draws from `seed + i`. `batch_size` caps the rows that share a forward pass. A batch with
    `gamma="auto"`, `method="oracle"` or `bonus="target"` runs row by row through `tl.generate`.

    From the call it honours `max_new_tokens` / `max_length`, `do_sample` (`False`: greedy, `T = 0`) and
    `temperature`, the EOS ids (a row stops after emitting one; finished rows are padded with `pad_token_id`),
    the attention mask (left or right padding: each row's prompt is its unmasked tokens), a `streamer`
    (batch of one: `put` with each emitted token as it is emitted, then `end`; `generate` itself puts the
    prompt first) and `return_dict_in_generate` (an output with `sequences`). Greedy calls with `rule="spec"`
    give transformers' own greedy output.
    """

    rule: Optional[str] = "spec"
    alpha: Optional[float] = None
    gamma: Union[int, str] = 5
    method: str = "speculative"
    beta: Union[float, str] = 1.0
    bonus: str = "verifier"
    aggregate: str = "sequence"
    bild_threshold: Optional[float] = None
    bild_fallback: float = 0.5
    seed: Optional[int] = None
    drafter: object = None
    batch_size: Optional[int] = None

    def __post_init__(self):
        auto = isinstance(self.gamma, (str, AutoGamma))
        if auto and (self.gamma != "auto" if isinstance(self.gamma, str) else False):
            raise ValueError(f"gamma={self.gamma!r}: pass a whole number >= 1 or 'auto'.")
        if auto and (self.method != "speculative" or self.bonus != "verifier"):
            raise ValueError(
                "gamma='auto' chooses the block size of method='speculative' with "
                "bonus='verifier'; pass a whole number gamma for the other methods."
            )
        check_generate_options(
            method=self.method,
            rule=self._rule,
            alpha=self.alpha,
            gamma=1 if auto else self.gamma,
            temperature=0.0,
            max_new_tokens=1,
            aggregate=self.aggregate,
            bonus=self.bonus,
            bild_threshold=self.bild_threshold,
            bild_fallback=self.bild_fallback,
        )

    @property
    def _rule(self) -> Optional[str]:
        # the default rule="spec" belongs to method="speculative"; the other methods take their own or none
        return self.rule if self.method == "speculative" or self.rule != "spec" else None

    def _engine_options(self, temperature: float, max_new_tokens: int, eos) -> dict:
        return dict(
            method=self.method,
            rule=self._rule,
            alpha=self.alpha,
            beta=self.beta,
            gamma=self.gamma,
            temperature=temperature,
            max_new_tokens=max_new_tokens,
            eos_token_id=eos,
            bonus=self.bonus,
            aggregate=self.aggregate,
            bild_threshold=self.bild_threshold,
            bild_fallback=self.bild_fallback,
            shared_vocabulary=True,
        )

    def __call__(
        self,
        model,
        input_ids,
        logits_processor=None,
        stopping_criteria=None,
        generation_config=None,
        synced_gpus=False,
        streamer=None,
        assistant_model=None,
        inputs_tensor=None,
        seed=None,
        **model_kwargs,
    ):
        found = generate_call_arguments()
        assistant_model = assistant_model if assistant_model is not None else found.get("assistant_model")
        streamer = streamer if streamer is not None else found.get("streamer")
        config = generation_config if generation_config is not None else model.generation_config
        _refuse_what_cannot_be_honoured(
            config, logits_processor, stopping_criteria, model_kwargs, synced_gpus
        )
        verifier = _language_model(model)
        drafter = self.drafter if self.drafter is not None else assistant_model
        if drafter is None:
            if self.method != "verifier":
                raise ValueError(
                    "no drafter: pass assistant_model=<the small model> to generate (or "
                    "drafter=... to speculative_cascade)."
                )
            drafter = model
        drafter = _language_model(drafter)
        check_compatible(drafter, verifier, shared_vocabulary=True)
        prompts = _prompts(model, input_ids, inputs_tensor, model_kwargs.get("attention_mask"))
        if streamer is not None and len(prompts) > 1:
            raise ValueError(
                f"a streamer takes one sequence, and this batch has {len(prompts)}; stream one "
                "prompt at a time (transformers' streamers refuse batches too)."
            )
        temperature = 0.0
        if config.do_sample:
            temperature = float(config.temperature if config.temperature is not None else 1.0)
        max_new_tokens = int(config.max_length) - input_ids.shape[1]
        eos, _ = special_token_ids(config)
        seed = seed if seed is not None else self.seed
        if seed is None:  # greedy calls stay deterministic (mixtures and lossy targets still draw at T = 0)
            seed = 0 if temperature == 0.0 else int(torch.randint(0, 2**62, (1,)))
        if max_new_tokens < 1:
            outputs = [[] for _ in prompts]
        else:
            outputs = self._decode(
                drafter,
                verifier,
                prompts,
                seed,
                streamer,
                self._engine_options(temperature, max_new_tokens, eos),
            )
        if streamer is not None:
            streamer.end()
        return self._output(model, input_ids, outputs, config)

    def _decode(self, drafter, verifier, prompts, seed, streamer, options) -> List[List[int]]:
        if len(prompts) == 1:
            put = None
            if streamer is not None and self.method != "seq_cascade":
                put = lambda token: streamer.put(torch.tensor([token]))  # noqa: E731
            tokens = generate(drafter, verifier, prompts[0], seed=seed, on_token=put, **options).tokens
            if streamer is not None and put is None:  # the sequence cascade settles its answer at the end
                streamer.put(torch.tensor(tokens))
            return [tokens]
        batched = (
            self.method in BATCH_METHODS + CASCADE_METHODS
            and isinstance(self.gamma, int)
            and self.bonus in BLOCK_BONUS
        )
        if batched:
            rows = generate_batch(
                drafter,
                verifier,
                prompts,
                seeds=[seed + i for i in range(len(prompts))],
                batch_size=self.batch_size,
                **options,
            )
            return [g.tokens for g in rows]
        # gamma="auto", the oracle cascade and bonus="target" run per row (each row its own block sizes)
        return [
            generate(drafter, verifier, prompt, seed=seed + i, **options).tokens
            for i, prompt in enumerate(prompts)
        ]

    @staticmethod
    def _output(model, input_ids, outputs, config):
        width = max(len(t) for t in outputs)
        _, pad = special_token_ids(config)
        if pad is None and any(len(t) < width for t in outputs):
            raise ValueError(
                "rows stopped at different lengths and there is no pad_token_id; pass pad_token_id=..."
            )
        pad = 0 if pad is None else pad
        new = torch.full((len(outputs), width), pad, dtype=input_ids.dtype)
        for i, tokens in enumerate(outputs):
            new[i, : len(tokens)] = torch.tensor(tokens, dtype=input_ids.dtype)
        sequences = torch.cat([input_ids, new.to(input_ids.device)], dim=1)
        if not config.return_dict_in_generate:
            return sequences
        from transformers.generation.utils import GenerateDecoderOnlyOutput, GenerateEncoderDecoderOutput

        kind = GenerateEncoderDecoderOutput if model.config.is_encoder_decoder else GenerateDecoderOnlyOutput
        return kind(sequences=sequences)


def speculative_cascade(
    rule: Optional[str] = "spec", alpha: Optional[float] = None, gamma: Union[int, str] = 5, **options
) -> SpeculativeCascade:
    """`tl.speculative_cascade(rule="token_v2", alpha=0.3, gamma="auto")`: a `custom_generate` callable for
    `model.generate(**inputs, assistant_model=drafter, custom_generate=...)` (see `SpeculativeCascade`)."""
    return SpeculativeCascade(rule=rule, alpha=alpha, gamma=gamma, **options)
