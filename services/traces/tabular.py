"""CSV rows of a trace file (the Alibaba cluster traces are CSV with a header row), with the
header checked and every value error reported as ``file:line: column: problem``."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from services.traces.model import TraceError

T = TypeVar("T")


class Row:
    """One CSV row; its getters convert a column or raise TraceError naming file, line and column."""

    def __init__(self, where: str, values: dict[str, str]) -> None:
        self.where = where
        self.values = values

    def text(self, column: str) -> str:
        return (self.values.get(column) or "").strip()

    def convert(self, column: str, parse: Callable[[str], T]) -> T:
        try:
            return parse(self.text(column))
        except (ValueError, TraceError) as exc:
            raise TraceError(f"{self.where}: {column}: {exc}") from None

    def optional(self, column: str, parse: Callable[[str], T]) -> T | None:
        """None for an empty cell or NaN (how pandas writes a missing value)."""
        if self.text(column).lower() in ("", "nan"):
            return None
        return self.convert(column, parse)

    @contextmanager
    def context(self) -> Iterator[None]:
        """Prefix errors raised while building objects from this row with its position."""
        try:
            yield
        except TraceError as exc:
            raise TraceError(f"{self.where}: {exc}") from None


def csv_rows(path: Path, columns: tuple[str, ...]) -> Iterator[Row]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [column for column in columns if column not in (reader.fieldnames or ())]
        if missing:
            raise TraceError(f"{path}: missing column(s) {', '.join(missing)}")
        for values in reader:
            yield Row(f"{path}:{reader.line_num}", values)
