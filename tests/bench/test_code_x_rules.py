"""The static checks and group shaping of the Code-X reward (H.1, Table 10), without a sandbox."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from omnilab.bench.scoring.code_x_group import Rollout, length_factors
from omnilab.bench.scoring.code_x_rules import (
    LENGTH_PENALTY,
    OMNILAB_TOOLS,
    SANDBOX_SCRATCH,
    engaged,
    escapes,
)
from omnilab.bench.scoring.code_x_tasks import Dimension, TaskSpec, grade


@pytest.mark.parametrize(
    ("command", "found"),
    [
        ('python3 -c "print(10 /2)"', []),  # arithmetic, not the path /2
        ("echo $((10 /2)) > /tmp/n.txt", []),  # the sandbox's private /tmp
        ("ffmpeg -i inputs/a.mp4 -vf fps=1 /tmp/f_%03d.png 2>/dev/null", []),
        ("cp a /var/tmp/b && ls /dev/shm", []),
        ("cat /ws/a.txt && ls /ws", []),
        ("cat /ws/../etc/passwd", ["/ws/../etc/passwd"]),
        ("cat</etc/hosts", ["/etc/hosts"]),
        ("X=/etc/hosts cat $X", ["/etc/hosts"]),
        ("ls --dir=/opt/data", ["/opt/data"]),
        ("python3 -c \"print(open('/root/x').read())\"", ["/root/x"]),
        # a heredoc fed to a program is code: only its quoted paths count, not `a /n`
        ('python3 - <<EOF\nx = a /n\nprint(open("/etc/shadow"))\nEOF', ["/etc/shadow"]),
        # a heredoc fed to a shell is shell
        ("cd x && bash -s <<'E'\ncat /etc/shadow\nE", ["/etc/shadow"]),
        ("#!/usr/bin/env python3\nprint(1)", []),
        ("echo $((1<<3))\ncat /etc/passwd", ["/etc/passwd"]),  # a shift, not a heredoc
        ("cat a#b /etc/passwd", ["/etc/passwd"]),  # `#` inside a word is not a comment
        ("  # cat /etc/passwd\nls", []),  # a comment line runs nothing
        ("grep x data/all_final.jsonl", ["all_final.jsonl"]),
        ("echo 'unbalanced /etc/x", ["/etc/x"]),  # a lexer error falls back to words
    ],
)
def test_escapes_read_shell_words(command: str, found: list[str]) -> None:
    assert escapes(command, workspace="/ws") == found


def test_the_exempt_scratch_folders_are_the_sandboxs() -> None:
    from omnilab.sandbox import _plan

    assert SANDBOX_SCRATCH == _plan._SCRATCH


@pytest.mark.parametrize(
    ("command", "modality"),
    [
        ("python3 .skills/transcription/transcribe.py a.wav", "audio"),
        ("omnilab digest inputs/clip.mp4", "audio"),
        ("omnilab digest inputs/clip.mp4", "video"),
        ("bash .skills/frame-sampling/sample_frames.sh inputs/v.mp4 frames", "video"),
        ("mediaprobe inputs/v.mp4", "video"),
        ("python3 .skills/ocr/ocr.py crop.png", "image"),
        ("Whisper a.wav", "audio"),  # the authors' grader matches without regard to case
        ("python3 -c 'import librosa'", "audio"),
    ],
)
def test_omnilab_tools_and_skills_engage_their_modality(command: str, modality: str) -> None:
    assert engaged([command], modality)


def test_commands_without_a_modality_tool_do_not_engage_it() -> None:
    assert not engaged(["ls -la inputs", "cat notes.txt"], "audio")
    assert not engaged(["python3 .skills/transcription/transcribe.py a.wav"], "video")
    assert set(OMNILAB_TOOLS) == {"video", "audio", "image"}


def r(steps: int, *, correct: bool = True, removed: bool = False) -> Rollout:
    return Rollout(correct=correct, removed=removed, modality_match=True, n_tool=2, steps=steps)


def test_length_penalty_is_table_10s() -> None:
    assert LENGTH_PENALTY == {"alpha": 0.2, "f_min": 0.5}
    # s* = 4 (the shortest correct rollout); 6 steps: 1 - 0.2 * 2/4 = 0.9; 40 steps: floor 0.5
    group = [r(4), r(6), r(40), r(3, correct=False), r(2, correct=False, removed=True)]
    assert length_factors(group) == pytest.approx([1.0, 0.9, 0.5, 1.0, 1.0])
    assert length_factors([r(5, correct=False), r(9, correct=False)]) == [1.0, 1.0]


def test_a_missing_output_file_fails_the_task(tmp_path: Path) -> None:
    spec = TaskSpec(
        instruction="Write the count to output/count.json and a note to output/note.txt.",
        outputs=["output/count.json", "output/note.txt"],
        dimensions=[
            Dimension(
                name="count",
                weight=1.0,
                kind="number",
                file="output/count.json",
                reference=3,
                tolerance=0,
            )
        ],
    )
    (tmp_path / "output").mkdir()
    (tmp_path / "output" / "count.json").write_text("3")
    result = asyncio.run(grade(spec, tmp_path))
    # The metric is right, but Appendix F: a missing output file fails.
    assert result.metrics["count"] == 1.0 and result.score == 0.0 and not result.passed
    assert result.gates["output:exists:output/note.txt"] is False
    assert "missing output: output/note.txt" in result.notes
    (tmp_path / "output" / "note.txt").write_text("three")
    assert asyncio.run(grade(spec, tmp_path)).passed


def test_gspo_groups_of_code_x_rewards_get_the_length_penalty() -> None:
    from types import SimpleNamespace

    from omnilab.bench.scoring.base import Score
    from omnilab.train.groups import _length_shaped

    def member(value: float, correct: bool, steps: int) -> SimpleNamespace:
        details = {"removed": "no", "modality_match": "yes", "n_tool": 3.0, "steps": float(steps)}
        score = Score(scorer="code-x-reward", value=value, correct=correct, details=details)
        return SimpleNamespace(result=SimpleNamespace(score=score, error=None))

    group = [member(1.0, True, 4), member(1.0, True, 8), member(0.2, False, 2)]
    # s* = 4; 8 steps: 1 - 0.2 * 4/4 = 0.8; the wrong rollout keeps its reward
    shaped = _length_shaped(group, [1.0, 1.0, 0.2])  # type: ignore[arg-type]
    assert shaped == pytest.approx([1.0, 0.8, 0.2])
    other = [
        SimpleNamespace(
            result=SimpleNamespace(score=Score(scorer="exact", value=1.0, correct=True), error=None)
        )
    ]
    assert _length_shaped(other, [1.0]) == [1.0]  # type: ignore[arg-type]
