"""Read the pixels of a PNG screenshot (8-bit RGB or RGBA, not interlaced, as Chromium writes
them) with the standard library, so a test can check what a page shows."""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from pathlib import Path

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def _unfilter(kind: int, line: bytearray, prior: bytes | bytearray, bpp: int) -> None:
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up, corner = prior[i], prior[i - bpp] if i >= bpp else 0
        predictor = (0, left, up, (left + up) // 2, _paeth(left, up, corner))[kind]
        line[i] = (line[i] + predictor) & 0xFF


def colours(path: Path) -> tuple[int, int, Counter[tuple[int, int, int]]]:
    """(width, height, how many pixels have each RGB colour)."""
    data = path.read_bytes()
    if data[:8] != SIGNATURE:
        raise ValueError(f"{path} is not a PNG")
    pos, idat, header = 8, b"", (0, 0, 0, 0)
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos : pos + 4]), data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour_type = struct.unpack(">IIBB", body[:10])
            header = (width, height, depth, colour_type)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour_type = header
    if depth != 8 or colour_type not in (2, 6):
        raise ValueError(f"{path}: only 8-bit RGB(A) is read here")
    bpp = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    counts: Counter[tuple[int, int, int]] = Counter()
    prior: bytes | bytearray = bytes(stride)
    for row in range(height):
        start = row * (stride + 1)
        line = bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(raw[start], line, prior, bpp)
        counts.update(zip(line[0::bpp], line[1::bpp], line[2::bpp], strict=True))
        prior = line
    return width, height, counts
