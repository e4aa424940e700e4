"""The reruns' profile tables: every T5 and Gemma-style profile's settings and the alpha placements and hub
datasets they name (`reruns` reads them: `t5_profile`, `gemma_profile`, and re-exports them). A run's folder
is named by a hash of its profile's settings (`reruns.run_config`), so an entry changed here no longer finds
the rows saved under it: add a profile rather than edit one."""

from __future__ import annotations

from typing import Dict, List

from .configs import GEMMA_CURVES, T5_CURVES

__all__ = [
    "T5_PREFIXES",
    "T5_OFFLINE_ALPHAS",
    "T5_OFFLINE_ALPHAS_T0",
    "T5_PROFILES",
    "T5_HUB_DATASETS",
    "GEMMA_OFFLINE_ALPHAS",
    "GEMMA_MIDDLE_ALPHAS",
    "GEMMA_GREEDY_ALPHAS",
    "GEMMA_GREEDY_ALPHAS_3",
    "GEMMA_PROFILES",
    "SECOND_SEED_PROFILES",
    "EARLIER_PROFILES",
]

# ---- T5 -------------------------------------------------------------------------------------------

#: T5 was trained with these task prefixes (Raffel et al., appendix D); `t5-small` / `t5-large`
#: translate and summarise with them out of the box.
T5_PREFIXES = {
    "wmt_en_de": "translate English to German: ",
    "cnn_dailymail": "summarize: ",
    "xsum": "summarize: ",
}

#: The offline T5 profile's alphas: 5 interior points per rule plus its two ends, placed so that their
#: rejection rates spread evenly between the rule's SpecDecode and drafter ends
#: (`alpha_grids.placed_alphas(result, 5, ends=True)` on the token-level analysis `token_curves.analyse`
#: of the synthetic T5 pair along the 60 first held-out reference translations, T = 1). The curves not
#: in that analysis (sequential and token cascades, original BiLD) use `n_alpha`-point grids.
T5_OFFLINE_ALPHAS: Dict[str, List[float]] = {
    "SpecCascade [Chow]": [0.0, 0.0046, 0.1089, 0.3841, 0.5221, 0.6376, 1.0],
    "SpecCascade [Diff]": [-1.0, 0.0011, 0.0204, 0.1881, 0.4269, 0.6016, 1.0],
    "SpecCascade [OPT]": [-1.0, 0.0011, 0.0333, 0.6101, 0.9389, 0.9938, 1.0],
    "SpecCascade [Token-V1]": [-1.0, 0.0033, 0.1061, 0.5722, 0.8095, 0.9397, 1.0],
    "SpecCascade [Token-V2]": [-1.0, 0.725, 0.9812, 0.9914, 0.9943, 0.9971, 1.0],
    "SpecCascade [Token-V3]": [0.0, 0.995, 0.996, 0.997, 0.998, 0.999, 1.0],
    "SpecDecode [Lossy]": [0.0, 0.954, 0.9935, 0.9961, 0.9974, 0.9987, 0.999],
    "Lossy*": [0.0, 0.954, 0.9935, 0.9961, 0.9974, 0.9987, 0.999],
    "BiLD*": [0.0, 0.3447, 0.5643, 0.7695, 0.9571, 0.9965, 1.0],
}

