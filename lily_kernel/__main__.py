"""Start the Lily kernel: `python -m lily_kernel -f <connection file>` (the kernelspec's argv)."""

if __name__ == "__main__":
    from lily_kernel.kernel.app import LilyKernelApp

    LilyKernelApp.launch()
