"""Start the Lily kernel (the kernelspec runs this module with `python -P`, through a
one-line launcher that also drops the `sys.path` entries of relative PYTHONPATH parts).

`-P` keeps the working directory (the notebook's folder, which may be downloaded) off
`sys.path`, so a `yaml.py` or `lily_kernel/` there is never imported. A kernelspec made
before Lily asked for `-P` still starts this way: the folder is then taken off
`sys.path` here, before Lily imports anything else (Lily itself may have come from it
already: `lily install` writes the kernelspec anew).
"""

if __name__ == "__main__":
    import os
    import sys

    if not sys.flags.safe_path:
        here = os.getcwd()
        sys.path[:] = [p for p in sys.path if p not in ("", ".", here)]
    from lily_kernel.kernel.app import LilyKernelApp

    LilyKernelApp.launch()
