"""Issue 42 part B, paths named by data and run folders: the harness (often root) acts on a
dataset's file list, a trajectory's message parts, a name swapped between a check and a use, and
folders another user made. Each attack plants one of those against a root-only (0600) file, in
the harness itself (no sandboxed code is needed to plant them), so every level must contain it.
The video pixel limit (an 8192x8192 H.264 file) is left to ``tests/media/test_probe_once.py``:
encoding it takes seconds."""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from pathlib import Path

from attacks.registry import ALL, Ctx, Verdict, attack

SECRET = b"root:$6$secret-hash:19000:0:99999:7:::\n"


def _scratch(ctx: Ctx) -> Path:
    folder = ctx.root / f"data-{uuid.uuid4().hex[:8]}"
    folder.mkdir(mode=0o700)
    return folder


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


@attack("dataset names an absolute path or '..' escapes", ALL)
def dataset_escape(ctx: Ctx) -> Verdict:
    root = _scratch(ctx)
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


@attack("dataset file is a link beneath the media root", ALL)
def dataset_link(ctx: Ctx) -> Verdict:
    root = _scratch(ctx)
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


@attack("trajectory part names /etc/shadow, report copies it", ALL)
def trajectory_part(ctx: Ctx) -> Verdict:
    root = _scratch(ctx)
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


@attack("probe: name swapped for a link after the check", ALL)
def probe_swap(ctx: Ctx) -> Verdict:
    root = _scratch(ctx)
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


@attack("runs folder is another user's link", ALL)
def runs_link(ctx: Ctx) -> Verdict:
    root = _scratch(ctx)
    from omnilab._ownfolders import UnsafeFolderError
    from omnilab.api import new_run_dir

    secret = _secret(root)
    (root / "omnilab-runs").symlink_to(secret.parent)
    try:
        folder = new_run_dir(root / "omnilab-runs")
    except UnsafeFolderError as exc:
        return True, f"refused: {exc}"
    return False, f"run folder made at {folder}, through the link"


@attack("link planted at run.json / trajectory.jsonl", ALL)
def run_file_links(ctx: Ctx) -> Verdict:
    root = _scratch(ctx)
    from omnilab._atomic import write_atomic
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


@attack("runs folder inside a folder another user owns", ALL)
def runs_in_their_folder(ctx: Ctx) -> Verdict:
    """Issue 42's reviewer: root's 0700 runs folder in alice's checkout is still alice's to
    rename away and replace with a folder of links (O_NOFOLLOW covers the last component)."""
    import os

    root = _scratch(ctx)
    from omnilab._ownfolders import UnsafeFolderError
    from omnilab.api import new_run_dir

    checkout = root / "alice-checkout"
    checkout.mkdir()
    if os.geteuid() == 0:
        os.chown(checkout, 65534, 65534)  # alice's own folder
    else:
        checkout.chmod(0o777)  # without root: a folder every user can write
    try:
        folder = new_run_dir(checkout / "omnilab-runs")
    except UnsafeFolderError as exc:
        return True, f"refused: {str(exc)[:80]}"
    return False, f"run folder made at {folder}, which alice can swap"


@attack("report of a run whose trajectory links to root's own run", ALL)
def report_linked_trajectory(ctx: Ctx) -> Verdict:
    """Issue 42's reviewer: ``omnilab report THEIR_RUN`` rendered root's private trajectory."""
    root = _scratch(ctx)
    from omnilab.report import build_report
    from omnilab.report.synthetic import write_synthetic_run

    mine = write_synthetic_run(root / "roots-run", tasks=1, frames=1)
    theirs = write_synthetic_run(root / "their-run", tasks=1, frames=1)
    (source,) = (mine / "trajectories").glob("*.jsonl")
    marker = f"PRIVATE-{uuid.uuid4().hex}"
    source.write_text(source.read_text().replace("What colour", f"{marker} What colour"))
    source.chmod(0o600)
    planted = theirs / "trajectories" / source.name
    planted.unlink()
    planted.symlink_to(source)
    out = root / "report"
    build_report([theirs], out)
    pages = "".join(p.read_text(errors="replace") for p in out.rglob("*.html"))
    return marker not in pages, "rendered root's trajectory" if marker in pages else "left out"


