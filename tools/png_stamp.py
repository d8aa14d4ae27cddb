#!/usr/bin/env python3
"""Records in a PNG what it was drawn from, so a committed picture can be checked against a redraw
without depending on the rasteriser: tEXt chunks "zbpp:svg-sha256" (the SVG's SHA-256) and
"zbpp:rasteriser" (which program and font drew it; pixels are comparable only when it matches).
Usage: png_stamp.py stamp SVG PNG RASTERISER   (rewrites PNG with the two chunks after IHDR)
       png_stamp.py show PNG                   (prints the chunks, one "key: value" a line)"""
import hashlib
import os
import struct
import sys
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def chunks(data):
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG file")
    at = len(SIGNATURE)
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind = data[at + 4:at + 8]
        yield kind, data[at + 8:at + 8 + length], data[at:at + 12 + length]
        at += 12 + length


def text_chunk(key, value):
    body = key.encode("latin-1") + b"\0" + value.encode("latin-1")
    return struct.pack(">I", len(body)) + b"tEXt" + body + struct.pack(">I", zlib.crc32(b"tEXt" + body))


def stamps(data):
    out = {}
    for kind, body, _ in chunks(data):
        if kind == b"tEXt" and body.startswith(b"zbpp:"):
            key, value = body.split(b"\0", 1)
            out[key.decode("latin-1")] = value.decode("latin-1")
    return out


def stamp(svg_path, png_path, rasteriser):
    digest = hashlib.sha256(open(svg_path, "rb").read()).hexdigest()
    data = open(png_path, "rb").read()
    out = bytearray(SIGNATURE)
    for kind, body, whole in chunks(data):
        if kind == b"tEXt" and body.startswith(b"zbpp:"):
            continue  # an older stamp
        out += whole
        if kind == b"IHDR":
            out += text_chunk("zbpp:svg-sha256", digest) + text_chunk("zbpp:rasteriser", rasteriser)
    with open(png_path + ".tmp", "wb") as f:
        f.write(bytes(out))
    os.replace(png_path + ".tmp", png_path)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "stamp":
        stamp(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 3 and sys.argv[1] == "show":
        for key, value in stamps(open(sys.argv[2], "rb").read()).items():
            print(f"{key}: {value}")
    else:
        sys.exit(__doc__)
