"""Each method's step for every running row (Algorithm 4's block, plain decoding, the token cascade, BiLD),
the loop that drops finished rows, the sequence cascade, and `decode_blocks`, which runs one of them on a
chunk of prompts and returns one `Generation` per row."""

from __future__ import annotations

import math
import time
from typing import Dict, List, Optional

import torch

from ...maths import targets
from ...maths import laws
from ...maths import accept_reject
from ...maths.verification import block_targets, temperature_laws, verify_block
from ...models.language_model import LanguageModel
from ..generation import Generation, TraceStep, emit_verified_block
from ..shared_prefix import PAD
from .state import Ledger, Row, Side, agreement

__all__ = ["BLOCK_BONUS", "CASCADE_METHODS", "decode_blocks"]

#: The bonus options the batched blocks run (`"target"` needs one more drafter step per row: use `generate`).
BLOCK_BONUS = ("verifier", "none")
#: The other methods `block_batch` batches besides speculative and plain decoding (not the oracle).
CASCADE_METHODS = ("token_cascade", "seq_cascade", "bild")


def _catch_up(sides: Dict[str, Side], rows: List[Row], which: str) -> List[List[int]]:
    """Realign `which` so that every row feeds the same number w of its last tokens; returns them."""
    side = sides[which]
    agree = [agreement(h, r.seq) for h, r in zip(side.held, rows)]
    w = max(max(1, len(r.seq) - a) for r, a in zip(rows, agree))
    side.realign([min(a, len(r.seq) - w) for r, a in zip(rows, agree)])
    return [r.seq[-w:] for r in rows]


def _block(sides: Dict[str, Side], rows: List[Row], *, rule, alpha, beta, gamma, bonus, temperature) -> None:
    """One block of every running row: steps 1-5 of the docstring of `block_batch`."""
    n = [min(gamma, r.remaining) for r in rows]
    n_max = max(n)
    drafts = [[] for _ in rows]
    q_steps, qu_steps = [], []
    # 1. Draft: step j feeds each row's previous draft (a row past its n_i feeds a placeholder).
    feed = _catch_up(sides, rows, "drafter")
    for r in rows:
        r.ledgers["drafter"].feed(r.ledgers["drafter"].backlog(r.seq))
    for j in range(n_max):
        if j:
            feed = [[d[j - 1] if j - 1 < len(d) else PAD] for d in drafts]
            for k, r in enumerate(rows):
                if j < n[k]:
                    r.ledgers["drafter"].feed([drafts[k][j - 1]])
        logits = sides["drafter"].feed(feed, keep=1)[:, -1]  # (b, V)
        q_j, qu_j = temperature_laws(logits, temperature)
        q_steps.append(q_j)
        qu_steps.append(qu_j)
        for k, r in enumerate(rows):
            if j < n[k]:
                drafts[k].append(int(accept_reject.sample(q_j[k], r.generator)))
    q, q_unscaled = torch.stack(q_steps, 1), torch.stack(qu_steps, 1)  # (b, n_max, V)
    # 2. One verifier call scores every row's block (p after the drafts too, for a bonus token).
    fed = [n_k if bonus != "none" else n_k - 1 for n_k in n]
    width = max(fed)
    backlog = _catch_up(sides, rows, "verifier")
    ids = [b + d[:f] + [PAD] * (width - f) for b, d, f in zip(backlog, drafts, fed)]
    for k, r in enumerate(rows):
        ledger = r.ledgers["verifier"]
        scored = ledger.backlog(r.seq) + drafts[k][: fed[k]]
        if scored:
            ledger.feed(scored)
    p_all, pu_all = temperature_laws(
        sides["verifier"].feed(ids, keep=width + 1), temperature
    )  # (b, width+1, V)
    # 3-4. Verify rows with the same block length and bonus together, each from its own generator.
    groups: Dict[tuple, List[int]] = {}
    for k, r in enumerate(rows):
        groups.setdefault((n[k], bonus != "none" and n[k] < r.remaining), []).append(k)
    for (n_g, with_bonus), members in groups.items():
        at = torch.tensor(members)
        q_g, p_g = q[at, :n_g], p_all[at, :n_g]
        pi, weight = block_targets(
            rule, q_g, p_g, alpha, q_unscaled=q_unscaled[at, :n_g], p_unscaled=pu_all[at, :n_g], beta=beta
        )
        verdict = verify_block(
            pi,
            q_g,
            torch.tensor([drafts[k] for k in members]),
            [rows[k].generator for k in members],
            bonus=p_all[at, n_g] if with_bonus else None,
            stop_tokens=rows[members[0]].eos,
        )
        for g, k in enumerate(members):
            _emit_block(
                rows[k],
                drafts[k],
                verdict,
                g,
                q_g[g],
                p_g[g],
                pi[g],
                weight[g],
                p_all[k, n_g] if with_bonus else None,
            )
    # 5. The ledgers crop as the engine's sessions do; the caches are realigned at the next feed.
    for r in rows:
        for ledger in r.ledgers.values():
            ledger.sync(r.seq)


