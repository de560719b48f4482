"""The floor of every ipykernel-based kernel: one that does nothing at all.

kernel_start.py starts it beside Lily and python3. It imports what any wrapper kernel
built on ipykernel's `IPKernelApp` imports (Lily, bash_kernel, ...), binds the same
sockets, answers kernel_info, and replies `ok` to every cell without looking at it: no
shell, no debugger, no workspace. How long it takes to be ready is what the kernel
machinery and the client's connection cost before any kernel's own work.
"""

from __future__ import annotations

from typing import Any

from ipykernel.kernelapp import IPKernelApp
from ipykernel.kernelbase import Kernel


class NoopKernel(Kernel):
    implementation = "noop"
    implementation_version = "0"
    banner = ""
    language_info = {"name": "noop", "mimetype": "text/plain",  # noqa: RUF012
                     "file_extension": ".txt"}

    async def do_execute(self, code: str, silent: bool, store_history: bool = True,
                         user_expressions: dict[str, Any] | None = None,
                         allow_stdin: bool = False, **_: Any) -> dict[str, Any]:
        return {"status": "ok", "execution_count": self.execution_count, "payload": [],
                "user_expressions": {}}


if __name__ == "__main__":
    IPKernelApp.launch_instance(kernel_class=NoopKernel)
