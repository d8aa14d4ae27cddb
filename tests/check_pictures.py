#!/usr/bin/env python3
"""The committed pictures (docs/img) are what tools/pictures.sh draws now: it redraws them into a
temporary folder and compares. An SVG must be the same bytes. A PNG must come from the same SVG
(the SHA-256 each PNG records, tools/png_stamp.py) and have the same size; where it was drawn by
the same rasteriser and font as here, it must also have the same pixels (elsewhere, a different
librsvg or font draws text differently, so only the source is compared, and the test says so).
Usage: check_pictures.py SOURCE_DIR BUILD_DIR TMP_DIR"""
import io
import os
import shutil
import subprocess
import sys

from PIL import Image, ImageChops

source, build, tmp = sys.argv[1:4]
sys.path.insert(0, os.path.join(source, "tools"))
import png_stamp  # noqa: E402

committed_dir, fresh_dir = os.path.join(source, "docs", "img"), os.path.join(tmp, "pictures")
shutil.rmtree(fresh_dir, ignore_errors=True)
subprocess.run(["bash", os.path.join(source, "tools", "pictures.sh"), build, fresh_dir], check=True,
               stdout=subprocess.DEVNULL)
failures = 0


def expect(ok, what):
    global failures
    print(("ok      " if ok else "FAILED  ") + what)
    failures += not ok


committed, fresh = sorted(os.listdir(committed_dir)), sorted(os.listdir(fresh_dir))
expect(committed == fresh, f"docs/img holds what tools/pictures.sh draws: {committed} / {fresh}")
for name in sorted(set(committed) & set(fresh)):
    old = open(os.path.join(committed_dir, name), "rb").read()
    new = open(os.path.join(fresh_dir, name), "rb").read()
    if name.endswith(".svg"):
        expect(old == new, f"{name}: the same SVG")
        continue
    old_stamp, new_stamp = png_stamp.stamps(old), png_stamp.stamps(new)
    old_img, new_img = Image.open(io.BytesIO(old)).convert("RGB"), Image.open(io.BytesIO(new)).convert("RGB")
    expect(old_stamp.get("zbpp:svg-sha256") == new_stamp["zbpp:svg-sha256"] and old_img.size == new_img.size,
           f"{name}: drawn from the same SVG (sha256 {new_stamp['zbpp:svg-sha256'][:16]}), {new_img.size[0]}x"
           f"{new_img.size[1]} px")
    if old_stamp.get("zbpp:rasteriser") == new_stamp["zbpp:rasteriser"]:
        diff = ImageChops.difference(old_img, new_img).getbbox() if old_img.size == new_img.size else (0, 0) + new_img.size
        expect(diff is None, f"{name}: the same pixels (same rasteriser and font){'' if diff is None else f', differ in {diff}'}")
    else:
        print(f"note    {name}: pixels not compared: drawn by '{old_stamp.get('zbpp:rasteriser')}', here "
              f"'{new_stamp['zbpp:rasteriser']}'")
if failures:
    print("to redraw them: tools/pictures.sh BUILD_DIR, then commit docs/img")
print(f"{failures} failed")
sys.exit(1 if failures else 0)
