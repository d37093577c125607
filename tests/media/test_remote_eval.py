"""``omnilab eval`` with the dataset and its media in a bucket (moto's S3 server on 127.0.0.1):
the results of a local run, each task fetching its own inputs, one-line media failures that
leave the run going, no credential under the run folder, a changed object noticed on resume."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from remote_stores import http_store, s3_store

from omnilab.bench.datasets import load_dataset
from omnilab.bench.errors import DatasetError
from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import evaluate, new_config
from omnilab.media import remote, synth
from omnilab.trajectory import read_trajectory

SECRETS = ("testing-secret-value-0123", "testing-key-id", "X-Amz-Signature", "SIGNED")


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "_BACKOFF_S", 0.0)


def _media(root: Path, n: int) -> list[dict[str, object]]:
    rows = []
    (root / "videos").mkdir(parents=True)
    (root / "audios").mkdir(parents=True)
    for i in range(n):
        synth.make_video(
            root / "videos" / f"v{i}.mp4", duration=0.5, fps=4, size=(32, 24), audio=False
        )
        synth.make_audio(root / "audios" / f"a{i}.wav", duration=0.5, sample_rate=8000)
        rows.append(
            {
                "id": f"q{i}",
                "question": f"What colour is clip {i}?",
                "files": [f"videos/v{i}.mp4", f"audios/a{i}.wav"],
                "answer": "blue",
            }
        )
    return rows


def _bench(tmp_path: Path, n: int) -> tuple[Path, str]:
    local = tmp_path / "local"
    rows = _media(local, n)
    (local / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    script = tmp_path / "model.json"
    script.write_text(json.dumps(["<answer>blue</answer>"] * (4 * n)))
    return local, f"scripted:{script}"


def _upload(s3: object, local: Path, bucket: str) -> None:
    s3.create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        key = path.relative_to(local).as_posix()
        s3.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())  # type: ignore[attr-defined]


def _outcome(run: Path) -> list[tuple[str, str | None, bool | None, str | None]]:
    rows = RunDir(run).results()
    return sorted((r.task_id, r.extracted, r.judged, r.error_kind) for r in rows)


def _no_secret_under(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for secret in SECRETS:
                assert secret.encode() not in data, f"{secret} in {path}"


def test_eval_from_a_bucket_gives_the_results_of_a_local_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    local, model = _bench(tmp_path, 3)
    config = new_config("jsonl", local / "tasks.jsonl", agent="tir", model=model)
    asyncio.run(evaluate(config, tmp_path / "run-local", concurrency=2))
    with s3_store(monkeypatch) as s3:
        _upload(s3, local, "bench")
        at_url = new_config("jsonl", "s3://bench/tasks.jsonl", agent="tir", model=model)
        assert at_url.data_url == "s3://bench/tasks.jsonl"
        assert at_url.media_url == "s3://bench/"
        asyncio.run(evaluate(at_url, tmp_path / "run-s3", concurrency=2))
    assert _outcome(tmp_path / "run-s3") == _outcome(tmp_path / "run-local")
    assert all(kind is None for *_, kind in _outcome(tmp_path / "run-s3"))
    run = RunDir(tmp_path / "run-s3")
    start = read_trajectory(run.trajectory_file("q1")).run_start
    assert start is not None
    video = next(f for f in start.inputs if f.kind == "video")
    # The agent read the staged local copy, byte for byte the bucket's object.
    assert video.url == "s3://bench/videos/v1.mp4"
    assert video.path.read_bytes() == (local / "videos" / "v1.mp4").read_bytes()
    assert video.path.is_relative_to(tmp_path / "cache" / "media")
    assert video.path.name == "v1.mp4"  # the name a local run shows the model, not the key
    versions = json.loads((run.path / "remote.json").read_text())["versions"]
    assert set(versions) == {
        f"s3://bench/{kind}/{name}{i}.{ext}"
        for i in range(3)
        for kind, name, ext in (("videos", "v", "mp4"), ("audios", "a", "wav"))
    }
    _no_secret_under(run.path)


def test_a_missing_or_denied_input_fails_its_task_in_one_line_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    local, model = _bench(tmp_path, 3)
    with http_store() as store:
        for path in local.rglob("*"):
            if path.is_file() and path.name != "v1.mp4":
                store.objects[path.relative_to(local).as_posix()] = path.read_bytes()
        store.denied.add("audios/a2.wav")
        config = new_config(
            "jsonl", store.url("tasks.jsonl", "sig=SIGNED"), agent="tir", model=model
        )
        asyncio.run(evaluate(config, tmp_path / "run", concurrency=2))
    by_id = {r.task_id: r for r in RunDir(tmp_path / "run").results()}
    assert by_id["q0"].judged is True
    assert by_id["q1"].error_kind == "media" and by_id["q2"].error_kind == "media"
    assert by_id["q1"].error == f"cannot fetch input v1: {store.base}/videos/v1.mp4 does not exist"
    assert by_id["q2"].error == (
        f"cannot fetch input a2: {store.base}/audios/a2.wav: access denied (HTTP 403)"
    )
    _no_secret_under(tmp_path / "run")


def test_a_resumed_run_notices_an_object_changed_since_it_started(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    local, model = _bench(tmp_path, 2)
    out = tmp_path / "run"
    with s3_store(monkeypatch) as s3:
        _upload(s3, local, "bench")
        config = new_config("jsonl", "s3://bench/tasks.jsonl", agent="tir", model=model)
        asyncio.run(evaluate(config, out, concurrency=1))
        # The run was killed before q1's result was written; meanwhile its video changed.
        results = RunDir(out).results_file
        kept = [line for line in results.read_text().splitlines() if '"q1"' not in line]
        results.write_text("".join(line + "\n" for line in kept))
        s3.put_object(Bucket="bench", Key="videos/v1.mp4", Body=b"another video")
        asyncio.run(evaluate(config, out, concurrency=1, resume=True))
    by_id = {r.task_id: r for r in RunDir(out).results()}
    assert by_id["q0"].judged is True
    assert by_id["q1"].error_kind == "media"
    assert by_id["q1"].error is not None
    assert "s3://bench/videos/v1.mp4 changed since this run first read it" in by_id["q1"].error


def test_a_dataset_cannot_make_omnilab_fetch_from_a_host_of_its_choosing(tmp_path: Path) -> None:
    data = tmp_path / "tasks.jsonl"
    rows = [
        {
            "id": "a",
            "question": "?",
            "files": ["http://169.254.169.254/latest/x.mp4"],
            "answer": "1",
        }
    ]
    data.write_text(json.dumps(rows[0]) + "\n")
    with pytest.raises(DatasetError, match="not beneath a media root URL"):
        load_dataset("jsonl", data)
    with pytest.raises(DatasetError, match="not beneath the media root s3://bench/media"):
        load_dataset("jsonl", data, media_root="s3://bench/media")
    allowed = load_dataset("jsonl", data, allow_outside_media_root=True)
    assert allowed.tasks[0].files[0].url == "http://169.254.169.254/latest/x.mp4"
    for escape in ("../secret.mp4", "/etc/passwd", "a/../../b.mp4", "%2e%2e/b.mp4", "a.mp4?x=1"):
        data.write_text(json.dumps({**rows[0], "files": [escape]}) + "\n")
        with pytest.raises(
            DatasetError, match=r"would leave the media root|climbs with|absolute path"
        ):
            load_dataset("jsonl", data, media_root="s3://bench/media/")
    data.write_text(json.dumps({**rows[0], "files": ["s3://bench/media/v.mp4", "w.wav"]}) + "\n")
    inside = load_dataset("jsonl", data, media_root="s3://bench/media?sig=SIGNED")
    assert [f.url for f in inside.tasks[0].files] == [
        "s3://bench/media/v.mp4",
        "s3://bench/media/w.wav",
    ]
    assert inside.media_url == "s3://bench/media" and not inside.missing_media
    assert "SIGNED" not in inside.model_dump_json()


def test_ask_about_a_file_at_a_signed_url(tmp_path: Path) -> None:
    from omnilab.api import ask

    picture = synth.make_image(tmp_path / "pic.png", size=(32, 32), index=1).read_bytes()
    script = tmp_path / "model.json"
    script.write_text(json.dumps(["<answer>one</answer>"]))
    with http_store() as store:
        store.objects["pics/pic.png"] = picture
        result = ask(
            [store.url("pics/pic.png", "X-Amz-Signature=SIGNED")],
            "How many?",
            model=f"scripted:{script}",
            run_dir=tmp_path / "run",
        )
    assert result.answer == "one"
    start = result.trajectory.run_start
    assert start is not None
    (image,) = start.inputs
    assert image.kind == "image" and image.url == f"{store.base}/pics/pic.png"
    assert image.given == image.url and image.path.read_bytes() == picture
    _no_secret_under(tmp_path / "run")


def test_the_cli_takes_urls_for_eval_and_ask(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from omnilab.cli.main import app
    from omnilab.config import get_settings

    monkeypatch.setenv("OMNILAB_AGENTS__RUNS_DIR", str(tmp_path / "ask"))
    get_settings.cache_clear()

    local, model = _bench(tmp_path, 2)
    runner = CliRunner()
    with http_store() as store:
        for path in local.rglob("*"):
            if path.is_file():
                store.objects[f"b/{path.relative_to(local).as_posix()}"] = path.read_bytes()
        evaluated = runner.invoke(
            app,
            [
                "eval",
                "jsonl",
                "--data",
                store.url("b/tasks.jsonl"),
                "--model",
                model,
                "--out",
                str(tmp_path / "run"),
                "--no-progress",
            ],
        )
        outside = runner.invoke(
            app,
            [
                "eval",
                "jsonl",
                "--data",
                store.url("b/tasks.jsonl"),
                "--model",
                model,
                "--media-root",
                store.url("b/videos/"),
                "--out",
                str(tmp_path / "run2"),
            ],
        )
        preview = runner.invoke(
            app,
            [
                "eval",
                "jsonl",
                "--data",
                store.url("b/tasks.jsonl"),
                "--model",
                model,
                "--show-prompt",
            ],
        )
        asked = runner.invoke(
            app,
            ["ask", store.url("b/audios/a0.wav", "sig=SIGNED"), "What is it?", "--model", model],
        )
    assert evaluated.exit_code == 0, evaluated.output
    assert sorted(r.task_id for r in RunDir(tmp_path / "run").results() if r.judged) == ["q0", "q1"]
    config = RunDir(tmp_path / "run").read_config()
    assert config.data_url == store.url("b/tasks.jsonl") and config.media_url == store.url("b/")
    # The dataset's paths (videos/v0.mp4) lie beneath b/videos/ only as b/videos/videos/...
    assert outside.exit_code != 0
    assert "cannot fetch input v0" in (tmp_path / "run2" / "results.jsonl").read_text()
    assert preview.exit_code == 0, preview.output
    assert "v0.mp4" in preview.output
    assert asked.exit_code == 0, asked.output
    assert "SIGNED" not in asked.output
    (trajectory,) = (tmp_path / "ask").rglob("trajectory.jsonl")
    assert f"{store.base}/b/audios/a0.wav" in trajectory.read_text()
    _no_secret_under(tmp_path / "ask")


def test_named_links_share_the_entry_s_bytes_and_go_with_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from omnilab.media import remote_named

    root = tmp_path / "media"
    (root / "ab").mkdir(parents=True)
    entry, other = root / "ab" / "r-ab1.mp4", root / "ab" / "r-ab2.wav"
    entry.write_bytes(b"video bytes")
    other.write_bytes(b"audio bytes")
    link = remote_named.named_copy(entry, "v1.mp4")
    assert link == root / ".named" / "r-ab1" / "v1.mp4"
    assert link.read_bytes() == b"video bytes" and entry.stat().st_nlink == 2
    assert remote_named.named_copy(entry, "v1.mp4") == link
    entry.unlink()  # evicted by the cache's LRU bound
    monkeypatch.setattr(remote_named, "_SWEPT", set())  # a new process
    remote_named.named_copy(other, "a1.wav")
    assert not link.exists() and not link.parent.exists()
    assert (root / ".named" / "r-ab2" / "a1.wav").read_bytes() == b"audio bytes"


def test_worker_processes_fetch_their_own_inputs(tmp_path: Path) -> None:
    from omnilab.bench.backends import get_backend

    local, model = _bench(tmp_path, 2)
    with http_store() as store:
        for path in local.rglob("*"):
            if path.is_file():
                store.objects[path.relative_to(local).as_posix()] = path.read_bytes()
        config = new_config("jsonl", store.url("tasks.jsonl"), agent="tir", model=model)
        asyncio.run(
            evaluate(config, tmp_path / "run", concurrency=2, backend=get_backend("processes"))
        )
    assert [(t, judged) for t, _, judged, _ in _outcome(tmp_path / "run")] == [
        ("q0", True),
        ("q1", True),
    ]
    start = read_trajectory(RunDir(tmp_path / "run").trajectory_file("q0")).run_start
    assert start is not None and {f.path.name for f in start.inputs} == {"v0.mp4", "a0.wav"}
