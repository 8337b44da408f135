"""A small binary container for the path index's saved state: a JSON header and numpy arrays.

Layout: the magic line ``hgm-packed/1\\n``, the header's length (8 bytes, little endian), the
header (UTF-8 JSON, which lists every array by name with its dtype, length and offset), then the
arrays' raw bytes, each starting on an 8-byte boundary. Reading makes *writable* arrays that
share one buffer, so a large state loads without copying array by array. Every malformation
(bad magic, a truncated buffer, an array past the end, an unknown dtype) is a
:class:`~hgm_engine.errors.LocalizationError` of category ``bad-state``.

>>> import numpy
>>> data = pack({"size": 2}, {"ids": numpy.arange(2, dtype=numpy.int32)})
>>> header, arrays = unpack(data)
>>> header["size"], arrays["ids"].tolist()
(2, [0, 1])
"""

from __future__ import annotations

import json
import struct
from typing import Any, Mapping

from hgm_engine.errors import LocalizationError

__all__ = ["pack", "unpack", "MAGIC"]

MAGIC = b"hgm-packed/1\n"
_DTYPES = ("int8", "int32", "int64", "uint8", "float32", "float64", "bool")


def _bad(message: str) -> LocalizationError:
    return LocalizationError.single("bad-state", f"saved path index: {message}")


def pack(header: Mapping[str, Any], arrays: Mapping[str, Any]) -> bytes:
    """``header`` (JSON-able) and named 1-d numpy ``arrays`` as one ``bytes``."""
    import numpy

    layout = {}
    chunks = []
    offset = 0
    for name, array in arrays.items():
        array = numpy.ascontiguousarray(array)
        if array.dtype.name not in _DTYPES or array.ndim != 1:
            raise ValueError(f"cannot pack {name}: {array.dtype} of {array.ndim} dimensions")
        raw = array.tobytes()
        layout[name] = [array.dtype.name, int(array.shape[0]), offset]
        chunks.append(raw)
        pad = (-len(raw)) % 8
        if pad:
            chunks.append(b"\0" * pad)
        offset += len(raw) + pad
    head = json.dumps({"header": header, "arrays": layout}, ensure_ascii=False,
                      separators=(",", ":")).encode("utf-8")
    head += b" " * ((-(len(MAGIC) + 8 + len(head))) % 8)
    return b"".join([MAGIC, struct.pack("<Q", len(head)), head, *chunks])


def unpack(data: bytes | bytearray | memoryview) -> tuple[dict[str, Any], dict[str, Any]]:
    """The header and the arrays :func:`pack` wrote (the arrays are writable views of one copy)."""
    import numpy

    if bytes(data[: len(MAGIC)]) != MAGIC:
        raise _bad("not an hgm packed state")
    start = len(MAGIC) + 8
    if len(data) < start:
        raise _bad("truncated")
    (length,) = struct.unpack("<Q", bytes(data[len(MAGIC):start]))
    if start + length > len(data):
        raise _bad("truncated header")
    try:
        doc = json.loads(bytes(data[start:start + length]).decode("utf-8"))
        header, layout = doc["header"], doc["arrays"]
    except (ValueError, KeyError, TypeError) as exc:
        raise _bad(f"unreadable header: {exc}") from None
    body = bytearray(data[start + length:])   # one writable copy for every array
    arrays = {}
    for name, spec in layout.items():
        try:
            dtype, count, offset = spec
            if dtype not in _DTYPES:
                raise ValueError(f"dtype {dtype!r}")
            itemsize = numpy.dtype(dtype).itemsize
            if offset < 0 or count < 0 or offset + count * itemsize > len(body):
                raise ValueError("past the end")
            arrays[name] = numpy.frombuffer(body, dtype=dtype, count=count, offset=offset)
        except (ValueError, TypeError) as exc:
            raise _bad(f"array {name!r}: {exc}") from None
    return header, arrays
