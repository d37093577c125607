"""What sandboxed code sees is an allow-list (issue 32, point 5), and what the harness reads from
descriptors the sandbox can write is bounded (point 7).

The folders planted here lie in the checkout (``.sandbox-attacks/``), not in the temporary
folder: the strong levels replace /tmp by a private one anyway, so only a folder elsewhere shows
whether the harness's own folders are hidden."""

from __future__ import annotations

import importlib.util
import os
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from omnilab.config import SandboxLimits, get_settings
from omnilab.sandbox import IsolationLevel, ShellSession, _plan, run
from omnilab.sandbox._isolation import visible_paths
from omnilab.sandbox._run import start_sandbox
from omnilab.sandbox._spawn import SandboxProcess


def _attacks() -> ModuleType:
    if "sandbox_attacks" in sys.modules:
        return sys.modules["sandbox_attacks"]
    path = Path(__file__).resolve().parents[2] / "bench" / "sandbox_attacks.py"
    spec = importlib.util.spec_from_file_location("sandbox_attacks", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["sandbox_attacks"] = module
    spec.loader.exec_module(module)
    return module


attacks = _attacks()


@pytest.fixture()
def host() -> Iterator[Path]:
    with attacks.host_folder() as folder:
        yield folder


@pytest.fixture(params=["bwrap", "namespaces"])
def level(
    request: pytest.FixtureRequest, available: Callable[[str], IsolationLevel]
) -> IsolationLevel:
    """Each strong level this machine offers (the ``process`` level hides nothing)."""
    return available(str(request.param))


@pytest.fixture(autouse=True)
def _cwd_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The harness's working directory is not the checkout: nothing masks it "as the cwd".
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)


def _sees(level: IsolationLevel, ws: Path, *paths: Path) -> list[str]:
    """What sandboxed code could read or list of ``paths``."""
    code = f"""
        import os
        for path in {[str(p) for p in paths]!r}:
            try:
                print("listed", path, sorted(os.listdir(path)) if os.path.isdir(path) else open(path).read())
            except OSError as e:
                pass
    """
    r = run([sys.executable, "-c", textwrap.dedent(code)], workspace=ws, isolation=level)
    assert r.exit_code == 0, r.stderr
    return r.stdout.splitlines()


def _workspace(folder: Path) -> Path:
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    return folder


def test_run_folder_dataset_and_media_of_an_eval_out_elsewhere_are_invisible(
    level: IsolationLevel, host: Path
) -> None:
    run_dir = host / "runs" / "eval"
    results = attacks._plant(run_dir, "results.jsonl")
    trajectory = attacks._plant(run_dir / "trajectories", "task-2.jsonl")
    labels = attacks._plant(host / "data", "tasks.jsonl")
    media = attacks._plant(host / "media", "clip.mp4")
    ws = _workspace(run_dir / "workspaces" / "task-1")
    seen = _sees(level, ws, results, trajectory, trajectory.parent, labels, media, media.parent)
    assert seen == []
    # The folders on the way to the workspace exist, and hold nothing but that way.
    assert _sees(level, ws, run_dir) == [f"listed {run_dir} ['workspaces']"]