#: The offline T5 profile's alphas at T = 0 (`benchmarks/t5_alpha_placement.py`, the same 60 sentences
#: at T = 0). At T = 0 a rule's rejection rate against alpha is a staircase and the T = 1 alphas bunch
#: on a few of its steps (Lossy's seven runs were SpecDecode's, OPT's five distinct of seven), so each
#: rule gets one alpha per step, 5 steps spread in rejection level (`alpha_grids.plateau_alphas`), plus
#: its ends. Lossy and Lossy* are SpecDecode at T = 0 for every alpha below 1: not run there (an empty
#: list). Diff, OPT and Token-V1 share one staircase on these sentences (at T = 0 OPT emits Diff's tokens).
T5_OFFLINE_ALPHAS_T0: Dict[str, List[float]] = {
    "SpecCascade [Chow]": [0.0, 0.005, 0.23, 0.475, 0.605, 0.915, 1.0],
    "SpecCascade [Diff]": [-1.0, -0.42, 0.0, 0.07, 0.42, 0.89, 1.0],
    "SpecCascade [OPT]": [-1.0, -0.42, 0.0, 0.07, 0.42, 0.89, 1.0],
    "SpecCascade [Token-V1]": [-1.0, -0.42, 0.0, 0.07, 0.42, 0.89, 1.0],
    "SpecCascade [Token-V2]": [-1.0, 0.01, 0.2, 0.62, 0.92, 0.99, 1.0],
    "SpecCascade [Token-V3]": [0.0, 0.025, 0.175, 0.545, 0.94, 0.995, 1.0],
    "SpecDecode [Lossy]": [],
    "Lossy*": [],
    "BiLD*": [0.0, 0.055, 0.455, 0.755, 0.915, 0.995, 1.0],
}

T5_PROFILES: Dict[str, dict] = {
    # the original multi-task T5 checkpoints, not the paper's fine-tuned T5 v1.1 (see notebook 06)
    "hub": dict(
        drafter="google-t5/t5-small",
        verifier="google-t5/t5-large",
        dtype="float32",
        device="cuda",
        tasks=["wmt_en_de", "cnn_dailymail", "xsum"],
        n_examples=200,
        gammas=[3, 5, 7],
        temperatures=[0.0, 1.0],
        n_alpha=7,
        alphas=None,
        curves=T5_CURVES,
    ),
    # 200 held-out sentences; every rule 5 interior alphas placed at each T (T5_OFFLINE_ALPHAS at T = 1,
    # T5_OFFLINE_ALPHAS_T0 at T = 0), the other curves 7-point grids
    "offline": dict(
        drafter="synthetic-t5-drafter",
        verifier="synthetic-t5-verifier",
        dtype="float32",
        device="cpu",
        tasks=["synthetic_mt"],
        n_examples=200,
        gammas=[5],
        temperatures=[0.0, 1.0],
        n_alpha=7,
        alphas={
            label: {0.0: T5_OFFLINE_ALPHAS_T0[label], 1.0: T5_OFFLINE_ALPHAS[label]}
            for label in T5_OFFLINE_ALPHAS
        },
        curves=T5_CURVES,
    ),
    "full": dict(
        drafter="synthetic-t5-drafter",
        verifier="synthetic-t5-verifier",
        dtype="float32",
        device="cpu",
        tasks=["synthetic_mt"],
        n_examples=300,
        gammas=[3, 5, 7],
        temperatures=[0.0, 1.0],
        n_alpha=9,
        alphas=None,
        curves=T5_CURVES,
    ),
    "smoke": dict(
        drafter="synthetic-t5-drafter:tiny",
        verifier="synthetic-t5-verifier:tiny",
        dtype="float32",
        device="cpu",
        tasks=["synthetic_mt"],
        n_examples=3,
        gammas=[3],
        temperatures=[1.0],
        n_alpha=2,
        alphas=None,
        curves=T5_CURVES,
    ),
}


