"""Spies for tests that prove a shortcut was taken: wrap a function in place and keep what each
call of it answered."""

from __future__ import annotations

from typing import Any

import pytest


def answers(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[Any]:
    """Replace ``owner.name`` (for the test) by itself, keeping each call's answer in the list returned."""
    real = getattr(owner, name)
    kept: list[Any] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        kept.append(real(*args, **kwargs))
        return kept[-1]

    monkeypatch.setattr(owner, name, spy)
    return kept