def _emit_block(row: Row, drafts, verdict, g, q, p, pi, weight, p_n) -> None:
    """`generation.emit_verified_block` for one row; the bonus token is drawn from $p_{t+n}$ (`p_n`)."""

    def bonus_step(token: int) -> TraceStep:
        return TraceStep(token, "bonus", p=float(p_n[token]), pi=float(p_n[token]))

    emit_verified_block(row.emit, row.counts, drafts, verdict, g, q, p, pi, weight, bonus_step)


def _plain(sides: Dict[str, Side], rows: List[Row], which: str, temperature, logs=None) -> None:
    """One step of plain decoding with one model (`engine.methods._plain_step`) for every running row; `logs`
    (row id -> list) collects each sampled token's $T = 1$ log-probability (the sequence cascade's score)."""
    feed = _catch_up(sides, rows, which)
    for r in rows:
        r.ledgers[which].feed(r.ledgers[which].backlog(r.seq))
    law, unscaled = temperature_laws(sides[which].feed(feed, keep=1)[:, -1], temperature)  # (b, V)
    for k, r in enumerate(rows):
        x = int(accept_reject.sample(law[k], r.generator))
        prob = float(law[k, x])
        if logs is not None:
            logs[id(r)].append(math.log(max(float(unscaled[k, x]), 1e-300)))
        r.emit(
            TraceStep(
                x,
                which,
                q=prob if which == "drafter" else float("nan"),
                p=prob if which == "verifier" else float("nan"),
                pi=prob,
                deferral=1.0 if which == "verifier" else 0.0,
            )
        )


def _token_cascade(sides: Dict[str, Side], rows: List[Row], alpha, temperature) -> None:
    """One step of Algorithm 2 (`engine.methods._token_cascade`) for every running row: the drafter's
    $q_t$, and where Chow's rule defers, the verifier's $p_t$ (computed for the whole batch when any row
    defers; each row's ledger counts only the calls `generate` makes)."""
    feed = _catch_up(sides, rows, "drafter")
    for r in rows:
        r.ledgers["drafter"].feed(r.ledgers["drafter"].backlog(r.seq))
    q, q_unscaled = temperature_laws(sides["drafter"].feed(feed, keep=1)[:, -1], temperature)  # (b, V)
    defer = targets.deferral_decision("chow", q, q, alpha, q_unscaled=q_unscaled)  # (b,)
    p = None
    if bool(defer.any()):
        for k, r in enumerate(rows):
            if bool(defer[k]):
                r.ledgers["verifier"].feed(r.ledgers["verifier"].backlog(r.seq))
        p, _ = temperature_laws(
            sides["verifier"].feed(_catch_up(sides, rows, "verifier"), keep=1)[:, -1], temperature
        )
    for k, r in enumerate(rows):
        if bool(defer[k]):
            x = int(accept_reject.sample(p[k], r.generator))
            r.emit(
                TraceStep(x, "verifier", q=float(q[k, x]), p=float(p[k, x]), pi=float(p[k, x]), deferral=1.0)
            )
        else:
            x = int(accept_reject.sample(q[k], r.generator))
            r.emit(TraceStep(x, "drafter", q=float(q[k, x]), pi=float(q[k, x]), deferral=0.0))