#: The T5 rerun's hub datasets: hub id (`namespace/name`), config, the Parquet conversion where the
#: main branch still loads through a script (which `datasets` >= 4 refuses), the source and reference
#: columns, and the input cut in T5 tokens. The paper evaluates on validation samples with WMT inputs
#: cut to 80 tokens and XSum's to 1,024; CNN/DM articles are cut to 1,024 as well (our choice).
T5_HUB_DATASETS: Dict[str, dict] = {
    "wmt_en_de": dict(
        path="wmt/wmt14",
        name="de-en",
        revision=None,
        metric="bleu",
        max_new_tokens=128,
        max_input_tokens=80,
        source=lambda row: row["translation"]["en"],
        target=lambda row: row["translation"]["de"],
    ),
    "cnn_dailymail": dict(
        path="abisee/cnn_dailymail",
        name="3.0.0",
        revision=None,
        metric="rouge2",
        max_new_tokens=128,
        max_input_tokens=1024,
        source=lambda row: row["article"],
        target=lambda row: row["highlights"],
    ),
    "xsum": dict(
        path="EdinburghNLP/xsum",
        name=None,
        revision="refs/convert/parquet",
        metric="rouge2",
        max_new_tokens=64,
        max_input_tokens=1024,
        source=lambda row: row["document"],
        target=lambda row: row["summary"],
    ),
}


# ---- Gemma ----------------------------------------------------------------------------------------

#: One alpha inside each rule's range (the offline and smoke profiles; the curves' ends are measured too).
_ONE_ALPHA_PER_RULE = {
    "SpecDecode [Lossy]": [0.5],
    "SpecCascade [Chow]": [0.4],
    "SpecCascade [Diff]": [0.1],
    "SpecCascade [OPT]": [1.0],
    "SpecCascade [Token-V1]": [0.1],
    "SpecCascade [Token-V2]": [0.1],
    "SpecCascade [Token-V3]": [0.5],
}

#: The offline-all profile's alphas: 3 interior points per rule (Token-V3 also its alpha = 0 end, which
#: is not SpecDecode), at the rejection rates 3/4, 1/2 and 1/4 of the way from the SpecDecode end to the
#: drafter end of the rule's pooled rejection curve (`alpha_grids.placed_alphas(result, 3)`) in the
#: token-level analysis of the Qwen pair (`token_curves.analyse`, gold answers, T = 1; notebook 08):
#: `data/results/token-analysis-4368c63a9810`, all 162 offline items (tests/test_alpha_grids.py rechecks).
GEMMA_OFFLINE_ALPHAS: Dict[str, List[float]] = {
    "SpecCascade [Chow]": [0.1414, 0.3509, 0.5724],
    "SpecCascade [Diff]": [-0.071, 0.0834, 0.2796],
    "SpecCascade [OPT]": [-0.1772, 0.2739, 0.826],
    "SpecCascade [Token-V1]": [0.1594, 0.4757, 0.7617],
    "SpecCascade [Token-V2]": [0.4897, 0.7563, 0.9355],
    "SpecCascade [Token-V3]": [0.0, 0.8572, 0.9759, 0.988],
    "SpecDecode [Lossy]": [0.3598, 0.7505, 0.9548],
}

#: The offline-large profile's alphas at T = 1: one interior alpha per rule, at the rejection rate halfway
#: from SpecDecode to the drafter on the analysis that placed GEMMA_OFFLINE_ALPHAS
#: (`alpha_grids.placed_alphas(result, 1)`, without Token-V3's alpha = 0 end): the middle of those three.
GEMMA_MIDDLE_ALPHAS: Dict[str, List[float]] = {
    "SpecCascade [Chow]": [0.3509],
    "SpecCascade [Diff]": [0.0834],
    "SpecCascade [OPT]": [0.2739],
    "SpecCascade [Token-V1]": [0.4757],
    "SpecCascade [Token-V2]": [0.7563],
    "SpecCascade [Token-V3]": [0.9759],
    "SpecDecode [Lossy]": [0.7505],
}

