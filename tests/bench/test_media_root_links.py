"""Issue 42's follow-up: a media root given as a link another user controls. Before, a dataset's
media root (``--media-root``, ``bench.media_roots``, the data file's folder) was taken as
written and its folder opened following links, so a link another user planted at that name
(``media -> /root`` in a sticky ``/tmp``, where they own their link) chose which folder root read
the dataset's files from: ``load_dataset`` handed root's secret to the agent. Now a link another
user owns anywhere on the path is refused with one line, before anything is read, and the root
is resolved once; another user's real folder (a shared dataset) still works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab import _wsread
from omnilab._ownfolders import UnsafeFolderError, own_links_resolved
from omnilab.bench import load_dataset
from omnilab.cli.main import app
from omnilab.config import get_settings

NOBODY = 65534
SECRET = b"root:$6$hash:19000:0:99999:7:::\n"
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="another user's link needs root")


@pytest.fixture
def private(tmp_path: Path) -> Path:
    """A folder of root's own holding a secret the dataset asks for."""
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700)
    (folder / "shadow").write_bytes(SECRET)
    return folder


@pytest.fixture
def shared_tmp(tmp_path: Path) -> Path:
    """A folder like /tmp: every user may add entries, and only remove their own."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    return shared


def _alices_link(at: Path, target: Path) -> Path:
    at.symlink_to(target)
    os.lchown(at, NOBODY, NOBODY)  # alice's link: she may point it anywhere, at any time
    return at


def _dataset(folder: Path, name: str = "shadow") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "tasks.jsonl"
    record = {"id": "a", "question": "what is in it?", "answer": "x", "files": [name]}
    data.write_text(json.dumps(record) + "\n")
    return data


@pytest.fixture
def fresh_settings() -> Iterator[None]:
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _refusal(exc: BaseException) -> str:
    message = str(exc)
    assert isinstance(exc, UnsafeFolderError) and "\n" not in message, message
    assert "is a link owned by" in message and "choose another" in message
    return message


@root_only
def test_another_users_link_as_media_root_is_refused(
    tmp_path: Path, private: Path, shared_tmp: Path
) -> None:
    link = _alices_link(shared_tmp / "media", private)
    data = _dataset(tmp_path / "ds")
    with pytest.raises(UnsafeFolderError) as refused:
        load_dataset("jsonl", data, media_root=link)
    assert str(link) in _refusal(refused.value) and "media root" in str(refused.value)


@root_only
def test_another_users_link_higher_up_the_media_root_is_refused(
    tmp_path: Path, private: Path, shared_tmp: Path
) -> None:
    (private / "sub").mkdir()
    (private / "sub" / "shadow").write_bytes(SECRET)
    link = _alices_link(shared_tmp / "data", private)
    mine = tmp_path / "mine"
    mine.symlink_to(link / "sub")  # the operator's own link, leading through alice's
    data = _dataset(tmp_path / "ds")
    for root in (link / "sub", mine):
        with pytest.raises(UnsafeFolderError) as refused:
            load_dataset("jsonl", data, media_root=root)
        assert str(link) in _refusal(refused.value)


@root_only
def test_another_users_link_in_bench_media_roots_is_refused(
    tmp_path: Path,
    private: Path,
    shared_tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    fresh_settings: None,
) -> None:
    link = _alices_link(shared_tmp / "media", private)
    config = tmp_path / "omnilab.toml"
    config.write_text(f'[bench.media_roots]\njsonl = "{link}"\n')
    monkeypatch.setenv("OMNILAB_CONFIG", str(config))
    with pytest.raises(UnsafeFolderError) as refused:
        load_dataset("jsonl", _dataset(tmp_path / "ds"))
    _refusal(refused.value)


@root_only
def test_a_data_folder_through_another_users_link_is_refused(
    tmp_path: Path, private: Path, shared_tmp: Path
) -> None:
    # Without a media root the data file's folder is the root: alice's link chooses it.
    _dataset(private)
    link = _alices_link(shared_tmp / "ds", private)
    with pytest.raises(UnsafeFolderError) as refused:
        load_dataset("jsonl", link / "tasks.jsonl")
    assert "--data folder" in _refusal(refused.value)
    # eval resolves --data before loading it: the link is refused there, with one line.
    result = CliRunner().invoke(
        app,
        [
            *("eval", "jsonl", "--data", str(link / "tasks.jsonl"), "--model", "scripted:x"),
            *("--out", str(tmp_path / "run"), "--no-progress"),
        ],
    )
    assert "--data" in _refusal(result.exception or AssertionError(result.output))
    assert not (tmp_path / "run").exists()


@root_only
def test_another_users_real_folder_is_a_shared_dataset_and_works(tmp_path: Path) -> None:
    shared = tmp_path / "datasets" / "alices"
    shared.mkdir(parents=True)
    (shared / "clip.txt").write_bytes(b"shared media\n")
    data = _dataset(tmp_path / "ds", "clip.txt")
    for path in (shared / "clip.txt", shared, shared.parent):
        os.chown(path, NOBODY, NOBODY)  # alice's folder, no link on the way
    loaded = load_dataset("jsonl", data, media_root=shared)
    assert not loaded.missing_media
    (f,) = loaded.tasks[0].files
    assert _wsread.read_bytes(f.source) == b"shared media\n"


def test_the_operators_own_link_is_followed_and_resolved_once(
    tmp_path: Path, private: Path
) -> None:
    media = tmp_path / "media"
    media.mkdir()
    (media / "shadow").write_bytes(b"the dataset's own\n")
    link = tmp_path / "media-link"
    link.symlink_to(media)
    loaded = load_dataset("jsonl", _dataset(tmp_path / "ds"), media_root=link)
    assert loaded.media_root == media  # resolved when the dataset is loaded
    link.unlink()
    link.symlink_to(private)  # swapped after the check: reads go through the real folder
    (f,) = loaded.tasks[0].files
    assert _wsread.read_bytes(f.source) == b"the dataset's own\n"


def test_own_links_resolved_resolves_as_realpath_does(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "rel").symlink_to("a/b")
    (tmp_path / "abs").symlink_to(tmp_path / "rel")
    (tmp_path / "loop").symlink_to("loop")
    for given in ("abs", "rel/../b", "abs/missing/x", "a/./b"):
        path = tmp_path / given
        assert own_links_resolved(path, what="x") == Path(os.path.realpath(path)), given
    with pytest.raises(UnsafeFolderError, match="too many links"):
        own_links_resolved(tmp_path / "loop", what="x")


@root_only
def test_eval_and_data_check_stop_with_one_line(
    tmp_path: Path, private: Path, shared_tmp: Path
) -> None:
    link = _alices_link(shared_tmp / "media", private)
    data = _dataset(tmp_path / "ds")
    checked = CliRunner().invoke(
        app, ["data", "check", "jsonl", "--data", str(data), "--media-root", str(link)]
    )
    _refusal(checked.exception or AssertionError(checked.output))
    script = tmp_path / "agent.json"
    script.write_text(json.dumps(["<answer>x</answer>"]), encoding="utf-8")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "omnilab", "eval", "jsonl", "--data", str(data)),
            *("--media-root", str(link), "--model", f"scripted:{script}", "--scorer", "answer_set"),
            *("--out", str(tmp_path / "run"), "--no-progress"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")},
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "link owned by" in lines[0]
    assert not (tmp_path / "run" / "results.jsonl").exists()
