"""The constants and static checks of the Code-X process-aware reward (papers/001, §3.2, H.1).

Everything here is from Appendix H.1 (Table 10 and the text after it), verbatim: the weights,
the length-penalty constants, the modality tool universes, the network primitives, the
gold-answer patterns and the syntax-failure strings. Where the paper is vague the authors'
released grader decides (Dongping-Chen/OmniCoding ``src/omnicoding/rl/reward.py``): universes
match case-insensitively, commands are split with a shell lexer (``shlex``), and the sandbox's
private temporary folders are not "outside the workspace" (the grader exempts ``/tmp``).

omnilab's choices, each named:

- matching reads only the ``keystrokes`` of ``execute_commands`` calls that actually ran (never
  the analysis or plan text, never a call that was refused or failed validation);
- :data:`OMNILAB_TOOLS` (our addition) maps omnilab's own toolbox and starter-skill scripts to
  the modalities they engage: the paper's universes cannot see ``omnilab digest`` or
  ``.skills/transcription/transcribe.py`` (which runs faster-whisper inside);
- an absolute path is an escape only if it is a real path outside the workspace and the
  sandbox's private scratch folders: pseudo-devices (``/dev/null``, ...) are not, a script's
  ``#!`` line is not, a bare number after a slash (``10 /2``) is arithmetic, and the body of a
  heredoc fed to a non-shell program is code, where only quoted path literals count. Network
  primitives are matched as whole words (``nc`` is not ``sync``).
"""

from __future__ import annotations

import os.path
import re
import shlex
from collections.abc import Iterable
from pathlib import PurePosixPath

