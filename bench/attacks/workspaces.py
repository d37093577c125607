"""Issue 11's escapes through the places a run shares with others: the project folder beside the
harness, perception's crops (links the harness would follow), another live workspace."""

from __future__ import annotations

import asyncio
import os
import textwrap
import uuid
from pathlib import Path

from attacks.registry import ALL, OWN_UID, STRONG, Ctx, Verdict, attack


@attack("read omnilab.toml beside the harness", STRONG)
def config_beside(ctx: Ctx) -> Verdict:
    project = ctx.root / "project"
    project.mkdir(exist_ok=True)
    config = project / "omnilab.toml"
    config.write_text('[models]\napi_key = "sk-omnilab-SECRET"\n')
    config.chmod(0o644)
    here = Path.cwd()
    os.chdir(project)
    try:
        code = f"""
            import os
            for path in [{str(config)!r}, "/proc/{os.getpid()}/cwd/omnilab.toml"]:
                try:
                    print(open(path).read())
                except OSError as e:
                    print("refused", e)
        """
        out, how = ctx.run(code)
    finally:
        os.chdir(here)
    return "SECRET" not in out, how


def _perception(ctx: Ctx, plant: str, box: list[int]) -> tuple[Path, Path, Path | None]:
    """A workspace whose code ran ``plant``, and the crop ``read_image`` then served."""
    from omnilab.inputs import InputSet
    from omnilab.media import synth
    from omnilab.models.capabilities import Capabilities
    from omnilab.tools.perception import active_perception_tools

    media = ctx.root / f"media-{uuid.uuid4().hex[:6]}"
    media.mkdir()
    photo = synth.make_image(media / "photo.png", size=(64, 48), index=1)
    secret = synth.make_image(media / "secret.png", size=(64, 48), index=7)
    secret.chmod(0o600)
    ws = ctx.ws()
    with ctx.session(ws) as py:
        py.run(plant.replace("SECRET", str(secret)).replace("MEDIA", str(media)))
    tools = active_perception_tools(
        InputSet.from_paths([photo]), capabilities=Capabilities(image=True), workspace=ws
    )
    read_image = next(t for t in tools if t.name == "read_image")
    result = asyncio.run(read_image({"image_ids": ["image_1"], "crop_box": box}))
    served = [p.path for p in result.content if getattr(p, "path", None)]
    return ws, secret, served[0] if served else None


@attack("perception serves a planted link", ALL)
def perception_read(ctx: Ctx) -> Verdict:
    plant = """
        import os
        os.makedirs("perception", exist_ok=True)
        os.symlink("SECRET", "perception/image_1_crop_0_0_32_32.png")
    """
    _, secret, served = _perception(ctx, textwrap.dedent(plant), [0, 0, 32, 32])
    leaked = served is not None and served.exists() and served.samefile(secret)
    return not leaked, f"served {served}"


@attack("perception writes through a planted link", ALL)
def perception_write(ctx: Ctx) -> Verdict:
    outside = ctx.root / f"outside-{uuid.uuid4().hex[:6]}"
    outside.mkdir(mode=0o777)
    outside.chmod(0o777)
    plant = f"""
        import os, shutil
        shutil.rmtree("perception", ignore_errors=True)
        os.symlink({str(outside)!r}, "perception")
    """
    _perception(ctx, textwrap.dedent(plant), [0, 0, 16, 16])
    written = list(outside.iterdir())
    return not written, f"harness wrote {[p.name for p in written]} outside"


@attack("read another live workspace", OWN_UID)
def other_workspace(ctx: Ctx) -> Verdict:
    a, b = ctx.ws(), ctx.ws()
    with ctx.session(a) as pa, ctx.session(b) as pb:
        pb.run("open('secret.txt', 'w').write('WORKSPACE-B-SECRET')")
        code = f"""
            import os
            try:
                print(open({str(b / "secret.txt")!r}).read())
            except OSError as e:
                print("refused", e)
            try:
                print("LISTED", os.listdir({str(b.parent)!r}))
            except OSError as e:
                print("cannot list", e.errno)
        """
        r = pa.run(textwrap.dedent(code))
    listed = any(b.name in line for line in r.stdout.splitlines() if line.startswith("LISTED"))
    return "SECRET" not in r.stdout and not listed, r.stdout.strip()[:120]
