"""The processes below a pid, read from /proc: what the sandbox tests look for after a run."""

from pathlib import Path


def descendants(pid: int) -> set:
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        try:
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found.add(child)
            todo.append(child)
    return found
