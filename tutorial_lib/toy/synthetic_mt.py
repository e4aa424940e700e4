r"""A synthetic translation task with known ground truth (its T5 pair: `models.synthetic_t5`).

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
import random
from dataclasses import dataclass, replace
from typing import NamedTuple, Optional

__all__ = [
    "CONTEXTS",
    "FLAWED_CONTEXT",
    "SPLITS",
    "ROLES",
    "TranslationGrammar",
    "build_tokenizer",
    "training_pairs",
    "context_of",
    "per_context_quality",
]

CONTEXTS = ("plain", "prepositional", "adverb", "relative", "negation")
FLAWED_CONTEXT = "negation"  # the verifier's training targets are wrong here, on purpose
#: Each sentence falls in one split by a hash of its text, so the splits never share a sentence.
SPLITS = {"train": (0.0, 0.8), "validation": (0.8, 0.9), "test": (0.9, 1.0)}
PAD, EOS, UNK = "<pad>", "</s>", "<unk>"  # ids 0, 1, 2 (T5's convention: the decoder starts at pad)
TRAINING_RECORD = "training_record.json"
ROLES = ("drafter", "verifier")  # whose training corpus: the verifier's lost its negations


class Noun(NamedTuple):
    plural: str
    gender: str  # "o" or "a": the determiner and adjectives agree with it
    stems: tuple  # target synonyms; the plural adds "s"


class Verb(NamedTuple):
    third: str  # English 3rd person singular present
    past: str
    stems: tuple  # target synonyms; + a suffix for tense and the subject's number


NOUNS = {
    "dog": Noun("dogs", "o", ("hundo",)),
    "cat": Noun("cats", "a", ("mika",)),
    "bird": Noun("birds", "a", ("pipa",)),
    "child": Noun("children", "o", ("bimbo", "nino")),
    "farmer": Noun("farmers", "o", ("agro",)),
    "teacher": Noun("teachers", "a", ("doka",)),
    "horse": Noun("horses", "o", ("kabo",)),
    "friend": Noun("friends", "a", ("amika", "sora")),
    "baker": Noun("bakers", "o", ("pano",)),
    "sailor": Noun("sailors", "a", ("mara",)),
    "wolf": Noun("wolves", "o", ("lupo",)),
    "mouse": Noun("mice", "a", ("muza",)),
}
VERBS = {
    "see": Verb("sees", "saw", ("mir", "vid")),
    "like": Verb("likes", "liked", ("am", "lub")),
    "follow": Verb("follows", "followed", ("sekv",)),
    "find": Verb("finds", "found", ("trov",)),
    "carry": Verb("carries", "carried", ("port",)),
    "help": Verb("helps", "helped", ("aid",)),
    "hear": Verb("hears", "heard", ("aud",)),
    "call": Verb("calls", "called", ("vok",)),
}
ADJECTIVES = {
    "big": ("grand", "magn"),
    "small": ("pikk",),
    "young": ("nuv",),
    "red": ("ros",),
    "happy": ("fel",),
    "tired": ("las",),
    "brave": ("fort",),
    "quiet": ("kalm",),
}
ADVERBS = {"quickly": ("rapi", "vesh"), "slowly": ("lenti",), "often": ("ofti",), "again": ("rei",)}
DETERMINERS = {
    (True, "o", False): "lu",
    (True, "o", True): "lus",
    (True, "a", False): "li",
    (True, "a", True): "lis",
    (False, "o", False): "un",
    (False, "o", True): "unos",
    (False, "a", False): "una",
    (False, "a", True): "unas",
}  # (definite, gender, plural)
ADJECTIVE_SUFFIX = {
    ("o", False): "o",
    ("o", True): "os",
    ("a", False): "a",
    ("a", True): "as",
}  # (gender, plural)
VERB_SUFFIX = {
    (False, False): "a",
    (False, True): "an",
    (True, False): "e",
    (True, True): "en",
}  # (past, plural)
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
    noun: str  # English singular, a key of NOUNS
    plural: bool
    adjectives: tuple = ()
    relative: Optional[Relative] = None


@dataclass(frozen=True)
class Clause:
    subject: NounPhrase
    verb: str  # English base form, a key of VERBS
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
            return NounPhrase(
                rng.random() < 0.5, noun, rng.random() < 0.5, tuple(rng.sample(sorted(ADJECTIVES), count))
            )

        subject, obj = phrase(nouns[0]), phrase(nouns[1])
        if context == "relative":
            relative = Relative(rng.choice(sorted(VERBS)), rng.random() < 0.5, phrase(nouns[2], False))
            if rng.random() < 0.5:
                subject = replace(subject, relative=relative)
            else:
                obj = replace(obj, relative=relative)
        return Clause(
            subject,
            rng.choice(sorted(VERBS)),
            rng.random() < 0.5,
            obj,
            negated=context == "negation",
            with_phrase=phrase(nouns[2], False) if context == "prepositional" else None,
            adverb=rng.choice(sorted(ADVERBS)) if context == "adverb" else None,
        )

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
            raise ValueError(
                f"{source!r} is not a sentence of the grammar ({why}); use sample_source() "
                "or examples() to get valid sentences."
            )

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
        negated = words[pos : pos + 2] in (["do", "not"], ["does", "not"], ["did", "not"])
        if negated:
            aux, (base, kind) = (
                words[pos],
                self._verb_forms.get(words[pos + 2] if pos + 2 < len(words) else "", ("", "")),
            )
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
            middles = [w + o, o + w] if w else [o]  # the with-phrase stands before or after the object
            for middle in middles:
                words = (
                    s
                    + ([NEGATION] if c.negated else [])
                    + middle
                    + a
                    + [v]
                    + ([NEGATION_END] if c.negated else [])
                )
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
        u = int(_digest(source)[:8], 16) / 16**8
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
                    raise ValueError(
                        f"found only {len(out)} distinct {split} sentences; ask for fewer than {n}."
                    )
                continue
            seen.add(source)
            out.append(
                {
                    "id": f"toy-{split}-{seed}-{len(out):05d}",
                    "prompt": source,
                    "references": self.references(source),
                    "info": {"context": context, "split": split, "n_valid": len(self.translations(source))},
                }
            )
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
        return {
            "nouns": NOUNS,
            "verbs": VERBS,
            "adjectives": ADJECTIVES,
            "adverbs": ADVERBS,
            "determiners": sorted(DETERMINERS.items()),
            "adjective_suffix": sorted(ADJECTIVE_SUFFIX.items()),
            "verb_suffix": sorted(VERB_SUFFIX.items()),
            "splits": SPLITS,
            "contexts": CONTEXTS,
            "flaw": FLAWED_CONTEXT,
            "particles": [NEGATION, NEGATION_END, WITH, RELATIVE],
            "version": 2,
        }


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
    core.post_processor = processors.TemplateProcessing(
        single=f"$A {EOS}", pair=f"$A {EOS} $B {EOS}", special_tokens=[(EOS, vocab[EOS])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token=PAD, eos_token=EOS, unk_token=UNK, model_max_length=128
    )


# ---- training -----------------------------------------------------------------------------------


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
        streams = [
            [r[min(k, len(r) - 1)] for r in refs] for k in range(width)
        ]  # repeating a reference changes nothing
        bleu = sacrebleu.corpus_bleu([texts[i] for i in rows], streams).score
        valid = sum(grammar.is_valid_translation(examples[i]["prompt"], texts[i]) for i in rows) / len(rows)
        table.append({"context": context, "n": len(rows), "bleu": bleu, "valid": valid})
    return pd.DataFrame(table).set_index("context")
