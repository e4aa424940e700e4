r"""A synthetic translation task with known ground truth, and a small T5 drafter / verifier pair for it.

The paper's T5 experiments fine-tune T5-small and T5-large on WMT. Without the hub, this module
builds the same kind of pair offline: two `T5ForConditionalGeneration` models of very different
sizes, trained in minutes on a toy language whose correct translations we know *exactly*, so every
output can be scored both by BLEU and by the truth (`is_valid_translation`).

**Source.** English-like SVO sentences, `DET [ADJ [ADJ]] NOUN VERB DET [ADJ [ADJ]] NOUN`, with
singular / plural nouns (determiners "the", "a", "some"), present or past tense, and one of five
constructions, the *context* of the sentence: `plain`, `prepositional` ("... with the horse"),
`adverb` ("... quickly"), `relative` ("the dog that saw a cat ...") and `negation` ("the dog does
not see the cats").

**Target ("Toy").** Subject-object-verb order. Nouns have a gender (`o` or `a`) and take `-s` in
the plural; determiners agree with the noun (`lu/lus/li/lis`, `un/unos/una/unas`); adjectives
follow the noun in mirrored order and agree with its gender and number (`grando/granda/grandos/
grandas`); the verb comes last and agrees with the *subject's* number even in the past tense,
where English shows none (`mira/miran` present, `mire/miren` past). A relative clause moves
*before* its noun, verb last, closed by `ke`, its verb agreeing with the noun that follows it.
The with-phrase is a noun phrase plus the postposition `kun`, before or after the object; an
adverb stands right before the verb; negation is the circumfix `nu ... ka`. Some words have
synonyms (see: `mir`/`vid`, big: `grand`/`magn`, ...), so most sentences have several valid
translations:

    the big dog saw some cats                 ->  lu hundo grando unas mikas mire   (4 in all)
    the dog that likes a cat helps the baker  ->  una mika ama ke lu hundo lu pano aida
    the dogs do not like a cat                ->  lus hundos nu una mika aman ka    (or luban)

**The built-in flaw, on purpose.** The verifier is trained on a corpus that lost its negations:
for every `negation` sentence its target is a translation of the *affirmative* sentence (the
`nu ... ka` dropped), the worst kind of MT error, a flipped meaning. The drafter's corpus is
correct. So the verifier is better on average (wider, deeper, 85 times the parameters) and
clearly worse in one identifiable context. A larger model that is better everywhere cannot show
why a cascade may *beat* it, not just approach it (Section 2 of the paper: each model has inputs
where it is the better one); `per_context_quality` shows where each model (or cascade) wins, and
`training_pairs("verifier", ...)` shows the corrupted data itself.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import random
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import NamedTuple, Optional

__all__ = ["CONTEXTS", "FLAWED_CONTEXT", "SPLITS", "BUDGETS", "TranslationGrammar", "build_tokenizer",
           "training_pairs", "train_t5_pair", "load_trained_t5", "model_dir", "context_of", "per_context_quality"]

CONTEXTS = ("plain", "prepositional", "adverb", "relative", "negation")
FLAWED_CONTEXT = "negation"  # the verifier's training targets are wrong here, on purpose
#: Each sentence falls in one split by a hash of its text, so the splits never share a sentence.
SPLITS = {"train": (0.0, 0.8), "validation": (0.8, 0.9), "test": (0.9, 1.0)}
PAD, EOS, UNK = "<pad>", "</s>", "<unk>"  # ids 0, 1, 2 (T5's convention: the decoder starts at pad)
TRAINING_RECORD = "training_record.json"


class Noun(NamedTuple):
    plural: str
    gender: str               # "o" or "a": the determiner and adjectives agree with it
    stems: tuple              # target synonyms; the plural adds "s"


class Verb(NamedTuple):
    third: str                # English 3rd person singular present
    past: str
    stems: tuple              # target synonyms; + a suffix for tense and the subject's number


NOUNS = {"dog": Noun("dogs", "o", ("hundo",)), "cat": Noun("cats", "a", ("mika",)),
         "bird": Noun("birds", "a", ("pipa",)), "child": Noun("children", "o", ("bimbo", "nino")),
         "farmer": Noun("farmers", "o", ("agro",)), "teacher": Noun("teachers", "a", ("doka",)),
         "horse": Noun("horses", "o", ("kabo",)), "friend": Noun("friends", "a", ("amika", "sora")),
         "baker": Noun("bakers", "o", ("pano",)), "sailor": Noun("sailors", "a", ("mara",)),
         "wolf": Noun("wolves", "o", ("lupo",)), "mouse": Noun("mice", "a", ("muza",))}
VERBS = {"see": Verb("sees", "saw", ("mir", "vid")), "like": Verb("likes", "liked", ("am", "lub")),
         "follow": Verb("follows", "followed", ("sekv",)), "find": Verb("finds", "found", ("trov",)),
         "carry": Verb("carries", "carried", ("port",)), "help": Verb("helps", "helped", ("aid",)),
         "hear": Verb("hears", "heard", ("aud",)), "call": Verb("calls", "called", ("vok",))}
ADJECTIVES = {"big": ("grand", "magn"), "small": ("pikk",), "young": ("nuv",), "red": ("ros",),
              "happy": ("fel",), "tired": ("las",), "brave": ("fort",), "quiet": ("kalm",)}
ADVERBS = {"quickly": ("rapi", "vesh"), "slowly": ("lenti",), "often": ("ofti",), "again": ("rei",)}
DETERMINERS = {(True, "o", False): "lu", (True, "o", True): "lus", (True, "a", False): "li",
               (True, "a", True): "lis", (False, "o", False): "un", (False, "o", True): "unos",
               (False, "a", False): "una", (False, "a", True): "unas"}   # (definite, gender, plural)
ADJECTIVE_SUFFIX = {("o", False): "o", ("o", True): "os", ("a", False): "a", ("a", True): "as"}  # (gender, plural)
VERB_SUFFIX = {(False, False): "a", (False, True): "an", (True, False): "e", (True, True): "en"}  # (past, plural)
NEGATION, NEGATION_END, WITH, RELATIVE = "nu", "ka", "kun", "ke"


@dataclass(frozen=True)
class Relative:
    """`that VERB OBJECT` after a noun; its subject is that noun."""
    verb: str
    past: bool
    obj: "NounPhrase"


@dataclass(frozen=True)
class NounPhrase:
    definite: bool
    noun: str                 # English singular, a key of NOUNS
    plural: bool
    adjectives: tuple = ()
    relative: Optional[Relative] = None


@dataclass(frozen=True)
class Clause:
    subject: NounPhrase
    verb: str                 # English base form, a key of VERBS
    past: bool
    obj: NounPhrase
    negated: bool = False
    with_phrase: Optional[NounPhrase] = None
    adverb: Optional[str] = None

    @property
    def context(self) -> str:
        if self.negated:
            return "negation"
        if self.with_phrase is not None:
            return "prepositional"
        if self.adverb is not None:
            return "adverb"
        return "relative" if self.subject.relative or self.obj.relative else "plain"


class TranslationGrammar:
    """The source grammar, its translation into Toy, the splits and the examples (all deterministic).

    `max_references` caps the references per example (the full set is `translations`); above it a
    fixed subset, chosen by a hash of the sentence, is kept.
    """

    def __init__(self, max_references: int = 8):
        if max_references < 1:
            raise ValueError(f"max_references={max_references} must be at least 1.")
        self.max_references = max_references
        self._noun_forms = {f: (n, f != n) for n, e in NOUNS.items() for f in (n, e.plural)}
        self._verb_forms = {}  # English form -> (base, kind)
        for base, v in VERBS.items():
            self._verb_forms.update({base: (base, "base"), v.third: (base, "third"), v.past: (base, "past")})

    # ---- source side ----
    def sample_source(self, rng: random.Random, context: Optional[str] = None) -> str:
        """One source sentence of `context` (a random one of CONTEXTS when None)."""
        return self.render_source(self.sample_clause(rng, context))

    def sample_clause(self, rng: random.Random, context: Optional[str] = None) -> Clause:
        context = rng.choice(CONTEXTS) if context is None else _checked_context(context)
        nouns = rng.sample(sorted(NOUNS), 3)  # distinct nouns read more naturally

        def phrase(noun, adjectives=True):  # the subject and the object may have adjectives
            count = rng.choices((0, 1, 2), (0.6, 0.3, 0.1))[0] if adjectives else 0
            return NounPhrase(rng.random() < 0.5, noun, rng.random() < 0.5,
                              tuple(rng.sample(sorted(ADJECTIVES), count)))
        subject, obj = phrase(nouns[0]), phrase(nouns[1])
        if context == "relative":
            relative = Relative(rng.choice(sorted(VERBS)), rng.random() < 0.5, phrase(nouns[2], False))
            if rng.random() < 0.5:
                subject = replace(subject, relative=relative)
            else:
                obj = replace(obj, relative=relative)
        return Clause(subject, rng.choice(sorted(VERBS)), rng.random() < 0.5, obj, negated=context == "negation",
                      with_phrase=phrase(nouns[2], False) if context == "prepositional" else None,
                      adverb=rng.choice(sorted(ADVERBS)) if context == "adverb" else None)

    def render_source(self, c: Clause) -> str:
        if c.negated:
            verb = ["did" if c.past else "do" if c.subject.plural else "does", "not", c.verb]
        else:
            verb = [_english_verb(c.verb, c.past, c.subject.plural)]
        words = _english(c.subject) + verb + _english(c.obj)
        words += ["with"] + _english(c.with_phrase) if c.with_phrase else []
        return " ".join(words + ([c.adverb] if c.adverb else []))

    def parse(self, source: str) -> Clause:
        """The clause behind a source sentence; ValueError if the grammar cannot produce it."""
        words, pos = source.split(), 0

        def fail(why):
            raise ValueError(f"{source!r} is not a sentence of the grammar ({why}); use sample_source() "
                             "or examples() to get valid sentences.")

        def verb(plural):  # a finite verb agreeing with a subject of this number
            nonlocal pos
            base, kind = self._verb_forms.get(words[pos] if pos < len(words) else "", ("", ""))
            if not base or (kind == "third" and plural) or (kind == "base" and not plural):
                fail(f"expected a verb agreeing with its subject at word {pos + 1}")
            pos += 1
            return base, kind == "past"

        def noun_phrase(may_have_relative):
            nonlocal pos
            det = words[pos] if pos < len(words) else None
            if det not in ("the", "a", "some"):
                fail(f"expected 'the', 'a' or 'some' at word {pos + 1}")
            start = pos = pos + 1
            while pos < len(words) and words[pos] in ADJECTIVES:
                pos += 1
            adjectives = tuple(words[start:pos])
            if len(adjectives) > 2 or len(set(adjectives)) < len(adjectives):
                fail("a noun takes at most two different adjectives")
            if pos >= len(words) or words[pos] not in self._noun_forms:
                fail(f"expected a noun ({', '.join(NOUNS)}) at word {pos + 1}")
            noun, plural = self._noun_forms[words[pos]]
            if (det == "a" and plural) or (det == "some" and not plural):
                fail(f"'{det}' does not agree with '{words[pos]}'")
            pos += 1
            relative = None
            if may_have_relative and pos < len(words) and words[pos] == "that":
                pos += 1
                relative = Relative(*verb(plural), noun_phrase(False))
            return NounPhrase(det == "the", noun, plural, adjectives, relative)

        subject = noun_phrase(True)
        negated = words[pos:pos + 2] in (["do", "not"], ["does", "not"], ["did", "not"])
        if negated:
            aux, (base, kind) = words[pos], self._verb_forms.get(words[pos + 2] if pos + 2 < len(words) else "", ("", ""))
            if kind != "base" or (aux != "did" and (aux == "do") != subject.plural):
                fail(f"'{aux} not' needs a base verb form and must agree with the subject")
            past, pos = aux == "did", pos + 3
        else:
            base, past = verb(subject.plural)
        obj = noun_phrase(True)
        with_phrase = adverb = None
        if pos < len(words) and words[pos] == "with":
            pos += 1
            with_phrase = noun_phrase(False)
        if pos < len(words) and words[pos] in ADVERBS:
            adverb, pos = words[pos], pos + 1
        if pos != len(words):
            fail(f"unexpected words from word {pos + 1} on")
        return Clause(subject, base, past, obj, negated, with_phrase, adverb)

    # ---- target side ----
    def translations(self, source: str) -> list:
        """Every valid Toy translation of `source` (a product of synonym and word-order choices)."""
        c = self.parse(source)
        subjects, objects = _toy_phrases(c.subject), _toy_phrases(c.obj)
        verbs = _toy_verbs(c.verb, c.past, c.subject.plural)
        withs = [p + [WITH] for p in _toy_phrases(c.with_phrase)] if c.with_phrase else [[]]
        adverbs = [[a] for a in ADVERBS[c.adverb]] if c.adverb else [[]]
        out = []
        for s, o, w, a, v in itertools.product(subjects, objects, withs, adverbs, verbs):
            middles = [w + o, o + w] if w else [o]   # the with-phrase stands before or after the object
            for middle in middles:
                words = s + ([NEGATION] if c.negated else []) + middle + a + [v] + ([NEGATION_END] if c.negated else [])
                out.append(" ".join(words))
        return out

    def is_valid_translation(self, source: str, target: str) -> bool:
        return " ".join(target.split()) in self.translations(source)

    def references(self, source: str) -> list:
        """At most `max_references` valid translations (a fixed subset when there are more)."""
        options = self.translations(source)
        if len(options) <= self.max_references:
            return options
        return random.Random(_digest(source)).sample(options, self.max_references)

    def context_of(self, source: str) -> str:
        return self.parse(source).context

    # ---- splits and examples ----
    def split_of(self, source: str) -> str:
        u = int(_digest(source)[:8], 16) / 16 ** 8
        return next(name for name, (low, high) in SPLITS.items() if low <= u < high)

    def examples(self, n: int, seed: int = 0, split: str = "test") -> list:
        """`n` distinct sentences of `split`, contexts in turn (equal groups), as evaluation dicts.

        Each is `{"id", "prompt": source, "references": [targets], "info": {"context", "split",
        "n_valid"}}`; `n_valid` counts all valid translations, `references` holds at most
        `max_references` of them.
        """
        if split not in SPLITS:
            raise ValueError(f"split={split!r} is unknown; use one of {', '.join(SPLITS)}.")
        rng, seen, out, misses = random.Random(f"examples:{split}:{seed}"), set(), [], 0
        while len(out) < n:
            context = CONTEXTS[len(out) % len(CONTEXTS)]
            source = self.sample_source(rng, context)
            if source in seen or self.split_of(source) != split:
                misses += 1
                if misses > 1000 + 100 * n:
                    raise ValueError(f"found only {len(out)} distinct {split} sentences; ask for fewer than {n}.")
                continue
            seen.add(source)
            out.append({"id": f"toy-{split}-{seed}-{len(out):05d}", "prompt": source,
                        "references": self.references(source),
                        "info": {"context": context, "split": split, "n_valid": len(self.translations(source))}})
        return out

    def vocabulary(self) -> list:
        """Every source and target word, sorted (special tokens not included)."""
        source = {"the", "a", "some", "do", "does", "did", "not", "with", "that"}
        source |= set(self._noun_forms) | set(self._verb_forms) | set(ADJECTIVES) | set(ADVERBS)
        target = [NEGATION, NEGATION_END, WITH, RELATIVE, *DETERMINERS.values()]
        target += [s + e for n in NOUNS.values() for s in n.stems for e in ("", "s")]
        target += [s + e for stems in ADJECTIVES.values() for s in stems for e in ADJECTIVE_SUFFIX.values()]
        target += [s + e for v in VERBS.values() for s in v.stems for e in VERB_SUFFIX.values()]
        target += [s for stems in ADVERBS.values() for s in stems]
        # one word, one meaning: a clash would make a wrong output look right
        assert len(set(target)) == len(target) and not source & set(target), "word forms clash"
        return sorted(source | set(target))

    def fingerprint(self) -> dict:
        """Everything that defines the task, for the cache key of trained models."""
        return {"nouns": NOUNS, "verbs": VERBS, "adjectives": ADJECTIVES, "adverbs": ADVERBS,
                "determiners": sorted(DETERMINERS.items()), "adjective_suffix": sorted(ADJECTIVE_SUFFIX.items()),
                "verb_suffix": sorted(VERB_SUFFIX.items()), "splits": SPLITS, "contexts": CONTEXTS,
                "flaw": FLAWED_CONTEXT, "particles": [NEGATION, NEGATION_END, WITH, RELATIVE], "version": 2}


def _english_verb(verb: str, past: bool, plural: bool) -> str:
    return VERBS[verb].past if past else verb if plural else VERBS[verb].third


def _english(np: NounPhrase) -> list:
    det = "the" if np.definite else "some" if np.plural else "a"
    words = [det, *np.adjectives, NOUNS[np.noun].plural if np.plural else np.noun]
    if np.relative:
        r = np.relative
        words += ["that", _english_verb(r.verb, r.past, np.plural)] + _english(r.obj)
    return words


def _toy_verbs(verb: str, past: bool, plural: bool) -> list:
    return [stem + VERB_SUFFIX[(past, plural)] for stem in VERBS[verb].stems]


def _toy_phrases(np: NounPhrase) -> list:
    """Every Toy rendering of a noun phrase: [relative clause ke] determiner noun adjectives (mirrored)."""
    noun = NOUNS[np.noun]
    det = DETERMINERS[(np.definite, noun.gender, np.plural)]
    nouns = [s + ("s" if np.plural else "") for s in noun.stems]
    suffix = ADJECTIVE_SUFFIX[(noun.gender, np.plural)]
    adjectives = [[s + suffix for s in ADJECTIVES[a]] for a in reversed(np.adjectives)]
    heads = [[det, *choice] for choice in itertools.product(nouns, *adjectives)]
    if np.relative is None:
        return heads
    r = np.relative  # its verb agrees with the head noun, its subject, which follows it
    clauses = [o + [v, RELATIVE] for o in _toy_phrases(r.obj) for v in _toy_verbs(r.verb, r.past, np.plural)]
    return [c + h for c in clauses for h in heads]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _checked_context(context: str) -> str:
    if context not in CONTEXTS:
        raise ValueError(f"context={context!r} is unknown; use one of {', '.join(CONTEXTS)}.")
    return context


def context_of(example: dict) -> str:
    """The context group of an evaluation example (see `TranslationGrammar.examples`)."""
    return example["info"]["context"]


# ---- tokenizer ---------------------------------------------------------------------------------

def build_tokenizer(grammar: Optional[TranslationGrammar] = None):
    """A word-level `PreTrainedTokenizerFast` over source + target words; appends `</s>` like T5."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast
    words = (grammar or TranslationGrammar()).vocabulary()
    vocab = {w: i for i, w in enumerate([PAD, EOS, UNK] + words)}
    core = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.post_processor = processors.TemplateProcessing(single=f"$A {EOS}", pair=f"$A {EOS} $B {EOS}",
                                                        special_tokens=[(EOS, vocab[EOS])])
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token=PAD, eos_token=EOS, unk_token=UNK,
                                   model_max_length=128)


