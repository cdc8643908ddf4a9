"""Where the real traces and manifests are: ../shared/data beside the checkout (as in CI), or
$SCHEDSTREAM_SHARED_DATA. Tests that read them use the ``shared_data`` fixture (conftest.py),
which skips them when the folder is missing, and fails them when CI=true."""

from __future__ import annotations

import os
from pathlib import Path

SHARED_DATA = Path(os.environ.get("SCHEDSTREAM_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