@attack("score and analyze of a run whose files link to root's own run", ALL)
def analyze_linked_files(ctx: Ctx) -> Verdict:
    """Issue 42's closing note: ``omnilab score`` / ``analyze THEIR_RUN`` read links (analyze
    sends trajectories to an analyst model): a linked trajectory must stay out of the analyst's
    requests, a linked ``results.jsonl`` must be refused."""
    import asyncio

    root = _scratch(ctx)
    from omnilab.bench.errors import BenchError
    from omnilab.bench.reports import analyze_run, open_source
    from omnilab.bench.rescore import rescore_run
    from omnilab.models.providers import scripted
    from omnilab.report.synthetic import write_synthetic_run

    mine = write_synthetic_run(root / "roots-run", tasks=4, frames=1)
    theirs = write_synthetic_run(root / "their-run", tasks=4, frames=1)  # task-0002 is wrong
    marker = f"PRIVATE-{uuid.uuid4().hex}"
    own = (theirs / "results.jsonl").read_bytes()
    for name in ("trajectories/task-0002.jsonl", "results.jsonl"):
        source = mine / name
        source.write_text(source.read_text().replace("What colour", f"{marker} What colour"))
        source.chmod(0o600)
        (theirs / name).unlink()
        (theirs / name).symlink_to(source)
    data = root / "tasks.json"
    ids = [f"task-{n:04d}" for n in range(4)]
    data.write_text(json.dumps([{"id": i, "question": "q?", "answer": "a"} for i in ids]))
    reply = json.dumps({"categories": ["Reasoning Error"], "explanation": "x"})
    analyst = scripted.scripted_model([scripted.text(reply)] * 4, name="scripted:analyst")
    said = []
    for job in (
        lambda: rescore_run(theirs, scorer_name="answer_set", judges=[], data=data),
        lambda: analyze_run(open_source(theirs), analyst, data=data),
    ):
        try:
            asyncio.run(job())
            said.append("read")
        except BenchError as exc:
            said.append(f"refused: {str(exc)[-50:]}")
    (theirs / "results.jsonl").unlink()  # analyze again, with the run's own results
    (theirs / "results.jsonl").write_bytes(own)
    analysis = asyncio.run(analyze_run(open_source(theirs), analyst, data=data))
    adapter = analyst.adapter
    assert isinstance(adapter, scripted.ScriptedAdapter)
    sent = "".join(m.text for req in adapter.requests for m in req[0])
    leaked = marker in sent or marker in (theirs / "analysis.json").read_text()
    contained = not leaked and all(s.startswith("refused") for s in said[:2])
    return contained, f"score {said[0]}; analyze {said[1]}; {'; '.join(analysis.notices)[:120]}"


@attack("runs folder below a folder another group can write", ALL)
def runs_in_group_folder(ctx: Ctx) -> Verdict:
    """Issue 42's leftover: a team folder (``root:team 0775``) lets every member of ``team``
    rename root's runs folder away and put theirs, holding links, in its place, as a
    world-writable one lets every user."""
    import os

    root = _scratch(ctx)
    from omnilab._ownfolders import UnsafeFolderError
    from omnilab.api import new_run_dir

    team = root / "team-folder"
    team.mkdir()
    others = [g for g in os.getgroups() if g != os.getegid()]
    if os.geteuid() == 0 or others:
        os.chown(team, -1, 65534 if os.geteuid() == 0 else others[0])  # a group not root's own
        team.chmod(0o775)
    else:
        team.chmod(0o777)  # without root or a second group: a folder every user can write
    try:
        folder = new_run_dir(team / "exp" / "omnilab-runs")
    except UnsafeFolderError as exc:
        return True, f"refused: {str(exc)[-80:]}"
    return False, f"run folder made at {folder}, which the group's members can swap"


def _alices_media_link(root: Path) -> tuple[Path, Path]:
    """Root's secret, and alice's link ``tmp/media`` to its folder in a sticky ``/tmp``-like
    folder (hers to repoint at any time). Needs root (``lchown`` to another uid)."""
    secret = _secret(root)
    shared = root / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    link = shared / "media"
    link.symlink_to(secret.parent)
    os.lchown(link, 65534, 65534)
    return secret, link


@attack("eval's media root is a link another user planted in /tmp", ALL)
def eval_linked_media_root(ctx: Ctx) -> Verdict:
    """Issue 42's leftover: a media root (``eval --media-root``, ``bench.media_roots``, the
    ``--data`` folder) was opened following links, so alice's ``media -> /root`` in ``/tmp`` chose
    the folder the dataset's ``shadow`` was read from and handed to the agent."""
    if os.geteuid() != 0:
        return True, "n/a (another user's link needs a root harness)"
    from omnilab import _wsread
    from omnilab._ownfolders import UnsafeFolderError
    from omnilab.bench import load_dataset

    root = _scratch(ctx)
    _, link = _alices_media_link(root)
    data = _dataset(root / "ds", ["shadow"])
    read = []
    for media_root, path in ((link, data), (None, link / "tasks.jsonl")):
        if media_root is None:
            _dataset(link, ["shadow"])  # alice's dataset beside her link's target
        try:
            loaded = load_dataset("jsonl", path, media_root=media_root)
        except UnsafeFolderError:
            continue
        (task,) = loaded.tasks
        if _wsread.read_bytes(task.files[0].source) == SECRET:
            read.append(str(task.files[0].path))
    return not read, f"read {read}" if read else "refused: a link owned by uid 65534"
