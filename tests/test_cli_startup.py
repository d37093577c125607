"""CLI start-up: each command imports only what it uses (checked on ``sys.modules`` in a fresh
process, not by timing), and every lazily registered command resolves."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from omnilab.cli.main import COMMANDS, app
from omnilab.media import synth
from omnilab.registry import import_target

# Layers and libraries that `omnilab --version` must not pay for.
HEAVY = (
    "omnilab.agents",
    "omnilab.api",
    "omnilab.bench",
    "omnilab.config",
    "omnilab.media",
    "omnilab.models",
    "omnilab.perception",
    "omnilab.sandbox",
    "omnilab.tools",
    "omnilab.trajectory",
    "av",
    "numpy",
    "PIL",
    "pydantic",
    "pydantic_settings",
    "httpx",
    "rich.console",
)

_PROBE = """
import json, sys
from omnilab.cli.main import main
sys.argv = ["omnilab", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
print("\\n" + json.dumps(sorted(sys.modules)))
"""


def loaded_by(*args: str) -> set[str]:
    """The modules a fresh interpreter has imported after running ``omnilab ARGS``."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(list(args))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def heavy_in(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in prefixes or m.startswith(prefixes))


def test_version_imports_no_layer_and_no_heavy_library() -> None:
    modules = loaded_by("--version")
    assert "omnilab.cli.main" in modules
    assert heavy_in(modules, HEAVY) == []
    assert not [m for m in modules if m.startswith("omnilab.cli.") and m != "omnilab.cli.main"]


def test_help_lists_every_command_without_importing_one() -> None:
    modules = loaded_by("--help")
    assert not [m for m in modules if m.startswith("omnilab.cli.") and m != "omnilab.cli.main"]
    assert heavy_in(modules, HEAVY[:-1]) == []  # rich renders the help


def test_media_probe_imports_the_media_layer_only(tmp_path: Path) -> None:
    video = synth.make_video(tmp_path / "v.mp4", duration=1.0, size=(64, 48))
    modules = loaded_by("media", "probe", str(video))
    assert "omnilab.media.probe" in modules
    others = (
        "omnilab.agents",
        "omnilab.bench",
        "omnilab.models",
        "omnilab.tools",
        "omnilab.perception",
        "omnilab.config",
        "numpy",
        "pydantic_settings",
    )
    assert heavy_in(modules, others) == []


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_registered_command_resolves(name: str) -> None:
    """A typo in the one-line registration fails here, not in a user's hands."""
    value = import_target(COMMANDS[name][0])
    assert isinstance(value, typer.Typer) or callable(value)
    result = CliRunner().invoke(app, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def test_help_and_unknown_commands() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert name in result.output
    result = CliRunner().invoke(app, ["evall"])
    assert result.exit_code == 2
    assert "No such command 'evall'. Did you mean 'eval'" in " ".join(result.output.split())


def test_media_frames_imports_neither_numpy_nor_other_layers(tmp_path: Path) -> None:
    video = synth.make_video(tmp_path / "v.mp4", duration=1.0, size=(64, 48))
    modules = loaded_by("media", "frames", str(video), "-n", "3", "-o", str(tmp_path / "f"))
    assert len(list((tmp_path / "f").glob("*.jpg"))) == 3
    assert "omnilab.media.video" in modules
    others = ("omnilab.agents", "omnilab.bench", "omnilab.models", "omnilab.tools", "numpy")
    assert heavy_in(modules, others) == []


def test_eval_command_module_imports_no_numpy_sandbox_or_unused_bench_layers() -> None:
    """`omnilab eval` imports its command module on every run: numpy (only the intervals at the
    end need it), the code-x scorers with the sandbox and ctypes (only their scorers need them)
    and the error analysis cost ~0.3 s of every start when they were imported with it."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys, omnilab.cli.eval; print(json.dumps(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    modules = set(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert "omnilab.bench.runner" in modules
    unused = (
        "numpy",
        "ctypes",
        "omnilab.sandbox",
        "omnilab.bench.scoring.code_x",
        "omnilab.bench.scoring.code_x_process",
        "omnilab.bench.scoring.code_x_tasks",
        "omnilab.bench.scoring.code_x_metrics",
        "omnilab.bench.analysis",
        "omnilab.bench.reports",
    )
    assert [m for m in unused if m in modules] == []


def test_a_module_imported_in_the_background_is_there_when_needed() -> None:
    code = (
        "import sys, time\n"
        "from omnilab._lazy import import_in_background\n"
        "assert 'colorsys' not in sys.modules\n"
        "import_in_background('colorsys')\n"
        "import_in_background('no_such_module_here')  # its failure is left to a real import\n"
        "deadline = time.monotonic() + 10\n"
        "while 'colorsys' not in sys.modules and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "import colorsys\n"
        "print(colorsys.rgb_to_hsv(1, 0, 0))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(0.0, 1.0, 1)" and done.stderr == ""


_EXIT_PROBE = """
import atexit, gc, sys

class Marker:
    def __del__(self):
        print("cycle finalized", flush=True)

def check():  # registered before the command, so it runs after main() returns
    print("frozen", gc.get_freeze_count() > 0, flush=True)

atexit.register(check)
cycle = Marker()
cycle.self = cycle
del cycle
gc.disable()  # only main() itself collects the cycle before the process ends
from omnilab.cli.main import main
sys.argv = ["omnilab", "--version"]
main()
"""


def test_the_cli_collects_garbage_then_freezes_the_heap_before_exit() -> None:
    """Shutdown walked every live object again (0.25-0.3 s after a 1,000-task eval): main()
    collects once, so garbage made so far is still finalized, and freezes the rest."""
    proc = subprocess.run(
        [sys.executable, "-c", _EXIT_PROBE], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "cycle finalized" in lines
    assert lines[-1] == "frozen True"
    assert lines.index("cycle finalized") < lines.index("frozen True")
