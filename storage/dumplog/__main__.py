"""``python -m kafkalite_storage.dumplog --files ...``: same as ``kafkalite dump-log``."""

from __future__ import annotations

from kafkalite_storage.dumplog.cli import main

raise SystemExit(main())
