"""Issue 32 part A, harness reads: sandboxed code plants things in its workspace for the (root)
harness to read afterwards; each attack checks what the harness does with them, so each is
contained at every level."""

from __future__ import annotations

import base64
import contextlib
import os
import textwrap
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

from attacks.registry import ALL, Ctx, Verdict, attack
from omnilab.sandbox import run


def _secret(ctx: Ctx) -> tuple[Path, bytes]:
    """A root-only file (0600 in a 0700 folder) with unique bytes."""
    folder = ctx.root / f"private-{uuid.uuid4().hex[:6]}"
    folder.mkdir(mode=0o700)
    data = f"ROOT-ONLY-{uuid.uuid4().hex}".encode()
    (folder / "shadow").write_bytes(data)
    (folder / "shadow").chmod(0o600)
    return folder / "shadow", data


def _plant_links(ctx: Ctx, ws: Path, folder: str, target: Path) -> str:
    code = f"""
        import glob, os
        os.makedirs({folder!r}, exist_ok=True)
        for p in glob.glob({folder + "/*"!r}) or [{folder + "/image_1.jpg"!r}]:
            if os.path.lexists(p):
                os.unlink(p)
            os.symlink({str(target)!r}, p)
        print(sorted(os.listdir({folder!r})))
    """
    with ctx.session(ws) as py:
        return py.run(textwrap.dedent(code)).stdout.strip()


@attack("views: planted link sent to the model", ALL)
def views_link(ctx: Ctx) -> Verdict:
    from PIL import Image as PILImage

    from omnilab.agents.view_files import save_view
    from omnilab.content import Image
    from omnilab.models.capabilities import Capabilities
    from omnilab.models.providers.openai_wire import wire_messages
    from omnilab.models.types import Message

    target, data = _secret(ctx)
    ws = ctx.ws()
    view = save_view(PILImage.new("RGB", (16, 16)), ws / "views", "image_1.jpg")
    planted = _plant_links(ctx, ws, "views", target)
    try:
        wire = wire_messages([Message.user(Image(path=view))], Capabilities(image=True), "m")
    except Exception as exc:
        return True, f"planted {planted}; refused: {exc}"
    leaked = base64.b64encode(data).decode() in str(wire)
    return (
        not leaked,
        f"planted {planted}; the root-only file {'was' if leaked else 'was not'} sent",
    )


@attack("perception: planted link copied into a report", ALL)
def report_link(ctx: Ctx) -> Verdict:
    from omnilab.content import Audio, Image
    from omnilab.report.media import MediaCopier

    target, data = _secret(ctx)
    ws = ctx.ws()
    planted = _plant_links(ctx, ws, "perception", target)
    report = ctx.root / f"report-{uuid.uuid4().hex[:6]}"
    gone = ctx.root / "gone"
    with MediaCopier(report) as copier:
        for name in planted.strip("[]").replace("'", "").split(", "):
            for part in (Audio(path=gone / name), Image(path=gone / name)):
                copier.ref(part, search=(ws,))
    copied = [p.read_bytes() for p in report.rglob("*") if p.is_file()]
    leaked = any(data in blob for blob in copied)
    return not leaked, f"planted {planted}; {len(copied)} files in the report's media"


@attack("media: planted link to an outside video sent to the model", ALL)
def media_link(ctx: Ctx) -> Verdict:
    """The decoders (probe, frames, soundtrack) open a workspace file by _wsread's rules too: a
    link to a root-only video (another task's media, say) must not reach the model."""
    from omnilab.content import Video
    from omnilab.media import synth
    from omnilab.models.capabilities import Capabilities
    from omnilab.models.providers.openai_wire import wire_messages
    from omnilab.models.types import Message

    folder = ctx.root / f"private-{uuid.uuid4().hex[:6]}"
    folder.mkdir(mode=0o700)
    target = synth.make_video(folder / "labels.mp4", duration=2.0, gop_seconds=1.0)
    target.chmod(0o600)
    ws = ctx.ws()
    code = f"import os; os.symlink({str(target)!r}, 'clip.mp4'); print(os.listdir('.'))"
    with ctx.session(ws) as py:
        planted = py.run(code).stdout.strip()
    caps = Capabilities(image=True, audio=True)
    try:
        wire = wire_messages([Message.user(Video(path=ws / "clip.mp4"))], caps, "m")
    except Exception as exc:
        return True, f"planted {planted}; refused: {exc}"
    leaked = "image_url" in str(wire) or "input_audio" in str(wire)
    return (
        not leaked,
        f"planted {planted}; the root-only video {'was' if leaked else 'was not'} sent",
    )


def _blocks(fn: Callable[[], object], fifo: Path, wait: float = 3.0) -> tuple[bool, str]:
    """Runs ``fn`` in a thread: (returned in time, what it said). A thread stuck opening
    ``fifo`` is released by opening its other end."""
    said: list[str] = []

    def call() -> None:
        try:
            said.append(f"returned {str(fn())[:80]}")
        except Exception as exc:
            said.append(f"refused: {exc}")

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(wait)
    if worker.is_alive():
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(wait)
        return False, "the harness hung opening the FIFO"
    return True, said[0] if said else "?"


