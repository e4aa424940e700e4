r"""The paper's headline claim on the committed Gemma-style headline run, per task, with statistics that are
always finite (`tutorial_lib.stats.claims.headline`): quality at 1/4, 1/2 and 3/4 of SpecDecode's rejection
rate (Token group against the verifier and against the best other rule, the best curve chosen again in every
resample), the rate each group needs to come within `--margin` of the verifier's quality, the noise floor
from the second seed set, and the design identities at $T = 0$ checked on the texts.

Writes the tidy table to `--out` (a CSV; default /tmp/headline.csv, never into data/) and prints the
per-task summary, the current `claims.csv` verdicts of the same run beside it, and the time taken.

    python benchmarks/headline_statistic.py                            # 2000 resamples, /tmp/headline.csv
    python benchmarks/headline_statistic.py --n-resamples 200 --out /tmp/quick.csv
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from tutorial_lib import paths
from tutorial_lib.stats.claims import headline, headline_curves, headline_reading


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/headline.csv", help="where the tidy table goes (CSV)")
    parser.add_argument("--n-resamples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--margin", type=float, default=headline_curves.MARGIN)
    parser.add_argument("--results-dir", default=None, help="default: the committed data/results")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    if paths.DATA_DIR.resolve() in out.parents:
        parser.error(f"--out {out}: write outside data/ (the committed results are not rewritten here)")

    started = time.perf_counter()
    rows, second = headline_reading.headline_rows(args.results_dir)
    loaded = time.perf_counter()
    table = headline.headline_table(
        rows, second_seed=second, margin=args.margin, n_resamples=args.n_resamples, seed=args.seed
    )
    computed = time.perf_counter()
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False)

    pd.set_option("display.width", 200)
    pd.set_option("display.max_colwidth", None)
    summary = headline_reading.headline_summary(table)
    print(f"# per-task summary ({args.n_resamples} resamples, seed {args.seed}, margin {args.margin:g})\n")
    for task, part in summary.groupby("task", sort=False):
        print(f"## {task} (n = {int(table.loc[table['task'] == task, 'n_items'].iloc[0])})")
        for row in part.itertuples():
            print(
                f"- {row.claim}: {row.verdict} ({row.holds}/{row.cells} cells hold, "
                f"{row.does_not_hold} do not, {row.not_resolved} unresolved)"
            )
            for cell in row.numbers.split("; "):
                print(f"    {cell}")
        print()

    folder = Path(args.results_dir or paths.RESULTS_DIR) / headline_reading.HEADLINE_RUN / "claims.csv"
    if folder.exists():
        current = pd.read_csv(folder)
        current = current[current["claim"].str.startswith("[Token]")]
        print("# the run's current claims.csv (gemma_claims), for comparison\n")
        print(
            current[["claim", "task", "temperature", "estimate", "low", "high", "verdict"]].to_string(
                index=False
            )
        )
        print()
    print(f"table: {out} ({len(table)} rows)")
    print(f"time: load {loaded - started:.1f} s, statistics {computed - loaded:.1f} s")


if __name__ == "__main__":
    main()
