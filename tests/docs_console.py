"""Run the shell sessions of a docs page (its ```` ```console ```` blocks) and compare what each
command prints with what the page shows, as doctest does for Python sessions.

A session is a list of commands, each ``$ COMMAND`` (continued on the next line after a
trailing ``\\``), followed by the lines it prints: standard output and standard error as a
terminal shows them, in the order they were written. ``...`` in the expected output stands for
any text (``doctest.ELLIPSIS``), and times (``2026-11-29T16:23:18Z``, a JSON ``"timestamp"``)
compare equal to any time. All the blocks of a page run in order, in one directory, so a
later block uses the files an earlier one made.

The commands are a small, exact subset of a POSIX shell, run in this process so a page of a
hundred commands takes a second:

- ``hgm ARGS`` runs :func:`hgm_engine.cli.main` (what the console script runs);
- ``echo WORDS``, ``echo $?`` (the exit status of the previous command), ``cat [FILE...]``,
  ``head -n N [FILE]``, ``python3 -m json.tool`` (``--indent N``, ``--compact``),
  ``python3 -`` (the here-document run as a script), ``psql URL -c STATEMENT`` (a statement
  that returns no rows; prints its command tag);
- ``A | B`` pipes, ``> FILE`` and ``< FILE`` redirections, ``<<'EOF'`` here-documents;
- quoting as the shell does (``shlex``); no variables other than ``$?``, no globbing.

A command that exits with a status other than 0 must be followed by ``$ echo $?``, so the page
says every failure's exit code.

>>> session = parse("```console\\n$ echo 'a  b' | cat\\na  b\\n$ cat missing\\n...\\n$ echo $?\\n1\\n```\\n")
>>> [(c.line, c.command, c.want) for c in session]
[(2, "echo 'a  b' | cat", 'a  b\\n'), (4, 'cat missing', '...\\n'), (6, 'echo $?', '1\\n')]
>>> import tempfile
>>> run_page("```console\\n$ echo 'a  b' | cat\\na  b\\n$ cat missing\\n...\\n$ echo $?\\n1\\n```\\n", tempfile.mkdtemp())
[]
"""

from __future__ import annotations

import contextlib
import doctest
import io
import json
import os
import pathlib
import re
import shlex
from typing import Callable

import attrs

FENCE = re.compile(r"^```console[ \t]*$")
HEREDOC = re.compile(r"<<-?\s*'?\"?(\w+)'?\"?")
CHECKER = doctest.OutputChecker()
# Variables that would change what hgm does or prints: the sessions run without them.
CLEARED = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HGM_LLM_MODEL", "HGM_TOKEN", "HGM_STORE_CHECK")


@attrs.frozen
class Command:
    """One ``$`` line of a page: where it is (1-based line), what it runs, the here-document it
    feeds (or None) and what it should print."""

    line: int
    command: str
    heredoc: str | None
    want: str


def parse(text: str) -> list[Command]:
    """The commands of every ```` ```console ```` block of ``text``, in order."""
    commands: list[Command] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not FENCE.match(lines[i]):
            i += 1
            continue
        i += 1
        current: list | None = None  # [line, command, heredoc, want lines]
        while i < len(lines) and not lines[i].startswith("```"):
            line = lines[i]
            if line.startswith("$ "):
                if current:
                    commands.append(Command(current[0], current[1], current[2], _joined(current[3])))
                start, command = i + 1, line[2:]
                while command.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    command = command[:-1] + "\n" + lines[i]
                heredoc = None
                marker = HEREDOC.search(command)
                if marker:
                    body = []
                    i += 1
                    while i < len(lines) and lines[i] != marker.group(1):
                        body.append(lines[i])
                        i += 1
                    heredoc = "".join(f"{b}\n" for b in body)
                    command = command[: marker.start()] + command[marker.end():]
                current = [start, command.strip(), heredoc, []]
            elif current is not None:
                current[3].append(line)
            i += 1
        if current:
            commands.append(Command(current[0], current[1], current[2], _joined(current[3])))
        i += 1
    return commands