#: The offline-large profile's alphas at T = 0, for the three Token rules only. At T = 0 a Token rule emits
#: the drafter's top token when it lies in the rule's acceptance set (built from the temperature-1 laws)
#: and the verifier's top token otherwise, so its rejection rate falls along a different curve than at
#: T = 1, and the T = 1 placements bunch up. Placed as at T = 1 but on a token-level
#: analysis at T = 0: `benchmarks/greedy_alpha_analysis.py` (`token_curves.analyse` at T = 0 along the
#: gold answers of the first 16 items of code, arithmetic and facts, 101-point grids), committed in
#: `data/results/token-analysis-467910ba0826` (tests/test_offline_large.py rechecks); one alpha per
#: rule, at the rejection rate halfway from SpecDecode to the drafter (`alpha_grids.placed_alphas(result,
#: 1)`; with 5 per rule it gives Token-V1 -0.1267..0.3733, V2 0.1633..0.8978, V3 0.5133..0.9929, far
#: from the T = 1 placements). Token-V3's alpha = 0 end is left out: at T = 0 it accepts
#: the drafted token exactly when it is the verifier's top token, which is SpecDecode.
GEMMA_GREEDY_ALPHAS: Dict[str, List[float]] = {
    "SpecCascade [Token-V1]": [0.08],
    "SpecCascade [Token-V2]": [0.515],
    "SpecCascade [Token-V3]": [0.85],
}

#: The headline profile's alphas at T = 0, 3 per rule, placed on a token-level analysis at T = 0 along the
#: gold answers of the first 16 items of code, arithmetic and facts with Chow and Diff too
#: (`benchmarks/greedy_alpha_analysis.py --items 16 --k 3 --curves chow diff token_v1 token_v2 token_v3
#: --dtype bfloat16`, committed in `data/results/token-analysis-95c2a115e487`; tests/test_headline_profile.py
#: rechecks): Token-V2 and Token-V3 at evenly spaced rejection levels (`alpha_grids.placed_alphas`; Token-V3's
#: alpha = 0 is SpecDecode at T = 0), Chow and Diff, staircases at T = 0, one alpha per plateau
#: (`alpha_grids.plateau_alphas`). Token-V1 and OPT emit Diff's tokens at T = 0, so they take Diff's alphas;
#: Lossy emits SpecDecode's for every alpha below 1, so it keeps its T = 1 alphas. Their rows share the
#: forward passes of the rows they equal (`config_batch`): they cost almost nothing, and the rows show the
#: equalities.
GEMMA_GREEDY_ALPHAS_3: Dict[str, List[float]] = {
    "SpecCascade [Chow]": [0.01, 0.43, 0.85],
    "SpecCascade [Diff]": [-0.42, 0.08, 0.72],
    "SpecCascade [OPT]": [-0.42, 0.08, 0.72],
    "SpecCascade [Token-V1]": [-0.42, 0.08, 0.72],
    "SpecCascade [Token-V2]": [0.27, 0.505, 0.77],
    "SpecCascade [Token-V3]": [0.6362, 0.835, 0.9859],
    "SpecDecode [Lossy]": [0.3598, 0.7505, 0.9548],
}

