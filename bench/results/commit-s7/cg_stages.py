"""Instructions per stage of a durable 10-op commit (issue 15, seventh session), by callgrind.

Every stage of the commit is called through its own C trampoline (a CPython builtin that calls
back into Python and that hgm's commit path never uses: ``itertools.starmap``, ``takewhile``, ...),
and callgrind dumps a profile part when each trampoline is entered and left. Attributing each
part to the innermost open stage gives exclusive counts; a stage's inclusive count adds its
children's. Within each part, the calls into the ``sqlite3`` module (``_pysqlite_query_execute``,
inclusive: SQLite's C work and the module's binding) and into the json C encoder
(``encoder_call``) are summed, so each stage splits into SQLite / JSON / the rest (hgm's Python
and the interpreter's C under it).

    PYTHONHASHSEED=0 valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \
        --callgrind-out-file=/tmp/cgs/cg.out $(python bench/results/commit-s7/cg_stages.py --dump-flags) \
        .venv/bin/python bench/results/commit-s7/cg_stages.py TREE --nodes 10000 --commits 50 --graph-dir G
    python bench/results/commit-s7/cg_stages.py --report /tmp/cgs/cg.out --commits 50

TREE is the source tree whose hgm_engine runs (this one, or /tmp/base).
"""

from __future__ import annotations

import argparse
import collections
import contextvars
import functools
import gc
import glob
import itertools
import operator
import pathlib
import re
import sys

_MARK = sys.getrecursionlimit  # its dump-after opens a stage (callgrind loses some dump-befores)


def _via(kind):
    def call(thunk):
        box = []
        if kind == "accumulate_next":  # its first step calls nothing: taken before the stage opens
            it = itertools.accumulate([None, None], lambda a, b: box.append(thunk()))
            next(it)
            _MARK()
            next(it)
            return box[0]
        _MARK()
        if kind == "starmap_next":
            return next(itertools.starmap(thunk, [()]))
        if kind == "takewhile_next":
            next(itertools.takewhile(lambda _: box.append(thunk()) or True, [None]))
        elif kind == "dropwhile_next":
            next(itertools.dropwhile(lambda _: box.append(thunk()), [None]))
        elif kind == "filterfalse_next":
            next(itertools.filterfalse(lambda _: box.append(thunk()), [None]))
        elif kind == "groupby_next":
            next(itertools.groupby([None], key=lambda _: box.append(thunk())))
        elif kind == "calliter_iternext":
            next(iter(lambda: box.append(thunk()), 0))
        elif kind == "partial_vectorcall":
            return functools.partial(thunk)()
        elif kind == "defdict_missing":
            collections.defaultdict(lambda: box.append(thunk()))[0]
        elif kind == "methodcaller_call":
            return operator.methodcaller("__call__")(thunk)
        elif kind == "context_run":
            return contextvars.Context().run(thunk)
        elif kind == "_operator_call":
            return operator.call(thunk)
        elif kind == "keyobject_richcompare":
            key = functools.cmp_to_key(lambda a, b: box.append(thunk()) or 0)
            key(None) < key(None)
        elif kind == "sys_call_tracing":
            return sys.call_tracing(thunk, ())
        else:
            raise ValueError(kind)
        return box[0]

    return call


STAGES = {
    "parse": "starmap_next",
    "BEGIN IMMEDIATE": "context_run",
    "catch-up": "sys_call_tracing",
    "build (ops -> overlay)": "takewhile_next",
    "rules hook": "dropwhile_next",
    "net changes": "filterfalse_next",
    "orphan check": "groupby_next",
    "constraints": "calliter_iternext",
    "append (journal row + state rows)": "partial_vectorcall",
    "  journal text": "defdict_missing",
    "  state rows": "methodcaller_call",
    "node index hook": "accumulate_next",
    "COMMIT": "_operator_call",
    "apply to graph": "keyobject_richcompare",
}


def wrap(fn, kind):
    through = _via(kind)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return through(lambda: fn(*args, **kwargs))

    return wrapper


def run(tree: str, nodes: int, commits: int, graph_dir: pathlib.Path) -> None:
    sys.path.insert(0, tree)
    sys.path.insert(1, str(pathlib.Path(__file__).resolve().parents[3]))  # this tree's bench/
    import hgm_engine.memory as memory_module
    import hgm_engine.model.overlay as overlay_module
    import hgm_engine.store.sqlite as sqlite_module
    import hgm_engine.txn.commit as commit_module
    import hgm_engine.txn.sync as sync_module
    from bench import commit_stages, txn_bench

    assert memory_module.__file__.startswith(str(pathlib.Path(tree).resolve())), memory_module.__file__
    graph_dir.mkdir(parents=True, exist_ok=True)
    memory = commit_stages.open_copy(nodes, graph_dir)
    workload = txn_bench.Workload(memory.graph, seed=0)
    docs = [workload.next() for _ in range(commits + 20)]
    for doc in docs[:20]:
        assert memory.apply(doc).committed
    store_class = sqlite_module.SQLiteStore
    for owner, name, label in [
        (memory_module, "parse_transaction", "parse"),
        (sync_module.MemoryState, "catch_up", "catch-up"),
        (commit_module.CommitPipeline, "_build", "build (ops -> overlay)"),
        (overlay_module.GraphOverlay, "changes", "net changes"),
        (commit_module, "orphan_violations", "orphan check"),
        (store_class, "append", "append (journal row + state rows)"),
        (store_class, "_journal_row", "  journal text"),
        (store_class, "_apply_state", "  state rows"),
        (sync_module.MemoryState, "_apply_commits", "apply to graph"),
    ]:
        setattr(owner, name, wrap(getattr(owner, name), STAGES[label]))
    checker = memory._pipeline.checker  # noqa: SLF001
    checker.check = wrap(checker.check, STAGES["constraints"])
    memory.commit_hooks[:] = [wrap(h, STAGES["rules hook"]) for h in memory.commit_hooks]
    memory.store_hooks[:] = [wrap(h, STAGES["node index hook"]) for h in memory.store_hooks]
    original_write = store_class.write
    begin, end = _via(STAGES["BEGIN IMMEDIATE"]), _via(STAGES["COMMIT"])

    class Write:
        def __init__(self, store):
            self.cm = original_write(store)

        def __enter__(self):
            return begin(self.cm.__enter__)

        def __exit__(self, *exc):
            return end(lambda: self.cm.__exit__(*exc))

    store_class.write = lambda self: Write(self)
    gc.collect()
    gc.disable()
    functools.reduce(lambda _, doc: memory.apply(doc), docs[20:], None)
    print(f"{commits} commits, t={memory.t}")


