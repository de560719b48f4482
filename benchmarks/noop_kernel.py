"""The floor of every ipykernel-based kernel: one that does nothing at all.

kernel_start.py starts it beside Lily and python3. It imports what any wrapper kernel
built on ipykernel's `IPKernelApp` imports (Lily, bash_kernel, ...), binds the same
sockets, answers kernel_info, and replies `ok` to every cell without looking at it: no
shell, no debugger, no workspace. How long it takes to be ready is what the kernel
machinery and the client's connection cost before any kernel's own work.

Its kernel_info is built as Lily's is (kernel/kernel.py), not by ipykernel's base class:
the base class checks whether it may advertise the debugger by importing
`ipykernel.debugger`, which imports debugpy (~230 M instructions, 80-200 ms, on the first
kernel_info request, before the reply). Lily skips that import; a floor that paid it
would flatter every kernel compared with it (before 2026-11-28 15:10 it did).
"""

from __future__ import annotations

from typing import Any

from ipykernel._version import kernel_protocol_version
from ipykernel.kernelapp import IPKernelApp
from ipykernel.kernelbase import Kernel


class NoopKernel(Kernel):
    implementation = "noop"
    implementation_version = "0"
    banner = ""
    language_info = {"name": "noop", "mimetype": "text/plain",  # noqa: RUF012
                     "file_extension": ".txt"}

    @property
    def kernel_info(self) -> dict[str, Any]:
        return {"protocol_version": kernel_protocol_version, "implementation": self.implementation,
                "implementation_version": self.implementation_version,
                "language_info": self.language_info, "banner": self.banner,
                "help_links": self.help_links, "supported_features": []}

    async def do_execute(self, code: str, silent: bool, store_history: bool = True,
                         user_expressions: dict[str, Any] | None = None,
                         allow_stdin: bool = False, **_: Any) -> dict[str, Any]:
        return {"status": "ok", "execution_count": self.execution_count, "payload": [],
                "user_expressions": {}}


if __name__ == "__main__":
    IPKernelApp.launch_instance(kernel_class=NoopKernel)
