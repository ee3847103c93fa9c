"""``python -m storage.dumplog --files ...``: same as ``kafkalite dump-log``."""

from __future__ import annotations

from storage.dumplog.cli import main

raise SystemExit(main())
