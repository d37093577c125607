"""Attacks through paths named by data and through run folders (issue 42, part B).

The harness (often root) acts on a dataset's file list, a trajectory's message parts, a name
swapped between a check and a use, a header that promises huge pictures, and folders another
user made. Each attack below plants one of those against a root-only (0600) file and says
whether it was contained. These are the ``data paths`` family of the attack table: they run in
the harness, at every isolation level alike (no sandboxed code is needed to plant them).

    python bench/data_path_attacks.py            # one line per attack, then the escapes

To be registered as ``bench/attacks/data_paths.py`` once the table is a package.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

Verdict = tuple[bool, str]
"""(contained, what happened)."""
ATTACKS: dict[str, Callable[[Path], Verdict]] = {}
SECRET = b"root:$6$secret-hash:19000:0:99999:7:::\n"


def attack(name: str) -> Callable[[Callable[[Path], Verdict]], Callable[[Path], Verdict]]:
    def register(fn: Callable[[Path], Verdict]) -> Callable[[Path], Verdict]:
        ATTACKS[name] = fn
        return fn

    return register


def _secret(root: Path, name: str = "shadow") -> Path:
    folder = root / "private"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / name
    path.write_bytes(SECRET)
    path.chmod(0o600)
    return path


def _dataset(folder: Path, files: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "tasks.jsonl"
    lines = [
        json.dumps({"id": f"t{i}", "question": "q?", "answer": "a", "files": [f]})
        for i, f in enumerate(files)
    ]
    data.write_text("\n".join(lines) + "\n")
    return data


@attack("dataset names an absolute path or '..' escapes")
def dataset_escape(root: Path) -> Verdict:
    from omnilab.bench import load_dataset
    from omnilab.bench.errors import DatasetError

    secret = _secret(root)
    tries = [str(secret), "../private/shadow", "a/../../private/shadow", "a/b/../../../private/x"]
    loaded = []
    for given in tries:
        try:
            load_dataset("jsonl", _dataset(root / "ds" / "media", [given]))
            loaded.append(given)
        except DatasetError:
            pass
    return not loaded, f"loaded {loaded}" if loaded else f"{len(tries)} paths refused"


@attack("dataset file is a link beneath the media root")
def dataset_link(root: Path) -> Verdict:
    from omnilab.agents.base import AgentConfigError
    from omnilab.agents.coder.staging import stage_inputs
    from omnilab.bench import load_dataset
    from omnilab.bench.agent_task import agent_task

    secret = _secret(root)
    media = root / "dsl" / "media" / "deep"
    media.mkdir(parents=True)
    (media / "clip.wav").symlink_to(secret)
    (task,) = load_dataset("jsonl", _dataset(root / "dsl" / "media", ["deep/clip.wav"])).tasks
    ws = root / "ws-link"
    ws.mkdir()
    try:
        stage_inputs(agent_task(task), ws)
    except AgentConfigError as exc:
        return True, f"staging refused: {exc}"
    staged = (ws / "inputs" / "clip.wav").read_bytes()
    return SECRET not in staged, "the root-only file was staged into the workspace"


@attack("trajectory part names /etc/shadow, report copies it")
def trajectory_part(root: Path) -> Verdict:
    from omnilab.content import Audio, Document
    from omnilab.report.media import MediaCopier

    secret = _secret(root)
    run = root / "run"
    run.mkdir()
    (run / "link.wav").symlink_to(secret)
    parts = [Audio(path=secret), Document(path=run / ".." / "private" / "shadow")]
    parts.append(Audio(path=run / "link.wav"))
    with MediaCopier(root / "report", roots=(run,)) as copier:
        refs = [copier.ref(p) for p in parts]
    media = root / "report" / "media"
    copied = [p.read_bytes() for p in media.iterdir()] if media.is_dir() else []
    leaked = any(SECRET in blob for blob in copied)
    return not leaked, "; ".join(r.note or "copied" for r in refs)


@attack("probe: name swapped for a link after the check")
def probe_swap(root: Path) -> Verdict:
    import importlib

    from omnilab import _wsread
    from omnilab.media import MediaError, probe, synth

    module = importlib.import_module("omnilab.media.probe")
    (root / "private").mkdir(mode=0o700)
    secret = synth.make_video(root / "private" / "labels.mp4", duration=1.0)
    secret.chmod(0o600)
    ws = root / "ws-probe"
    ws.mkdir()
    _wsread.mark_untrusted(ws)
    name = synth.make_video(ws / "clip.mp4", duration=1.0)
    real = module.check_file

    def swap(path: Path) -> Path:
        checked: Path = real(path)
        name.replace(ws / "old.mp4")
        name.symlink_to(secret)
        return checked

    module.check_file = swap
    try:
        info = probe(name)
    except MediaError as exc:
        return True, f"refused: {exc}"
    finally:
        module.check_file = real
    return False, f"probed the swapped-in file ({info.path})"


@attack("video of 8192x8192 pictures decoded for frames")
def video_pixels(root: Path) -> Verdict:
    import av

    from omnilab.media import MediaError, frames

    path = root / "huge.mp4"
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=1)
        stream.width = stream.height = 8192
        stream.pix_fmt = "yuv420p"
        stream.options = {"preset": "ultrafast", "crf": "51"}
        picture = av.VideoFrame(8192, 8192, "yuv420p")
        for plane, value in zip(picture.planes, (16, 128, 128), strict=True):
            plane.update(bytes([value]) * plane.buffer_size)
        for packet in [*stream.encode(picture), *stream.encode()]:
            out.mux(packet)
    try:
        frames(path, num=3)
    except MediaError as exc:
        return exc.code == "TOO_MANY_PIXELS", f"{exc.code}: {exc.message}"
    return False, f"{path.stat().st_size} bytes decoded to three 8192x8192 frames"


@attack("runs folder is another user's link")
def runs_link(root: Path) -> Verdict:
    from omnilab._private import UnsafeFolderError
    from omnilab.api import new_run_dir

    secret = _secret(root)
    (root / "omnilab-runs").symlink_to(secret.parent)
    try:
        folder = new_run_dir(root / "omnilab-runs")
    except UnsafeFolderError as exc:
        return True, f"refused: {exc}"
    return False, f"run folder made at {folder}, through the link"


@attack("link planted at run.json / trajectory.jsonl")
def run_file_links(root: Path) -> Verdict:
    from omnilab._private import write_atomic
    from omnilab.trajectory import TrajectoryWriter

    secret = _secret(root)
    run = root / "run-files"
    run.mkdir(mode=0o700)
    (run / "run.json").symlink_to(secret)
    (run / "trajectory.jsonl").symlink_to(secret)
    write_atomic(run / "run.json", "{}\n")
    with contextlib.suppress(OSError), TrajectoryWriter(run / "trajectory.jsonl"):
        pass
    intact = secret.read_bytes() == SECRET
    return intact, "the root-only file is intact" if intact else "written through the link"


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="omnilab-data-attacks-") as tmp:
        yield Path(tmp)


def main() -> None:
    os.environ.setdefault("OMNILAB_CACHE_DIR", tempfile.mkdtemp(prefix="omnilab-attack-cache-"))
    escaped = 0
    for name, fn in ATTACKS.items():
        with scratch() as root:
            try:
                contained, detail = fn(root)
            except Exception as exc:  # an attack that crashes the harness is not contained
                contained, detail = False, f"{type(exc).__name__}: {exc}"
        escaped += not contained
        verdict = "contained" if contained else "escaped"
        print(f"{name:52} {verdict:9} {' '.join(detail.split())[:160]}", file=sys.stderr)
    print(f"\nescapes: {escaped} of {len(ATTACKS)}")


if __name__ == "__main__":
    main()