def _joined(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


class Shell:
    """The state of a session: its directory, the last exit status, the terminal's text."""

    def __init__(self, directory: str) -> None:
        self.directory = pathlib.Path(directory)
        self.status = 0

    def path(self, name: str) -> pathlib.Path:
        return self.directory / name

    def run(self, command: Command) -> str:
        """What the terminal shows for ``command``; sets :attr:`status`."""
        terminal = io.StringIO()
        stages = _pipeline(command.command)
        data = command.heredoc
        for n, words in enumerate(stages):
            words, stdin_file, stdout_file = _redirections(words)
            if stdin_file is not None:
                data = self.path(stdin_file).read_text(encoding="utf-8")
            last = n == len(stages) - 1
            out = io.StringIO() if (stdout_file is not None or not last) else terminal
            self.status = self.program(words, data or "", out, terminal)
            if stdout_file is not None:
                self.path(stdout_file).write_text(out.getvalue(), encoding="utf-8")
                data = ""
            elif not last:
                data = out.getvalue()
        return terminal.getvalue()

    def program(self, words: list[str], stdin: str, out: io.StringIO, err: io.StringIO) -> int:
        name, args = words[0], words[1:]
        if name == "hgm":
            return self.hgm(args, stdin, out, err)
        if name == "echo":
            out.write(" ".join(str(self.status) if a == "$?" else a for a in args) + "\n")
            return 0
        if name == "cat":
            if not args:
                out.write(stdin)
                return 0
            for file in args:
                try:
                    out.write(self.path(file).read_text(encoding="utf-8"))
                except OSError as exc:
                    err.write(f"cat: {file}: {exc.strerror}\n")
                    return 1
            return 0
        if name == "head" and len(args) in (2, 3) and args[0] == "-n":
            text = self.path(args[2]).read_text(encoding="utf-8") if len(args) == 3 else stdin
            out.write("".join(text.splitlines(keepends=True)[: int(args[1])]))
            return 0
        if name in ("python", "python3") and args == ["-"]:
            return self.python(stdin, out, err)
        if name == "psql" and len(args) == 3 and args[1] == "-c":
            return self.psql(args[0], args[2], out, err)
        if name in ("python", "python3") and args[:2] == ["-m", "json.tool"]:
            indent: int | None = 4
            options = args[2:]
            if options == ["--compact"]:
                out.write(json.dumps(json.loads(stdin), separators=(",", ":")) + "\n")
                return 0
            if options[:1] == ["--indent"]:
                indent = int(options[1])
            out.write(json.dumps(json.loads(stdin), indent=indent) + "\n")
            return 0
        raise ValueError(f"the docs sessions cannot run {name!r}: {' '.join(words)}")

    def python(self, code: str, out: io.StringIO, err: io.StringIO) -> int:
        """``python3 - <<'EOF'``: the here-document run as a script (in this process)."""
        import traceback

        here = os.getcwd()
        try:
            os.chdir(self.directory)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    exec(compile(code, "<stdin>", "exec"), {"__name__": "__main__"})  # noqa: S102 - the page's own example
                except SystemExit as exit_:
                    return exit_.code if isinstance(exit_.code, int) else 1
                except Exception:  # noqa: BLE001 - printed as Python prints it
                    traceback.print_exc()
                    return 1
            return 0
        finally:
            os.chdir(here)

    def psql(self, url: str, statement: str, out: io.StringIO, err: io.StringIO) -> int:
        """``psql URL -c STATEMENT`` for statements that return no rows: prints the command tag."""
        import psycopg

        try:
            with psycopg.connect(url, autocommit=True) as connection:
                cursor = connection.execute(statement)
                out.write(f"{cursor.statusmessage}\n")
            return 0
        except psycopg.Error as exc:
            err.write(f"ERROR:  {str(exc).strip()}\n")
            return 1

    def hgm(self, args: list[str], stdin: str, out: io.StringIO, err: io.StringIO) -> int:
        from hgm_engine.cli import main

        here = os.getcwd()
        saved = {name: os.environ.pop(name) for name in CLEARED if name in os.environ}
        columns = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = "100"  # argparse wraps --help to this width
        stdin_stream = io.StringIO(stdin)
        try:
            os.chdir(self.directory)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _stdin(stdin_stream):
                return main(args)
        finally:
            os.chdir(here)
            os.environ.update(saved)
            if columns is None:
                os.environ.pop("COLUMNS", None)
            else:
                os.environ["COLUMNS"] = columns


@contextlib.contextmanager
def _stdin(stream: io.StringIO):
    import sys

    saved = sys.stdin
    sys.stdin = stream
    try:
        yield
    finally:
        sys.stdin = saved


def _pipeline(command: str) -> list[list[str]]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars="|<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    stages: list[list[str]] = [[]]
    for token in lexer:
        if token == "|":
            stages.append([])
        else:
            stages[-1].append(token)
    return stages


def _redirections(words: list[str]) -> tuple[list[str], str | None, str | None]:
    kept, stdin_file, stdout_file = [], None, None
    i = 0
    while i < len(words):
        if words[i] in (">", "<") and i + 1 < len(words):
            if words[i] == ">":
                stdout_file = words[i + 1]
            else:
                stdin_file = words[i + 1]
            i += 2
            continue
        kept.append(words[i])
        i += 1
    return kept, stdin_file, stdout_file


# Times differ from run to run: an ISO 8601 time (UTC) and a "timestamp" compare as any time.
TIMES = (
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b"), "<time>"),
    (re.compile(r'"timestamp": ?\d+(\.\d+)?'), '"timestamp": <timestamp>'),
)


def _normalized(text: str) -> str:
    """``text`` with its lines' trailing blanks dropped and its times replaced by a mark.

    >>> _normalized('1  2026-11-29T16:23:18Z  me  \\n{"timestamp": 1796126186.75}\\n')
    '1  <time>  me\\n{"timestamp": <timestamp>}\\n'
    """
    for pattern, mark in TIMES:
        text = pattern.sub(mark, text)
    return "".join(line.rstrip() + "\n" for line in text.splitlines())


def run_page(
    text: str, directory: str, *, where: str = "page", substitutions: tuple[tuple[str, str], ...] = ()
) -> list[str]:
    """Run every session of ``text`` in ``directory``; the failures, described (empty: all
    passed). ``substitutions`` are (as on the page, as run) pairs: each is replaced in the
    commands before they run, and back in what they print (a page names a database server
    as ``postgresql://hgm@localhost:5432/memory``; the test's server is elsewhere)."""
    shell = Shell(directory)
    failures: list[str] = []
    commands = parse(text)
    for n, command in enumerate(commands):
        ran = command
        for shown, actual in substitutions:
            ran = attrs.evolve(
                ran,
                command=ran.command.replace(shown, actual),
                heredoc=None if ran.heredoc is None else ran.heredoc.replace(shown, actual),
            )
        try:
            got = shell.run(ran)
            for shown, actual in substitutions:
                got = got.replace(actual, shown)
        except Exception as exc:  # noqa: BLE001 - reported as a failure of this example
            failures.append(f"{where}:{command.line}: $ {command.command}\n  raised {exc!r}")
            continue
        if not CHECKER.check_output(_normalized(command.want), _normalized(got), doctest.ELLIPSIS):
            failures.append(
                f"{where}:{command.line}: $ {command.command}\n--- the page shows\n{command.want}--- it printed\n{got}"
            )
        following = commands[n + 1].command if n + 1 < len(commands) else ""
        if shell.status != 0 and following != "echo $?" and command.command != "echo $?":
            failures.append(f"{where}:{command.line}: $ {command.command}\n  exited {shell.status}; follow it with $ echo $?")
    return failures

