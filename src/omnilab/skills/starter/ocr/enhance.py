"""enhance.py IMAGE OUT [--box L T R B] [--scale K] [--invert]: a crop made easy to read."""

import argparse

from PIL import Image, ImageOps

p = argparse.ArgumentParser()
p.add_argument("image")
p.add_argument("out")
p.add_argument("--box", type=int, nargs=4, metavar=("LEFT", "TOP", "RIGHT", "BOTTOM"))
p.add_argument("--scale", type=float, default=2.0)
p.add_argument("--invert", action="store_true")
a = p.parse_args()
im = Image.open(a.image).convert("L")
if a.box:
    im = im.crop(tuple(a.box))
im = im.resize(
    (max(1, round(im.width * a.scale)), max(1, round(im.height * a.scale))),
    Image.Resampling.LANCZOS,
)
im = ImageOps.autocontrast(im, cutoff=1)
if a.invert:
    im = ImageOps.invert(im)
im.save(a.out)
print(f"{a.out}: {im.width}x{im.height}")
