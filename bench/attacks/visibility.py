"""Issue 32 part B, visibility and pipes: sandboxed code sees an allow-list of the machine (system
folders, the Python install, omnilab's package, its workspace); each attack plants a secret where
the harness keeps something of its own (outside the temporary folders, which are private in the
sandbox anyway) and looks for it from inside, with the harness's working directory elsewhere.
The last two push bytes at the harness through the terminal and the shell's pipes."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from attacks.registry import ALL, STRONG, Ctx, Verdict, attack


@contextlib.contextmanager
def host_folder() -> Iterator[Path]:
    """A folder outside the system's temporary folders (which the strong levels replace by
    private ones anyway): `.sandbox-attacks/` in the checkout, removed afterwards. World-readable
    on purpose: the ``process`` level then shows what it cannot hide."""
    root = Path(__file__).resolve().parents[2] / ".sandbox-attacks" / uuid.uuid4().hex[:8]
    root.mkdir(parents=True, mode=0o755)
    for folder in (root, root.parent):
        folder.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)
        with contextlib.suppress(OSError):
            root.parent.rmdir()


def _plant(folder: Path, name: str = "secret.txt") -> Path:
    folder.mkdir(parents=True, exist_ok=True, mode=0o755)
    secret = folder / name
    secret.write_text(f"SECRET-{uuid.uuid4().hex}")
    secret.chmod(0o644)
    return secret


_LOOK = """
import os
for path in PATHS:
    try:
        if os.path.isdir(path):
            print("listed", path, *sorted(os.listdir(path)), sep="\\t")
        else:
            print("read", path, open(path).read()[:60], sep="\\t")
    except OSError as e:
        pass
