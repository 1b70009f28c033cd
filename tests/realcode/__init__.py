"""A corpus of ordinary NumPy programs and a harness that checks kx.function against eager NumPy.

``harness`` holds the case registry and ``check``; the ``corpus_*`` modules hold the programs,
one module per category; ``expected`` records today's known failures.
"""
