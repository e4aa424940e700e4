"""The program the sandboxed interpreter runs (`python -I -S -B -c <this file's text>`), stdlib only.

It is not imported by the package: `tutorial_lib.tasks.sandbox` reads this file's text and hands it to a
fresh interpreter inside bubblewrap, with a JSON payload on stdin:
`{"code", "setup", "tests": [{"holes": [...]} | {"statement": str} | {"skip": true}], "report_fd",
"memory_mb", "cpu_s", "max_output_bytes"}`.

Its first lines set the resource limits (before any untrusted line runs), then it runs the code and
the setup, evaluates each test's holes in order (see `tutorial_lib.tasks.judge`) and writes ONE line of JSON
to `report_fd`: `{"error": str | None, "tests": [{"values": [tagged...]} | {"error": str} | {"ok": true}]}`.
Nothing here is trusted by the parent: the solution runs in this process and may rewrite any of it.
The parent only reads values out of the report and judges them itself.
"""
import builtins
import json
import os
import resource
import sys

_MAX_DEPTH = 64


def _set_limits(payload):
    def set_limit(kind, soft, hard=None):
        try:
            resource.setrlimit(kind, (soft, soft if hard is None else hard))
        except (ValueError, OSError):  # a stricter hard limit is already in place: keep it
            pass

    cpu_seconds = max(1, int(payload["cpu_s"] + 0.999))
    set_limit(resource.RLIMIT_AS, payload["memory_mb"] * 1024 * 1024)
    set_limit(resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + 1)  # SIGXCPU at the soft limit, SIGKILL at the hard
    set_limit(resource.RLIMIT_FSIZE, payload["max_output_bytes"] + 1)  # stdout, stderr and every file written
    set_limit(resource.RLIMIT_CORE, 0)
    set_limit(resource.RLIMIT_NPROC, 1)  # process creation is also refused by the seccomp filter
    set_limit(resource.RLIMIT_NOFILE, 256)


def encode(value, depth=0, isinstance=isinstance, int=int, float=float, complex=complex, str=str, bytes=bytes,
           bytearray=bytearray, list=list, tuple=tuple, set=set, frozenset=frozenset, dict=dict, type=type):
    """Tagged plain data for `tutorial_lib.tasks.judge.decode_value`; subclasses of builtins as their builtin value.
    The builtins it uses are bound as defaults when this file is compiled, before the solution's names
    exist, so a solution that rebinds `builtins.isinstance` does not change how honest values are sent
    (the parent trusts none of it anyway)."""
    if depth > _MAX_DEPTH:
        return ["x", "too deeply nested value"]
    if value is None:
        return ["N"]
    if isinstance(value, bool):
        return ["b", value is True]
    if isinstance(value, int):
        return ["i", int.__repr__(int(value))]
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
            return [tag, [encode(item, depth + 1) for item in kind.__iter__(value)]]
    if isinstance(value, dict):
        return ["d", [[encode(key, depth + 1), encode(item, depth + 1)] for key, item in dict.items(value)]]
    return ["x", type(value).__name__]


def _describe(error):
    if isinstance(error, MemoryError):
        return "memory limit: MemoryError"
    if isinstance(error, SystemExit):
        return f"called exit({error.code!r})"
    if isinstance(error, RecursionError):
        return "raised RecursionError"
    try:
        text = str(error)
    except BaseException:  # noqa: BLE001 - a hostile __str__
        text = ""
    return f"raised {type(error).__name__}: {text}"[:500]


def main():
    payload = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    _set_limits(payload)
    sys.stdin = open(os.devnull)
    report_fd, write, dumps = payload["report_fd"], os.write, json.dumps
    report = {"error": None, "tests": []}
    namespace = {"__name__": "__solution__", "__builtins__": builtins}
    try:
        for stage in ("code", "setup"):
            try:
                exec(compile(payload[stage], f"<{stage}>", "exec"), namespace)
            except SyntaxError as error:
                report["error"] = f"{stage} has a syntax error: {error.msg} (line {error.lineno})"
                break
            except BaseException as error:  # noqa: BLE001 - everything the code does is a result
                report["error"] = f"{stage} {_describe(error)}"
                break
        if report["error"] is None:
            for index, test in enumerate(payload["tests"], start=1):
                entry = {"skip": True}
                try:
                    if "holes" in test:
                        entry = {"values": [encode(eval(compile(hole, f"<test {index}>", "eval"), namespace))
                                            for hole in test["holes"]]}
                    elif "statement" in test:
                        exec(compile(test["statement"], f"<test {index}>", "exec"), namespace)
                        entry = {"ok": True}
                except BaseException as error:  # noqa: BLE001
                    entry = {"error": "failed (AssertionError)" if isinstance(error, AssertionError)
                             else _describe(error)}
                report["tests"].append(entry)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001 - EFBIG once output hit its limit; the parent sees the size
                pass
    finally:
        try:
            data = (dumps(report) + "\n").encode("utf-8")
            while data:
                data = data[write(report_fd, data):]
        except BaseException:  # noqa: BLE001 - no report is a failure, which the parent reports
            pass
        os._exit(0)  # no interpreter shutdown: atexit handlers of the code must not run


if __name__ == "__main__":
    main()
