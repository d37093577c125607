"""The parts behind the escapes' fixes: uid leases, link-safe file operations, the mount plan,
totals and their reporting, the process level's uid drop and its opt-in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.config import SandboxLimits, get_settings
from omnilab.sandbox import IsolationLevel, PythonSession, SandboxError, _cgroup, _uids, run
from omnilab.sandbox._plan import SHOWN_SYSTEM_DIRS, _package_folder, mount_plan
from omnilab.sandbox._safefs import chown_tree, place_file
from omnilab.sandbox._seccomp import filter_program
from omnilab.sandbox._wsfs import prepare_workspace

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs a root harness")


@pytest.fixture()
def stranger_root(tmp_path: Path) -> Iterator[Path]:
    """A scratch folder a sandbox uid can pass through (pytest's own is 0700)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    try:
        import sandbox_attacks

        with sandbox_attacks.scratch() as folder:
            yield folder
    finally:
        sys.path.pop(0)


# -- uid leases ---------------------------------------------------------------------------------


def test_live_workspaces_never_share_a_uid(tmp_path: Path) -> None:
    leases = [_uids.acquire(tmp_path / f"w{i}", 300_000) for i in range(20)]
    again = _uids.acquire(tmp_path / "w3", 300_000)
    try:
        assert len({lease.uid for lease in leases}) == 20
        assert again.uid == leases[3].uid  # one workspace, one uid (shell + interpreter)
    finally:
        for lease in [*leases, again]:
            _uids.release(lease)
    assert not [lease for lease in _uids.live_leases() if lease.workspace.startswith(str(tmp_path))]


def test_uid_leases_hold_across_processes(tmp_path: Path) -> None:
    mine = _uids.acquire(tmp_path / "a", 300_000)
    code = f"""
        from pathlib import Path
        from omnilab.sandbox import _uids
        print(_uids.acquire(Path({str(tmp_path / "b")!r}), 300_000).uid)
    """
    try:
        other = int(subprocess.check_output([sys.executable, "-c", textwrap.dedent(code)]))
        assert other != mine.uid
        # The other process died holding its lease: the next caller reclaims it.
        freed: list[str] = []
        probe = _uids.acquire(tmp_path / "c", 300_000, on_last=lambda ws, uid: freed.append(ws))
        _uids.release(probe)
        assert str(tmp_path / "b") in freed
    finally:
        _uids.release(mine)


def test_workspace_handed_back_when_its_last_sandbox_ends(ws: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs a root harness")
    r = run(["true"], workspace=ws)
    assert r.ok
    st = ws.stat()
    # A later sandbox reusing that uid cannot enter this workspace.
    assert st.st_uid == 0 and st.st_mode & 0o777 == 0o700


# -- link-safe operations -----------------------------------------------------------------------


def test_place_file_replaces_a_planted_link_and_refuses_a_linked_folder(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    source = tmp_path / "frame.jpg"
    source.write_bytes(b"FRAME")
    victim = outside / "victim.txt"
    victim.write_text("keep")
    (ws / "perception").mkdir()
    (ws / "perception" / "f.jpg").symlink_to(victim)
    place_file(ws, ("perception",), "f.jpg", source)
    assert not (ws / "perception" / "f.jpg").is_symlink()
    assert (ws / "perception" / "f.jpg").read_bytes() == b"FRAME" and victim.read_text() == "keep"
    (ws / "perception" / "f.jpg").unlink()
    (ws / "perception").rmdir()
    (ws / "perception").symlink_to(outside)
    with pytest.raises(OSError):
        place_file(ws, ("perception",), "g.jpg", source)
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]


@root_only
def test_prepare_workspace_never_follows_links(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside.txt"
    ws.mkdir()
    outside.write_text("root's")
    (ws / "link").symlink_to(outside)
    (ws / "tmp").symlink_to("/nonexistent")
    prepare_workspace(ws, (300_123, 300_123))
    assert outside.stat().st_uid == 0  # the target was not chowned
    assert os.lstat(ws / "link").st_uid == 300_123  # the link itself was
    assert (ws / "tmp").is_dir() and not (ws / "tmp").is_symlink()
    chown_tree(ws, 0, 0)
    assert ws.stat().st_uid == 0


# -- mounts and seccomp -------------------------------------------------------------------------


def test_mount_plan_binds_back_only_the_interpreter(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    ws = tmp_path / "runs" / "workspaces" / "t1"
    ws.mkdir(parents=True)
    old = list(sys.path)
    sys.path[:0] = ["", str(project / "src")]
    try:
        cwd = Path.cwd()
        os.chdir(project)
        try:
            plan = mount_plan(ws, as_stranger=True)
        finally:
            os.chdir(cwd)
    finally:
        sys.path[:] = old
    bound = dict(plan.binds)
    assert bound.pop(str(ws.resolve())) is True  # the workspace, writable
    assert str(project) not in bound and str(project / "src") not in bound
    # An allow-list: system folders, the interpreter's prefixes and omnilab's package only,
    # read-only; nothing of the machine holds the project or the run folder.
    assert set(plan.system) <= set(SHOWN_SYSTEM_DIRS)
    allowed = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)} | {_package_folder()}
    assert all(any(b == p or b.startswith(p + "/") for p in allowed) for b in bound)
    assert not any(rw for rw in bound.values())
    shown = [*plan.system, *bound]
    for private in (project, ws.parent, tmp_path / "runs"):
        assert not any(str(private) == p or str(private).startswith(p + "/") for p in shown)


def test_omnilab_itself_runs_inside_but_its_checkout_stays_hidden(
    ws: Path, available: Callable[[str], IsolationLevel]
) -> None:
    # An editable install keeps omnilab in a source checkout, which is masked; only the package
    # folder is bound back, so `omnilab media ...` works for the coder agent's shell.
    level = available("namespaces")
    package = Path(_package_folder())
    probe = (
        "import omnilab, pathlib; p = pathlib.Path(omnilab.__file__).parent; "
        "print(p); print(sorted(x.name for x in p.parent.iterdir()))"
    )
    r = run([sys.executable, "-c", probe], workspace=ws, isolation=level)
    assert r.exit_code == 0, r.stderr
    folder, listing = r.stdout.splitlines()
    assert os.path.realpath(folder) == str(package)
    if str(package) in [path for path, _ in mount_plan(ws, as_stranger=False).binds]:
        assert listing == repr([package.name])  # nothing else of the checkout is visible
    version = run([str(Path(sys.executable).parent / "omnilab"), "--version"], workspace=ws)
    assert version.exit_code == 0 and version.stdout.startswith("omnilab "), version.stderr


def test_seccomp_program_is_well_formed() -> None:
    program = filter_program("x86_64")
    assert program is not None and len(program) % 8 == 0 and len(program) // 8 < 256
    assert filter_program("mips") is None


# -- totals and their reporting -----------------------------------------------------------------


def test_results_say_which_totals_are_missing(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cgroup, "_layout", lambda: _cgroup._Layout(why={"v2": "test: none"}))
    r = run(["true"], workspace=ws)
    assert {"memory", "processes", "cpu rate", "cpu time"} <= set(r.missing_totals)
    with PythonSession(ws) as py:
        assert "memory" in py.run("1").missing_totals
    status = _cgroup.cgroup_status()
    assert status["memory"].startswith("MISSING (test: none")


@root_only
def test_results_have_all_totals_here_when_cgroups_work(ws: Path) -> None:
    if _cgroup.missing_totals():
        pytest.skip(f"this machine lacks {_cgroup.missing_totals()}")
    assert run(["true"], workspace=ws).missing_totals == []


def test_memory_total_kills_and_says_so(ws: Path) -> None:
    if "memory" in _cgroup.missing_totals():
        pytest.skip("no memory cgroup here")
    limits = SandboxLimits(memory_bytes=128 * 1024**2, wall_seconds=20)
    code = """
        import subprocess, sys, time
        child = "b = b'1' * (90 * 1024**2); import time; time.sleep(5)"
        procs = [subprocess.Popen([sys.executable, "-c", child]) for _ in range(3)]
        for p in procs:
            p.wait()
        print([p.returncode for p in procs])
    """
    r = run([sys.executable, "-c", textwrap.dedent(code)], workspace=ws, limits=limits)
    assert "-9" in r.stdout and r.killed == "memory limit"


def test_doctor_reports_totals(monkeypatch: pytest.MonkeyPatch) -> None:
    from omnilab.cli.main import app

    result = CliRunner().invoke(app, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert set(report["totals"]) == {
        "memory",
        "processes",
        "cpu rate",
        "cpu time",
        "workspace size",
    }
    assert report["missing_totals"] == [
        name for name, how in report["totals"].items() if how.startswith("MISSING")
    ]
    text = CliRunner().invoke(app, ["doctor"])
    assert text.exit_code == 0 and "total per sandbox" in text.output


# -- the process level --------------------------------------------------------------------------


@root_only
def test_process_level_runs_under_its_own_uid(stranger_root: Path) -> None:
    ws = stranger_root / "ws"
    ws.mkdir()
    python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
    r = run([python, "-c", "import os; print(os.getuid())"], workspace=ws, isolation="process")
    if r.exit_code is None or "cannot" in r.stderr:
        pytest.skip(f"no interpreter a stranger can run here: {r.stderr}")
    assert int(r.stdout) >= get_settings().sandbox.uid_base
    assert not any(w.startswith("UNSAFE") for w in r.warnings)


@root_only
def test_process_level_refuses_root_without_the_opt_in(ws: Path) -> None:
    # pytest's tmp folder is 0700: the level's own uid cannot reach it, and it will not run as root.
    with pytest.raises(SandboxError, match="unsafe_process_as_root"):
        run(["true"], workspace=ws, isolation="process")


@root_only
def test_process_level_as_root_only_with_the_loud_opt_in(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_SANDBOX__UNSAFE_PROCESS_AS_ROOT", "true")
    get_settings.cache_clear()
    r = run(["id", "-u"], workspace=ws, isolation=IsolationLevel.PROCESS)
    assert r.stdout.strip() == "0"
    assert any(w.startswith("UNSAFE: this code ran as root") for w in r.warnings)


@root_only
def test_a_workspace_tmpfs_that_cannot_be_mounted_is_reported(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnilab.sandbox import _holdings

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError("mount: operation not permitted")

    monkeypatch.setattr(_holdings, "mount_workspace", refuse)
    r = run(["true"], workspace=ws)
    assert r.ok and "workspace size" in r.missing_totals
