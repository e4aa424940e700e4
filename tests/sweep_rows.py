"""Sweep rows for the statistics tests: one configuration's rows, as a sweep saves them."""


def config_rows(
    label,
    method,
    rule,
    alpha,
    quality,
    *,
    rejected=0,
    accepted=10,
    time=1.0,
    gamma=1,
    temperature=1.0,
    texts=None,
    seeds=None,
):
    """One configuration's rows, item i named `x<i>` and drawn with seed i (or `seeds[i]`); each row has its
    own text unless `texts` gives them (as SpecDecode's, which are the verifier's)."""
    texts = texts or [f"{label} {alpha} {i}" for i in range(len(quality))]
    return [
        {
            "task": "t",
            "example_id": f"x{i}",
            "config": f"{label}|{alpha}|g{gamma}|T{temperature}",
            "label": label,
            "method": method,
            "rule": rule,
            "alpha": alpha,
            "beta": "1.0",
            "gamma": gamma,
            "temperature": temperature,
            "seed": i if seeds is None else seeds[i],
            "quality": float(q),
            "text": texts[i],
            "n_tokens": 10,
            "n_verifier_calls": 10,
            "n_drafter_calls": 10,
            "n_accepted": accepted,
            "n_rejected": rejected,
            "wall_time_s": time,
        }
        for i, q in enumerate(quality)
    ]
