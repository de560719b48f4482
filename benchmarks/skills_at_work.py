"""Benchmark (issue 36, last goal): real corpus skills followed end to end by a scripted
model, in a real Lily kernel, a data-science environment as `python_kernel`, the hosts
each skill needs allowed, full auto. Does each skill do its work?

    .venv/bin/python benchmarks/skills_at_work.py [--only NAME ...] [--json out.json]

The skills are chosen by a fixed rule (`choose`, written down in docs/benchmarks.md):
every SKILL.md of ../shared/corpus outside ComposioHQ's repository that holds a fenced
`python`, `bash`, `sh`, `shell` or `console` block; within each repository, in the order
of a shuffle seeded by "36:<repository>"; each repository gives max(1, floor(20 x its
share of those skills)) from the front of its order (21 skills). The corpus holds no
scripts or assets, so those of a chosen skill are copied beside its SKILL.md from
`skills_at_work/upstream/` (taken verbatim from the same upstream commit the corpus
names in its SOURCES.md).

Each skill has a data file, `skills_at_work/<skill>.yaml`: the request a person would
type, files the person has in the folder, the hosts to allow beside the package index,
and the tool calls its SKILL.md tells the agent to make (`load_skill` first), each the
scripted model's reply in turn, then a final answer that says nothing of the result. Its
`work` names what shows that the skill did its work: a text in the cell's outputs, an
image in the cell, or a file the run wrote (listed in the cell and present).

For each skill: a fresh workspace (the skill's folder under `skills/`, the files, a
lily.yaml with `python_kernel` naming the data-science venv, `policy: auto`,
`network.allow`), trusted by the environment (`LILY_TRUST=workspace`, as CI runs
notebooks) or, where the data says `trust: person`, by the person (`lily trust --yes`
before the kernel starts: runs may write `skills/` only there), a real Lily kernel
(jupyter_client over ZeroMQ), the loopback OpenAI-style model server of tests/support
scripting the calls, the request run as one cell with no one to answer. The verdict is
read from the cell's outputs, the tool results the model read, and the session's event
log: `did_work`; `failed_not_lily` (a command absent from this machine, a host Lily let
through that the network could not reach, a package no index offers for this Python, a
credential or device the person would have to supply, the skill's own code failing
against the library it names); `failed_lily` (Lily refused or broke something). What the
judge cannot place is `failed_lily`, to be looked at.

The data-science venv (pandas, matplotlib, numpy, scipy, scikit-learn, ipykernel,
pinned in `PINS`) is built once from the package index under `--cache` (default
~/.cache/lily-benchmarks), a few minutes; installs a skill makes go to its workspace's
`.lily/venv`, from the index, through Lily's proxy.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import http.server
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.kernel.conftest import Execution, lily_kernel  # noqa: E402
from tests.support.corpus import FULL as CORPUS  # noqa: E402
from tests.support.openai_server import OpenAIServer, Reply, tool_call  # noqa: E402

DATA = Path(__file__).with_name("skills_at_work")
UPSTREAM = DATA / "upstream"
PINS = ("pandas==2.3.3", "matplotlib==3.10.7", "numpy==2.3.5", "scipy==1.16.3",
        "scikit-learn==1.7.2", "ipykernel==7.1.0")
INDEX_HOSTS = ("pypi.org", "files.pythonhosted.org")
RUNS_CODE = re.compile(r"^```(python|bash|sh|shell|console)\s*$", re.MULTILINE)
# Left out of the loopback index: PyPI's torch is its CUDA build, ~3 GB of wheels with
# these; without them pip takes the CPU build the machine's pip configuration offers
# (find-links), as a person without a GPU points pip at one. Nothing else is left out.
CUDA = re.compile(r"(torch|triton|nvidia-.*|cuda-.*)$")
SEED = "36"
QUOTA = 20
CELL_SECONDS = 1500  # one skill's cell at most (installs of large packages included)

# How a failure that is not Lily's reads, in what the model was handed (first match).
NOT_LILY: tuple[tuple[str, str], ...] = (
    (r"Lily's proxy could not (?:resolve|connect to) ([\w.-]+)",
     "host unreachable from this machine: {0} (Lily allowed it)"),
    (r"can't open file '[^']*?/workspace/(scripts/[\w.-]+)'",
     "the skill names a script it does not ship: {0}"),
    (r"(?:^|\n)(?:sh: \d+: |/bin/sh: \d+: |bash: )?\s*([\w.-]+): (?:command )?not found"
     r"|No such file or directory: '([\w.-]+)'\n",
     "command absent from this machine: {0}"),
    (r"No matching distribution found for ([\w.\-\[\]=<>]+)",
     "no index offers {0} for this Python"),
    (r"(?:requires|Requires-Python) .*?(?:but the running Python is|!=|<)",
     "the package does not support this Python"),
    (r"([A-Z][A-Z0-9_]*(?:API_KEY|TOKEN|SECRET))",
     "needs a credential the person would supply: {0}"),
)
RUNS = {"shell", "python", "run_skill_script"}
AUTH_FAILED = re.compile(r"Could not resolve authentication|authentication_error|"
                         r"Unauthorized|\b401\b|api_key client option must be set")
# What Lily refusing reads like.
LILY_REFUSED = re.compile(r"blocked by Lily's network policy: [^\n]*|Refused: [^\n]*|"
                          r"Read-only file system[^\n]*")


def choose(corpus: Path = CORPUS, seed: str = SEED, quota: int = QUOTA
           ) -> list[tuple[str, str]]:
    """The skills this benchmark follows, by the rule in the module's docstring:
    (repository folder, skill folder)."""
    runs: dict[str, list[str]] = defaultdict(list)
    for path in sorted(corpus.glob("*/*/SKILL.md")):
        repository = path.parent.parent.name
        if repository.startswith("ComposioHQ"):
            continue
        if RUNS_CODE.search(path.read_text(encoding="utf-8", errors="replace")):
            runs[repository].append(path.parent.name)
    total = sum(len(names) for names in runs.values())
    chosen = []
    for repository in sorted(runs):
        names = sorted(runs[repository])
        random.Random(f"{seed}:{repository}").shuffle(names)
        share = max(1, math.floor(quota * len(names) / total))
        chosen += [(repository, name) for name in names[:share]]
    return chosen


def ds_venv(cache: Path) -> Path:
    """The data-science environment, built once from the index (PINS)."""
    digest = hashlib.sha256(" ".join(PINS).encode()).hexdigest()[:12]
    venv = cache / f"skills-ds-{digest}"
    done = venv / ".lily-benchmark-complete"
    if done.exists():
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    print(f"building the data-science venv at {venv} ({', '.join(PINS)})", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *PINS],
                   check=True)
    done.write_text(" ".join(PINS) + "\n")
    return venv


def install_lines(calls: list[dict[str, Any]]) -> list[list[str]]:
    """The packages each `pip install` (or `uv pip install`) line of the calls names."""
    lines = []
    for call in calls:
        command = call.get("shell", {}).get("command", "")
        for found in re.finditer(r"(?:^|[;&|\s])pip install ([^;&|\n]+)", command):
            lines.append([w for w in found.group(1).split() if not w.startswith("-")])
    return lines


def build_mirror(cache: Path, venv: Path, cases: list[Case]) -> Path:
    """A folder laid out as a PEP 503 index (`simple/<name>/<files>`, served by
    http.server's listings) holding what the skills' install lines need, fetched once
    from the package index on the host with pip (versions agreeing with the venv's where
    they can, the index's newest otherwise). Where this machine's index host resolves
    to an address Lily refuses, it stands in for the index on loopback."""
    groups = sorted({" ".join(line) for case in cases for line in install_lines(case.calls)})
    groups.append("setuptools wheel")  # what pip needs to build a package only an sdist has
    root = cache / "skills-index"
    fetched = root / "fetched.txt"  # the groups fetched already, one a line
    done = set(fetched.read_text().splitlines()) if fetched.exists() else set()
    if not set(groups) - done:
        return root
    files = root / "files"
    files.mkdir(parents=True, exist_ok=True)
    pinned = root / "venv-pins.txt"
    freeze = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "freeze"],
                            capture_output=True, text=True, check=True).stdout
    pinned.write_text(freeze)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "download", "-q", "-d", str(files)]
    for group in sorted(set(groups) - done):
        print(f"fetching for the loopback index: {group}", flush=True)
        if subprocess.run([*pip, "-c", str(pinned), *group.split()], check=False).returncode:
            subprocess.run([*pip, *group.split()], check=False)
        with fetched.open("a") as out:
            out.write(group + "\n")
    simple = root / "simple"
    shutil.rmtree(simple, ignore_errors=True)
    for dist in files.iterdir():
        name = re.sub(r"[-_.]+", "-", re.split(r"-\d", dist.name, maxsplit=1)[0]).lower()
        if CUDA.match(name):  # PyPI's CUDA build of torch: pip takes a CPU one (below)
            continue
        folder = simple / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / dist.name).symlink_to(dist)
    return root


@contextlib.contextmanager
def serving(folder: Path) -> Any:
    """`folder` over HTTP on loopback; yields its port."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


@dataclass
class Case:
    repository: str
    skill: str
    request: str
    calls: list[dict[str, Any]]
    work: dict[str, str]
    hosts: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    home: dict[str, str] = field(default_factory=dict)  # files in the person's home
    env: dict[str, str] = field(default_factory=dict)  # set where Jupyter starts
    setup: str = ""  # bash, in the workspace, before the kernel starts (the person's state)
    # Who trusts the workspace: "environment" (LILY_TRUST=workspace, as CI runs notebooks)
    # or "person" (`lily trust --yes` before the kernel starts, as one who works there).
    trust: str = "environment"

    @classmethod
    def load(cls, repository: str, skill: str) -> Case:
        data = yaml.safe_load((DATA / f"{skill}.yaml").read_text(encoding="utf-8"))
        assert data["skill"] == f"{repository}/{skill}", data["skill"]
        return cls(repository, skill, data["request"], data["calls"], data["work"],
                   data.get("hosts", []), data.get("files", {}), data.get("home", {}),
                   data.get("env", {}), data.get("setup", ""),
                   data.get("trust", "environment"))


@dataclass
class Outcome:
    skill: str
    verdict: str
    reason: str
    seconds: float
    calls: int


@dataclass(frozen=True)
class Index:
    """Where `pip install` goes: the hosts allowed for it, the variables that name it."""

    name: str
    hosts: tuple[str, ...] = INDEX_HOSTS
    env: tuple[tuple[str, str], ...] = ()


def workspace_for(case: Case, root: Path, venv: Path, index: Index) -> Path:
    workspace = root / "workspace"
    skill = workspace / "skills" / case.skill
    shutil.copytree(CORPUS / case.repository / case.skill, skill)
    extra = UPSTREAM / case.repository / case.skill
    if extra.is_dir():
        shutil.copytree(extra, skill, dirs_exist_ok=True)
        for script in (skill / "scripts").glob("*") if (skill / "scripts").is_dir() else ():
            script.chmod(0o755)
    for folder, files in ((workspace, case.files), (root / "home", case.home)):
        for name, text in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text, encoding="utf-8")
    if case.setup:
        subprocess.run(["bash", "-euc", case.setup], cwd=workspace, check=True,
                       env={**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"})
    # Full auto, and skill scripts allowed by name (`*` does not cover them: docs/skills.md).
    settings = {"python_kernel": str(venv), "policy": "auto",
                "tools": {"allow": ["*", "run_skill_script"]},
                "script_timeout": 900, "python_timeout": 900,
                "network": {"allow": [*index.hosts, *case.hosts]},
                # The variables the person set for the skill (its API key), passed to what
                # runs as the person passes them: by name (docs/configuration.md).
                "script_env": sorted(case.env)}
    (workspace / "lily.yaml").write_text(yaml.safe_dump(settings), encoding="utf-8")
    return workspace


def replies(case: Case) -> list[Reply]:
    scripted = []
    for number, call in enumerate(case.calls):
        [(name, arguments)] = ((k, v) for k, v in call.items() if k != "tried")
        scripted.append(Reply(tool_calls=[tool_call(name, arguments, f"call_{number}")]))
    return [*scripted, Reply(text="That is what the skill's steps gave.")]


def cell_text(run: Execution) -> str:
    """Everything the cell showed as text (streams, displays, errors)."""
    parts = []
    for message in run.outputs:
        content = message["content"]
        if message["msg_type"] == "stream":
            parts.append(content["text"])
        elif message["msg_type"] in ("display_data", "execute_result", "update_display_data"):
            parts.append(str(content["data"].get("text/plain", "")))
            parts.append(str(content["data"].get("text/markdown", "")))
        elif message["msg_type"] == "error":
            parts.append("\n".join(content.get("traceback", [])))
    return "\n".join(parts)


def has_image(run: Execution) -> bool:
    return any("image/png" in message["content"].get("data", {})
               or "image/svg+xml" in message["content"].get("data", {})
               for message in run.outputs)


def tool_results(server: OpenAIServer) -> list[str]:
    """What each tool call handed the model, in order (the last request holds them all)."""
    if not server.requests:
        return []
    return [str(m.get("content", "")) for m in server.requests[-1]["messages"]
            if m.get("role") == "tool"]


def events(workspace: Path) -> list[dict[str, Any]]:
    logs = sorted((workspace / ".lily" / "sessions").glob("*.jsonl"))
    return [json.loads(line) for log in logs for line in log.read_text().splitlines()]


def judge(case: Case, run: Execution, results: list[str], logged: list[dict[str, Any]],
          workspace: Path) -> tuple[str, str]:
    shown = cell_text(run)
    work = case.work
    if "text" in work and work["text"] in shown:
        return "did_work", f"the cell shows {work['text']!r}"
    if work.get("image") and has_image(run):
        return "did_work", "the cell shows its plot"
    if "file" in work and (workspace / work["file"]).exists() and \
            Path(work["file"]).name in shown:
        return "did_work", f"{work['file']} written, listed in the cell"
    # What runs handed back (not the SKILL.md or references read, whose text may say
    # anything). A call marked `tried` is one the SKILL.md names first (`uv pip install`)
    # and the next call what an agent does when it fails (`pip install`): its failure
    # decides nothing.
    said = "\n".join(result for result, call in zip(results, case.calls, strict=False)
                     if not call.get("tried") and set(call) & RUNS)
    connections = [e.get("data", {}) for e in logged if e.get("event") == "network"]
    for data in connections:  # a host Lily let through that the network did not reach
        if data.get("allowed") and not data.get("bytes_received") and data.get("reason"):
            return "failed_not_lily", (f"host unreachable from this machine: {data['host']} "
                                       f"(Lily allowed it: {data['reason'][:100]})")
    for data in connections:  # a host Lily refused
        if not data.get("allowed"):
            return "failed_lily", f"Lily refused {data['host']}: {data.get('reason', '')[:140]}"
    hidden = f"no skill named '{case.skill}'" in "\n".join(results)
    if hidden and (absent := absent_commands(workspace, case)):
        return "failed_not_lily", (f"command absent from this machine: {', '.join(absent)} "
                                   "(the skill requires it; Lily offers it only where present)")
    refused = LILY_REFUSED.search(said)
    if refused:
        return "failed_lily", refused.group(0)[:160]
    given = [name for name in case.env if re.search(r"KEY|TOKEN|SECRET", name)]
    if given and AUTH_FAILED.search(said):
        return "failed_lily", (f"{', '.join(given)}, set where Jupyter starts, did not reach "
                               "the sandbox (its environment holds no secrets)")
    for pattern, reason in NOT_LILY:
        named = [g for found in re.finditer(pattern, said) for g in found.groups() if g]
        if named:
            return "failed_not_lily", reason.format(", ".join(dict.fromkeys(named)))
    if run.status != "ok":
        return "failed_lily", f"the cell failed: {run.reply.get('ename')}"
    last = next((r for r in reversed(results) if r.strip()), "(no tool result)")
    return "failed_lily", "unplaced: " + " ".join(last.split())[-200:]


def absent_commands(workspace: Path, case: Case) -> list[str]:
    """The commands the skill's metadata requires (OpenClaw's `requires.bins`) that this
    machine lacks."""
    text = (workspace / "skills" / case.skill / "SKILL.md").read_text(encoding="utf-8")
    found = re.search(r'"requires":\s*\{[^}]*?"bins":\s*\[([^\]]*)\]', text)
    names = re.findall(r'"([^"]+)"', found.group(1)) if found else []
    return [name for name in names if shutil.which(name) is None]


def follow(case: Case, venv: Path, index: Index, server: OpenAIServer, root: Path
           ) -> Outcome:
    workspace = workspace_for(case, root, venv, index)
    server.replies.clear()
    server.requests.clear()
    server.script(*replies(case))
    began = time.monotonic()
    settings = {"LILY_MODEL": "openai/skills-at-work", "LILY_API_BASE": server.base_url,
                "OPENAI_API_KEY": "sk-skills-at-work-not-a-key", "LILY_STREAM": "0",
                "LILY_EVENT_LOG": "1", "LILY_RETRY_BACKOFF": "0.01", **dict(index.env), **case.env}
    if case.trust == "person":  # trusted in the store, as `lily trust` in a terminal does
        home = root / "home"
        subprocess.run([sys.executable, "-m", "lily_kernel.cli.main", "trust", "--yes",
                        str(workspace)], check=True, capture_output=True, cwd=REPO,
                       env={**{k: v for k, v in os.environ.items() if not k.startswith("LILY_")},
                            "HOME": str(home), "LILY_HOME": str(home / ".lily")})
        settings["LILY_TRUST"] = ""
    with lily_kernel(workspace, root / "home", **settings) as kernel:
        run = kernel.execute(case.request, timeout=CELL_SECONDS, allow_stdin=False)
    results = tool_results(server)
    verdict, reason = judge(case, run, results, events(workspace), workspace)
    if os.environ.get("SKILLS_AT_WORK_VERBOSE"):
        print(f"--- {case.skill}\n{cell_text(run)[-3000:]}\n", flush=True)
    return Outcome(case.skill, verdict, reason, time.monotonic() - began, len(results))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=[], help="skill folder names")
    parser.add_argument("--cache", type=Path,
                        default=Path.home() / ".cache" / "lily-benchmarks")
    parser.add_argument("--json", type=Path, help="write the outcomes here")
    parser.add_argument("--index", choices=("pypi", "loopback"), default="pypi",
                        help="pypi: pip reaches the package index's hosts through Lily's "
                        "proxy, allowed by name; loopback: a mirror of what the skills "
                        "install, served on 127.0.0.1 (allowed exactly)")
    parser.add_argument("--list", action="store_true", help="print the chosen skills")
    args = parser.parse_args()
    chosen = choose()
    if args.list:
        for repository, skill in chosen:
            print(f"{repository}/{skill}")
        return
    cases = [Case.load(r, s) for r, s in chosen if not args.only or s in args.only]
    venv = ds_venv(args.cache)
    outcomes = []
    began = time.monotonic()
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(OpenAIServer())
        index = Index("pypi")
        if args.index == "loopback":
            port = stack.enter_context(serving(build_mirror(args.cache, venv, cases)))
            index = Index("loopback", (f"127.0.0.1:{port}",),
                          (("PIP_INDEX_URL", f"http://127.0.0.1:{port}/simple/"),))
        for case in cases:
            with tempfile.TemporaryDirectory(prefix=f"skill-{case.skill}-") as root:
                try:
                    outcome = follow(case, venv, index, server, Path(root))
                except Exception as exc:  # noqa: BLE001 - one skill's fault ends no run
                    outcome = Outcome(case.skill, "failed_lily",
                                      f"the run broke: {type(exc).__name__}: {exc}", 0.0, 0)
            outcomes.append(outcome)
            print(f"{case.repository}/{case.skill}: {outcome.verdict} "
                  f"({outcome.reason}) {outcome.seconds:.0f} s", flush=True)
    print()
    print("| skill | repository | verdict | why | tool calls | seconds |")
    print("|---|---|---|---|---|---|")
    for case, outcome in zip(cases, outcomes, strict=True):
        print(f"| {case.skill} | {case.repository} | {outcome.verdict} | {outcome.reason} "
              f"| {outcome.calls} | {outcome.seconds:.0f} |")
    counts = {v: sum(o.verdict == v for o in outcomes)
              for v in ("did_work", "failed_not_lily", "failed_lily")}
    print(f"\n{len(outcomes)} skills: " + ", ".join(f"{n} {v}" for v, n in counts.items())
          + f"; {time.monotonic() - began:.0f} s")
    if args.json:
        args.json.write_text(json.dumps([o.__dict__ for o in outcomes], indent=1))


if __name__ == "__main__":
    main()