GEMMA_PROFILES: Dict[str, dict] = {
    "hub": dict(
        drafter="google/gemma-2-2b-it",
        verifier="google/gemma-2-9b-it",
        dtype="bfloat16",
        device="cuda",
        tasks=[
            "wmt",
            "cnn_dailymail",
            "gsm8k",
            "mbpp",
            "squad_v2",
            "web_questions",
            "natural_questions",
            "trivia_qa",
        ],
        n_items=500,
        temperatures=[1.0, 0.0],
        curves=GEMMA_CURVES,
        n_alpha=7,
        alphas=None,
        greedy_curves=None,
        batch_size=32,
        latency_items=20,
        latency_gammas=[1, 5],
        latency_curves=None,
        max_new_tokens=None,
        shots=None,
    ),
    # fp32, not bf16: this CPU has no bf16 matrix units, and batched bf16 forward passes measured 2-8x
    # slower than fp32 here (a 16-prompt prefill of the 1.5B: 242 s in bf16, 42 s in fp32).
    "offline": dict(
        drafter="qwen2.5-coder-0.5b",
        verifier="qwen2.5-coder-1.5b",
        dtype="float32",
        device="cpu",
        tasks=["code", "arithmetic", "facts"],
        n_items=16,
        temperatures=[1.0, 0.0],
        curves=GEMMA_CURVES,
        n_alpha=3,
        batch_size=16,
        # one alpha inside each rule's range; the curves' ends are the drafter and SpecDecode
        alphas=_ONE_ALPHA_PER_RULE,
        greedy_curves=["Drafter", "Verifier", "SpecDecode", "SpecCascade [Token-V2]"],
        latency_items=1,
        latency_gammas=[1, 5],
        latency_curves=["Verifier", "SpecDecode", "SpecCascade [Token-V2]"],
        max_new_tokens={"code": 40, "arithmetic": 40, "facts": 10},
        shots={"code": 1, "arithmetic": 2, "facts": 4},
    ),
    # Every offline item (53 + 60 + 49), 3 interior alphas per rule placed along its rejection curve
    # (GEMMA_OFFLINE_ALPHAS), room to answer: a pilot of the verifier's answers to every fourth item
    # (T = 0 and 1) ran to 306 tokens in arithmetic and 243 in code, and 4 of 15 arithmetic answers
    # passed 160. Chunks of 8 items decode all 31 configurations at once (`config_batch`: up to 248
    # rows, which keeps the KV caches of the longest answers within memory).
    "offline-all": dict(
        drafter="qwen2.5-coder-0.5b",
        verifier="qwen2.5-coder-1.5b",
        dtype="float32",
        device="cpu",
        tasks=["code", "arithmetic", "facts"],
        n_items=None,
        temperatures=[1.0, 0.0],
        curves=GEMMA_CURVES,
        n_alpha=3,
        batch_size=8,
        alphas=GEMMA_OFFLINE_ALPHAS,
        greedy_curves=["Drafter", "Verifier", "SpecDecode", "SpecCascade [Token-V2]"],
        latency_items=4,
        latency_gammas=[1, 5],
        latency_curves=["Verifier", "SpecDecode", "SpecCascade [Token-V2]"],
        max_new_tokens={"code": 256, "arithmetic": 320, "facts": 24},
        shots={"code": 1, "arithmetic": 2, "facts": 4},
    ),
    # Enough items to decide: HumanEval's 164 problems (zero-shot), 300 generated
    # arithmetic problems (the first 60 those of `offline-all`), the 49 facts: 513 items.
    # Budget (at most about 6 h from empty on this machine, quiet). The committed offline-all rows give
    # each task's rate (rows per minute, batch shares of wall time): arithmetic 15.4, code 31.0, facts
    # 340; in its one quiet session arithmetic ran at about 13. A row costs about its answer's tokens
    # (arithmetic answers average 110-119 tokens, code 46-61), so rows per minute ~ 1,750 / tokens. HumanEval
    # replies restating the docstring would average about 190 tokens (the prompt plus the canonical
    # solution), so the prompt asks for the function without it (about 60-90 tokens). One configuration
    # then costs about 300 / 15 = 20 min of arithmetic, 164 / 20 = 8 min of HumanEval and 0.2 min of
    # facts: about 28 min, so 6 h hold about 13 configurations' worth. Hence one interior alpha per rule:
    # at T = 1 the 10 curves of GEMMA_CURVES, each rule at the middle alpha of its offline-all placement
    # (rejection rate halfway from SpecDecode to the drafter; the same configuration keys as offline-all);
    # at T = 0 the verifier, SpecDecode (at T = 0 the verifier's own tokens: it shares every forward
    # pass with the verifier's row) and the three Token rules at the alpha placed halfway on the T = 0
    # analysis (GEMMA_GREEDY_ALPHAS). Lossy equals SpecDecode at T = 0 and Token-V3 at alpha = 0 too; OPT
    # emits Diff's tokens; Chow, Diff, OPT and the drafter enter no T = 0 claim. 15 configurations, about 14
    # configurations' worth of decoding: about 6.5 h estimated (7,695 rows). Not included: the batch-size-1
    # latency rows (`benchmarks/gemma_rerun.py --latency`), on the first 16 items of each task, with the
    # pair on the kernel paths a probe chose on a processor with bf16 units (`latency_paths`: the drafter
    # int8-dynamic, the verifier bf16, whose block of 6 rows costs what one row costs there; the batched
    # rows stay fp32). Chunks of 16 items keep about 240 rows per batch, as offline-all's 8 x 31.
    "offline-large": dict(
        drafter="qwen2.5-coder-0.5b",
        verifier="qwen2.5-coder-1.5b",
        dtype="float32",
        device="cpu",
        tasks=["humaneval", "arithmetic-300", "facts"],
        n_items=None,
        temperatures=[1.0, 0.0],
        curves=GEMMA_CURVES,
        n_alpha=3,
        batch_size=16,
        alphas=GEMMA_MIDDLE_ALPHAS,
        greedy_curves=[
            "Verifier",
            "SpecDecode",
            "SpecCascade [Token-V1]",
            "SpecCascade [Token-V2]",
            "SpecCascade [Token-V3]",
        ],
        greedy_alphas=GEMMA_GREEDY_ALPHAS,
        latency_items=16,
        latency_gammas=[1, 5],
        latency_paths=["int8-dynamic", "bf16"],
        latency_curves=["Verifier", "SpecDecode", "SpecCascade [Token-V2]"],
        max_new_tokens={"humaneval": 384, "arithmetic-300": 320, "facts": 24},
        shots={"humaneval": 0, "arithmetic-300": 2, "facts": 4},
    ),
    # The same-law noise floor of offline-large: the verifier and SpecDecode at T = 1 on the same 513 items
    # with a second seed set (item i draws with seed 1000 + i instead of i; no seed is shared, as no task
    # has 1,000 items). Two runs of one law differ only by the draws: their paired difference is the floor
    # a difference between two methods must clear (`stats.noise_floor`). Tasks cheapest first (facts,
    # HumanEval, arithmetic): a run stopped early still gives the floor of the tasks it finished. Chunks of
    # 120 items keep about 240 rows per batch, as offline-large's 16 x 15 (chunks of 16 made 32-row
    # batches, which ran HumanEval at about 19 s a row).
    "offline-large-seed2": dict(
        drafter="qwen2.5-coder-0.5b",
        verifier="qwen2.5-coder-1.5b",
        dtype="float32",
        device="cpu",
        tasks=["facts", "humaneval", "arithmetic-300"],
        n_items=None,
        temperatures=[1.0],
        curves=["Verifier", "SpecDecode"],
        n_alpha=3,
        batch_size=120,
        alphas=None,
        greedy_curves=None,
        seed=1000,
        latency_items=4,
        latency_gammas=[1, 5],
        latency_curves=["Verifier", "SpecDecode"],
        max_new_tokens={"humaneval": 384, "arithmetic-300": 320, "facts": 24},
        shots={"humaneval": 0, "arithmetic-300": 2, "facts": 4},
    ),
    # The paper's headline Gemma comparison, run: every rule the claims compare at T = 1 and T = 0 with 3
    # alphas each, on offline-large's 513 items, so "[Token] matches the large model's quality at a lower
    # rejection rate" and the rules' ordering are measured rather than labelled. T = 1: GEMMA_CURVES at
    # GEMMA_OFFLINE_ALPHAS (placed along each rule's rejection curve; Token-V3's alpha = 0 end included).
    # T = 0: GEMMA_CURVES at GEMMA_GREEDY_ALPHAS_3. 49 configurations.
    # In bf16 on a processor with AMX: there offline-large's 15 configurations on 8 arithmetic items ran at 27
    # rows a minute in bf16, where fp32 had not finished in three times as long (this profile would take
    # about 30 h in fp32). Another law than offline-large's fp32 rows, so its floor is its own second seed
    # set (headline-seed2). Chunks of 6 items: 294-row batches, whose bf16 KV caches take less memory than
    # offline-large's 240 fp32 rows. Tasks cheapest first: a run stopped early gives the claims of the tasks
    # it finished.
    "headline": dict(
        drafter="qwen2.5-coder-0.5b",
        verifier="qwen2.5-coder-1.5b",
        dtype="bfloat16",
        device="cpu",
        tasks=["facts", "humaneval", "arithmetic-300"],
        n_items=None,
        temperatures=[1.0, 0.0],
        curves=GEMMA_CURVES,
        n_alpha=3,
        batch_size=6,
        alphas=GEMMA_OFFLINE_ALPHAS,
        greedy_curves=GEMMA_CURVES,
        greedy_alphas=GEMMA_GREEDY_ALPHAS_3,
        latency_items=16,
        latency_gammas=[1, 5],
        latency_paths=["int8-dynamic", "bf16"],
        latency_curves=["Verifier", "SpecDecode", "SpecCascade [Token-V2]"],
        # at T = 0 the middle of Token-V2's three alphas, as offline-large's latency rows took its one (0.515)
        latency_alphas={0.0: {"SpecCascade [Token-V2]": GEMMA_GREEDY_ALPHAS_3["SpecCascade [Token-V2]"][1]}},
        max_new_tokens={"humaneval": 384, "arithmetic-300": 320, "facts": 24},
        shots={"humaneval": 0, "arithmetic-300": 2, "facts": 4},
    ),
    # The headline run's same-law noise floor: its verifier and SpecDecode at T = 1 again, in bf16, with the
    # second seed set (item i draws with seed 1000 + i), as offline-large-seed2 is for offline-large.
    "headline-seed2": dict(
        drafter="qwen2.5-coder-0.5b",
        verifier="qwen2.5-coder-1.5b",
        dtype="bfloat16",
        device="cpu",
        tasks=["facts", "humaneval", "arithmetic-300"],
        n_items=None,
        temperatures=[1.0],
        curves=["Verifier", "SpecDecode"],
        n_alpha=3,
        batch_size=120,
        alphas=None,
        greedy_curves=None,
        seed=1000,
        latency_items=4,
        latency_gammas=[1, 5],
        latency_curves=["Verifier", "SpecDecode"],
        max_new_tokens={"humaneval": 384, "arithmetic-300": 320, "facts": 24},
        shots={"humaneval": 0, "arithmetic-300": 2, "facts": 4},
    ),
    "smoke": dict(
        drafter="smollm2-135m:layers=16",
        verifier="smollm2-135m",
        dtype="float32",
        device="cpu",
        tasks=["code", "arithmetic", "facts"],
        n_items=2,
        temperatures=[1.0],
        curves=GEMMA_CURVES,
        n_alpha=2,
        alphas=_ONE_ALPHA_PER_RULE,
        greedy_curves=None,
        batch_size=2,
        latency_items=1,
        latency_gammas=[1, 5],
        latency_curves=["Verifier", "SpecDecode", "SpecCascade [Token-V2]"],
        max_new_tokens={"code": 6, "arithmetic": 6, "facts": 4},
        shots={"code": 1, "arithmetic": 1, "facts": 2},
    ),
}


#: A profile's second seed set: its verifier and SpecDecode at T = 1 again, for the same-law noise floor
SECOND_SEED_PROFILES: Dict[str, str] = {
    "offline-large": "offline-large-seed2",
    "headline": "headline-seed2",
}

#: The run each profile's run replaced, whose claims notebook 07 sets beside its own (before -> after).
#: offline-large grew offline-all's code and arithmetic sets into HumanEval and arithmetic-300, with one
#: alpha per rule where offline-all had three; headline runs offline-large's items again with every rule at
#: 3 alphas at both temperatures, in bf16 where offline-large ran fp32.
EARLIER_PROFILES: Dict[str, str] = {
    "offline-large": "offline-all",
    "headline": "offline-large",
}
