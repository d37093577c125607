"""The lazy registry and its entry points: a fake installed distribution adds a tool, an agent, a
model provider, a web provider, a dataset, a scorer and a backend, and each becomes usable by
name without editing omnilab; a broken entry point fails alone."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import omnilab
from omnilab.agents import AgentConfigError, agent_names, get_agent
from omnilab.agents.registry import AGENTS, describe_agent
from omnilab.bench.backends import BACKENDS, get_backend
from omnilab.bench.datasets import DATASETS, get_dataset
from omnilab.bench.errors import BenchError, UnknownDatasetError
from omnilab.bench.rescore import make_scorer, resolve_judges
from omnilab.bench.scoring.registry import SCORERS
from omnilab.cli.main import app
from omnilab.config import get_settings
from omnilab.models.errors import ModelConfigError
from omnilab.models.registry import PROVIDERS, get_model, providers
from omnilab.registry import Registry, RegistryError
from omnilab.tools import tool
from omnilab.tools.registry import TOOLS, ToolConfigError, describe_tools, tool_names
from omnilab.tools.web import get_provider
from omnilab.tools.web.errors import WebError, WebErrorCode
from omnilab.tools.web.providers import PROVIDERS as WEB_PROVIDERS
from omnilab.trajectory import ToolResultEvent, read_trajectory

REGISTRIES: list[Registry[object]] = [
    AGENTS,  # type: ignore[list-item]
    TOOLS,  # type: ignore[list-item]
    PROVIDERS,  # type: ignore[list-item]
    WEB_PROVIDERS,  # type: ignore[list-item]
    DATASETS,  # type: ignore[list-item]
    SCORERS,  # type: ignore[list-item]
    BACKENDS,  # type: ignore[list-item]
]

PLUGIN = "omnilab_fake_plugin"

PLUGIN_SOURCE = '''
"""A third-party package that extends omnilab through entry points only."""

from omnilab.agents import get_agent
from omnilab.bench.backends import LocalBackend
from omnilab.bench.datasets import get_dataset
from omnilab.bench.scoring import Score
from omnilab.models.registry import Provider
from omnilab.tools import tool
from omnilab.tools.web.types import SearchHit


@tool
def shout(text: str) -> str:
    """Repeat the text in capitals.

    Args:
        text: What to shout.
    """
    return text.upper() + "!"


def count_inputs_tool(env):
    """A factory: the tool is built per run from the run's ToolEnv."""
    count = len(list(env.inputs))

    @tool
    def count_inputs() -> str:
        """How many input files the task has."""
        return f"{count} inputs in {env.workspace.name}"

    return count_inputs


def loud(**options):
    """A third-party scaffold: tir, always in native mode."""
    return get_agent("tir", mode="native", **options)


PROVIDER = Provider(
    name="fake",
    factory="omnilab.models.providers.scripted:create",
    description="the scripted model under another name",
)


class FakeSearch:
    def __init__(self, **options):
        self.options = options

    async def search(self, query, *, top_k):
        return [SearchHit(title="hit", url_or_id="https://example.org", snippet=query, provider="fake")]


class Always:
    """Every prediction is right."""

    async def score(self, task, prediction):
        return Score(scorer="always", value=1.0, correct=True)


class FakeBackend(LocalBackend):
    pass


def dataset():
    return get_dataset("jsonl")