__all__ = [
    "ALLOWED_TOOLS",
    "AUDIO_TOOLS",
    "GOLD_PATTERNS",
    "IMAGE_TOOLS",
    "LENGTH_PENALTY",
    "NETWORK_PRIMITIVES",
    "OMNILAB_TOOLS",
    "SANDBOX_SCRATCH",
    "SYNTAX_FAILURES",
    "VIDEO_TOOLS",
    "WEIGHTS",
    "engaged",
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

LENGTH_PENALTY = {
    "alpha": 0.2,  # α: length-penalty slope
    "f_min": 0.5,  # f_min: minimum length factor for correct samples
}
"""Table 10's group-level length shaping (applied in :mod:`omnilab.bench.scoring.code_x_group`)."""

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

OMNILAB_TOOLS: dict[str, tuple[str, ...]] = {
    "video": (
        "mediaprobe", "omnilab media probe", "omnilab media frames", "omnilab media clip",
        "omnilab media sheet", "omnilab digest", ".skills/frame-sampling/", ".skills/counting/",
    ),
    "audio": (
        "omnilab media audio", "omnilab digest", ".skills/transcription/",
        ".skills/temporal-localisation/",
    ),
    "image": ("omnilab media crop", ".skills/ocr/", "rapidocr"),
}  # fmt: skip
"""omnilab's addition to the universes: its toolbox commands and starter-skill scripts, by the
modality they decode (``mediaprobe`` probes like ffprobe; ``omnilab digest`` decodes the frames
and transcribes the sound; the transcription and onset scripts read the audio; the OCR script
reads an image)."""

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

SANDBOX_SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")  # noqa: S108 - names, not used here
"""The sandbox's private scratch folders (a fresh tmpfs per sandbox, ``sandbox/_plan.py``):
writing a frame there does not leave the sandbox. The authors' grader exempts ``/tmp`` (their
containers' private mount) for the same reason."""

_NETWORK = re.compile(
    r"(?<![\w.-])(?:" + "|".join(NETWORK_PRIMITIVES) + r")(?![\w-])|https?://", re.IGNORECASE
)
_GOLD = re.compile(
    "|".join(re.escape(p).replace(r"\*", r"[\w.-]*") for p in GOLD_PATTERNS), re.IGNORECASE
)
_PSEUDO = re.compile(
    r"^/dev/(?:null|zero|full|stdin|stdout|stderr|tty|u?random|fd/\d+)$|^/proc/self/"
)
# A number after a slash is arithmetic (``$((10 /2))``, ``a /2`` in a script), not a path.
_NUMBER = re.compile(r"^/[\d.]+$")
# A quoted absolute path inside code (``open('/etc/passwd')``, ``"/srv/x"``).
_LITERAL = re.compile(r"""(['"])(/[^'"\s]*)\1""")
# A heredoc: the command line that feeds it, its delimiter, and (after the line) its body.
_HEREDOC = re.compile(r"^(?P<line>.*?)<<-?\s*(?P<q>['\"]?)(?P<tag>[A-Za-z_]\w*)(?P=q)(?P<rest>.*)$")
_COMMENT_LINE = re.compile(r"^[ \t]*#.*$", re.MULTILINE)
_SHELLS = frozenset({"bash", "sh", "dash", "zsh"})
_OPERATORS = frozenset({"|", "||", "&", "&&", ";", "(", ")", "|&"})


def matches_universe(texts: Iterable[str], universe: Iterable[str]) -> bool:
    """Whether any text holds any tool name of ``universe`` (substring match, H.1; without
    regard to case, as the authors' grader compares)."""
    names = tuple(n.lower() for n in universe)
    return any(name in text.lower() for text in texts for name in names)


def engaged(texts: Iterable[str], modality: str) -> bool:
    """Whether the commands engage ``modality`` (``video``: the video or image universe, as
    H.1 gates video tasks; ``audio``; ``image``), the paper's universes or omnilab's tools."""
    universes = {
        "video": (*VIDEO_TOOLS, *IMAGE_TOOLS, *OMNILAB_TOOLS["video"], *OMNILAB_TOOLS["image"]),
        "audio": (*AUDIO_TOOLS, *OMNILAB_TOOLS["audio"]),
        "image": (*IMAGE_TOOLS, *OMNILAB_TOOLS["image"]),
    }[modality]
    return matches_universe(list(texts), universes)


def uses_network(text: str) -> bool:
    """Whether a command names a network primitive (as a word) or a URL."""
    return _NETWORK.search(text) is not None


def _words(text: str) -> list[str]:
    """Shell words of ``text``, operators split off (``cat</x`` gives ``cat``, ``<``, ``/x``);
    quoting that does not close falls back to whitespace, as the authors' grader does."""
    # bash starts a comment only where a word starts: whole comment lines go, and a `#`
    # inside a word (shlex would cut the line there) stays.
    body = _COMMENT_LINE.sub("", text)
    lexer = shlex.shlex(body, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return body.split()


def _program(line: str) -> str:
    """The program that the last command of a shell line runs (``a | bash -s`` gives ``bash``)."""
    words = _words(line)
    cuts = [i for i, w in enumerate(words) if w in _OPERATORS]
    rest = [w for w in words[cuts[-1] + 1 if cuts else 0 :] if "=" not in w]
    return PurePosixPath(rest[0]).name if rest else ""


def _split_heredocs(text: str) -> tuple[str, list[tuple[bool, str]]]:
    """The shell text without heredoc bodies, and each body with whether a shell reads it."""
    shell: list[str] = []
    bodies: list[tuple[bool, str]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        match = _HEREDOC.match(line)
        if match is None or line.lstrip().startswith("#"):
            shell.append(line)
            continue
        shell.append(f"{match['line']} {match['rest']}")
        body: list[str] = []
        while i < len(lines) and lines[i].strip() != match["tag"]:
            body.append(lines[i])
            i += 1
        i += 1  # the delimiter line
        bodies.append((_program(match["line"]) in _SHELLS, "\n".join(body)))
    return "\n".join(shell), bodies


def _outside(path: str, roots: tuple[str, ...]) -> bool:
    if _PSEUDO.match(path) or _NUMBER.match(path) or path == "/":
        return False
    normal = os.path.normpath(path)
    return not any(normal == r or normal.startswith(r.rstrip("/") + "/") for r in roots)


def _paths(text: str) -> list[str]:
    """Absolute paths a shell command names: words (and ``NAME=/path`` values) that start with
    ``/``, quoted literals inside other words (code given to ``python -c``), and whatever a
    heredoc body names (a shell's: the same way; a program's: its quoted literals)."""
    body, heredocs = _split_heredocs(text)
    found: list[str] = []
    for word in _words(body):
        value = word.split("=", 1)[1] if "=" in word and not word.startswith("/") else word
        if value.startswith("/"):
            found.append(value.rstrip(".,;:"))
        else:
            found.extend(m.group(2) for m in _LITERAL.finditer(word))
    for by_shell, code in heredocs:
        found.extend(_paths(code) if by_shell else (m.group(2) for m in _LITERAL.finditer(code)))
    return found


def escapes(text: str, workspace: str | None = None) -> list[str]:
    """What in a command reaches for gold answers or outside the workspace: gold-answer
    patterns, and absolute paths outside ``workspace`` and the sandbox's scratch folders."""
    found = [m.group(0) for m in _GOLD.finditer(text)]
    roots = (*SANDBOX_SCRATCH, *([os.path.normpath(workspace)] if workspace else []))
    found.extend(p for p in _paths(text) if _outside(p, roots))
    return found


def syntax_failed(observation: str) -> bool:
    """Whether a command's output shows a shell or script syntax failure (H.1's strings)."""
    return any(s in observation for s in SYNTAX_FAILURES)
