"""Issue 42 points 10, 11 and 13 and the smaller ones: totals that must hold (sparse files, a
workspace total that restarts must not grow) and other local users (one whose uid lies in the
sandbox range, one who squats the harness's state folder); a forged interpreter reply; a view
swapped for a link during a run. The totals and uids exist only with a root harness."""

from __future__ import annotations

import base64
import contextlib
import io
import os
import subprocess
import tempfile
import uuid
import zlib
from pathlib import Path

from attacks.registry import ALL, LIMITS, OWN_UID, Ctx, Verdict, attack
from omnilab.config import get_settings

MiB = 1024**2
# Files may be large (so that truncate is not refused per file), the workspace is small.
SPARSE = LIMITS.model_copy(update={"file_size_bytes": 512 * MiB, "workspace_bytes": 16 * MiB})
_NOT_ROOT = True, "n/a (the workspace tmpfs and own uids need a root harness)"


def _sizes(root: Path) -> tuple[int, int]:
    """(apparent, allocated) bytes of the regular files under ``root``."""
    apparent = allocated = 0
    for folder, _, files in os.walk(root):
        for name in files:
            st = os.lstat(os.path.join(folder, name))  # noqa: PTH118 - os.walk's names
            apparent += st.st_size
            allocated += st.st_blocks * 512
    return apparent, allocated


def _sparse(ctx: Ctx, code: str) -> Verdict:
    if os.geteuid() != 0:
        return _NOT_ROOT
    ws = ctx.ws()
    out, how = ctx.run(code, ws=ws, limits=SPARSE)
    apparent, allocated = _sizes(ws)
    bound = SPARSE.workspace_bytes + MiB
    held = apparent <= bound and allocated <= bound
    return (
        held,
        f"{out.strip()[:40]}; back on disk: {apparent >> 20} MiB apparent, {allocated >> 20} MiB allocated ({how})",
    )


@attack("four 256 MiB sparse files in a 16 MiB workspace", OWN_UID)
def sparse_files(ctx: Ctx) -> Verdict:
    return _sparse(
        ctx,
        """
        for i in range(4):
            with open(f"sparse{i}.bin", "wb") as f:
                f.truncate(256 * 1024 * 1024)
        print("made")
        """,
    )


@attack("sixty 8 MiB sparse files five folders deep", OWN_UID)
def sparse_deep(ctx: Ctx) -> Verdict:
    return _sparse(
        ctx,
        """
        import os
        os.makedirs("a/b/c/d/e")
        for i in range(60):
            with open(f"a/b/c/d/e/s{i}.bin", "wb") as f:
                f.seek(8 * 1024 * 1024 - 1)
                f.write(b"x")
        print("made")
        """,
    )


@attack("grow the workspace total by restarting", OWN_UID)
def restart_growth(ctx: Ctx) -> Verdict:
    if os.geteuid() != 0:
        return _NOT_ROOT
    ws = ctx.ws()
    code = """
        import os
        st = os.statvfs(".")
        print(st.f_blocks * st.f_frsize)
        try:
            with open(f"fill{len(os.listdir('.'))}.bin", "wb") as f:
                f.write(b"x" * 6 * 1024 * 1024)
            os.makedirs(f"d{len(os.listdir('.'))}/e/f")
        except OSError:
            pass
        """
    totals = []
    for _ in range(5):
        out, _ = ctx.run(code, ws=ws, limits=SPARSE)
        totals.append(int(out.split()[0]) if out.split() else -1)
    return len(set(totals)) == 1 and totals[0] > 0, f"tmpfs totals {[t >> 20 for t in totals]} MiB"


@attack("a local user holds the workspace's sandbox uid", OWN_UID)
def uid_taken(ctx: Ctx) -> Verdict:
    if os.geteuid() != 0:
        return _NOT_ROOT
    ws = ctx.ws()
    base = get_settings().sandbox.uid_base
    wanted = base + zlib.crc32(os.fsencode(str(ws))) % 65536  # where the lease search starts
    user = subprocess.Popen(["sleep", "30"], user=wanted, group=wanted)
    try:
        out, how = ctx.run("import os; print(os.getuid())", ws=ws)
    finally:
        user.kill()
        user.wait()
    got = out.strip()
    return got.isdigit() and int(got) != wanted, f"user {wanted}, sandbox ran as {got} ({how})"