DATASET = dataset()
'''

ENTRY_POINTS = f"""
[omnilab.tools]
shout = {PLUGIN}:shout
count_inputs = {PLUGIN}:count_inputs_tool
broken = omnilab_fake_missing_module:tool
web_search = {PLUGIN}:shout

[omnilab.agents]
loud = {PLUGIN}:loud

[omnilab.providers]
fake = {PLUGIN}:PROVIDER

[omnilab.web_providers]
fake = {PLUGIN}:FakeSearch

[omnilab.datasets]
fake = {PLUGIN}:DATASET

[omnilab.scorers]
always = {PLUGIN}:Always

[omnilab.backends]
fake = {PLUGIN}:FakeBackend
"""


def write_plugin(root: Path) -> Path:
    """An installed distribution as pip leaves it: a module and its ``*.dist-info``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{PLUGIN}.py").write_text(textwrap.dedent(PLUGIN_SOURCE), encoding="utf-8")
    info = root / "omnilab_fake_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: omnilab-fake-plugin\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    return root


def _forget_plugin() -> None:
    sys.modules.pop(PLUGIN, None)
    for registry in REGISTRIES:
        registry.refresh()


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = write_plugin(tmp_path / "site")
    monkeypatch.syspath_prepend(str(root))
    _forget_plugin()
    yield root
    monkeypatch.undo()
    _forget_plugin()


# --- the Registry type ---------------------------------------------------------------------


def test_entries_import_on_first_lookup_and_unknown_names_list_the_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lazy_thing.py").write_text("VALUE = 42\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry[int] = Registry("widget", entries={"answer": "lazy_thing:VALUE", "one": 1})
    assert "lazy_thing" not in sys.modules
    assert reg.names() == ["answer", "one"] and "answer" in reg
    assert "lazy_thing" not in sys.modules  # listing imports nothing
    assert reg.get("answer") == 42 and "lazy_thing" in sys.modules
    with pytest.raises(RegistryError) as err:
        reg.get("nope")
    assert str(err.value) == "unknown widget 'nope'; known widgets: answer, one"
    assert reg.source("answer") == "lazy_thing:VALUE" and reg.source("one") == "built-in"
    reg.register("answer", 7)  # replaces, and forgets the loaded value
    assert reg.get("answer") == 7 and reg.source("answer") == "registered in code"
    reg.unregister("answer")
    assert reg.names() == ["one"]
    sys.modules.pop("lazy_thing", None)


def test_a_bad_target_gives_the_layer_error_in_one_line() -> None:
    class WidgetError(Exception):
        pass

    reg: Registry[int] = Registry(
        "widget", entries={"gone": "no_such_module_x:VALUE"}, error=WidgetError
    )
    with pytest.raises(WidgetError) as err:
        reg.get("gone")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("widget 'gone' cannot be loaded (no_such_module_x:VALUE)")
    assert "ModuleNotFoundError" in message
    with pytest.raises(ValueError, match="module:attr"):
        reg.register("bad", "no_colon")


def test_coerce_rejects_a_value_of_the_wrong_kind() -> None:
    def only_ints(value: object) -> int:
        if not isinstance(value, int):
            raise TypeError(f"not an int: {value!r}")
        return value

    reg: Registry[int] = Registry("number", entries={"pi": "math:pi"}, coerce=only_ints)
    with pytest.raises(RegistryError, match=r"number 'pi' cannot be loaded .*not an int: 3\.14"):
        reg.get("pi")


def test_every_kind_has_its_registry_and_error() -> None:
    with pytest.raises(AgentConfigError, match="unknown agent 'x'; known agents: tir"):
        get_agent("x")
    with pytest.raises(ToolConfigError, match="unknown tool 'x'; known tools: web_search,"):
        TOOLS.get("x")
    with pytest.raises(ModelConfigError, match=r"unknown provider 'x'.*known providers: openai"):
        get_model("x:y")
    with pytest.raises(WebError) as web:
        get_provider("x")
    assert web.value.code is WebErrorCode.UNKNOWN_PROVIDER
    assert "known search providers: local, serper" in str(web.value)
    with pytest.raises(UnknownDatasetError, match="known datasets: omnigaia"):
        get_dataset("x")
    with pytest.raises(BenchError, match="unknown scorer 'x'; known scorers: omnigaia"):
        make_scorer("x")
    with pytest.raises(BenchError, match="unknown backend 'x'; known backends: local"):
        get_backend("x")


# --- entry points ---------------------------------------------------------------------------


def test_entry_points_are_listed_without_importing_the_plugin(plugin: Path) -> None:
    assert tool_names()[:8] == [
        "web_search",
        "page_browser",
        "code_executor",
        "read_video",
        "read_audio",
        "read_image",
        "audio_qa",
        "vision_qa",
    ]
    assert {"shout", "count_inputs", "broken"} <= set(tool_names())
    assert "loud" in agent_names()
    assert PLUGIN not in sys.modules
    assert TOOLS.source("shout") == "entry point of omnilab-fake-plugin"
    # A built-in keeps its name: the plugin's web_search entry point is ignored.
    assert TOOLS.source("web_search") == "built-in"


def test_a_broken_entry_point_fails_alone_naming_its_package(plugin: Path) -> None:
    with pytest.raises(ToolConfigError) as err:
        TOOLS.get("broken")
    message = str(err.value)
    assert "tool 'broken' cannot be loaded" in message
    assert "omnilab-fake-plugin" in message and "omnilab_fake_missing_module" in message
    assert "\n" not in message
    infos = {i.name: i for i in describe_tools()}
    assert infos["broken"].spec is None and "omnilab_fake_missing_module" in str(
        infos["broken"].error
    )
    assert infos["shout"].spec is not None
    assert infos["shout"].spec.parameters["properties"]["text"]["type"] == "string"
    assert infos["count_inputs"].spec is not None  # a factory, built in the listing env
    assert infos["read_video"].spec is not None


def test_every_kind_loads_its_plugin_by_name(plugin: Path) -> None:
    assert describe_agent("loud").summary == "A third-party scaffold: tir, always in native mode."
    assert get_agent("loud").name == "tir"
    assert "fake" in [p.name for p in providers()]
    assert get_model("fake:tests/data/hello.json").name == "fake:tests/data/hello.json"
    search = get_provider("fake", api_key="k")
    hits = asyncio.run(search.search("cats", top_k=3))
    assert hits[0].snippet == "cats"
    assert get_dataset("fake") is get_dataset("jsonl")
    assert resolve_judges("always", []) == []
    score = asyncio.run(make_scorer("always").score(None, "anything"))  # type: ignore[arg-type]
    assert score.correct
    assert type(get_backend("fake")).__name__ == "FakeBackend"


def test_a_plugin_of_the_wrong_kind_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_plugin(tmp_path / "site")
    entry = root / "omnilab_fake_plugin-1.0.dist-info" / "entry_points.txt"
    entry.write_text(f"[omnilab.providers]\nwrong = {PLUGIN}:shout\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))
    _forget_plugin()
    try:
        with pytest.raises(ModelConfigError, match=r"expected an omnilab\.models\.Provider"):
            get_model("wrong:x")
        assert "wrong" not in [p.name for p in providers()]  # left out of the listing
    finally:
        monkeypatch.undo()
        _forget_plugin()


# --- tools by name, module:attr or object, end to end ----------------------------------------


def _script(tmp_path: Path, steps: list[object]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"outputs": steps}), encoding="utf-8")
    return f"scripted:{path}"


SHOUT_THEN_ANSWER = [
    {"tool_call": {"name": "shout", "arguments": {"text": "hi"}}},
    {"tool_call": {"name": "count_inputs", "arguments": {}}},
    "<answer>HI!</answer>",
]


def _tool_results(run_dir: Path) -> list[str]:
    saved = read_trajectory(run_dir / "trajectory.jsonl")
    return [e.result.text for e in saved.events if isinstance(e, ToolResultEvent)]


def test_a_plugin_tool_and_agent_run_by_name_from_the_cli(
    plugin: Path, tmp_path: Path, image_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_AGENTS__RUNS_DIR", str(tmp_path / "runs"))
    get_settings.cache_clear()
    model = _script(tmp_path, SHOUT_THEN_ANSWER)
    args = ["ask", "--agent", "loud", "--tools", "shout,count_inputs", "--model", model]
    result = CliRunner().invoke(app, [*args, str(image_file), "Shout hi."])
    assert result.exit_code == 0, (result.output, result.exception)
    assert "HI!" in result.output
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert _tool_results(run_dir) == ["HI!", "1 inputs in workspace"]
    saved = read_trajectory(run_dir / "trajectory.jsonl")
    assert saved.run_start is not None and saved.run_start.config["tools"] == [
        "shout",
        "count_inputs",
    ]


def test_tool_objects_and_module_paths_work_where_names_do(
    plugin: Path, tmp_path: Path, image_file: Path
) -> None:
    @tool
    def count_inputs() -> str:
        """Count nothing."""
        return "object tool"

    model = _script(tmp_path, SHOUT_THEN_ANSWER)
    answer = omnilab.ask(
        [image_file],
        "Shout hi.",
        model=model,
        tools=[f"{PLUGIN}:shout", count_inputs],
        run_dir=tmp_path / "run",
    )
    assert answer.answer == "HI!"
    assert _tool_results(tmp_path / "run") == ["HI!", "object tool"]
    with pytest.raises(AgentConfigError, match="tool 'nowhere_x:thing' cannot be loaded"):
        omnilab.ask(
            [image_file], "q", model=model, tools=["nowhere_x:thing"], run_dir=tmp_path / "r2"
        )
    with pytest.raises(AgentConfigError, match="unknown tool 'nope'; known tools: web_search"):
        omnilab.ask([image_file], "q", model=model, tools=["nope"], run_dir=tmp_path / "r3")


def test_the_listing_commands_show_plugins_in_a_fresh_process(plugin: Path) -> None:
    """As a user sees it: the package is on the path, omnilab is not edited."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), *sys.path])}

    def omnilab_cli(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "omnilab", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    rows = {r["name"]: r for r in json.loads(omnilab_cli("tools", "--json"))}
    assert rows["shout"]["parameters"]["required"] == ["text"]
    assert rows["shout"]["source"] == "entry point of omnilab-fake-plugin"
    assert "omnilab_fake_missing_module" in rows["broken"]["error"]
    assert rows["code_executor"]["error"] is None
    table = omnilab_cli("tools")
    assert "shout" in table and "text: string" in table and "cannot be built" in table
    agents = {r["name"]: r for r in json.loads(omnilab_cli("agents", "--json"))}
    assert agents["loud"]["summary"].startswith("A third-party scaffold")
    tir_options = {o["name"]: o for o in agents["tir"]["options"]}
    assert tir_options["mode"]["type"].startswith("native|active")
    assert "How media reach the model" in tir_options["mode"]["help"]


def test_omnilab_eval_runs_plugin_kinds_by_name(
    plugin: Path, tmp_path: Path, image_file: Path
) -> None:
    """Dataset, agent, tools, scorer and backend of the plugin, all named on the command line."""
    data = tmp_path / "tasks.jsonl"
    record = {"id": "t1", "question": "Shout hi.", "files": [str(image_file)], "answer": "x"}
    data.write_text(json.dumps(record) + "\n", encoding="utf-8")
    model = _script(tmp_path, SHOUT_THEN_ANSWER)
    out = tmp_path / "run"
    args = ["eval", "fake", "--data", str(data), "--agent", "loud", "--model", model]
    args += ["--media-root", str(image_file.parent)]
    args += ["--tools", f"shout,{PLUGIN}:count_inputs_tool", "--scorer", "always"]
    args += ["--backend", "fake", "--out", str(out), "--no-progress"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (result.output, result.exception)
    (line,) = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    row = json.loads(line)
    assert "HI!" in row["prediction"]
    assert row["score"]["scorer"] == "always" and row["score"]["correct"] is True
    (trajectory,) = [p for p in out.rglob("*.jsonl") if p.name != "results.jsonl"]
    saved = read_trajectory(trajectory)
    # The factory got the task's own environment: one input, the task's workspace folder.
    assert [e.result.text for e in saved.events if isinstance(e, ToolResultEvent)] == [
        "HI!",
        "1 inputs in t1",
    ]
