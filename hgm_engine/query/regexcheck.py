"""Regular expressions checked before they are compiled, in the dialect queries run on.

Queries match with the :mod:`regex` module. Two things about a pattern must be known before
it reaches ``regex.compile``:

- **its size**: ``regex`` expands a counted repetition into copies of its body when it
  compiles (``a{5000000}`` took 1.4 GB), so the number of items the pattern expands to is
  estimated first and a pattern over the limit is never compiled;
- **its shape**: a quantifier inside another (``(a+)+``), an alternation inside an unbounded
  quantifier (``(a|aa)*``), back-references, recursion, fuzzy matching, POSIX matching and
  many unbounded quantifiers (``.*a.*b.*c...``) can backtrack for a very long time.

Both are read by a small scanner of the ``regex`` syntax written here (escapes, classes,
groups of every kind, inline flags, ``{m,n}`` and fuzzy ``{e<=n}``), not by the private
parser of another engine. Where the scanner is unsure it errs towards a larger size or a
hazard, never the other way.

>>> regex_problem("^(Mon|Tue)day$") is None
True
>>> regex_problem("a{5000000}")[:2]
('limit-exceeded', "regular expression 'a{5000000}' expands to 5,000,001 items when compiled; at most 10,000 (Limits.max_regex_size)")
>>> regex_hazard("(a+)+$")
'a quantifier inside another quantifier'
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import regex

from hgm_engine.query.limits import DEFAULT_LIMITS, Limits

__all__ = ["regex_problem", "regex_hazard", "regex_size", "compile_regex", "RegexShape"]

_SIZE_CAP = 10**12  # sizes are capped here: only "over the limit" matters past it
_FLAG_LETTERS = frozenset("abefiLmprsuwxV01")
_SPACE = frozenset(" \t\n\r\f\v")


class RegexShape:
    """What the scanner learned about a pattern: ``size`` (items after expanding counted
    repetitions, an upper estimate), ``unbounded`` (how many unbounded quantifiers),
    ``hazard`` (the first shape that can backtrack without bound, or None), ``unsure`` (why
    the size estimate cannot be trusted, or None) and where each was found (0-based offsets
    into the pattern).

    >>> shape = RegexShape.of(r"\\d{4}-\\d{2}")
    >>> (shape.size, shape.unbounded, shape.hazard)
    (9, 0, None)
    """

    __slots__ = ("size", "unbounded", "hazard", "hazard_at", "unbounded_at", "unsure", "unsure_at")

    def __init__(self) -> None:
        self.size = 0
        self.unbounded = 0
        self.hazard: str | None = None
        self.hazard_at = 0
        self.unbounded_at: list[int] = []
        self.unsure: str | None = None  # why the size cannot be trusted, when it cannot
        self.unsure_at = 0

    @classmethod
    def of(cls, pattern: str) -> "RegexShape":
        """Scan ``pattern`` (any string: what is not valid is left to ``regex.compile``)."""
        return _Scanner(pattern).run()


class _Scanner:
    """One pass over the pattern, groups on an explicit stack (no recursion).

    Each item of a sequence is ``(size, repeats_inside, alternation_inside)``: its expanded
    size, whether a quantifier that repeats or is optional sits inside it, and whether an
    alternation does."""

    def __init__(self, pattern: str):
        self.p = pattern
        self.n = len(pattern)
        self.shape = RegexShape()
        self.verbose = False

    def hazard(self, why: str, at: int) -> None:
        if self.shape.hazard is None:
            self.shape.hazard, self.shape.hazard_at = why, at

    def run(self) -> RegexShape:
        p, n = self.p, self.n
        self._flags()
        # frames: [alternatives (lists of items)]; the bottom frame is the whole pattern
        frames: list[list[list[tuple[int, bool, bool]]]] = [[[]]]
        pos = 0
        while pos < n:
            ch = p[pos]
            if self.verbose and ch in _SPACE:
                pos += 1
                continue
            if self.verbose and ch == "#":
                end = p.find("\n", pos)
                pos = n if end < 0 else end + 1
                continue
            sequence = frames[-1][-1]
            if ch == "\\":
                pos = self._escape(pos, sequence)
            elif ch == "[":
                pos = self._class(pos)
                sequence.append((1, False, False))
            elif ch == "(":
                pos, opened = self._group(pos, sequence)
                if opened:
                    frames.append([[]])
            elif ch == ")":
                pos += 1
                if len(frames) > 1:
                    sequence_item = _close(frames.pop())
                    frames[-1][-1].append(sequence_item)
                else:
                    sequence.append((1, False, False))  # unbalanced: regex.compile says so
            elif ch == "|":
                frames[-1].append([])
                pos += 1
            elif ch in "*+?":
                low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[ch]
                pos = self._quantify(sequence, low, high, pos, pos + 1)
            elif ch == "{":
                pos = self._brace(pos, sequence)
            else:
                sequence.append((1, False, False))
                pos += 1
        while len(frames) > 1:  # unclosed groups: regex.compile reports them
            item = _close(frames.pop())
            frames[-1][-1].append(item)
        self.shape.size = min(_close(frames[0])[0] - 1, _SIZE_CAP)
        return self.shape

    # -- flags -------------------------------------------------------------------------

    def _flags(self) -> None:
        """Verbose mode, POSIX matching and the fuzzy-matching flags, read first.

        Verbose mode (``(?x)``) changes what the rest of the pattern means (spaces and
        ``#`` comments are skipped), so the scanner follows it only when it is certain: a
        leading global flag group. A verbose flag anywhere else (scoped, turned off, in the
        middle) could hide part of the pattern from the estimate, so the pattern is refused."""
        p = self.p
        start = 0
        while True:
            at = p.find("(?", start)
            if at < 0:
                return
            end = at + 2
            while end < len(p) and (p[end] in _FLAG_LETTERS or p[end] == "-"):
                end += 1
            flags = p[at + 2 : end]
            closer = p[end] if end < len(p) else ""
            if flags and closer in (")", ":"):
                on = flags.split("-")[0]
                if "x" in flags:
                    leading = at == 0 and closer == ")" and "-" not in flags
                    if leading:
                        self.verbose = True
                    elif self.shape.unsure is None:
                        self.shape.unsure = "a verbose flag (?x) is taken only as the pattern's first group"
                        self.shape.unsure_at = at
                if "p" in on:
                    self.hazard("POSIX matching (?p)", at)
                if "e" in on or "b" in on:
                    self.hazard("fuzzy matching", at)
            start = at + 2

    # -- atoms ------------------------------------------------------------------------

    def _escape(self, pos: int, sequence: list) -> int:
        p, n = self.p, self.n
        if pos + 1 >= n:
            sequence.append((1, False, False))
            return n
        ch = p[pos + 1]
        end = pos + 2
        if ch.isdigit():
            digits = end
            while digits < n and digits < pos + 4 and p[digits].isdigit():
                digits += 1
            run = p[pos + 1 : digits]
            if ch == "0" or (len(run) == 3 and all(c in "01234567" for c in run)):
                end = digits  # an octal escape: one character
            else:
                self.hazard("a back-reference", pos)
                end = pos + 1 + min(2, len(run))
        elif ch == "g" and end < n and p[end] == "<":
            self.hazard("a back-reference", pos)
            close = p.find(">", end)
            end = n if close < 0 else close + 1
        elif ch in "xNpPu" and end < n and p[end] == "{":
            close = p.find("}", end)
            end = n if close < 0 else close + 1
        sequence.append((1, False, False))
        return end

    def _class(self, pos: int) -> int:
        """The end of a character class ``[...]`` (one item, however long)."""
        p, n = self.p, self.n
        i = pos + 1
        if i < n and p[i] == "^":
            i += 1
        if i < n and p[i] == "]":
            i += 1  # a leading ']' is a literal
        while i < n:
            ch = p[i]
            if ch == "\\":
                i += 2
            elif ch == "[" and i + 1 < n and p[i + 1] == ":":
                close = p.find(":]", i + 2)
                i = n if close < 0 else close + 2
            elif ch == "]":
                return i + 1
            else:
                i += 1
        return n

    def _group(self, pos: int, sequence: list) -> tuple[int, bool]:
        """Open a group; ``(end, True)`` when a group starts, ``(end, False)`` when the
        parenthesis was a whole item (a comment, flags, a reference)."""
        p, n = self.p, self.n
        if pos + 1 >= n or p[pos + 1] != "?":
            return pos + 1, True
        i = pos + 2
        head = p[i] if i < n else ""
        if head == "#":  # (?#comment)
            close = p.find(")", i)
            return (n if close < 0 else close + 1), False
        if head in ":>|=!":
            return i + 1, True
        if head == "<" and i + 1 < n and p[i + 1] in "=!":
            return i + 2, True
        if head == "P" and i + 1 < n and p[i + 1] in "=>":
            self.hazard("a back-reference" if p[i + 1] == "=" else "a recursive pattern", pos)
            return self._skip_group(i), False
        if head in ("<", "'") or (head == "P" and i + 1 < n and p[i + 1] == "<"):
            close = p.find(">" if head != "'" else "'", i + 2)
            return (n if close < 0 else close + 1), True
        if head == "(":
            self.hazard("a conditional group", pos)
            return i, True
        if head in "&R+-0123456789" and not self._is_flag_group(i):
            self.hazard("a recursive pattern", pos)
            return self._skip_group(i), False
        # inline flags: (?flags) is an item of nothing; (?flags:...) opens a group
        j = i
        while j < n and (p[j] in _FLAG_LETTERS or p[j] == "-"):
            j += 1
        if j < n and p[j] == ")":
            return j + 1, False
        if j < n and p[j] == ":":
            return j + 1, True
        return i, True  # something regex.compile will refuse

    def _is_flag_group(self, i: int) -> bool:
        p, n = self.p, self.n
        j = i
        while j < n and (p[j] in _FLAG_LETTERS or p[j] == "-"):
            j += 1
        return j > i and j < n and p[j] in "):" and not p[i:j].lstrip("-").isdigit()

    def _skip_group(self, i: int) -> int:
        close = self.p.find(")", i)
        return self.n if close < 0 else close + 1

    # -- quantifiers ------------------------------------------------------------------

    def _brace(self, pos: int, sequence: list) -> int:
        """``{m}``, ``{m,}``, ``{,n}``, ``{m,n}`` (a quantifier), ``{e<=2}`` (fuzzy), or a
        literal ``{``."""
        p = self.p
        close = p.find("}", pos + 1)
        if close < 0:
            sequence.append((1, False, False))
            return pos + 1
        body = p[pos + 1 : close]
        if self.verbose:
            body = "".join(c for c in body if c not in _SPACE)
        low_text, comma, high_text = body.partition(",")
        if (low_text.isdigit() or (comma and not low_text)) and (high_text.isdigit() or not high_text) and body:
            if low_text.isascii() and high_text.isascii():
                low = int(low_text) if low_text else 0
                high = None if (comma and not high_text) else int(high_text or low_text)
                return self._quantify(sequence, low, high, pos, close + 1)
        if body and any(c in body for c in "eids") and set(body) <= set("eids0123456789<=+, "):
            self.hazard("fuzzy matching", pos)
            return close + 1
        sequence.append((1, False, False))
        return pos + 1

    def _quantify(self, sequence: list, low: int, high: int | None, at: int, end: int) -> int:
        p, n = self.p, self.n
        if end < n and p[end] in "?+":
            end += 1  # lazy or possessive
        if not sequence:
            return end  # nothing to repeat: regex.compile reports it
        size, repeats_inside, alternation_inside = sequence.pop()
        repeats = high is None or high > 1
        if repeats and repeats_inside:
            self.hazard("a quantifier inside another quantifier", at)
        if high is None:
            if alternation_inside:
                self.hazard("an alternation inside an unbounded quantifier", at)
            self.shape.unbounded += 1
            self.shape.unbounded_at.append(at)
        expanded = min(size * max(low, 1) + 1, _SIZE_CAP)
        sequence.append((expanded, repeats_inside or repeats or low != high, alternation_inside))
        return end


def _close(alternatives: list[list[tuple[int, bool, bool]]]) -> tuple[int, bool, bool]:
    size = 1
    repeats = False
    # One character or class per branch (a|b|[cd]) is a set, not an alternation that can
    # match one text in several ways.
    alternation = len(alternatives) > 1 and not all(seq == [(1, False, False)] for seq in alternatives)
    for sequence in alternatives:
        for item_size, item_repeats, item_alternation in sequence:
            size += item_size
            repeats = repeats or item_repeats
            alternation = alternation or item_alternation
    return min(size, _SIZE_CAP), repeats, alternation


def regex_size(pattern: str) -> int:
    """The number of items ``pattern`` expands to when compiled (an upper estimate).

    >>> regex_size("a{1000}"), regex_size("(?:ab){10}"), regex_size("a{1,65535}")
    (1001, 31, 2)
    """
    return RegexShape.of(pattern).size


def regex_hazard(pattern: str, max_unbounded: int = DEFAULT_LIMITS.max_regex_unbounded) -> str | None:
    """Why ``pattern`` could backtrack for a very long time (None when its shape cannot).

    The shapes refused: a quantifier inside another (``(a+)+``, ``(a?){30}``), an alternation
    inside an unbounded quantifier (``(a|ab)*``), back-references, recursion, conditional
    groups, fuzzy and POSIX matching, a verbose flag that is not the first group, and more
    than ``max_unbounded`` unbounded quantifiers (``.*a.*b.*c...``, polynomial blow-up).

    >>> regex_hazard("^(Mon|Tue)day$") is None, regex_hazard(r"book.*hotel") is None
    (True, True)
    >>> regex_hazard("(a|aa)*b")
    'an alternation inside an unbounded quantifier'
    >>> regex_hazard(r"(\\p{L}+)+$")  # syntax only the regex module knows
    'a quantifier inside another quantifier'
    >>> regex_hazard(".*a.*b.*c", max_unbounded=2)
    'more than 2 unbounded quantifiers'
    """
    shape = RegexShape.of(pattern)
    if shape.hazard is not None:
        return shape.hazard
    if shape.unbounded > max_unbounded:
        return f"more than {max_unbounded} unbounded quantifiers"
    return None


def regex_problem(pattern: str, limits: Limits = DEFAULT_LIMITS, *, size_left: int | None = None) -> tuple[str, str, int] | None:
    """What is wrong with ``pattern`` as the right side of ``=~``, checked in this order and
    before anything is compiled that could be large: ``(category, message, offset)``, or None
    when it is fine. ``offset`` is where in the pattern (0-based).

    - longer than ``limits.max_regex_length`` characters: ``invalid-regex``;
    - written so that its size cannot be estimated (a verbose flag after the start):
      ``limit-exceeded``;
    - expands to more than ``limits.max_regex_size`` items (or than ``size_left``, what the
      rest of the query left of that budget): ``limit-exceeded``;
    - does not compile: ``invalid-regex``;
    - a shape that can backtrack without bound (:func:`regex_hazard`, with
      ``limits.max_regex_unbounded``): ``limit-exceeded``.

    >>> regex_problem("(")[0]
    'invalid-regex'
    >>> regex_problem("(a|aa)+$")
    ('limit-exceeded', "regular expression '(a|aa)+$' is refused: an alternation inside an unbounded quantifier can backtrack without bound", 6)
    """
    if len(pattern) > limits.max_regex_length:
        return (
            "invalid-regex",
            f"regular expression longer than {limits.max_regex_length} characters (Limits.max_regex_length)",
            limits.max_regex_length,
        )
    shape = RegexShape.of(pattern)
    if shape.unsure is not None:
        return "limit-exceeded", f"regular expression {pattern[:80]!r} is refused: {shape.unsure}", shape.unsure_at
    budget = limits.max_regex_size if size_left is None else min(size_left, limits.max_regex_size)
    if shape.size > budget:
        if size_left is not None and size_left < limits.max_regex_size:
            whole = f"the query's regular expressions together may expand to at most {limits.max_regex_size:,} (Limits.max_regex_size)"
        else:
            whole = f"at most {limits.max_regex_size:,} (Limits.max_regex_size)"
        shown = pattern if len(pattern) <= 40 else pattern[:37] + "..."
        return ("limit-exceeded", f"regular expression {shown!r} expands to {shape.size:,} items when compiled; {whole}", 0)
    try:
        compile_regex(pattern, shape.size)
    except regex.error as exc:
        return "invalid-regex", f"regular expression {pattern!r}: {exc}", getattr(exc, "pos", None) or 0
    hazard = shape.hazard
    at = shape.hazard_at
    if hazard is None and shape.unbounded > limits.max_regex_unbounded:
        hazard = f"more than {limits.max_regex_unbounded} unbounded quantifiers"
        at = shape.unbounded_at[limits.max_regex_unbounded]
    if hazard is not None:
        shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
        return "limit-exceeded", f"regular expression {shown!r} is refused: {hazard} can backtrack without bound", at
    return None


# -- compiled patterns ---------------------------------------------------------------------------

# Compiled patterns shared by every query, least recently used dropped first, bounded by count
# and by their total size (``regex``'s own cache keeps 500 patterns of any size: it is not used).
_CACHE_ENTRIES = 256
_CACHE_SIZE = 200_000
_compiled: OrderedDict[str, tuple[Any, int]] = OrderedDict()
_compiled_size = 0
_compiled_lock = threading.Lock()


def compile_regex(pattern: str, size: int | None = None):
    """``regex.compile(pattern)`` through a small shared cache bounded in entries and size.
    Check the pattern first (:func:`regex_problem`): this compiles whatever it is given.

    >>> compile_regex("b+").search("abbc").group()
    'bb'
    >>> compile_regex("b+") is compile_regex("b+")
    True
    """
    global _compiled_size
    with _compiled_lock:
        entry = _compiled.get(pattern)
        if entry is not None:
            _compiled.move_to_end(pattern)
            return entry[0]
    compiled = regex.compile(pattern, cache_pattern=False)
    if size is None:
        size = RegexShape.of(pattern).size
    if size <= _CACHE_SIZE // 4:
        with _compiled_lock:
            if pattern not in _compiled:
                _compiled[pattern] = (compiled, size)
                _compiled_size += size
                while len(_compiled) > _CACHE_ENTRIES or _compiled_size > _CACHE_SIZE:
                    _, (_, dropped) = _compiled.popitem(last=False)
                    _compiled_size -= dropped
    return compiled
