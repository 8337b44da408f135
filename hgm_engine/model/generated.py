"""Functions compiled from Python source the engine writes for itself.

The query executor writes its conditions and hop steps as Python source, and the schema
writes its attribute checks (:mod:`hgm_engine.model.schemacheck`): one function instead of a
call per test is what makes them fast. :func:`compile_function` is the one place that turns
such source into a function. Each compiled unit gets its own file name (``<hgm condition
12>``) and its lines go into :mod:`linecache`, so a traceback through generated code shows
the generated line, and ``inspect.getsource`` reads it back.

The :mod:`linecache` entry lives exactly as long as the function: a long-running server
compiling many distinct queries keeps only the entries of the functions its query caches
still hold, and a traceback can only pass through a function that is alive.

>>> import linecache
>>> add = compile_function("def add(x):\\n    return x + step\\n", "add", {"step": 1}, kind="example")
>>> add(2)
3
>>> filename = add.__code__.co_filename
>>> filename.startswith("<hgm example ")
True
>>> linecache.getline(filename, 2)
'    return x + step\\n'
>>> del add
>>> filename in linecache.cache
False
"""

from __future__ import annotations

import gc
import itertools
import linecache
import sys
import weakref
from typing import Any, Callable, Mapping

__all__ = ["compile_function"]

# The number in each file name; ``next`` on a count is atomic, so threads compiling at once
# never share a name.
_serial = itertools.count(1)

# A weak reference to each live generated function -> its file name. When the function goes,
# the reference's callback drops the linecache entry. (A bare weakref costs a fraction of a
# ``weakref.finalize``, and compiling a query makes several functions.)
_registered: dict[weakref.ref, str] = {}


# ``linecache.checkcache`` loops over a copy of the cache's keys and fails with a KeyError for
# an entry that went meanwhile. Two things can free a function in the middle of that loop:
# the cyclic collector (anything that allocates can start a collection) and another thread
# (checkcache's ``os.stat`` lets others run). So a freed function drops its entry at once only
# when no thread is inside checkcache and no collection is running; otherwise the entry is
# queued, and the queue is emptied at the end of a collection or at the next compile, again
# only when no thread is inside checkcache.
_collecting = [False]
_queued: list[str] = []


def _inside_checkcache(code=linecache.checkcache.__code__, current_frames=sys._current_frames) -> bool:
    """Whether any thread is running ``linecache.checkcache``."""
    for frame in current_frames().values():  # (a collection can run with almost nothing on a stack)
        while frame is not None:
            if frame.f_code is code:
                return True
            frame = frame.f_back
    return False


def _on_collection(phase: str, info: dict, collecting=_collecting, queued=_queued) -> None:
    collecting[0] = phase == "start"
    if phase == "stop" and queued and not _inside_checkcache():
        _drop_queued()


gc.callbacks.append(_on_collection)


def _forget(reference: weakref.ref, registered=_registered, cache=linecache.cache, collecting=_collecting,
            queued=_queued, inside_checkcache=_inside_checkcache) -> None:
    # (bound as defaults: a function freed while the interpreter shuts down still finds them)
    filename = registered.pop(reference)
    if collecting[0] or inside_checkcache():
        queued.append(filename)
    else:
        cache.pop(filename, None)


def _drop_queued(cache=linecache.cache, queued=_queued) -> None:
    while queued:
        try:
            filename = queued.pop()
        except IndexError:  # a collection in another thread emptied it after the check
            return
        cache.pop(filename, None)


def compile_function(source: str, name: str, namespace: Mapping[str, Any], *, kind: str) -> Callable:
    """The function ``name`` that ``source`` defines, with ``namespace`` as its globals.

    ``kind`` names what the source is (``condition``, ``step``, ``schema check``); the file
    name a traceback shows is ``<hgm KIND N>``. Constants reach the source through
    ``namespace``, never pasted into it as text.

    >>> double = compile_function("def double(x):\\n    return x * k\\n", "double", {"k": 2}, kind="example")
    >>> double(21)
    42
    """
    if _queued and not _inside_checkcache():
        _drop_queued()
    filename = f"<hgm {kind} {next(_serial)}>"
    scope = dict(namespace)
    exec(compile(source, filename, "exec"), scope)  # noqa: S102 - source the engine wrote
    # Taking the function out of its own globals leaves no reference cycle, so it (and its
    # linecache entry) goes as soon as the last program holding it does.
    function = scope.pop(name)
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    _registered[weakref.ref(function, _forget)] = filename
    return function