def _bild(sides: Dict[str, Side], rows: List[Row], threshold, gamma, fallback, temperature) -> None:
    r"""One block of the original BiLD (`engine.methods._bild`) for every running row: draft while the
    drafter's $T = 1$ top probability stays at or above `fallback` (at most $n_i$ tokens), one verifier
    call, roll back at the first draft with $-\log p(x) >$ `threshold` to the verifier's own token there."""
    n = [min(gamma, r.remaining) for r in rows]
    drafts, q_rows = [[] for _ in rows], [[] for _ in rows]
    drafting = [n_k > 0 for n_k in n]
    feed = _catch_up(sides, rows, "drafter")
    for r in rows:
        r.ledgers["drafter"].feed(r.ledgers["drafter"].backlog(r.seq))
    j = 0
    while any(drafting):
        if j:
            feed = [[d[-1] if d else PAD] for d in drafts]
            for k, r in enumerate(rows):
                if drafting[k]:
                    r.ledgers["drafter"].feed([drafts[k][-1]])
        q_j, qu_j = temperature_laws(sides["drafter"].feed(feed, keep=1)[:, -1], temperature)  # (b, V)
        top = qu_j.max(-1).values
        for k, r in enumerate(rows):
            if not drafting[k]:
                continue
            if float(top[k]) < fallback:  # the small model is unsure: hand over to the large one
                drafting[k] = False
                continue
            drafts[k].append(int(accept_reject.sample(q_j[k], r.generator)))
            q_rows[k].append(q_j[k])
            drafting[k] = len(drafts[k]) < n[k]
        j += 1
    width = max(len(d) for d in drafts)
    backlog = _catch_up(sides, rows, "verifier")
    ids = [b + d + [PAD] * (width - len(d)) for b, d in zip(backlog, drafts)]
    for k, r in enumerate(rows):
        r.ledgers["verifier"].feed(r.ledgers["verifier"].backlog(r.seq) + drafts[k])
    p_all, pu_all = temperature_laws(
        sides["verifier"].feed(ids, keep=width + 1), temperature
    )  # (b, width+1, V)
    for k, r in enumerate(rows):
        p, pu, d = p_all[k], pu_all[k], drafts[k]
        r.counts["n_drafted"] += len(d)
        n_accepted = 0
        for i, x in enumerate(d):
            # a rollback to the drafted token itself changes nothing: it counts as an acceptance
            if -math.log(max(float(pu[i, x]), 1e-300)) > threshold:
                y = int(accept_reject.sample(p[i], r.generator))
                if y != x:
                    r.counts["n_rejected"] += 1
                    r.emit(
                        TraceStep(
                            y,
                            "residual",
                            False,
                            q=float(q_rows[k][i][y]),
                            p=float(p[i, y]),
                            pi=float(p[i, y]),
                            deferral=1.0,
                        )
                    )
                    break
            n_accepted += 1
            r.emit(
                TraceStep(
                    x,
                    "draft",
                    True,
                    q=float(q_rows[k][i][x]),
                    p=float(p[i, x]),
                    pi=float(q_rows[k][i][x]),
                    deferral=0.0,
                )
            )
            if r.done:
                break
        else:
            if not r.done:
                y = int(accept_reject.sample(p[len(d)], r.generator))
                r.emit(TraceStep(y, "verifier", p=float(p[len(d), y]), pi=float(p[len(d), y]), deferral=1.0))
        r.counts["n_accepted"] += n_accepted
        for ledger in r.ledgers.values():
            ledger.sync(r.seq)


def _loop(sides: Dict[str, Side], rows: List[Row], step, bar, max_new_tokens: int) -> None:
    """Run `step(sides, running rows)` until every row of `rows` is done; finished rows leave the batch."""
    live = list(range(len(rows)))
    while live:
        running = [rows[i] for i in live]
        before = [len(r.seq) for r in running]
        step(sides, running)
        if bar is not None:  # the bar counts the token budget: a row that stops hands in the rest
            bar.update(
                sum(
                    (len(r.seq) - b) if not r.done else max_new_tokens - (b - r.n_prefix)
                    for r, b in zip(running, before)
                )
            )
        keep = [k for k, r in enumerate(running) if not r.done]
        if len(keep) < len(live):
            if keep:
                for side in sides.values():
                    side.select(keep)
            live = [live[k] for k in keep]


def _seq_cascade(
    sides: Dict[str, Side], rows: List[Row], alpha, aggregate, temperature, bar, max_new_tokens
) -> None:
    r"""Equation (1) (`engine.methods._seq_cascade`): the drafter answers every row; rows whose $T = 1$ answer
    probability (`aggregate` of its tokens' log-probabilities) is below $1 - \alpha$ are answered again
    by the verifier, their streams continuing where the drafter left them."""
    logs = {id(r): [] for r in rows}

    def drafter_step(side, running):
        _plain(side, running, "drafter", temperature, logs)

    _loop({"drafter": sides["drafter"]}, rows, drafter_step, None, max_new_tokens)
    deferred = []
    for k, r in enumerate(rows):
        log_q = torch.tensor(logs[id(r)], dtype=torch.float64)
        score = {"sequence": log_q.sum(), "mean": log_q.mean(), "min": log_q.min()}[aggregate].exp()
        if float(score) < 1.0 - alpha:
            del r.seq[r.n_prefix :]
            r.trace.clear()
            r.done = r.stopped_at_eos = False
            deferred.append(k)
    if bar is not None:
        bar.update(len(rows) * max_new_tokens - len(deferred) * max_new_tokens)
    if deferred:
        sides["verifier"].select(deferred)
        _loop(
            {"verifier": sides["verifier"]},
            [rows[k] for k in deferred],
            lambda side, running: _plain(side, running, "verifier", temperature),
            bar,
            max_new_tokens,
        )