_CALLS_TO = ("_pysqlite_query_execute", "encoder_call")


def parse_part(path: str, names: dict) -> tuple[str, int, dict]:
    """(trigger, total, {callee: inclusive}) of one dump part."""
    trigger, total, calls = "", 0, collections.Counter()
    pending = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("desc: Trigger:"):
                trigger = line.split(":", 2)[2].strip()
            elif line.startswith("summary:"):
                total = int(line.split()[1])
            elif line.startswith(("fn=", "cfn=", "cfi=", "cob=", "fl=", "fi=", "fe=", "ob=")):
                m = re.match(r"(\w+)=\((\d+)\)(?: (.*))?", line.rstrip("\n"))
                if m:
                    key, ident, name = m.group(1), m.group(2), m.group(3)
                    space = "fn" if key in ("fn", "cfn") else key
                    if name is not None:
                        names[(space, ident)] = name
                    if key == "cfn":
                        pending = names.get(("fn", ident), "")
            elif line.startswith("calls="):
                continue
            elif pending is not None and line[:1].isdigit() or (pending is not None and line[:1] in "+-*"):
                fields = line.split()
                if len(fields) >= 2:
                    for wanted in _CALLS_TO:
                        if pending == wanted or pending.endswith(":" + wanted) or pending.split("'")[0] == wanted:
                            calls[wanted] += int(fields[1])
                pending = None
    return trigger, total, calls


def report(out: str, commits: int) -> None:
    parts = sorted(glob.glob(out + ".*"), key=lambda p: int(p.rsplit(".", 1)[1])) + [out]
    by_kind = {kind: label for label, kind in STAGES.items()}
    rest = "rest (locks, report, Commit, listeners, glue)"
    excl: dict = collections.defaultdict(collections.Counter)
    parent: dict = {}
    stack: list[tuple[collections.Counter, set]] = []  # the open stages, innermost last
    names: dict = {}
    started = False  # the triggers also fire outside the collected commits (imports, warm-up, close)
    for path in parts:
        trigger, total, calls = parse_part(path, names)
        started = started or total > 0
        if not started:
            continue
        here = stack[-1][0] if stack else excl[rest]
        here["total"] += total
        here.update(calls)
        m = re.match(r"--dump-after=(\S+)", trigger)
        if not m:
            continue
        if m.group(1) == "sys_getrecursionlimit":  # a stage opens
            stack.append((collections.Counter(), set()))
        elif stack:  # the innermost one closes: now it is known which
            counts, children = stack.pop()
            label = by_kind[m.group(1)]
            excl[label].update(counts)
            for child in children:
                parent[child] = label
            if stack:
                stack[-1][1].add(label)
    assert not any(frame[0]["total"] for frame in stack), stack
    incl = {k: collections.Counter(v) for k, v in excl.items()}
    for label in list(excl):
        p = parent.get(label)
        while p is not None:
            incl[p].update(excl[label])
            p = parent.get(p)
    grand = sum(v["total"] for v in excl.values())
    print(f"total {grand / commits / 1e6:.3f} M instructions per commit ({grand} over {commits})")
    print("| stage | k instr./commit | % | SQLite (sqlite3 module + C) | JSON encoder (C) | hgm Python + interpreter |")
    print("|---|---:|---:|---:|---:|---:|")
    order = list(STAGES) + ["rest (locks, report, Commit, listeners, glue)"]
    for label in order:
        if label not in incl:
            continue
        c = incl[label]
        sq, js = c["_pysqlite_query_execute"], c["encoder_call"]
        rest = c["total"] - sq - js
        print(
            f"| {label} | {c['total'] / commits / 1e3:.0f} | {100 * c['total'] / grand:.1f}% | "
            f"{sq / commits / 1e3:.0f} | {js / commits / 1e3:.0f} | {rest / commits / 1e3:.0f} |"
        )
    sq = sum(v["_pysqlite_query_execute"] for v in excl.values())
    js = sum(v["encoder_call"] for v in excl.values())
    print(f"| all | {grand / commits / 1e3:.0f} | 100% | {sq / commits / 1e3:.0f} ({100 * sq / grand:.1f}%) | "
          f"{js / commits / 1e3:.0f} ({100 * js / grand:.1f}%) | {(grand - sq - js) / commits / 1e3:.0f} ({100 * (grand - sq - js) / grand:.1f}%) |")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("tree", nargs="?")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--commits", type=int, default=50)
    parser.add_argument("--graph-dir", type=pathlib.Path)
    parser.add_argument("--dump-flags", action="store_true")
    parser.add_argument("--report")
    args = parser.parse_args()
    if args.dump_flags:
        print(" ".join(["--dump-after=sys_getrecursionlimit"] + [f"--dump-after={k}" for k in STAGES.values()]))
    elif args.report:
        report(args.report, args.commits)
    else:
        run(args.tree, args.nodes, args.commits, args.graph_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