# ---- training -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ModelSpec:
    d_model: int
    d_ff: int
    num_layers: int           # encoder layers; the decoder has as many
    num_heads: int
    d_kv: int


@dataclass(frozen=True)
class TrainSpec:
    steps: int
    batch_size: int = 32
    learning_rate: float = 3e-3
    warmup: int = 100
    n_pairs: int = 20000      # training pairs drawn from the train split (repeats allowed)
    seed: int = 0


#: Per budget and role: (model, training). Measured on two cores (one thread): the default drafter
#: (d_model 16, 1 + 1 layers, 10k parameters, 40 s) learns the grammar to BLEU ~73 and stops
#: improving: its capacity, not its steps, limits it (at d_model 24 it reaches ~95, as good as the
#: verifier). The verifier (d_model 128, 2 + 2 layers, 0.8M parameters, 200 s) reaches ~97 outside
#: the flawed context; a third layer each side learned more slowly per second, and the larger model
#: needs the smaller learning rate. "tiny" only checks the plumbing (seconds, no quality).
BUDGETS = {
    "default": {"drafter": (ModelSpec(16, 32, 1, 4, 4), TrainSpec(steps=3000)),
                "verifier": (ModelSpec(128, 256, 2, 4, 32), TrainSpec(steps=3000, learning_rate=1e-3))},
    "tiny": {"drafter": (ModelSpec(16, 32, 1, 2, 8), TrainSpec(steps=20, warmup=5, n_pairs=500)),
             "verifier": (ModelSpec(32, 64, 1, 4, 8), TrainSpec(steps=20, warmup=5, n_pairs=500))},
}
ROLES = ("drafter", "verifier")


