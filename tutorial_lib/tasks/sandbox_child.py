"""The program the sandboxed interpreter runs, stdlib only, after the text of `plain_data` (its encoder and
decoder): `tutorial_lib.tasks.sandbox` hands both to a fresh interpreter inside bubblewrap, with a JSON
payload on stdin: `{"prompt_code", "program", "modules", "holes": [{"source", "reads", "solution_names",
"inputs", "by_name"}], "setup_slice", "watch", "statements", "setup", "exec_filter", "report_fd",
"memory_mb", "cpu_s", "max_output_bytes", "threads"}`.

It sets the resource limits and refuses itself `execve` (before any untrusted line), runs the slice of the
setup whose objects the solution's calls take (`judge.plans.definitions_slice`; rarely any) in a namespace
of its own, then the problem's prompt code and `program` (the solution's code, or in the expected side's
run the setup) in one namespace, evaluates each hole with only the names it reads and the values handed
to it, and writes one line of JSON to `report_fd`: `{"error": str | None, "values": [tagged value, or
["e", why]], "statements": [true or why], "rebound": [names the program rebound]}`. In the solution's run
nothing here is trusted: the solution may rewrite any of it, and the parent only takes values out of the
report.
"""

import builtins
import json
import os
import resource
import sys

_MISSING = object()


def _set_limits(payload):
    def set_limit(kind, soft, hard=None):
        try:
            resource.setrlimit(kind, (soft, soft if hard is None else hard))
        except (ValueError, OSError):  # a stricter hard limit is already in place: keep it
            pass

    cpu_seconds = max(1, int(payload["cpu_s"] + 0.999))
    set_limit(resource.RLIMIT_AS, payload["memory_mb"] * 1024 * 1024)
    set_limit(resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + 1)  # SIGXCPU, then SIGKILL
    set_limit(resource.RLIMIT_FSIZE, payload["max_output_bytes"] + 1)  # stdout, stderr and every file
    set_limit(resource.RLIMIT_CORE, 0)
    if not payload.get("threads"):  # no pids cgroup bounds them: refused here and by the seccomp filter
        set_limit(resource.RLIMIT_NPROC, 1)
    set_limit(resource.RLIMIT_NOFILE, 256)


