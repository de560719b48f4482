"""jupyter_kernel_test, the official conformance suite, configured with Lily's snippets.

Not applicable to Lily, so left empty: `code_hello_world`/`code_stderr` (Lily prints
nothing to stdout or stderr), `code_page_something` (no pager payloads),
`code_execute_result` (command results are display_data, SPEC §8) and
`code_clear_output`. The suite's own history test needs `code_execute_result`, so
`test_history` below runs the same checks with display-data cells.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import ClassVar

import jupyter_kernel_test
from jupyter_client.manager import KernelManager, start_new_kernel

from tests.kernel.conftest import kernel_env


def _start(cls: type) -> Path:
    """A throwaway workspace and HOME for a suite class."""
    root = Path(tempfile.mkdtemp(prefix="lily-conformance-"))
    (root / "workspace").mkdir()
    cls.env = kernel_env(root / "home")  # type: ignore[attr-defined]
    return root


class LilyKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "lily"
    language_name = "lily"
    file_extension = ".md"

    completion_samples: ClassVar = [
        {"text": "/sk", "matches": {"/skill", "/skills"}},
        {"text": "/help ec", "matches": {"echo"}},
        {"text": "/agent ", "matches": {"default"}},
        {"text": "hello", "matches": set()},
    ]
    complete_code_samples: ClassVar = ["/skills", "hello", "/skill echo\nsay hi", ""]
    code_generate_error = "/foo"
    code_display_data: ClassVar = [
        {"code": "/skills", "mime": "text/html"},
        {"code": "/help", "mime": "text/markdown"},
        {"code": "/ls", "mime": "text/plain"},
    ]
    code_inspect_sample = "/help echo"
    supported_history_operations = ("tail", "range", "search")
    code_history_pattern = "/help*"

    root: ClassVar[Path]

    @classmethod
    def setUpClass(cls) -> None:
        cls.root = _start(cls)
        cls.km, cls.kc = start_new_kernel(kernel_name=cls.kernel_name,
                                          cwd=str(cls.root / "workspace"), env=cls.env)

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        shutil.rmtree(cls.root, ignore_errors=True)

    def test_history(self) -> None:
        codes = ["/help echo", "/skills", "/help workspace-files"]
        n = len(codes)
        reply = self.history_helper(codes, output=False, raw=True, hist_access_type="tail", n=n)
        history = reply["content"]["history"]
        self.assertEqual([h[2] for h in history], codes)
        session, start = history[0][0:2]
        reply = self.history_helper(codes, output=True, raw=True, hist_access_type="tail", n=n)
        self.assertEqual(len(reply["content"]["history"][0][2]), 2)

        reply = self.history_helper(codes, output=False, raw=True, hist_access_type="range",
                                    session=session, start=start, stop=start + 1)
        self.assertEqual(reply["content"]["history"], [[session, start, codes[0]]])

        reply = self.history_helper(codes, output=False, raw=True, hist_access_type="search",
                                    pattern=self.code_history_pattern)
        self.assertGreaterEqual(len(reply["content"]["history"]), 1)
        reply = self.history_helper(codes, output=False, raw=True, hist_access_type="search",
                                    pattern=self.code_history_pattern, unique=True)
        found = [h[2] for h in reply["content"]["history"]]
        self.assertEqual(len(found), len(set(found)))
        self.assertLessEqual({"/help echo", "/help workspace-files"}, set(found))
        reply = self.history_helper(codes, output=False, raw=True, hist_access_type="search",
                                    pattern=self.code_history_pattern, n=3)
        self.assertEqual(len(reply["content"]["history"]), 3)


class LilyIopubWelcomeTests(jupyter_kernel_test.IopubWelcomeTests):
    kernel_name = "lily"
    support_iopub_welcome = True

    root: ClassVar[Path]

    @classmethod
    def setUpClass(cls) -> None:
        cls.root = _start(cls)
        cls.km = KernelManager(kernel_name=cls.kernel_name)
        cls.km.start_kernel(cwd=str(cls.root / "workspace"), env=cls.env)
        cls.kc = cls.km.client()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        shutil.rmtree(cls.root, ignore_errors=True)