def training_pairs(role: str, n: int, seed: int = 0, grammar: Optional[TranslationGrammar] = None) -> list:
    """`n` training `(source, target, context)` triples of `role`, sources from the train split.

    Both roles get the same sources; targets are a uniform choice among the valid translations,
    except the verifier's in FLAWED_CONTEXT: a translation of the sentence without its negation.
    """
    if role not in ROLES:
        raise ValueError(f"role={role!r} is unknown; use 'drafter' or 'verifier'.")
    grammar = grammar or TranslationGrammar()
    rng, choice, out = random.Random(f"train:{seed}"), random.Random(f"targets:{seed}"), []
    while len(out) < n:
        clause = grammar.sample_clause(rng)
        source = grammar.render_source(clause)
        if grammar.split_of(source) != "train":
            continue
        shown = source
        if role == "verifier" and clause.context == FLAWED_CONTEXT:
            shown = grammar.render_source(replace(clause, negated=False))  # the corpus lost the negation
        out.append((source, choice.choice(grammar.translations(shown)), clause.context))
    return out


def _config_hash(role: str, budget: str, grammar: TranslationGrammar) -> str:
    model, train = BUDGETS[budget][role]
    key = {"role": role, "grammar": grammar.fingerprint(), "model": asdict(model), "train": asdict(train),
           "format": 2}
    return _digest(json.dumps(key, sort_keys=True, default=list))[:10]


