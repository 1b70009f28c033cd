"""Shared test setup: makes ``tests/`` importable for helper modules (e.g. ``programs``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
