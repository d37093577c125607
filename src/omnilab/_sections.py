"""The sections of :class:`omnilab.config.Settings` (import them from :mod:`omnilab.config`).

Field docstrings are the documentation of each setting: ``omnilab config --reference`` and
``docs/configuration.md`` are generated from them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr, field_validator

from omnilab._urls import is_remote

__all__ = [
    "AgentSettings",
    "BenchSettings",
    "MediaSettings",
    "ModelSettings",
    "PerceptionSettings",
    "PerceptionToolSettings",
    "SandboxLimits",
    "SandboxSettings",
    "WebSettings",
]


class _Section(BaseModel):
    """A settings section (its fields' docstrings are read on demand: omnilab._docstrings)."""


class MediaSettings(_Section):
    """Limits and defaults of the media environment."""

    max_frames: int = Field(default=512, ge=1)
    """Most frames one request may ask for (``TOO_MANY_FRAMES`` above it). The default is the
    most a benchmark delivery sends (``frames_max`` <= 512), so none is refused at its limit."""

    max_clip_seconds: float = Field(default=600.0, gt=0)
    """Longest clip one request may cut (``TOO_LONG`` above it)."""

    max_audio_seconds: float = Field(default=3600.0, gt=0)
    """Longest audio segment one request may extract (``TOO_LONG`` above it)."""

    max_edge: int | None = Field(default=None, ge=16)
    """Default longest edge of returned frames in pixels; ``None`` keeps the source size."""

    audio_sample_rate: int = Field(default=16_000, ge=8_000)
    """Sample rate of extracted audio (mono PCM16)."""

    cache_max_bytes: int = Field(default=2 * 1024**3, ge=0)
    """Size bound of the media cache; least recently used entries are evicted past it."""

    memory_budget_bytes: int = Field(default=1024**3, ge=64 * 1024**2)
    """Memory that media preparation (decoding frames) may hold at once in one process;
    more jobs wait for room (one larger than this runs alone)."""

    decode_slots: int = Field(default=0, ge=0)
    """Decoding loops (frame workers, soundtrack extractions) one process runs at once; more
    wait. ``0``: as many as the cores the process may use."""


class PerceptionSettings(_Section):
    """Backends and thresholds of the perception operators (ASR, VAD, OCR, shots, digest)."""

    asr_backend: str = "whisper"
    """ASR backend by name: ``whisper`` (embedded Whisper tiny.en, English, unless
    ``whisper_model`` names another; pocketsphinx with a notice when it is missing),
    ``pocketsphinx`` (embedded, English) or ``openai``."""

    language: str | None = None
    """Spoken language hint (ISO 639-1, e.g. ``en``); ``None`` lets the backend decide."""

    asr_chunk_seconds: float = Field(default=30.0, ge=5.0, le=600.0)
    """Longest audio piece sent to the ASR backend at once; long audio is cut at silences."""

    whisper_model: str | None = None
    """faster-whisper model: ``None`` for the embedded English tiny.en; a local CTranslate2 model
    folder (e.g. a multilingual one for other languages) or a name already in the local
    Hugging Face cache (nothing is downloaded)."""

    whisper_device: str = "cpu"
    """Device for faster-whisper (``cpu``, ``cuda``, ``auto``)."""

    whisper_compute_type: str = "int8"
    """CTranslate2 compute type for faster-whisper (``int8`` is fastest on CPU)."""

    whisper_beam_size: int = Field(default=1, ge=1, le=10)
    """Beam width of whisper decoding: 1 (greedy) is about 30 % faster on CPU than 5 and made
    no more errors on the benchmark's speech; raise it for hard audio."""

    openai_base_url: str = "https://api.openai.com/v1"
    """Base URL of an OpenAI-compatible ``/audio/transcriptions`` endpoint (OpenAI, vLLM, ...)."""

    openai_model: str = "whisper-1"
    """Model name sent to the transcription endpoint."""

    openai_api_key: SecretStr | None = None
    """Key for the transcription endpoint; falls back to ``$OPENAI_API_KEY`` only when the
    endpoint is OpenAI's own (that key goes nowhere else)."""

    openai_timeout: float = Field(default=120.0, gt=0)
    """Seconds to wait for one transcription request."""

    vad_threshold: float = Field(default=0.5, gt=0.0, lt=1.0)
    """Silero speech probability above which a 32 ms window counts as speech."""

    events_backend: str = "embedded"
    """Audio event tagger by name (``embedded``: VAD plus spectral features)."""

    ocr_backend: str = "rapidocr"
    """OCR backend by name: ``rapidocr`` (embedded) or ``tesseract`` (needs it on PATH)."""

    ocr_min_confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    """Text boxes recognised with less confidence than this are dropped."""

    shot_threshold: float = Field(default=0.35, gt=0.0, le=1.0)
    """Colour-histogram distance (0..1) between sampled frames that counts as a cut."""

    shot_sample_fps: float = Field(default=4.0, gt=0.0, le=60.0)
    """Frames per second the shot detector looks at."""

    min_shot_seconds: float = Field(default=1.0, ge=0.0)
    """Cuts closer than this to the previous one are ignored (flashes, fades)."""

    max_keyframes: int = Field(default=24, ge=1, le=256)
    """Most keyframes a digest reads text from and puts on its contact sheet."""

    threads: int | None = Field(default=None, ge=1)
    """CPU threads for ONNX and decoder backends; ``None`` uses every core."""


class PerceptionToolSettings(_Section):
    """What the active perception tools (``read_video``, ``read_audio``, ``read_image``) return."""

    video_fps: float = Field(default=1.0, gt=0.0, le=30.0)
    """Frames per second of the segment that ``read_video`` returns (both ends included)."""

    video_max_frames: int = Field(default=32, ge=1, le=256)
    """Most frames one ``read_video`` call returns; longer segments are sampled more sparsely."""

    frame_max_edge: int | None = Field(default=768, ge=16)
    """Longest edge of returned frames in pixels, unless the model's ``max_image_edge`` is set;
    ``None`` keeps the source size."""

    ocr_max_frames: int = Field(default=8, ge=1, le=256)
    """Frames read with OCR when ``read_video`` answers a text-only model."""


class ModelSettings(_Section):
    """How models are called: caching, retries, limits, capability overrides and keys."""

    cache: bool = False
    """Keep responses in an SQLite cache under ``cache_dir``/models (evaluation runs turn it on)."""

    concurrency: int = Field(default=16, ge=1)
    """Most calls in flight at once to one endpoint (base URL), per process."""

    timeout_s: float = Field(default=120.0, gt=0)
    """Seconds one attempt of one call may take before it is abandoned and retried."""

    max_attempts: int = Field(default=4, ge=1)
    """Attempts per call (1 = no retry) on rate limits, server errors, timeouts, lost connections."""

    backoff_s: float = Field(default=1.0, ge=0)
    """First retry delay; doubled per attempt, with jitter, unless the server sends Retry-After."""

    backoff_max_s: float = Field(default=60.0, ge=0)
    """Longest single wait between attempts."""

    capabilities: dict[str, dict[str, bool | int | float]] = Field(default_factory=dict)
    """Capability flags by model pattern, e.g. ``{"vllm:*omni*" = {video = true}}``; wins over
    the built-in table. ``omnilab models`` lists the flag names."""

    api_keys: dict[str, SecretStr] = Field(default_factory=dict)
    """API keys by provider alias (``openai``, ``openrouter``, ...), used when the alias's
    environment variable is unset and sent only to that provider's own host; or by base URL
    (``"http://gpu:8000/v1"``), sent only to base URLs under it. Never printed."""

    api_key_env: dict[str, str] = Field(default_factory=dict)
    """Environment variables holding the key of a base URL (``{"http://gpu:8000/v1" =
    "VLLM_API_KEY"}``): how a server of one's own gets a key kept in the environment."""

    local_n_ctx: int = Field(default=4096, ge=256)
    """Context window of the embedded ``local`` model, in tokens."""

    local_threads: int | None = Field(default=None, ge=1)
    """CPU threads of the embedded ``local`` model; ``None`` lets llama.cpp choose."""


class SandboxLimits(_Section):
    """Resource limits of one sandboxed execution (see ``docs/sandbox.md``)."""

    cpu_seconds: float = Field(default=60.0, gt=0)
    """CPU time of each process (RLIMIT_CPU); in a persistent Python session, of each call,
    counted by the harness over the whole process tree (cgroup accounting where available)."""

    session_cpu_seconds: float = Field(default=3600.0, gt=0)
    """CPU time of each process of a persistent session over its whole life (RLIMIT_CPU on the
    interpreter and what it starts): CPU burnt between calls cannot go on for ever."""

    cpus: float = Field(default=1.0, gt=0)
    """CPUs the whole sandbox may keep busy at once (cgroup ``cpu.max``), where cgroups work."""

    memory_bytes: int = Field(default=4 * 1024**3, ge=64 * 1024**2)
    """Address space of each process (RLIMIT_AS); allocations past it fail (``MemoryError``).
    Also the memory of all its processes together (cgroup ``memory.max``) where cgroups work."""

    file_size_bytes: int = Field(default=1024**3, ge=0)
    """Largest file a process may write (RLIMIT_FSIZE)."""

    max_processes: int = Field(default=256, ge=1)
    """Processes and threads of the sandbox user (RLIMIT_NPROC); enforced only where the sandbox
    runs under its own uid, which the isolation report states; also the sandbox's total
    (cgroup ``pids.max``) where cgroups work."""

    workspace_bytes: int = Field(default=1024**3, ge=1024**2)
    """Bytes the sandbox may add to its workspace (a size-limited tmpfs, where the harness is
    root); the workspace is kept in memory while a sandbox uses it."""

    workspace_inodes: int = Field(default=100_000, ge=100)
    """Files and folders the workspace may hold (same tmpfs)."""

    wall_seconds: float = Field(default=120.0, gt=0)
    """Wall-clock time of one execution; past it the whole process tree is killed."""

    output_bytes: int = Field(default=32_000, ge=256)
    """Bytes of stdout and of stderr kept each: the head and the tail, with a marker between."""


class BenchSettings(_Section):
    """Datasets, judges and error analysis of the evaluation harness (``omnilab.bench``)."""

    media_roots: dict[str, Path | str] = Field(default_factory=dict)
    """Folder each dataset's relative media paths are resolved against, by dataset name, e.g.
    ``{omnigaia = "/data/OmniGAIA"}``, or a URL (``s3://bucket/OmniGAIA/``; its media are
    fetched where each task runs); a dataset without one uses its data file's folder."""

    @field_validator("media_roots", mode="before")
    @classmethod
    def _roots(cls, value: object) -> object:
        # A URL stays text (a path would fold its "//"); anything else is a folder.
        if not isinstance(value, dict):
            return value
        return {k: v if is_remote(v) else Path(v) for k, v in value.items()}

    judge_model: str | None = None
    """The model bound to role ``judge`` (answer equivalence), ``provider:model[@base_url]``."""

    judge_models: list[str] = Field(default_factory=list)
    """Judges of a majority vote (Omni-DeepSearch uses three); empty: ``judge_model`` alone."""

    judge_attempts: int = Field(default=3, ge=1)
    """Times a judge is asked before a reply that is neither Correct nor Incorrect is recorded
    as a judge error."""

    analyst_model: str | None = None
    """The model bound to role ``analyst`` (error analysis of failed tasks)."""

    runs_dir: Path = Path("runs")
    """Folder new evaluation runs are created in (``<dataset>-<agent>-<time>``) unless ``--out``
    names one."""

    concurrency: int = Field(default=8, ge=1)
    """Tasks an evaluation runs at once (each with its media work, tool and model calls)."""

    task_timeout_s: float | None = Field(default=1800.0, gt=0)
    """Hard limit on one task's agent run; past it the task fails as a timeout. ``None``: none."""

    ray_address: str | None = None
    """Ray cluster of ``--backend ray`` (``ray://host:10001``, ``auto``); unset: ``RAY_ADDRESS``,
    else a local Ray started for the run."""

    ray_cpus_per_task: float = Field(default=1.0, gt=0)
    """CPUs each Ray worker reserves (it runs several model-bound tasks at once)."""

    ray_task_retries: int = Field(default=1, ge=0)
    """Times a task whose Ray worker died is run again on a new worker before it fails."""

    prices: dict[str, tuple[float, float]] = Field(default_factory=dict)
    """USD per million prompt and completion tokens by model name or ``fnmatch`` pattern, e.g.
    ``{"openai:gpt-4o*" = [2.5, 10.0]}``; a task's cost is known when all its models have one."""


class SandboxSettings(_Section):
    """How model-written code and shell commands are isolated."""

    isolation: Literal["auto", "bwrap", "namespaces", "process"] = "auto"
    """Isolation level: ``auto`` takes the strongest that works on this machine; naming one that
    does not work is an error rather than a silent downgrade."""

    limits: SandboxLimits = Field(default_factory=SandboxLimits)

    network: bool = False
    """Default network access of sandboxed code (tasks may allow it)."""

    uid_base: int = Field(default=200_000, ge=1000, le=4_000_000_000)
    """When the harness runs as root, each live workspace runs under its own uid in
    ``[uid_base, uid_base + 65536)``, handed out by a locked allocator shared by every omnilab
    process of the machine (no two live workspaces share one). A uid is used only when no user,
    group, running process or other user's ``/etc/subuid``/``/etc/subgid`` range has it
    (docs/sandbox.md, "Reserving the uid range")."""

    unsafe_process_as_root: bool = False
    """Let the ``process`` level run model code as root when the harness is root (it drops to an
    unprivileged uid otherwise, and refuses if it cannot). Root code there can read every
    secret and take over the machine: only for throw-away machines."""

    allow_env: list[str] = Field(default_factory=list)
    """Environment variable names passed to the sandbox even though they look like secrets."""


class WebSettings(_Section):
    """Web search and page browsing (``omnilab.tools.web``, see ``docs/tools-web.md``)."""

    search_provider: str = "local"
    """Provider of ``web_search``: ``local`` (offline BM25 index), ``serper``, ``tavily``,
    ``brave`` or ``searxng``. Keys come from ``SERPER_API_KEY``, ``TAVILY_API_KEY``,
    ``BRAVE_API_KEY``."""

    top_k: int = Field(default=10, ge=1, le=50)
    """Results per search."""

    index_dir: Path | None = None
    """Index of the ``local`` provider (``omnilab index build``); unset: the sample corpus."""

    searxng_url: str | None = None
    """Base URL of a SearXNG instance with the JSON format enabled, e.g. ``http://host:8080``."""

    serper_url: str = "https://google.serper.dev"
    """Base URL of the Serper API."""

    tavily_url: str = "https://api.tavily.com"
    """Base URL of the Tavily API."""

    brave_url: str = "https://api.search.brave.com"
    """Base URL of the Brave Search API."""

    timeout_s: float = Field(default=20.0, gt=0)
    """Seconds one search or one page fetch may take in all (redirects and download included)."""

    max_page_bytes: int = Field(default=5 * 1024**2, ge=1024)
    """Largest page body read; a larger page is abandoned with ``TOO_LARGE``."""

    max_redirects: int = Field(default=5, ge=0, le=20)
    """Redirects followed per page before ``TOO_MANY_REDIRECTS``."""

    page_chars: int = Field(default=10_000, ge=500)
    """Characters of Markdown per ``page_browser`` page; longer pages are split into pages."""

    include_links: bool = False
    """Keep hyperlinks in page Markdown (costs tokens; the reference tools drop them)."""

    allow_private_urls: bool = False
    """Let ``page_browser`` open loopback, private and link-local addresses; off so that a model
    cannot reach services inside the network the harness runs in."""

    cache: bool = True
    """Keep search results and pages on disk under ``cache_dir``/web."""

    cache_ttl_s: float = Field(default=7 * 24 * 3600.0, ge=0)
    """Age after which a cached search result or page is fetched again."""

    user_agent: str = "Mozilla/5.0 (compatible; omnilab)"
    """User-Agent header of page fetches."""


class AgentSettings(_Section):
    """Runs of ``omnilab ask`` and :func:`omnilab.ask` (see ``docs/agents.md``)."""

    runs_dir: Path = Path("omnilab-runs")
    """Folder each ask run gets a subfolder in (``<time>-<id>``: trajectory and workspace)."""

    max_turns: int = Field(default=50, ge=1)
    """Tool-using model turns before the forced final answer (OmniGAIA uses 50)."""

    roles: dict[str, str] = Field(default_factory=dict)
    """Models bound by role in every ``ask`` and new ``eval`` run, ``provider:model[@url]`` by
    role name (``[agents.roles]`` with ``image = "..."``, e.g. the ``master`` agent's pool);
    ``--role ROLE=MODEL`` and ``roles=`` win over them."""
