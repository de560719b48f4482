"""The kernel application: ipykernel's, minus a warning that is noise on loopback, and
without the working directory on `sys.path`.

ipykernel 7.4 warns "Kernel is running over TCP without encryption" on every start over
TCP. On a loopback address, which is how every local Jupyter launches a kernel, nobody
else can listen in, and the warning was printed by every `lily run`, `jupyter execute`
and JupyterLab start. It is kept when the kernel listens on any other address.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any

from ipykernel.kernelapp import IPKernelApp

__all__ = ["LilyKernelApp", "is_loopback"]

_UNENCRYPTED = "Kernel is running over TCP without encryption"


def is_loopback(ip: str) -> bool:
    """True for 127.0.0.0/8, ::1 and `localhost`; False for `0.0.0.0`, `*`, any other."""
    if ip == "localhost":
        return True
    try:
        return ipaddress.ip_address(ip.strip("[]")).is_loopback
    except ValueError:
        return False


class _DropUnencryptedWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(_UNENCRYPTED)


class LilyKernelApp(IPKernelApp):
    """IPKernelApp that says nothing about encryption when only loopback can connect, and
    never puts the working directory on `sys.path`."""

    def init_path(self) -> None:
        """IPython adds the working directory (the notebook's folder) to `sys.path`
        unless Python runs with `-P`; Lily never does: a module there is the folder's
        code, not Lily's, and must not run in the kernel (the kernelspec passes `-P`)."""

    def init_sockets(self) -> None:
        quiet = self.transport == "tcp" and is_loopback(self.ip)
        drop = _DropUnencryptedWarning()
        if quiet:
            self.log.addFilter(drop)
        try:
            super().init_sockets()
        finally:
            self.log.removeFilter(drop)

    @classmethod
    def launch(cls, **kwargs: Any) -> None:
        from lily_kernel.kernel.kernel import LilyKernel

        cls.launch_instance(kernel_class=LilyKernel, **kwargs)