def test_pythonpath_entries_and_a_symlinked_script_folder_are_invisible(
    level: IsolationLevel, host: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    entry = attacks._plant(host / "pylib", "local_settings.py")
    monkeypatch.setenv("PYTHONPATH", str(entry.parent))
    monkeypatch.syspath_prepend(str(entry.parent))
    script = attacks._plant(host / "tools" / "harness", "run.py")
    link = host / "bin" / "run"
    link.parent.mkdir()
    link.symlink_to(script)
    monkeypatch.setattr(sys, "argv", [str(link)])
    ws = _workspace(tmp_path / "ws")
    assert _sees(level, ws, entry, entry.parent, script, script.parent) == []


def test_caches_and_config_folders_are_invisible(
    level: IsolationLevel, host: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = host / "home"
    planted = [attacks._plant(home / ".cache" / "pip"), attacks._plant(home / ".config" / "gh")]
    planted.append(attacks._plant(host / "xdg" / "huggingface"))
    planted.append(attacks._plant(host / "omnilab-cache" / "models"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(host / "xdg"))
    monkeypatch.setenv("OMNILAB_CACHE_DIR", str(host / "omnilab-cache"))
    get_settings.cache_clear()
    try:
        ws = _workspace(tmp_path / "ws")
        assert _sees(level, ws, *planted, *(p.parent for p in planted)) == []
    finally:
        get_settings.cache_clear()


def test_the_root_holds_only_the_allow_list(level: IsolationLevel, tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    (listed,) = _sees(level, ws, Path("/"))
    names = set(eval(listed.split(" ", 2)[2]))  # our own repr of a list of names
    plan = _plan.mount_plan(ws, as_stranger=os.geteuid() == 0)
    shown = [*plan.system, *(p for p, _ in plan.links), *(p for p, _ in plan.binds)]
    shown += [*plan.scratch, "/dev", "/proc"]
    assert names == {Path(p).parts[1] for p in shown}
    # A folder of the machine that is not on the list (here: the checkout's) does not exist.
    checkout = Path(__file__).resolve().parents[2]
    assert _sees(level, ws, checkout / "pyproject.toml", checkout / "tests") == []


def test_a_harness_folder_under_a_shown_folder_is_masked(
    level: IsolationLevel, host: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # As if the harness ran from a checkout in /usr/src: a shown system folder holds it.
    system, links = _plan._system()
    monkeypatch.setattr(_plan, "_system", lambda: ([*system, str(host)], links))
    checkout = host / "app"
    secret = attacks._plant(checkout)
    shared = attacks._plant(host / "share")
    monkeypatch.chdir(checkout)
    ws = _workspace(tmp_path / "ws")
    assert _sees(level, ws, secret, checkout, shared) == [
        f"listed {checkout} []",  # an empty tmpfs in its place
        f"listed {shared} {shared.read_text()}",  # the rest of the shown folder stays
    ]


def test_doctor_lists_the_visible_host_paths(level: IsolationLevel) -> None:
    lines = visible_paths(level, own_uid=os.geteuid() == 0)
    assert "<workspace> (read-write, the workspace)" in lines
    assert any(line.startswith("/usr (read-only") for line in lines)
    assert any("omnilab's package" in line or "Python installation" in line for line in lines)
    assert not any(str(Path.cwd()) in line for line in lines)
    process = visible_paths(IsolationLevel.PROCESS, own_uid=True)
    assert "nothing is hidden" in process[0]


def test_omnilab_doctor_prints_the_visible_host_paths() -> None:
    import json

    from typer.testing import CliRunner

    from omnilab.cli.main import app
    from omnilab.sandbox import isolation_report

    report = isolation_report()
    result = CliRunner().invoke(app, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["visible"] == report.visible
    text = CliRunner().invoke(app, ["doctor"]).output
    assert f"host paths sandboxed code sees ({report.level.value}):" in text
    assert all(f"  - {line}" in text for line in report.visible)


# -- bounded pipes --------------------------------------------------------------------------------


def test_a_flood_on_the_shells_completion_descriptor_is_cut(
    level: IsolationLevel, tmp_path: Path
) -> None:
    limits = SandboxLimits(wall_seconds=8, cpu_seconds=5, output_bytes=4000)
    with ShellSession(_workspace(tmp_path / "ws"), limits=limits, isolation=level) as sh:
        sh.run("true")
        started = time.monotonic()
        # While a command runs, bash keeps the completion pipe on a saved descriptor (10+).
        r = sh.run("for fd in 10 11 12 13; do yes >&$fd 2>/dev/null; done")
        took = time.monotonic() - started
        assert took < 4, f"the flood ran {took:.1f} s: it was read, not cut"
        assert any("completion descriptor" in w for w in r.warnings), r.warnings
        assert sh.run("echo alive").stdout == "alive\n"


def test_a_control_pipe_holds_at_most_its_cap(
    level: IsolationLevel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[int] = []
    original = SandboxProcess._read

    def counting(self: SandboxProcess, fd: int) -> int:
        got = original(self, fd)
        if fd in self.extra:
            read.append(max(got, 0))
        return got

    monkeypatch.setattr(SandboxProcess, "_read", counting)
    ws = _workspace(tmp_path / "ws")
    r_end, w_end = os.pipe()
    proc, _ = start_sandbox(
        ["sh", "-c", "yes >&3"],
        workspace=ws,
        limits=SandboxLimits(wall_seconds=5),
        network=False,
        env=None,
        isolation=level,
        fd_map={3: w_end},
    )
    try:
        proc.watch(r_end, 10_000)
        proc.pump(time.monotonic() + 5, until=lambda: not proc.reading(r_end))
        assert r_end in proc.overflowed
        assert len(proc.extra[r_end]) <= 10_000 and sum(read) <= 10_001
    finally:
        proc.close()


def test_the_catalogue_has_part_b_at_every_level() -> None:
    names = list(attacks.ATTACKS)
    start = names.index("read the script folder through a symlinked argv[0]")
    block = names[start : names.index("flood the shell's completion descriptor") + 1]
    assert block == [
        "read the script folder through a symlinked argv[0]",
        "read a PYTHONPATH entry",
        "read the source checkout from another cwd",
        "read results, labels and media of an eval --out run",
        "read other users' runs under serve --runs-dir",
        "read caches and config folders",
        "escape sequences reach the terminal",
        "flood the shell's completion descriptor",
    ]
    # The process level hides no folder: the visibility attacks are promised at the strong levels.
    assert all(attacks.PROMISED[name] == attacks.STRONG for name in block[:6])
    assert all(attacks.PROMISED[name] == attacks.ALL for name in block[6:])


def test_a_config_file_directly_in_a_system_folder_reads_empty(
    level: IsolationLevel, host: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # OMNILAB_CONFIG=/etc/omnilab.toml: /etc is shown (never masked), and the file may hold
    # models.api_keys. A folder of the checkout stands for /etc here.
    system = host / "etc"
    config = system / "omnilab.toml"
    secret = "sk-in-the-system-config-0123456789"
    config.parent.mkdir(mode=0o755)
    config.write_text(f'[models.api_keys]\nopenai = "{secret}"\n')
    config.chmod(0o644)
    other = attacks._plant(system, "hosts")
    monkeypatch.setattr(_plan, "SHOWN_SYSTEM_DIRS", (*_plan.SHOWN_SYSTEM_DIRS, str(system)))
    monkeypatch.setattr(_plan, "SYSTEM_DIRS", {*_plan.SYSTEM_DIRS, str(system)})
    monkeypatch.setenv("OMNILAB_CONFIG", str(config))
    get_settings.cache_clear()
    try:
        ws = _workspace(tmp_path / "ws")
        seen = _sees(level, ws, config, other)
        lines = _plan.mount_plan(ws, as_stranger=os.geteuid() == 0).visible(str(ws))
    finally:
        get_settings.cache_clear()
    # The folder is still shown (its other files read as they are); the config reads empty.
    assert seen == [f"listed {config} ", f"listed {other} {other.read_text()}"]
    assert f"{config} (hidden: empty)" in lines


def test_data_folders_named_by_the_settings_are_masked_inside_system_folders(
    level: IsolationLevel, host: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A dataset's media root under /usr/share (its labels beside the media), runs and the
    # offline index under /usr/local: a folder of the checkout stands for the system folder.
    system = host / "share"
    labels = attacks._plant(system / "omnigaia", "tasks.jsonl")
    runs = attacks._plant(system / "runs" / "eval-1", "results.jsonl")
    index = attacks._plant(system / "index", "docs.jsonl")
    other = attacks._plant(system / "fonts", "font.txt")
    config = host / "conf" / "omnilab.toml"
    config.parent.mkdir()
    config.write_text(
        f'[bench]\nruns_dir = "{runs.parent.parent}"\n'
        f'[bench.media_roots]\nomnigaia = "{labels.parent}"\n'
        f'[web]\nindex_dir = "{index.parent}"\n'
    )
    monkeypatch.setattr(_plan, "SHOWN_SYSTEM_DIRS", (*_plan.SHOWN_SYSTEM_DIRS, str(system)))
    monkeypatch.setenv("OMNILAB_CONFIG", str(config))
    get_settings.cache_clear()
    try:
        ws = _workspace(tmp_path / "ws")
        hidden = _sees(level, ws, labels, labels.parent, runs, index, index.parent)
        shown = _sees(level, ws, other)
    finally:
        get_settings.cache_clear()
    # Masked: each folder is an empty one there, none of its files can be read.
    assert hidden == [f"listed {labels.parent} []", f"listed {index.parent} []"]
    assert shown == [f"listed {other} {other.read_text()}"]
