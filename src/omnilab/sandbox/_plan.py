"""How each isolation level is built: the wrapper command line and the file-system view.

The view is an allow-list: sandboxed code starts from an empty root and sees only what is put
there (system folders and the Python install read-only, the workspace read-write, private
scratch folders, its own /dev and /proc), never "the machine minus some folders". The same plan
is realised by bubblewrap's options at the ``bwrap`` level and by our launcher (:mod:`._launcher`)
at the ``namespaces`` level, so both levels show sandboxed code the same machine.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from omnilab.config import config_file
from omnilab.sandbox._private import private_paths, split_private
from omnilab.sandbox._types import IsolationLevel

__all__ = [
    "DEV_NODES",
    "SHOWN_SYSTEM_DIRS",
    "SYSTEM_DIRS",
    "MountPlan",
    "closed_ancestor",
    "mount_plan",
    "package_import_path",
    "run_folders",
    "wrapper_argv",
]

# Writable, private, vanishing: programs expect to write temporary files here.
_SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")  # noqa: S108 - replaced by private tmpfs, not used
_SCRATCH_BYTES = 256 * 1024**2
_ROOT_BYTES = 1024**2
# The machine's folders sandboxed code sees (read-only), when they exist: programs, libraries,
# system configuration and the kernel's view of the hardware. Nothing else of the host is put in
# the sandbox's root: not /home, /root, /run, /mnt, /opt, /var, /srv or any folder a harness,
# a dataset or a run lives in.
SHOWN_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")


@dataclass
class MountPlan:
    """What sandboxed code sees: an empty read-only root holding only these."""

    system: list[str] = field(default_factory=list)
    """The machine's system folders, shown read-only at their place."""

    links: list[tuple[str, str]] = field(default_factory=list)
    """Top-level links of the machine recreated as they are (``/lib -> usr/lib``)."""

    scratch: list[str] = field(default_factory=list)
    """Fresh writable tmpfs (mode 1777), gone when the sandbox ends."""

    masks: list[str] = field(default_factory=list)
    """Folders inside a shown folder that are replaced by an empty read-only tmpfs (the
    harness's own folders, when they lie under a system folder)."""

    binds: list[tuple[str, bool]] = field(default_factory=list)
    """Paths shown at the same place (path, writable): the workspace, the Python install and
    omnilab's package folder (where a system folder does not already show them)."""

    hidden: list[str] = field(default_factory=list)
    """Files inside a shown folder that read as empty (``/dev/null`` over them): the harness's
    configuration file when it lies directly in a system folder (``/etc/omnilab.toml``), which
    may hold API keys and whose folder cannot be masked whole."""

    def launcher_config(self, base: str = "") -> dict[str, object]:
        """The plan as the launcher's ``mounts`` config (``namespaces`` level)."""
        return {
            "base": base or _base_folder(),
            "root_bytes": _ROOT_BYTES,
            "links": [[p, t] for p, t in self.links],
            "scratch": [[p, _SCRATCH_BYTES] for p in self.scratch],
            "masks": self.masks,
            "binds": [[p, False] for p in self.system] + [[p, rw] for p, rw in self.binds],
            "hide": self.hidden,
            "proc": True,
            "dev": DEV_NODES,
        }

    def bwrap_args(self) -> list[str]:
        """The plan as bubblewrap options (bubblewrap starts from an empty tmpfs root)."""
        args = ["--dev", "/dev", "--proc", "/proc"]
        for path, target in self.links:
            args += ["--symlink", target, path]
        binds = [(p, False) for p in self.system] + self.binds
        items: list[tuple[str, int, bool]] = [(p, 1, rw) for p, rw in binds]
        items += [(p, 0, False) for p in [*self.scratch, *self.masks]]
        made: set[str] = {"/dev", "/proc", *self.scratch, *self.masks}
        for path, kind, rw in sorted(items, key=lambda i: (_depth(i[0]), i[1])):
            # bubblewrap would create the folders leading to a mount point as 0700 (root's),
            # which the sandbox uid could not pass; create them 0755 first.
            for parent in reversed(Path(path).parents):
                folder = str(parent)
                if folder != "/" and folder not in made and not self._shows_host(folder):
                    args += ["--perms", "0755", "--dir", folder]
                    made.add(folder)
            if kind == 1:
                args += ["--bind" if rw else "--ro-bind", path, path]
                continue
            mode, size = ("1777", _SCRATCH_BYTES) if path in self.scratch else ("0755", 1024**2)
            args += ["--perms", mode, "--size", str(size), "--tmpfs", path]
        for path in self.hidden:  # after the folder that holds it
            # --dev-bind: a plain bind is nodev, and /dev/null could then not even be opened
            # (the file would still be hidden, but not read as empty); a write to it goes
            # nowhere, the file underneath is untouched.
            args += ["--dev-bind", "/dev/null", path]
        return [*args, "--remount-ro", "/"]

    def _shows_host(self, path: str) -> bool:
        """Whether ``path`` is the machine's own folder in the sandbox (a bound folder not
        under a mask), rather than one made in the sandbox's root or a tmpfs."""
        shown = [*self.system, *(p for p, _ in self.binds)]
        covering = [(_depth(p), 1) for p in shown if _under(path, [p])]
        covering += [(_depth(p), 0) for p in [*self.masks, *self.scratch] if _under(path, [p])]
        return bool(covering) and max(covering)[1] == 1

    def visible(self, workspace: str) -> list[str]:
        """Every host path sandboxed code can see, with how (for ``omnilab doctor``)."""
        lines = [f"{p} (read-only, system)" for p in self.system]
        lines += [f"{p} -> {t} (link)" for p, t in self.links]
        for path, rw in self.binds:
            what = "the workspace" if path == workspace else _what(path)
            lines.append(f"{path} ({'read-write' if rw else 'read-only'}, {what})")
        lines += [f"{p} (private empty tmpfs, writable)" for p in self.scratch]
        lines.append(f"/dev ({', '.join(DEV_NODES)}, own terminals)")
        lines.append("/proc (the sandbox's own processes)")
        lines += [f"{p} (hidden: empty)" for p in [*self.masks, *self.hidden]]
        return lines


