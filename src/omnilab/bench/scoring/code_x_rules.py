"""The constants and static checks of the Code-X process-aware reward (papers/001, §3.2, H.1).

Everything here is from Appendix H.1 (Table 10 and the text after it), verbatim: the weights,
the modality tool universes, the network primitives, the gold-answer patterns and the
syntax-failure strings. Two choices are omnilab's, where the authors' release has known bugs:

- matching reads only the ``keystrokes`` of ``execute_commands`` calls that actually ran (never
  the analysis or plan text, never a call that was refused or failed validation);
- an absolute path counts as an escape only if it is a real path outside the workspace: the
  pseudo-devices (``/dev/null``, ``/dev/stdout``, ...) that redirections use are not, and neither
  is a script's ``#!`` line. Network primitives are matched as whole words (``nc`` is not
  ``sync``); the tool universes stay plain substring matches, as the paper says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "ALLOWED_TOOLS",
    "AUDIO_TOOLS",
    "GOLD_PATTERNS",
    "IMAGE_TOOLS",
    "NETWORK_PRIMITIVES",
    "SYNTAX_FAILURES",
    "VIDEO_TOOLS",
    "WEIGHTS",
    "escapes",
    "matches_universe",
    "syntax_failed",
    "uses_network",
]

WEIGHTS = {
    "correct": 1.0,  # w_correct: gated-correct trajectories
    "fmt_plus": 0.2,  # w_fmt+: wrong answer, clean task_complete exit, non-empty <answer>
    "fmt_minus": -0.2,  # w_fmt-: any other exit
    "mod": -0.3,  # w_mod: video/audio task solved without a tool of that modality
    "tool": 0.5,  # w_tool: penalty -w_tool * P_bad in [-0.5, 0]
}
"""Table 10's per-trajectory reward weights."""

VIDEO_TOOLS = (
    "ffmpeg", "ffprobe", "ffplay", "yt-dlp", "mpv", "vlc", "VideoCapture", "VideoWriter",
    "VideoFileClip", "moviepy", "decord", "VideoReader", "imageio", "mediainfo",
)  # fmt: skip
AUDIO_TOOLS = (
    "whisper", "faster_whisper", "librosa", "torchaudio", "soundfile", "sf.read", "pydub",
    "AudioSegment", "wave.open", "sox", "demucs", "spleeter", "lame",
)  # fmt: skip
IMAGE_TOOLS = (
    "PIL.Image.open", "Image.open", "cv2.imread", "cv2.imwrite", "tesseract", "pytesseract",
    "convert", "magick", "identify", "mogrify", "easyocr", "paddleocr", "pdftotext", "pdftoppm",
    "exiftool", "image_read",
)  # fmt: skip

ALLOWED_TOOLS = frozenset({"execute_commands", "image_read", "task_complete"})
NETWORK_PRIMITIVES = ("curl", "wget", "ssh", "scp", "rsync", "nc", "telnet")
GOLD_PATTERNS = (
    "ground_truth", "answer_key", "gold_answer", "*.gold", "all_final.jsonl", "rl_train.jsonl",
    "sft_train.jsonl",
)  # fmt: skip
SYNTAX_FAILURES = (
    "SyntaxError", "invalid syntax", "unexpected EOF", "parse error", "unexpected token",
    "missing operand", "unterminated string",
)  # fmt: skip

_NETWORK = re.compile(
    r"(?<![\w.-])(?:" + "|".join(NETWORK_PRIMITIVES) + r")(?![\w-])|https?://", re.IGNORECASE
)
_GOLD = re.compile(
    "|".join(re.escape(p).replace(r"\*", r"[\w.-]*") for p in GOLD_PATTERNS), re.IGNORECASE
)
# A path starting with "/" where a word starts: after a space, quote, "=", ":" or a redirection.
_ABSOLUTE = re.compile(r"(?:^|(?<=[\s'\"=(<>|&;,`]))(/[^\s'\"`;|&<>(),]+)")
_SHEBANG = re.compile(r"^\s*#!.*$", re.MULTILINE)
_PSEUDO = re.compile(
    r"^/dev/(?:null|zero|full|stdin|stdout|stderr|tty|u?random|fd/\d+)$|^/proc/self/"
)


def matches_universe(texts: Iterable[str], universe: Iterable[str]) -> bool:
    """Whether any text holds any tool name of ``universe`` (substring match, H.1)."""
    names = tuple(universe)
    return any(name in text for text in texts for name in names)


def uses_network(text: str) -> bool:
    """Whether a command names a network primitive (as a word) or a URL."""
    return _NETWORK.search(text) is not None


def escapes(text: str, workspace: str | None = None) -> list[str]:
    """What in a command reaches for gold answers or outside the workspace: gold-answer
    patterns, and absolute paths that are neither pseudo-devices nor inside ``workspace``."""
    found = [m.group(0) for m in _GOLD.finditer(text)]
    body = _SHEBANG.sub("", text)
    root = workspace.rstrip("/") if workspace else None
    for match in _ABSOLUTE.finditer(body):
        path = match.group(1).rstrip(".")
        if _PSEUDO.match(path):
            continue
        inside = root is not None and (path == root or path.startswith(root + "/"))
        if inside and "/../" not in path + "/":
            continue
        found.append(path)
    return found


def syntax_failed(observation: str) -> bool:
    """Whether a command's output shows a shell or script syntax failure (H.1's strings)."""
    return any(s in observation for s in SYNTAX_FAILURES)