@attack("image_read of a FIFO", ALL)
def fifo_read(ctx: Ctx) -> Verdict:
    from omnilab.agents.coder.tools import read_workspace_image

    ws = ctx.ws()
    with ctx.session(ws) as py:  # read while the sandbox lives (FIFOs are not copied back)
        made = py.run("import os; os.mkfifo('t.png'); print('made')").stdout.strip()
        done, said = _blocks(lambda: read_workspace_image(ws, "t.png", 256), ws / "t.png")
    return done and made == "made", f"FIFO {made or 'not made'}; {said}"


_HUGE_PNG = """
    import struct, zlib
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    side = 13000
    packer = zlib.compressobj(9)
    row = b"\\0" * (side + 1)
    body = b"".join(packer.compress(row * 500) for _ in range(side // 500))
    body += packer.compress(row * (side % 500)) + packer.flush()
    head = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    png = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", head) + chunk(b"IDAT", body) + chunk(b"IEND", b"")
    open("big.png", "wb").write(png)
    print(len(png))
"""


@attack("image_read of a 13000x13000 PNG", ALL)
def huge_image(ctx: Ctx) -> Verdict:
    from omnilab.agents.coder.tools import read_workspace_image

    ws = ctx.ws()
    with ctx.session(ws) as py:
        size = py.run(textwrap.dedent(_HUGE_PNG)).stdout.strip()
    try:
        _, _, shape = read_workspace_image(ws, "big.png", 256)
    except ValueError as exc:
        return "pixels" in str(exc), f"{size} bytes on disk; refused: {exc}"
    return False, f"{size} bytes on disk decoded to {shape[0]}x{shape[1]} in the harness"


_DEEP = 1500


@attack("1,500-level tree in the workspace", ALL)
def deep_tree(ctx: Ctx) -> Verdict:
    from omnilab import _wswalk
    from omnilab.sandbox._safefs import open_folder, remove_children
    from omnilab.sandbox._wsfs import _private

    ws = ctx.ws()
    code = f"""
        import os
        for i in range({_DEEP}):
            if i % 100 == 0:
                open(f"f{{i}}", "w").write(str(i))
            os.mkdir("d")
            os.chdir("d")
        open("leaf.txt", "w").write("LEAF")
        print("made")
    """
    try:
        with ctx.session(ws) as py:
            made = py.run(textwrap.dedent(code)).stdout.strip()
        mounted = os.path.ismount(_private(str(ws)))
        names = {n for folder in _wswalk.walk(ws) for n, _ in folder.entries}
        kept = {"leaf.txt", "f0", f"f{_DEEP - 100}"} <= names
        again = run(["true"], workspace=ws, isolation=ctx.level)
        trouble = [w for w in again.warnings if "fail" in w]
        ok = made == "made" and kept and not mounted and again.ok and not trouble
        detail = f"files kept: {kept}, tmpfs left: {mounted}, next start ok: {again.ok} {trouble}"
        return ok, detail
    finally:
        with open_folder(ws) as fd:  # shutil.rmtree (the scratch folder's cleanup) recurses
            remove_children(fd)


@attack("swap a folder for a link during the snapshot", ALL)
def walk_race(ctx: Ctx) -> Verdict:
    from omnilab.tools.code import _snapshot

    secret_dir = ctx.root / f"private-{uuid.uuid4().hex[:6]}"
    secret_dir.mkdir(mode=0o700)
    (secret_dir / "ROOTONLYNAME").write_text("x")
    ws = ctx.ws()
    # renameat2(RENAME_EXCHANGE) swaps each folder with a link to the root-only folder and
    # back, atomically, while the harness (root) takes its created-files snapshot.
    code = f"""
        import ctypes, os, time
        libc = ctypes.CDLL(None, use_errno=True)
        for i in range(40):
            os.makedirs(f"d{{i}}/sub", exist_ok=True)
            if not os.path.lexists(f"l{{i}}"):
                os.symlink({str(secret_dir)!r}, f"l{{i}}")
        end = time.monotonic() + 1.5
        swaps = 0
        while time.monotonic() < end:
            for i in range(40):
                libc.renameat2(-100, f"d{{i}}".encode(), -100, f"l{{i}}".encode(), 2)
                swaps += 1
        print(swaps)
    """
    seen: set[str] = set()
    walks = 0
    with ctx.session(ws) as py:
        racer = threading.Thread(target=lambda: seen.add(py.run(textwrap.dedent(code)).stdout))
        racer.start()
        while racer.is_alive():
            seen.update(_snapshot(ws))
            walks += 1
        racer.join()
    leaked = any("ROOTONLYNAME" in name for name in seen)
    return not leaked, f"{walks} snapshots during the swaps; root-only names seen: {leaked}"
