"""Start the Lily kernel: `python -m lily_kernel -f <connection file>` (the kernelspec's argv)."""

if __name__ == "__main__":
    from ipykernel.kernelapp import IPKernelApp

    from lily_kernel.kernel.kernel import LilyKernel

    IPKernelApp.launch_instance(kernel_class=LilyKernel)