@attack("another user's subuid range covers the sandbox uids", OWN_UID)
def subuid_overlap(ctx: Ctx) -> Verdict:
    if os.geteuid() != 0:
        return _NOT_ROOT
    from omnilab.sandbox import _uidcheck

    base = get_settings().sandbox.uid_base
    with tempfile.NamedTemporaryFile("w", suffix=".subuid") as f:
        # A usual useradd range: all but the last 16 sandbox uids belong to alice's containers.
        f.write(f"alice:{base}:{65536 - 16}\n")
        f.flush()
        files, _uidcheck.SUBID_FILES = _uidcheck.SUBID_FILES, (f.name,)
        try:
            out, how = ctx.run("import os; print(os.getuid())")
        finally:
            _uidcheck.SUBID_FILES = files
    got = out.strip()
    held = got.isdigit() and int(got) >= base + 65536 - 16
    return held, f"alice has [{base}, {base + 65536 - 16}); sandbox ran as {got} ({how})"


@attack("squat the harness's state folder before its first run", OWN_UID)
def squat_state(ctx: Ctx) -> Verdict:
    if os.geteuid() != 0:
        return _NOT_ROOT
    from omnilab.sandbox import _statedir

    # The real folder is shared by every harness of this machine: squat a stand-in in a
    # world-writable sticky folder like /dev/shm, and point the harness at it.
    shared = ctx.root / f"shm-{uuid.uuid4().hex[:8]}"
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    squat = shared / "omnilab-sandbox-0"
    squat.mkdir(mode=0o777)
    (squat / "uids.json").write_text("[]")
    os.chown(squat, 54321, 54321)
    candidates = _statedir._candidates
    _statedir._candidates = lambda: [squat]
    try:
        out, how = ctx.run("print('ran')")
    except Exception as exc:  # a refusal to run is the denial of service
        return False, f"the harness stopped: {exc}"
    finally:
        _statedir._candidates = candidates
    st = squat.lstat()
    mine = st.st_uid == 0 and not st.st_mode & 0o077
    return (
        "ran" in out and mine,
        f"{out.strip()}; the folder is {'root' if mine else 'still the squatter'}'s ({how})",
    )


@attack("forge a deeply nested interpreter reply", ALL)
def forged_reply(ctx: Ctx) -> Verdict:
    code = """
import os, struct
body = b'{"value": ' + b"[" * 200000 + b"]" * 200000 + b"}"
os.write(4, struct.pack(">I", len(body)) + body)
"""
    with ctx.session() as py:
        try:
            result = py.run(code)
        except RecursionError as exc:
            return False, f"RecursionError out of PythonSession.run: {exc}"
        again = py.run("6 * 7").value
    return again == "42", f"{result.error}; the next call gave {again}"


@attack("swap a view for a link during the run", ALL)
def view_swap(ctx: Ctx) -> Verdict:
    from PIL import Image as PILImage

    from omnilab.agents.view_check import vet_views
    from omnilab.agents.views import save_view
    from omnilab.content import Image, Text
    from omnilab.models.capabilities import Capabilities
    from omnilab.models.providers.openai_wire import wire_messages
    from omnilab.models.types import Message

    ws = ctx.ws()
    view = save_view(PILImage.new("RGB", (16, 16)), ws / "views", "image_1.jpg")
    secret = ctx.root / "secret.jpg"
    secret.write_bytes(view.read_bytes())
    secret.chmod(0o600)
    ctx.run(
        f"import os; os.remove('views/image_1.jpg'); os.symlink({str(secret)!r}, 'views/image_1.jpg')",
        ws=ws,
    )
    messages = [Message.user("what is it?", Image(path=view))]
    vetted = {**dict(enumerate(messages)), **vet_views(messages)}
    try:
        wire_messages(list(vetted.values()), Capabilities(image=True), "m")
    except Exception as exc:
        return False, f"the model call failed: {exc}"
    notice = [p for p in vetted[0].content if isinstance(p, Text) and "replaced" in p.text]
    return bool(notice), "dropped with a notice" if notice else "the link stayed in the context"