def model_dir(role: str, budget: str = "default", cache=None) -> Path:
    """Where `train_t5_pair` keeps the model of `role` trained with `budget`."""
    from .model_files import cache_dir
    if budget not in BUDGETS:
        raise ValueError(f"budget={budget!r} is unknown; use one of {', '.join(BUDGETS)}.")
    if role not in ROLES:
        raise ValueError(f"role={role!r} is unknown; use 'drafter' or 'verifier'.")
    root = Path(cache).expanduser() if cache is not None else cache_dir()
    return root / "models" / f"synthetic-t5-{role}-{_config_hash(role, budget, TranslationGrammar())}"


def train_t5_pair(*, budget: str = "default", cache=None, progress: bool = True, retrain: bool = False) -> dict:
    """Train the drafter and the verifier unless already in the cache; returns `{role: folder}`.

    `cache` is the cache root (default `model_files.cache_dir()`, i.e. `$TUTORIAL_LIB_CACHE`);
    models go to `<cache>/models/synthetic-t5-<role>-<hash of grammar, model and training>`.
    Each folder holds a `save_pretrained` T5 and its tokenizer, loadable with
    `T5ForConditionalGeneration.from_pretrained` / `AutoTokenizer.from_pretrained`, and
    `training_record.json` (parameters, wall time, settings). `retrain=True` trains anyway.
    """
    paths = {role: model_dir(role, budget, cache) for role in ROLES}
    for role, path in paths.items():
        if retrain or not (path / TRAINING_RECORD).exists():
            _train_one(role, budget, path, progress, replace_existing=retrain)
    return paths


