"""The tagged plain data that crosses the sandbox's boundary, in both directions: `["N"]`, `["b", bool]`,
`["i", "hex digits"]`, `["f", "repr"]`, `["c", ["re", "im"]]`, `["s", str]`, `["y", "hex"]`,
`["l" | "t" | "S" | "F", [...]]`, `["d" | "o", [[key, value], ...]]` (a dict, an OrderedDict), `["r", [start,
stop, step]]` (a range), `["I" | "K" | "Y" | "V", [...]]` (an iterator's items, a dict's keys, items or values
view); `["x", "type name", truth]` marks a value that is not plain data and `["e", "message"]` a hole that
raised.

This file is also the first part of the program the sandboxed interpreter runs (`sandbox_child`), so the
child and the parent share one encoder and one decoder; it imports nothing. Integers travel in hex, which
Python converts in linear time and without its 4,300-digit limit on decimal text.
"""

MAX_DEPTH = 64  # nesting of a value
MAX_NODES = 200_000  # items in all the values decoded from one report


class NotPlainData(ValueError):
    """A tagged value that is malformed or stands for something that is not plain data."""


def encode_value(
    value,
    depth=0,
    isinstance=isinstance,
    int=int,
    float=float,
    complex=complex,
    str=str,
    bytes=bytes,
    bytearray=bytearray,
    list=list,
    tuple=tuple,
    set=set,
    frozenset=frozenset,
    dict=dict,
    type=type,
    format=format,
):
    """The tagged form of `value`; an instance of a subclass of a builtin type is sent as the builtin value
    it holds (a `collections.Counter` as a dict), so no method of the subclass runs on the other side. The
    builtins are bound as defaults when this file is compiled, before any code of a solution exists."""
    if depth > MAX_DEPTH:
        return ["x", "too deeply nested value"]
    if value is None:
        return ["N"]
    if isinstance(value, bool):
        return ["b", value is True]
    if isinstance(value, int):
        return ["i", format(int(value), "x")]
    if isinstance(value, float):
        return ["f", float.__repr__(float(value))]
    if isinstance(value, complex):
        number = complex(value)
        return ["c", [float.__repr__(number.real), float.__repr__(number.imag)]]
    if isinstance(value, str):
        return ["s", str.__str__(value)]
    if isinstance(value, (bytes, bytearray)):
        return ["y", bytes(value).hex()]
    for kind, tag in ((list, "l"), (tuple, "t"), (set, "S"), (frozenset, "F")):
        if isinstance(value, kind):
            return [tag, [encode_value(item, depth + 1) for item in kind.__iter__(value)]]
    if isinstance(value, dict):
        items = dict.items(value)
        pairs = [[encode_value(key, depth + 1), encode_value(item, depth + 1)] for key, item in items]
        # an OrderedDict's equality reads the order: it keeps its own tag
        return ["o" if type(value).__name__ == "OrderedDict" else "d", pairs]
    if type(value) is range:
        return ["r", [format(value.start, "x"), format(value.stop, "x"), format(value.step, "x")]]
    view = _VIEWS.get(type(value).__name__)
    if view is not None or hasattr(type(value), "__next__"):
        # a dict view, a generator, a `map`: its items, so `list(f(x))` and `set(d.keys())` are judged
        items = []
        for item in value:
            if len(items) >= MAX_NODES:
                return ["x", "iterator of more than %d items" % MAX_NODES, True]
            items.append(encode_value(item, depth + 1))
        return [view or "I", items]
    try:
        truth = bool(value)
    except BaseException:  # noqa: BLE001 - a hostile __bool__
        truth = None
    return ["x", type(value).__name__, truth]


# A dict's views keep their own tags: a keys or items view compares as a set, a values view only to itself.
_VIEWS = {"dict_keys": "K", "dict_items": "Y", "dict_values": "V"}


class Opaque:
    """A value of the expected side that is not plain data (a `re.Match`, say): the parent knows its type's
    name and whether it is true, enough for `is None`, `is not None` and `assert x`; it equals only
    itself."""

    __slots__ = ("kind", "truth")

    def __init__(self, kind: str, truth: bool):
        self.kind, self.truth = kind, truth

    def __bool__(self):
        return self.truth

    def __repr__(self):
        return f"<{self.kind} object>"


def decode_value(data, _depth: int = 0, _budget: list | None = None, *, opaque: bool = False):
    """The builtin object a tagged value stands for, and nothing else. Raises NotPlainData for a malformed
    value, one nested deeper than MAX_DEPTH or larger than MAX_NODES items, and for `["x", ...]` (with
    `opaque`, for the expected side's values, a top-level one is an `Opaque`)."""
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
        if tag == "i" and isinstance(payload, str) and payload.lstrip("-").isalnum():
            return int(payload, 16)
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
        if tag in ("d", "o") and isinstance(payload, list):
            pairs = []
            for pair in payload:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise NotPlainData("malformed dict item")
                pairs.append(
                    (decode_value(pair[0], _depth + 1, budget), decode_value(pair[1], _depth + 1, budget))
                )
            if tag == "o":
                import collections

                return collections.OrderedDict(pairs)
            return dict(pairs)
        if tag == "r" and isinstance(payload, list) and len(payload) == 3:
            return range(*(int(part, 16) for part in payload))
        if tag in ("I", "K", "Y", "V") and isinstance(payload, list):
            items = [decode_value(item, _depth + 1, budget) for item in payload]
            if tag == "K":
                return dict.fromkeys(items).keys()
            if tag == "Y":
                return dict(items).items()
            if tag == "V":
                return dict(enumerate(items)).values()
            return iter(tuple(items))  # an iterator: `list()` of it works, and it equals nothing else
        if tag == "x" and opaque and len(data) == 3 and isinstance(data[2], bool):
            return Opaque(str(data[1])[:80], data[2])
        if tag == "x":
            raise NotPlainData(f"a {str(payload)[:80]} object, which is not plain data")
    except (TypeError, ValueError, OverflowError) as error:  # unhashable set member, bad float text, ...
        if isinstance(error, NotPlainData):
            raise
        raise NotPlainData(f"malformed value: {error}") from None
    raise NotPlainData(f"malformed value with tag {tag!r}")