def _what(path: str) -> str:
    if path == _package_folder():
        return "omnilab's package"
    if path in _python_paths():
        return "the Python installation"
    return "needed by the resolver" if path.startswith("/run/") else "needed"


def _base_folder() -> str:
    """An existing folder the launcher mounts the sandbox's new root on (in its own mount
    namespace, so the machine's folder is untouched)."""
    return next((p for p in ("/tmp", "/mnt", "/dev") if _real_dir(p)), "/dev")  # noqa: S108


def _depth(path: str) -> int:
    return path.rstrip("/").count("/")


def _under(path: str, folders: list[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


# Never masked: the system the sandbox runs on (a harness started in / or /usr must not hide it).
SYSTEM_DIRS = {"/", "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
           "/var", "/sys", "/proc", "/dev", "/tmp", "/usr/local", "/usr/lib", "/usr/bin"}  # fmt: skip  # noqa: S108
DEV_NODES = ["null", "zero", "full", "random", "urandom", "tty"]


def _prefixes() -> list[str]:
    return sorted({os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, sys.exec_prefix)})


@cache
def _python_paths() -> list[str]:
    """Folders the sandboxed Python needs: its install prefixes and the import path entries
    inside them (standard library, site-packages). Entries elsewhere (the harness's working
    directory, its script folder, source checkouts, PYTHONPATH) are never shown."""
    prefixes = _prefixes()
    paths = set(prefixes)
    paths.add(str(Path(os.path.realpath(sys.executable)).parent.parent))
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        if real and Path(real).is_dir() and _under(real, prefixes):
            paths.add(real)
    return sorted(paths)


@cache
def _package_folder() -> str:
    """omnilab's own package folder. An editable install (or ``PYTHONPATH=src`` in
    development) keeps it in a source checkout, which is never shown; showing just this folder
    (read-only, code only: not the checkout's other files) lets ``omnilab media ...`` and
    ``omnilab digest`` run inside, as they do for a regular install."""
    return os.path.realpath(Path(__file__).parent.parent)  # omnilab/sandbox/_plan.py


def package_import_path() -> str | None:
    """The folder to put on the sandboxed Python's path so that it imports this very omnilab,
    when the interpreter's own paths would not (``PYTHONPATH=src`` in development, or an
    editable install of another checkout): in the sandbox it holds only the package."""
    package = _package_folder()
    if _under(package, _python_paths()):
        return None
    return str(Path(package).parent)


def _harness_folders(workspace: str) -> list[str]:
    """Folders of the harness that sandboxed code must never see, wherever they are (masked
    when they lie under a shown folder): its working directory, its script's folder (resolved
    through links too), the folder of its configuration file, its PYTHONPATH entries, the
    source checkout omnilab runs from, its caches and configuration folders, and the folder
    holding the workspace (other tasks' workspaces)."""
    found = [Path.cwd(), config_file().absolute().parent, Path(workspace).parent, Path.home()]
    if sys.argv and sys.argv[0] not in ("", "-c", "-m"):
        script = Path(sys.argv[0]).absolute()
        found += [script.parent, Path(os.path.realpath(script)).parent]
    found += [Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    found += [Path(p) for p in sys.path if p and not _under(os.path.realpath(p), _prefixes())]
    found += _user_folders()
    package = Path(_package_folder())
    if not _under(str(package), _prefixes()):
        checkout = package.parent
        found += [checkout, checkout.parent] if checkout.name == "src" else [checkout]
    # One that holds the workspace or the Python install is masked all the same: those are
    # shown again on top of the mask.
    folders = {os.path.realpath(f) for f in found}
    return sorted(
        f for f in folders if f not in SYSTEM_DIRS and not _under(f, [workspace]) and _real_dir(f)
    )


def _user_folders() -> list[Path]:
    """The harness user's caches and configuration (``~/.cache``, ``~/.config``, omnilab's
    cache), named by the environment or the platform's defaults, and the data folders the
    settings name (media roots, runs folders, the offline search index)."""
    home = Path.home()
    found = [home / ".cache", home / ".config"]
    for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "OMNILAB_CACHE_DIR"):
        if os.environ.get(name):
            found.append(Path(os.environ[name]))
    found += _data_folders()
    return [f.expanduser().absolute() for f in found]


def _data_folders() -> list[Path]:
    """The harness's data wherever the settings put it (a media root under /usr/share, runs
    under /usr/local): its cache, labels, other runs and the offline search index; tasks get
    their inputs staged into the workspace."""
    from omnilab.config import get_settings
    from omnilab.errors import OmnilabError

    found: list[Path] = []
    # A bad setting is reported where it is used, not here.
    with contextlib.suppress(OmnilabError):
        settings = get_settings()
        found.append(settings.cache_dir)
        # A media root at a URL is no folder of this machine's.
        found += [p for p in settings.bench.media_roots.values() if isinstance(p, Path)]
        found.append(settings.bench.runs_dir)
        found.append(settings.agents.runs_dir)
        if settings.web.index_dir is not None:
            found.append(settings.web.index_dir)
    return found


def run_folders() -> list[str]:
    """The data folders every sandbox masks wherever they lie: the settings' (cache, media
    roots, runs folders, search index) and those this process's runs named
    (:func:`~omnilab.sandbox.add_private_paths`), for ``omnilab doctor``."""
    found = {os.path.realpath(f.expanduser()) for f in _data_folders()}
    return sorted(found | set(private_paths()))


def _real_dir(path: str) -> bool:
    return Path(path).is_dir() and not Path(path).is_symlink()


def closed_ancestor(path: str) -> str | None:
    """The highest folder above ``path`` that a stranger (other uid) cannot enter."""
    parts = Path(path).parts
    for i in range(2, len(parts)):
        folder = str(Path(*parts[:i]))
        try:
            mode = Path(folder).stat().st_mode
        except OSError:
            return None
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return folder
    return None


def _system() -> tuple[list[str], list[tuple[str, str]]]:
    """The shown system folders that exist here, and those that are top-level links."""
    folders, links = [], []
    for path in SHOWN_SYSTEM_DIRS:
        if Path(path).is_symlink():
            target = str(Path(path).readlink())
            if _under(os.path.realpath(path), list(SHOWN_SYSTEM_DIRS)):
                links.append((path, target))
        elif _real_dir(path):
            folders.append(path)
    return folders, links


def mount_plan(workspace: Path, *, as_stranger: bool) -> MountPlan:
    """The file-system view for a sandbox in ``workspace``.

    ``as_stranger``: sandboxed code runs under a uid of its own, so a folder it could not enter
    (mode without o+x) inside a shown folder, on the way to a needed path, is masked and the
    path shown again below it.
    """
    plan = MountPlan()
    plan.system, plan.links = _system()
    plan.scratch = [p for p in _SCRATCH if _real_dir(p)]
    ws = os.path.realpath(workspace)
    # The harness's folders can only be seen where they lie under a shown system folder (a
    # checkout in /usr/src, a cache under /etc): mask them there.
    masks = [f for f in _harness_folders(ws) if _under(f, plan.system) and f not in plan.system]
    # The run's own folders (dataset, media root, --out, serve's runs), wherever they lie: under
    # a system folder, or inside the Python install or omnilab's package folder (shown too).
    own, own_files = split_private(private_paths(), never=SYSTEM_DIRS, workspace=ws)
    shown = [*plan.system, *_python_paths(), _package_folder()]
    masks += [f for f in own if _under(f, shown) and f not in shown]
    needed = [(ws, True)] + [(p, False) for p in _python_paths() if not _under(p, [ws])]
    package = _package_folder()
    if not _under(package, [p for p, _ in needed]):
        needed.append((package, False))
    # A resolver config that lives under /run (systemd-resolved) must stay readable.
    resolv = os.path.realpath("/etc/resolv.conf")
    if resolv.startswith("/run/") and Path(resolv).exists():
        needed.append((str(Path(resolv).parent), False))
    if as_stranger:
        for path, _ in needed:
            closed = closed_ancestor(path)
            if closed and _under(closed, plan.system) and closed not in plan.system:
                masks.append(closed)
    # A deeper mask under another one is redundant.
    plan.masks = sorted({m for m in masks if not any(_under(m, [o]) for o in masks if o != m)})
    # A configuration file in a system folder (OMNILAB_CONFIG=/etc/omnilab.toml) is not covered
    # by a mask of its folder (never masked: the system needs it): hide the file itself.
    config = os.path.realpath(config_file())
    for file in [config, *own_files]:
        seen = _under(file, plan.system) and not _under(file, plan.masks)
        if Path(file).is_file() and seen and file not in plan.hidden:
            plan.hidden.append(file)
    for path, rw in sorted(needed, key=lambda n: _depth(n[0])):
        if rw or not plan._shows_host(path):
            plan.binds.append((path, rw))
    return plan


def wrapper_argv(
    level: IsolationLevel, *, network: bool, plan: MountPlan, workspace: Path
) -> list[str]:
    """The command that puts the launcher into its namespaces (empty at the ``process`` level)."""
    if level is IsolationLevel.PROCESS:
        return []
    if level is IsolationLevel.NAMESPACES:
        argv = [shutil.which("unshare") or "unshare", "--mount", "--pid", "--ipc", "--uts"]
        argv += ["--fork", "--kill-child", "--propagation", "private"]
        if os.geteuid() != 0:
            argv += ["--user", "--map-root-user"]
        if not network:
            argv.append("--net")
        return [*argv, "--"]
    argv = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--unshare-pid"]
    argv += ["--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        argv.append("--unshare-net")
    argv += plan.bwrap_args()
    argv += ["--chdir", str(workspace)]
    return [*argv, "--"]
