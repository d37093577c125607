"""contact_sheet.py FOLDER OUT.png [--cols N] [--width W]: tile frames (sorted by name) with their names."""

import argparse
import math
from pathlib import Path

from PIL import Image, ImageDraw

p = argparse.ArgumentParser()
p.add_argument("folder")
p.add_argument("out")
p.add_argument("--cols", type=int, default=4)
p.add_argument("--width", type=int, default=320, help="width of each tile")
a = p.parse_args()
files = sorted(f for f in Path(a.folder).iterdir() if f.suffix.lower() in (".png", ".jpg", ".jpeg"))
if not files:
    raise SystemExit(f"no images in {a.folder}")
first = Image.open(files[0])
h = round(first.height * a.width / first.width)
cols = min(a.cols, len(files))
rows = math.ceil(len(files) / cols)
sheet = Image.new("RGB", (cols * a.width, rows * h), "black")
draw = ImageDraw.Draw(sheet)
for i, f in enumerate(files):
    x, y = (i % cols) * a.width, (i // cols) * h
    sheet.paste(Image.open(f).convert("RGB").resize((a.width, h)), (x, y))
    draw.rectangle([x, y, x + 8 * len(f.stem) + 6, y + 14], fill="black")
    draw.text((x + 3, y + 1), f.stem, fill="yellow")
sheet.save(a.out)
print(f"{a.out}: {len(files)} tiles, {cols}x{rows}, {sheet.width}x{sheet.height}")