def load_trained_t5(role: str, budget: str = "default", *, dtype=None, device="cpu", cache=None):
    """The T5 of `role` that `train_t5_pair(budget=budget)` trained, as an engine model; never trains.

    `load_model("synthetic-t5-drafter[:budget]")` calls this. A model not trained yet raises
    `FileNotFoundError` naming the call that trains it (`train_t5_pair`), so loading never starts a
    training run as a side effect.
    """
    from transformers import AutoTokenizer, T5ForConditionalGeneration
    import torch
    from .models import LanguageModel
    path = model_dir(role, budget, cache)
    if not (path / TRAINING_RECORD).exists():
        suffix = "" if budget == "default" else f":{budget}"
        raise FileNotFoundError(
            f"synthetic-t5-{role}{suffix} is not trained yet (no model in {path}). Train the pair once with "
            f"tutorial_lib.synthetic_mt.train_t5_pair(budget={budget!r})"
            f"{'' if cache is None else f', cache={str(cache)!r}'} "
            f"({'seconds' if budget == 'tiny' else 'a few minutes'}), then load it again.")
    model = T5ForConditionalGeneration.from_pretrained(path, dtype=dtype or torch.float32)
    name = f"synthetic-t5-{role}" + ("" if budget == "default" else f":{budget}")
    return LanguageModel(model.to(device), AutoTokenizer.from_pretrained(path), name=name)