"""


def _looks(ctx: Ctx, paths: list[Path], **kw: object) -> Verdict:
    """Runs code that reads or lists each of ``paths`` with the harness's cwd elsewhere;
    contained when it read none of them and listed nothing but the folders on the way to what
    is shown on purpose (the workspace and omnilab's package keep their paths)."""
    import omnilab

    ws = kw.get("ws") or ctx.ws()
    # Shown on purpose: the workspace, omnilab's package and the Python installation (a venv
    # may live inside the checkout, as CI's does: its name is on the way, nothing else is).
    shown = [Path(str(ws)), Path(omnilab.__file__), Path(sys.prefix), Path(sys.base_prefix)]
    on_the_way = {part for path in shown for part in path.resolve().parts}
    here = Path.cwd()
    os.chdir(ctx.root)
    try:
        code = _LOOK.replace("PATHS", repr([str(p) for p in paths]))
        out, how = ctx.run(code, **{**kw, "ws": ws})
    finally:
        os.chdir(here)
    saw = []
    for line in out.splitlines():
        what, path, *rest = [*line.split("\t"), ""]
        if what == "read" or [name for name in rest if name and name not in on_the_way]:
            saw.append(f"{what} {path}: {' '.join(rest)[:60]}")
    return not saw, "; ".join(saw)[:240] or f"saw nothing ({how})"


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    old = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@attack("read the script folder through a symlinked argv[0]", STRONG)
def script_folder(ctx: Ctx) -> Verdict:
    with host_folder() as host:
        secret = _plant(host / "tools" / "harness")
        (host / "tools" / "harness" / "run.py").write_text("# the harness\n")
        (host / "bin").mkdir(mode=0o755)
        (host / "bin" / "run.py").symlink_to(host / "tools" / "harness" / "run.py")
        argv = sys.argv[:]
        sys.argv[0] = str(host / "bin" / "run.py")
        try:
            return _looks(ctx, [secret, secret.parent])
        finally:
            sys.argv[:] = argv


@attack("read a PYTHONPATH entry", STRONG)
def pythonpath_entry(ctx: Ctx) -> Verdict:
    with host_folder() as host:
        secret = _plant(host / "pylib", "settings_local.py")
        path = list(sys.path)
        sys.path.append(str(host / "pylib"))
        try:
            with _environ(PYTHONPATH=str(host / "pylib")):
                return _looks(ctx, [secret, secret.parent])
        finally:
            sys.path[:] = path


@attack("read the source checkout from another cwd", STRONG)
def source_checkout(ctx: Ctx) -> Verdict:
    import omnilab

    package = Path(omnilab.__file__).resolve().parent
    checkout = package.parent.parent if package.parent.name == "src" else package.parent
    if not (checkout / "pyproject.toml").exists():
        return True, "n/a (omnilab is installed, not run from a checkout)"
    return _looks(ctx, [checkout / "pyproject.toml", checkout, package.parent])


@attack("read results, labels and media of an eval --out run", STRONG)
def run_folder(ctx: Ctx) -> Verdict:
    with host_folder() as host:
        run_dir = host / "runs" / "eval-1"
        results = _plant(run_dir, "results.jsonl")
        other = _plant(run_dir / "trajectories", "task-2.jsonl")
        labels = _plant(host / "data", "tasks.jsonl")
        media = _plant(host / "media", "clip.mp4")
        ws = run_dir / "workspaces" / "task-1"
        ws.mkdir(parents=True)
        ws.chmod(0o755)
        paths = [results, other, other.parent, labels, media, media.parent, run_dir]
        return _looks(ctx, [*paths, ws / ".." / ".." / "results.jsonl"], ws=ws)


@attack("read other users' runs under serve --runs-dir", STRONG)
def serve_runs(ctx: Ctx) -> Verdict:
    with host_folder() as host:
        runs = host / "serve-runs"
        upload = _plant(runs / "run-of-alice" / "uploads", "photo.png")
        ws = runs / "run-of-bob" / "workspace"
        ws.mkdir(parents=True)
        ws.chmod(0o755)
        return _looks(ctx, [upload, upload.parent, runs], ws=ws)


@attack("read caches and config folders", STRONG)
def caches(ctx: Ctx) -> Verdict:
    from omnilab.config import get_settings

    with host_folder() as host:
        found = [
            _plant(host / "xdg-cache" / "huggingface"),
            _plant(host / "xdg-config" / "gh"),
            _plant(host / "omnilab-cache" / "models"),
        ]
        env = {
            "XDG_CACHE_HOME": str(host / "xdg-cache"),
            "XDG_CONFIG_HOME": str(host / "xdg-config"),
            "OMNILAB_CACHE_DIR": str(host / "omnilab-cache"),
        }
        with _environ(**env):
            get_settings.cache_clear()
            try:
                return _looks(ctx, [*found, *(f.parent.parent for f in found)])
            finally:
                get_settings.cache_clear()


@attack("escape sequences reach the terminal", ALL)
def terminal_escapes(ctx: Ctx) -> Verdict:
    import io

    from rich.markup import escape

    from omnilab.cli._console import inert_console
    from omnilab.terminal import inert

    hostile = r"print('\x1b]0;owned\x07\x1b[2J\x1b[31m[bold]red[/bold]\x9b\r\u202eanswer')"
    out, how = ctx.run(hostile)
    screen = io.StringIO()
    console = inert_console(file=screen, force_terminal=True, color_system="standard")
    console.print(f"[green]tool:[/] {escape(out)}", highlight=False)
    console.print(out, markup=False)
    shown = screen.getvalue() + inert(out)
    raw = [s for s in ("\x1b]", "\x1b[2J", "\x9b", "\r", "\u202e", "\x07") if s in shown]
    return bool(out) and not raw, f"raw sequences on the terminal: {raw!r} ({how})"


@attack("flood the shell's completion descriptor", ALL)
def completion_flood(ctx: Ctx) -> Verdict:
    from omnilab.sandbox import ShellSession

    limits = ctx.limits.model_copy(update={"wall_seconds": 6.0})
    with ShellSession(ctx.ws(), limits=limits, isolation=ctx.level) as sh:
        sh.run("true")
        rss = _rss_mb()
        started = time.monotonic()
        # bash keeps the completion pipe on a saved descriptor (10) while the command runs;
        # unbounded, the harness read all of it for as long as the command ran.
        r = sh.run("for fd in 10 11 12 13; do yes >&$fd 2>/dev/null; done")
        took = time.monotonic() - started
        grew = _rss_mb() - rss
        after = sh.run("echo alive")
    ok = took < 5.0 and grew < 16 and after.stdout.strip() == "alive"
    return ok, f"ended after {took:.1f} s, harness memory +{grew:.0f} MB, {r.warnings[:1]}"


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0