def _local(kind: str, number: int) -> str | None:
    """A real local user (``useradd``) or group (``groupadd``) numbered ``number``, with no
    process and no home (issue 42's reviewer: a passwd entry alone, not a running process);
    None when this machine cannot make one."""
    name = f"omx{uuid.uuid4().hex[:8]}"
    if kind == "user":
        command = ["useradd", "-u", str(number), "-M", "-N", "-s", "/usr/sbin/nologin", name]
    else:
        command = ["groupadd", "-g", str(number), name]
    try:
        made = subprocess.run(command, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return name if made.returncode == 0 else None


def _drop_local(kind: str, name: str) -> None:
    subprocess.run([f"{kind}del", name], capture_output=True, timeout=30, check=False)


def _taken_by_local(ctx: Ctx, kind: str) -> Verdict:
    if os.geteuid() != 0:
        return _NOT_ROOT
    ws = ctx.ws()
    base = get_settings().sandbox.uid_base
    wanted = base + zlib.crc32(os.fsencode(str(ws))) % 65536
    name = _local(kind, wanted)
    if name is None:
        return True, f"n/a (no {kind}add here)"
    try:
        out, how = ctx.run("import os; print(os.getuid(), os.getgid())", ws=ws)
    finally:
        _drop_local(kind, name)
    ids = out.split()
    held = len(ids) == 2 and all(i.isdigit() and int(i) != wanted for i in ids)
    return held, f"{kind} {name} is {wanted}; sandbox ran as uid/gid {' '.join(ids)} ({how})"


@attack("a user made with useradd (no process) holds the workspace's uid", OWN_UID)
def uid_of_a_passwd_user(ctx: Ctx) -> Verdict:
    return _taken_by_local(ctx, "user")


@attack("a group made with groupadd holds the workspace's gid", OWN_UID)
def gid_of_a_local_group(ctx: Ctx) -> Verdict:
    return _taken_by_local(ctx, "group")


@attack("swap the views folder itself for a link during the run", ALL)
def views_folder_swap(ctx: Ctx) -> Verdict:
    """Issue 42's reviewer: the view swap one level up (the folder, not the file)."""
    from PIL import Image as PILImage

    from omnilab.agents.view_check import vet_views
    from omnilab.agents.views import save_view
    from omnilab.content import Image, Text
    from omnilab.models.capabilities import Capabilities
    from omnilab.models.providers.openai_wire import wire_messages
    from omnilab.models.types import Message

    ws = ctx.ws()
    view = save_view(PILImage.new("RGB", (16, 16)), ws / "views", "image_1.jpg")
    private = ctx.root / f"private-views-{uuid.uuid4().hex[:6]}"
    private.mkdir(mode=0o700)
    marker = PILImage.new("RGB", (16, 16), (255, 0, 0))
    marker.save(private / "image_1.jpg")
    (private / "image_1.jpg").chmod(0o600)
    ctx.run(
        f"import os, shutil; shutil.rmtree('views'); os.symlink({str(private)!r}, 'views')",
        ws=ws,
    )
    messages = [Message.user("what is it?", Image(path=view))]
    vetted = {**dict(enumerate(messages)), **vet_views(messages)}
    try:
        wire = wire_messages(list(vetted.values()), Capabilities(image=True), "m")
    except Exception as exc:
        return False, f"the model call failed: {exc}"
    sent = str(wire)
    leaked = False
    for chunk in sent.split("base64,")[1:]:
        data = base64.b64decode(chunk.split("'")[0].split('"')[0] + "==")
        with contextlib.suppress(Exception):
            leaked |= PILImage.open(io.BytesIO(data)).convert("RGB").getpixel((8, 8))[0] > 200
    notice = [p for p in vetted[0].content if isinstance(p, Text) and "replaced" in p.text]
    return not leaked, "root's picture sent" if leaked else f"not sent (notice: {bool(notice)})"
