"""``python -m kafkalite ...`` == the ``kafkalite`` script."""
from __future__ import annotations

import sys

from kafkalite.cli import main

sys.exit(main())
