"""Output files of the command line: written whole or not at all (CONTRACT section 3).

``atomic_output(path)`` hands out a temporary file beside ``path`` and renames it over
``path`` only when the block ends without an error, so a bad ``--db``, an unreachable server
or any crash leaves an existing file as it was; ``-`` is standard output. A run directory
(``simulate --out DIR``) is written the same way, file by file (``atomic_directory``).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

STDOUT = "-"


@contextmanager
def atomic_output(path: str) -> Iterator[BinaryIO]:
    """A binary file that becomes ``path`` when the block succeeds (``-``: standard output)."""
    if path == STDOUT:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    target = Path(path)
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, path) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, _mode(target))
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextmanager
def atomic_directory(path: Path) -> Iterator[Path]:
    """A temporary directory beside ``path`` whose files replace their namesakes in ``path``
    (created if need be) when the block succeeds; on an error ``path`` is left as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield work
        path.mkdir(exist_ok=True)
        for item in sorted(work.iterdir()):
            os.replace(item, path / item.name)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _mode(target: Path) -> int:
    """The permissions the file would have had if written in place: its own, or the umask's."""
    try:
        return target.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