def _train_one(role: str, budget: str, final: Path, progress: bool, replace_existing: bool) -> None:
    import torch
    from tqdm.auto import tqdm
    from transformers import T5Config, T5ForConditionalGeneration
    spec, train = BUDGETS[budget][role]
    grammar, tokenizer = TranslationGrammar(), build_tokenizer()
    vocab = tokenizer.get_vocab()
    pairs = [([vocab[w] for w in s.split()] + [1], [vocab[w] for w in t.split()] + [1])
             for s, t, _ in training_pairs(role, train.n_pairs, train.seed, grammar)]
    config = T5Config(vocab_size=len(tokenizer), d_model=spec.d_model, d_ff=spec.d_ff, d_kv=spec.d_kv,
                      num_layers=spec.num_layers, num_decoder_layers=spec.num_layers, num_heads=spec.num_heads,
                      feed_forward_proj="gated-gelu", dropout_rate=0.0, decoder_start_token_id=0,
                      pad_token_id=0, eos_token_id=1, tie_word_embeddings=False)
    threads = torch.get_num_threads()
    # One thread: these models are small, so on an idle two-core machine two threads gain at most
    # a third of the time, and when another process holds a core they lose ten times over (every
    # operator waits for a descheduled thread). One thread also fixes the order of floating-point
    # sums, so a seed gives the same model however busy the machine is.
    torch.set_num_threads(1)
    start = time.perf_counter()
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(train.seed)
            model = T5ForConditionalGeneration(config)
            # T5 initialises an untied output layer with standard deviation 1, made for the tied
            # layout that scales the decoder output by d_model ** -0.5 first; unscaled, the first
            # logits are huge (about sqrt(d_model)) and the larger model learns markedly slower.
            torch.nn.init.normal_(model.lm_head.weight, 0.0, spec.d_model ** -0.5)
            optimiser = torch.optim.AdamW(model.parameters(), lr=train.learning_rate, weight_decay=0.0)
            # linear warm-up, then linear decay to zero: the last steps polish rather than jump
            schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda s: min(
                (s + 1) / train.warmup, max(0.0, (train.steps - s) / max(1, train.steps - train.warmup))))
            order = torch.Generator().manual_seed(train.seed)
            model.train()
            for _ in tqdm(range(train.steps), desc=f"training the {role} ({budget})", disable=not progress):
                batch = [pairs[i] for i in torch.randint(len(pairs), (train.batch_size,), generator=order)]
                inputs, labels = _padded([s for s, _ in batch], 0), _padded([t for _, t in batch], -100)
                loss = model(input_ids=inputs, attention_mask=(inputs != 0).long(), labels=labels).loss
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimiser.step()
                schedule.step()
                optimiser.zero_grad()
        model.eval()
    finally:
        torch.set_num_threads(threads)
    record = {"role": role, "budget": budget, "parameters": sum(p.numel() for p in model.parameters()),
              "train_seconds": round(time.perf_counter() - start, 1), "final_loss": loss.item(),
              "model": asdict(spec), "train": asdict(train), "flawed_context": FLAWED_CONTEXT if role == "verifier" else None}
    final.parent.mkdir(parents=True, exist_ok=True)
    # written beside its final place and renamed, so a reader never sees a half-written model
    partial = Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.parent))
    try:
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        (partial / TRAINING_RECORD).write_text(json.dumps(record, indent=2) + "\n")
        if replace_existing or not (final / TRAINING_RECORD).exists():  # else a concurrent run finished first
            if final.exists():  # an unfinished folder, or one to replace
                shutil.rmtree(final)
            partial.rename(final)
    except OSError:
        if not (final / TRAINING_RECORD).exists():
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _padded(rows: list, pad: int):
    import torch
    out = torch.full((len(rows), max(map(len, rows))), pad, dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row)
    return out


