"""Private numba helpers: serial/parallel twins, vectorisable ``exp``/``log1p`` and the
pre-compilation of a fit's kernels (plans, helper process, compile-time report)."""