def _deny_exec(program):
    """Load `program` (`isolation.seccomp.exec_filter`) as a seccomp filter on this process."""
    import ctypes

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    code = ctypes.create_string_buffer(program, len(program))
    libc = ctypes.CDLL(None, use_errno=True)
    loaded = libc.prctl(38, 1, 0, 0, 0) == 0 and (  # PR_SET_NO_NEW_PRIVS, then PR_SET_SECCOMP
        libc.prctl(22, 2, ctypes.byref(Program(len(program) // 8, ctypes.addressof(code))), 0, 0) == 0
    )
    if not loaded:
        raise OSError(ctypes.get_errno(), "the sandbox could not refuse itself execve")


def _describe(error):
    if isinstance(error, MemoryError):
        return "memory limit: MemoryError"
    if isinstance(error, SystemExit):
        return f"called exit({error.code!r})"
    try:
        text = str(error)
    except BaseException:  # noqa: BLE001 - a hostile __str__
        text = ""
    return f"raised {type(error).__name__}: {text}"[:500]


def _watched(watch, namespace, modules):
    """The current value of each name and module attribute the tests read that is not the solution's."""
    found = {}
    for name in watch.get("names", []):
        found[name] = namespace.get(name, _MISSING)
        found[f"builtins.{name}"] = getattr(builtins, name, _MISSING)
    for module, attribute in watch.get("attributes", []):
        found[f"{module}.{attribute}"] = getattr(modules.get(module), attribute, _MISSING)
    return found


def _rebound(before, namespace, modules, watch):
    after = _watched(watch, namespace, modules)
    # `import sys` binds the real module: not a rebinding of the name the test reads.
    return [
        key for key, value in after.items() if value is not before[key] and value is not sys.modules.get(key)
    ]


def _evaluate(hole, namespace, modules, solutions_run, handed, value=_MISSING):
    scope = {"__builtins__": builtins}
    if value is not _MISSING:
        scope["__judge_value"] = value
    for name, value in hole.get("inputs", {}).items():
        scope[name] = decode_value(value)  # noqa: F821 - from plain_data's text, run before this file
    for name, setup_name in hole.get("by_name", {}).items():
        scope[name] = handed[setup_name]
    for name in hole["reads"]:
        if name in hole["solution_names"]:
            if name not in namespace:
                raise NameError(f"the solution does not define `{name}`")
            scope[name] = namespace[name]
        elif name in namespace and not solutions_run:
            scope[name] = namespace[name]
        elif name in modules:
            scope[name] = modules[name]
    return eval(compile(hole["source"], "<test>", "eval"), scope)


def main():
    payload = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    _set_limits(payload)
    if payload.get("exec_filter"):
        _deny_exec(bytes.fromhex(payload["exec_filter"]))
    sys.stdin = open(os.devnull)
    report_fd, write, dumps = payload["report_fd"], os.write, json.dumps
    encode = encode_value  # noqa: F821 - from plain_data's text
    report = {"error": None, "values": [], "statements": [], "rebound": []}
    solutions_run = "watch" in payload
    try:
        watch = payload.get("watch", {})
        names = set(payload.get("modules", [])) | {module for module, _ in watch.get("attributes", [])}
        modules = {name: __import__(name) for name in sorted(names)}  # before any code
        handed = {"__name__": "__setup__", "__builtins__": builtins}  # the setup's objects a call takes
        exec(compile(payload.get("setup_slice", ""), "<setup>", "exec"), handed)
        namespace = {"__name__": "__solution__", "__builtins__": builtins}
        before = None
        for stage in ("prompt_code", "program"):
            label = {"prompt_code": "prompt code", "program": "code" if solutions_run else "setup"}[stage]
            if stage == "program":
                before = _watched(watch, namespace, modules)
            try:
                exec(compile(payload.get(stage, ""), f"<{label}>", "exec"), namespace)
            except SyntaxError as error:
                report["error"] = f"{label} has a syntax error: {error.msg} (line {error.lineno})"
                break
            except BaseException as error:  # noqa: BLE001 - everything the code does is a result
                report["error"] = f"{label} {_describe(error)}"
                break
        if report["error"] is None:
            for hole in payload["holes"]:
                try:
                    value = _evaluate(hole, namespace, modules, solutions_run, handed)
                    tagged = encode(value)
                    if tagged[0] == "x" and "then" in hole:  # not plain: apply the test's part to it here
                        then = {"source": hole["then"], "reads": hole["then_reads"], "solution_names": []}
                        then["inputs"] = hole["then_inputs"]
                        try:
                            tagged = ["a", encode(_evaluate(then, {}, modules, False, handed, value))]
                        except BaseException as error:  # noqa: BLE001
                            tagged = ["a", ["e", _describe(error)]]
                    report["values"].append(tagged)
                except BaseException as error:  # noqa: BLE001
                    report["values"].append(["e", _describe(error)])
            if payload.get("statements"):  # counted on the child's word (trust_unjudged_tests)
                setup = {"__builtins__": builtins}
                exec(compile(payload.get("setup", ""), "<setup>", "exec"), setup)
                for statement in payload["statements"]:
                    try:
                        exec(compile(statement, "<test>", "exec"), {**setup, **modules, **namespace})
                        report["statements"].append(True)
                    except BaseException as error:  # noqa: BLE001
                        failed = isinstance(error, AssertionError)
                        report["statements"].append("failed (AssertionError)" if failed else _describe(error))
            report["rebound"] = _rebound(before, namespace, modules, watch)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001 - EFBIG once output hit its limit; the parent sees the size
                pass
    finally:
        try:
            data = (dumps(report) + "\n").encode("utf-8", "backslashreplace")
            while data:
                data = data[write(report_fd, data) :]
        except BaseException:  # noqa: BLE001 - no report is a failure, which the parent reports
            pass
        os._exit(0)  # no interpreter shutdown: atexit handlers of the code must not run


if __name__ == "__main__":
    main()