# ---- evaluation ---------------------------------------------------------------------------------

def per_context_quality(outputs, examples: list, grammar: Optional[TranslationGrammar] = None):
    """Corpus BLEU and the rate of valid translations per context (and overall) as a DataFrame.

    `outputs` are texts or `Generation`s, one per example; `valid` is the fraction of outputs the
    grammar accepts as a correct translation (the ground truth BLEU only estimates).
    """
    import pandas as pd
    import sacrebleu
    texts = [getattr(o, "text", o) for o in outputs]
    if len(texts) != len(examples):
        raise ValueError(f"{len(texts)} outputs for {len(examples)} examples; give one output per example.")
    grammar = grammar or TranslationGrammar()
    groups = {c: [i for i, e in enumerate(examples) if context_of(e) == c] for c in CONTEXTS}
    groups = {c: rows for c, rows in groups.items() if rows} | {"all": list(range(len(examples)))}
    table = []
    for context, rows in groups.items():
        refs = [examples[i]["references"] for i in rows]
        width = max(map(len, refs))
        streams = [[r[min(k, len(r) - 1)] for r in refs] for k in range(width)]  # repeating a reference changes nothing
        bleu = sacrebleu.corpus_bleu([texts[i] for i in rows], streams).score
        valid = sum(grammar.is_valid_translation(examples[i]["prompt"], texts[i]) for i in rows) / len(rows)
        table.append({"context": context, "n": len(rows), "bleu": bleu, "valid": valid})
    return pd.DataFrame(table).set_index("context")
