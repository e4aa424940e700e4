r"""What each kind of call costs on this machine: the measured inputs of the block-cost model.

For a loaded drafter $q$ / verifier $p$ pair on its device, `calibrate` measures these kinds of call
(each kind, then what is timed):

- `drafter_step` ($t_q$): the drafter fed one token on top of a context, one row of logits kept;
- `drafter_k2` ($t_q^{(2)}$): the drafter fed two tokens, one row kept (its first call after a fully
  accepted block);
- `verifier_k<k>` ($t_p(k)$): the verifier fed $k$ tokens on top of the same context, $k$ rows kept,
  $k = 1..K$;
- `prefill_drafter`, `prefill_verifier`: a fresh session's decoder fed the whole context (the prompt's
  first call);
- `encoder_drafter`, `encoder_verifier`: the encoder pass of an encoder-decoder model (`model.start`);
- `prefill_<model>@<n>`, `encoder_<model>@<n>`: the same on a prompt of n tokens (`prefill_lengths`;
  `prefill_time` interpolates);
- `overhead`: the engine's fixed per-call cost: plain decoding's wall time minus its model time, per call;
- `overhead_block`: what a speculative block costs beyond its calls (drafting, verification, the trace):
  speculative decoding's wall time minus its model time and per-call overheads, per verifier call
  (measured with `rule="spec"` at gamma = `max_k` - 1);
- `target_<rule>@g<gamma>`: one block's target computation and verification for that rule
  (`block_targets` + `verify_block` on laws of the pair's vocabulary size), per rule and gamma the sweep
  runs (`rule_block_costs`).

**Each rule's block.** Computing a rule's target costs more than SpecDecode's (OPT's TV distance,
the Token rules' acceptance sets, Lossy*'s normalising beta), so one `overhead_block` for every rule
under-prices the cascades. `rule_block_costs` times each rule's own target computation and
verification on a block of `gamma` laws of the pair's vocabulary size, and
`block_overhead_for(rule, gamma)` is `overhead_block` with SpecDecode's share (at the gamma it was
measured at) replaced by the rule's own at its gamma.

Calls are made exactly as `tutorial_lib.decoding.engine` makes these calls (`Session.feed` with the same
`keep`, logits copied back to the host), so the times include what the engine pays. Each call after the
context is cropped away again, so every repeat sees the same cache. One round runs every measurement once,
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

Its parts: `record` (`Calibration` and the names of its kinds), `measure` (`calibrate`,
`interleaved_rounds`) and `rule_blocks` (each rule's block cost: `sweep_rules`, `rule_block_costs`).
"""

from .measure import MAX_ROUNDS as MAX_ROUNDS  # outside `__all__`, as `interleaved_rounds` documents it
from .measure import calibrate, interleaved_rounds
from .record import CALL_KINDS, Calibration, rule_key, target_kind
from .rule_blocks import rule_block_costs, sweep_rules

__all__ = [
    "Calibration",
    "calibrate",
    "CALL_KINDS",
    "rule_key",
    "target_kind",
    "rule_block_costs",
    "sweep_rules",
    "interleaved_rounds",
]
