"""The tagged plain data that crosses the sandbox's boundary: `["N"]`, `["b", bool]`, `["i", "digits"]`,
`["f", "repr"]`, `["c", ["re", "im"]]`, `["s", str]`, `["y", "hex"]`, `["l" | "t" | "S" | "F", [...]]`,
`["d", [[key, value], ...]]`. The child encodes the values a solution's calls return (its own copy of the
encoder, `sandbox_child.encode`); the parent decodes them into builtin objects and nothing else, and
encodes the setup's constants it hands to the solution's run.
"""

from __future__ import annotations

MAX_DEPTH = 64  # nesting of a decoded value
MAX_NODES = 200_000  # items in all decoded values of one run


def encode_value(value, _depth: int = 0):
    """`decode_value`'s tagged form of a builtin plain value (the setup's literal constants, which the
    parent hands to the solution's run). Raises NotPlainData for anything else."""
    if _depth > MAX_DEPTH:
        raise NotPlainData("value too deeply nested")
    if value is None:
        return ["N"]
    kind = type(value)
    if kind is bool:
        return ["b", value]
    if kind is int:
        return ["i", repr(value)]
    if kind is float:
        return ["f", repr(value)]
    if kind is complex:
        return ["c", [repr(value.real), repr(value.imag)]]
    if kind is str:
        return ["s", value]
    if kind in (bytes, bytearray):
        return ["y", bytes(value).hex()]
    tags = {list: "l", tuple: "t", set: "S", frozenset: "F"}
    if kind in tags:
        return [tags[kind], [encode_value(item, _depth + 1) for item in value]]
    if kind is dict:
        return ["d", [[encode_value(k, _depth + 1), encode_value(v, _depth + 1)] for k, v in value.items()]]
    raise NotPlainData(f"a {kind.__name__} object is not plain data")


class NotPlainData(ValueError):
    """The child sent something that is not a tagged plain value."""


def decode_value(data, _depth: int = 0, _budget: list | None = None):
    """The builtin object a tagged value stands for: `["N"]`, `["b", bool]`, `["i", "digits"]`,
    `["f", "repr"]`, `["c", ["re", "im"]]`, `["s", str]`, `["y", "hex"]`, `["l" | "t" | "S" | "F", [...]]`,
    `["d", [[key, value], ...]]`. Raises NotPlainData for anything else (the child's tag for an object
    that is not plain data is `["x", "type name"]`)."""
    budget = [MAX_NODES] if _budget is None else _budget
    budget[0] -= 1
    if budget[0] < 0 or _depth > MAX_DEPTH:
        raise NotPlainData("value too large or too deeply nested")
    if not (isinstance(data, list) and data and isinstance(data[0], str)):
        raise NotPlainData(f"malformed value {str(data)[:80]}")
    tag, payload = data[0], (data[1] if len(data) == 2 else None)
    try:
        if tag == "N" and len(data) == 1:
            return None
        if tag == "b" and isinstance(payload, bool):
            return payload
        if tag == "i" and isinstance(payload, str) and payload.lstrip("-").isdigit():
            return int(payload)  # Python refuses over 4300 digits: ValueError, a failure
        if tag == "f" and isinstance(payload, str):
            return float(payload)
        if tag == "c" and isinstance(payload, list) and len(payload) == 2:
            return complex(float(payload[0]), float(payload[1]))
        if tag == "s" and isinstance(payload, str):
            return payload
        if tag == "y" and isinstance(payload, str):
            return bytes.fromhex(payload)
        if tag in ("l", "t", "S", "F") and isinstance(payload, list):
            items = [decode_value(item, _depth + 1, budget) for item in payload]
            return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)
        if tag == "d" and isinstance(payload, list):
            pairs = []
            for pair in payload:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise NotPlainData("malformed dict item")
                pairs.append(
                    (decode_value(pair[0], _depth + 1, budget), decode_value(pair[1], _depth + 1, budget))
                )
            return dict(pairs)
        if tag == "x":
            raise NotPlainData(f"a {str(payload)[:80]} object is not plain data")
    except (TypeError, ValueError, OverflowError) as error:  # unhashable set member, bad float text, ...
        if isinstance(error, NotPlainData):
            raise
        raise NotPlainData(f"malformed value: {error}") from None
    raise NotPlainData(f"malformed value with tag {tag!r}")
