"""Makes this folder's helper (``onnx_support``) importable. The folder is not a package: a
``tests/onnx`` package would shadow the ``onnx`` distribution the tests import."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