def decode_blocks(
    lms: Dict[str, LanguageModel],
    verifier: LanguageModel,
    prompt_ids: List[List[int]],
    seeds: List[int],
    sides: Dict[str, Side],
    *,
    method: str,
    rule,
    alpha,
    beta,
    gamma: int,
    bonus: str,
    temperature: float,
    max_new_tokens: int,
    eos: frozenset,
    aggregate: str = "sequence",
    bild_threshold: Optional[float] = None,
    bild_fallback: float = 0.5,
    bar=None,
    setup_s: float = 0.0,
) -> List[Generation]:
    """Decode one chunk whose models' states are `sides` (made by `batch`); one `Generation` per row.

    `method`: `"speculative"` (blocks of `gamma`), `"drafter"` / `"verifier"` (plain decoding),
    `"token_cascade"` (Algorithm 2), `"seq_cascade"` (equation 1, `aggregate` as in `generate`) or `"bild"`
    (the original Big-Little Decoder, `bild_threshold` and `bild_fallback` as in `generate`).
    `setup_s` (the chunk's prefill or encoder passes) is added to the batch's time before it is split
    evenly among the rows, as `generate_batch` does at gamma = 1.
    """
    start = time.perf_counter()
    encoder_decoder = verifier.is_encoder_decoder
    rows = [
        Row(
            verifier.decoder_prefix(ids),
            s,
            max_new_tokens,
            eos,
            {which: Ledger(encoder_decoder) for which in lms},
        )
        for ids, s in zip(prompt_ids, seeds)
    ]
    with laws.trusted_inputs():  # every law below comes from `probabilities`
        if method == "speculative":
            _loop(
                sides,
                rows,
                lambda s, running: _block(
                    s,
                    running,
                    rule=rule,
                    alpha=alpha,
                    beta=beta,
                    gamma=gamma,
                    bonus=bonus,
                    temperature=temperature,
                ),
                bar,
                max_new_tokens,
            )
        elif method == "token_cascade":
            _loop(
                sides,
                rows,
                lambda s, running: _token_cascade(s, running, alpha, temperature),
                bar,
                max_new_tokens,
            )
        elif method == "seq_cascade":
            _seq_cascade(sides, rows, alpha, aggregate, temperature, bar, max_new_tokens)
        elif method == "bild":
            _loop(
                sides,
                rows,
                lambda s, running: _bild(s, running, bild_threshold, gamma, bild_fallback, temperature),
                bar,
                max_new_tokens,
            )
        else:
            _loop(
                sides, rows, lambda s, running: _plain(s, running, method, temperature), bar, max_new_tokens
            )
    b = len(rows)
    wall = (setup_s + time.perf_counter() - start) / b
    return [
        _generation(
            r,
            ids,
            verifier,
            sides,
            method=method,
            rule=rule,
            alpha=alpha,
            gamma=gamma,
            bild_threshold=bild_threshold,
            temperature=temperature,
            wall_s=wall,
            b=b,
            encoder_decoder=encoder_decoder,
        )
        for r, ids in zip(rows, prompt_ids)
    ]


def _generation(
    row: Row,
    prompt,
    verifier,
    sides,
    *,
    method,
    rule,
    alpha,
    gamma,
    temperature,
    wall_s,
    b,
    encoder_decoder,
    bild_threshold=None,
) -> Generation:
    tokens = row.seq[row.n_prefix :]
    calls = {}
    used = {
        which: ledger for which, ledger in row.ledgers.items() if ledger.n_calls
    }  # sessions `generate` starts
    for which in ("drafter", "verifier"):
        ledger = used.get(which)
        calls[f"{which}_calls_by_k"] = ledger.calls_by_k if ledger else []
        calls[f"{which}_prefills"] = ledger.prefills if ledger else 0
        calls[f"{which}_encoder_passes"] = int(encoder_decoder and ledger is not None)
    return Generation(
        tokens=tokens,
        text=verifier.decode(tokens),
        prompt_tokens=prompt,
        method=method,
        rule=rule,
        alpha=alpha,
        gamma=gamma,
        temperature=temperature,
        bild_threshold=bild_threshold,
        n_verifier_calls=row.ledgers["verifier"].n_calls if "verifier" in row.ledgers else 0,
        n_drafter_calls=row.ledgers["drafter"].n_calls if "drafter" in row.ledgers else 0,
        wall_time_s=wall_s,
        drafter_time_s=sides["drafter"].time_s / b if "drafter" in sides else 0.0,
        verifier_time_s=sides["verifier"].time_s / b if "verifier" in sides else 0.0,
        stopped_at_eos=row.stopped_at_eos,
        trace=row.trace,
        feed_log={which: list(ledger.feed_log) for which, ledger in used.items()},
        **row.counts,
        **calls,
    )
