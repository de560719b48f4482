"""The Jupyter kernel: a thin adapter from Jupyter messages to Lily's runtime.

Import `lily_kernel.kernel.kernel.LilyKernel` for the kernel class; this package
imports nothing itself, so `lily install` does not pay for ipykernel.
"""

__all__: list[str] = []
