"""The program the sandboxed interpreter runs (`python -I -S -B -c <this file's text>`), stdlib only.

It is not imported by the package: `tutorial_lib.tasks.sandbox` reads this file's text and hands it to a
fresh interpreter inside bubblewrap, with a JSON payload on stdin:
`{"code", "setup", "run_setup", "inject", "modules", "watch", "tests": [{"holes": [...], "reads": [...],
"solution_names": [...]} | {"statement": str} | {"skip": true}], "report_fd", "memory_mb", "cpu_s",
"max_output_bytes", "threads"}`.

Its first lines set the resource limits (before any untrusted line runs), then it runs the code (and,
only where the parent could not hand the test's inputs over as plain data, the setup, in a namespace of
its own), evaluates each test's holes in order (see `tutorial_lib.tasks.judge`), each with only the names
it reads, and writes ONE line of JSON to `report_fd`: `{"error": str | None, "tests": [{"values":
[tagged...]} | {"error": str} | {"ok": true}], "rebound": [names the solution rebound]}`.
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
    set_limit(
        resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + 1
    )  # SIGXCPU at the soft limit, SIGKILL at the hard
    set_limit(resource.RLIMIT_FSIZE, payload["max_output_bytes"] + 1)  # stdout, stderr and every file written
    set_limit(resource.RLIMIT_CORE, 0)
    if not payload.get("threads"):  # no pids cgroup bounds them: refused here and by the seccomp filter
        set_limit(resource.RLIMIT_NPROC, 1)
    set_limit(resource.RLIMIT_NOFILE, 256)


def encode(
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
):
    """Tagged plain data for `tutorial_lib.tasks.judge.decode_value`; subclasses of builtins as their builtin
    value. The builtins it uses are bound as defaults when this file is compiled, before the solution's names
    exist, so a solution that rebinds `builtins.isinstance` does not change how honest values are sent (the
    parent trusts none of it anyway)."""
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


_MISSING = object()


def decode(data):
    """The parent's tagged plain data (`tutorial_lib.tasks.judge.decode_value`'s format) as objects: the
    setup's values a test passes to the solution, computed without it."""
    tag, payload = data[0], (data[1] if len(data) == 2 else None)
    if tag == "N":
        return None
    if tag in ("b", "s"):
        return payload
    if tag == "i":
        return int(payload)
    if tag == "f":
        return float(payload)
    if tag == "c":
        return complex(float(payload[0]), float(payload[1]))
    if tag == "y":
        return bytes.fromhex(payload)
    if tag in ("l", "t", "S", "F"):
        return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](decode(item) for item in payload)
    if tag == "d":
        return {decode(key): decode(value) for key, value in payload}
    raise ValueError(f"not plain data: {tag!r}")


class _Watch:
    """The names a test reads that are not the solution's (builtins, standard-library modules and their
    attributes, the setup's names), as they were before the solution ran. `rebound(namespace)` lists
    those the solution has rebound since. The parent never uses these objects (it judges with its own),
    so this only explains a failure; a solution that silences it gains nothing."""

    def __init__(self, watch, modules):
        self.names = [name for name in watch.get("names", [])]
        self.attributes = [tuple(pair) for pair in watch.get("attributes", [])]
        self.modules = modules
        self.builtins = {name: getattr(builtins, name, _MISSING) for name in self.names}
        self.values = {
            (module, attribute): getattr(modules.get(module), attribute, _MISSING)
            for module, attribute in self.attributes
        }

    def rebound(self, namespace):
        found = []
        for name in self.names:
            value = namespace.get(name, _MISSING)
            if value is not _MISSING and value is not self.modules.get(name, _MISSING):
                found.append(name)
            elif getattr(builtins, name, _MISSING) is not self.builtins[name]:
                found.append(f"builtins.{name}")
        for (module, attribute), value in self.values.items():
            if getattr(self.modules.get(module), attribute, _MISSING) is not value:
                found.append(f"{module}.{attribute}")
        return found


def main():
    payload = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    _set_limits(payload)
    sys.stdin = open(os.devnull)
    report_fd, write, dumps = payload["report_fd"], os.write, json.dumps
    report = {"error": None, "tests": [], "rebound": []}
    try:
        modules = {}
        for name in payload.get("modules", []):  # standard-library modules the tests read, before any code
            modules[name] = __import__(name)
        for name in {module for module, _ in payload.get("watch", {}).get("attributes", [])}:
            modules.setdefault(name, __import__(name))
        watch = _Watch(payload.get("watch", {}), modules)
        # The solution's names and the setup's live apart: the solution's functions see only their own
        # globals, and a test's call receives just the names it reads.
        solution = {"__name__": "__solution__", "__builtins__": builtins}
        setup = {"__name__": "__setup__", "__builtins__": builtins}
        setup.update({name: decode(value) for name, value in payload.get("inject", {}).items()})
        stages = [("code", solution)] + ([("setup", setup)] if payload.get("run_setup") else [])
        for stage, namespace in stages:
            try:
                exec(compile(payload[stage], f"<{stage}>", "exec"), namespace)
            except SyntaxError as error:
                report["error"] = f"{stage} has a syntax error: {error.msg} (line {error.lineno})"
                break
            except BaseException as error:  # noqa: BLE001 - everything the code does is a result
                report["error"] = f"{stage} {_describe(error)}"
                break
        rebound = set(watch.rebound(solution))
        if report["error"] is None:
            for index, test in enumerate(payload["tests"], start=1):
                entry = {"skip": True}
                try:
                    if "holes" in test:
                        values = []
                        for hole, reads in zip(test["holes"], test.get("reads") or [[]] * len(test["holes"])):
                            namespace = {"__builtins__": builtins}
                            for name in reads:
                                if name in test.get("solution_names", ()):
                                    if name in solution:
                                        namespace[name] = solution[name]
                                elif name in setup:
                                    namespace[name] = setup[name]
                                elif name in modules:
                                    namespace[name] = modules[name]
                            values.append(encode(eval(compile(hole, f"<test {index}>", "eval"), namespace)))
                        entry = {"values": values}
                    elif "statement" in test:  # counted on the child's word (trust_unjudged_tests)
                        merged = {**setup, **modules, **solution}
                        exec(compile(test["statement"], f"<test {index}>", "exec"), merged)
                        entry = {"ok": True}
                except BaseException as error:  # noqa: BLE001
                    entry = {
                        "error": "failed (AssertionError)"
                        if isinstance(error, AssertionError)
                        else _describe(error)
                    }
                report["tests"].append(entry)
                rebound.update(watch.rebound(solution))
        report["rebound"] = sorted(rebound)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001 - EFBIG once output hit its limit; the parent sees the size
                pass
    finally:
        try:
            data = (dumps(report) + "\n").encode("utf-8")
            while data:
                data = data[write(report_fd, data) :]
        except BaseException:  # noqa: BLE001 - no report is a failure, which the parent reports
            pass
        os._exit(0)  # no interpreter shutdown: atexit handlers of the code must not run


if __name__ == "__main__":
    main()
