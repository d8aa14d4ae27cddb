#!/usr/bin/env python3
"""The HTML viewer of `zbplan show` in headless Chromium, checked by pixel counts.

Screenshots of a 32-stage, 256-microbatch ZB-2p schedule (the paper's 1.5B times) at fit width and
zoomed in (the view given by the URL fragment, as a shared link gives it), and of a ZB-V schedule.
What must hold, each against the schedule data the page embeds:
- the stage labels stay in view (dark text in the left gutter of every row shown, the same label
  pixels as in the fit view for the same stage) and the time axis carries labels;
- blocks sit where their times say: the centre pixel of every block wide enough has its colour;
- no outline washes thin blocks out: W's colour covers the area W's times give (fit width, where
  blocks are 1-2 px), and the last stage's cool-down is W-coloured;
- microbatch numbers appear once blocks are wide enough (dark pixels inside the rows when zoomed
  in, none at fit width); the selection in the fragment shows its card;
- a V schedule shows two shades per kind, each in the area its chunk's ops take.
Usage: ZBPLAN=path CHROMIUM=path check_viewer.py TMP_DIR. Exits 77 (skipped) only when CHROMIUM is
empty (CMake found no chromium; third_party/install-deps.sh installs it)."""
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

from PIL import Image, ImageChops

zbplan, chromium, tmp = os.environ["ZBPLAN"], os.environ.get("CHROMIUM", ""), sys.argv[1]
if not chromium:
    print("SKIPPED: chromium not found (Debian package chromium; third_party/install-deps.sh installs it)")
    sys.exit(77)
os.makedirs(tmp, exist_ok=True)
failures = 0

# The viewer's layout in CSS px (io/viewer.js): gutters, axis band, rows.
LEFT, RIGHT, AXIS, GAP = 70, 130, 24, 4
FRAME = (0xB0, 0xB0, 0xB0)  # the canvas's 1 px border (io/viewer.css)
CARD = (0xFF, 0xFB, 0xE6)   # the card's background
DARK = 100                  # luminance below which a pixel is text


def expect(ok, what):
    global failures
    print(("ok      " if ok else "FAILED  ") + what)
    failures += not ok


def hex_rgb(h):
    return tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))


def mask(img, rgb):
    """255 where the picture has exactly this colour."""
    diff = ImageChops.difference(img, Image.new("RGB", img.size, rgb))
    r, g, b = diff.split()
    return ImageChops.lighter(ImageChops.lighter(r, g), b).point(lambda v: 255 if v == 0 else 0)


def count(m, box):
    return m.crop(box).histogram()[255]


def dark(img):
    return img.convert("L").point(lambda v: 255 if v < DARK else 0)


def plan(name, args):
    path = os.path.join(tmp, f"viewer_{name}.json")
    subprocess.run([zbplan, "plan", "--compute-only", "-o", path] + args, check=True, stdout=subprocess.DEVNULL)
    html = path[:-5] + ".html"
    subprocess.run([zbplan, "show", path, "-o", html], check=True, stdout=subprocess.DEVNULL)
    text = open(html, encoding="utf-8").read()
    data = json.loads(re.search(r'<script id="zbpp-data" type="application/json">(.*?)</script>', text, re.S).group(1))
    return path, html, data


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1",
         "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
         "--disable-sync", "--disable-component-update", "--disable-default-apps", "--mute-audio",
         "--disable-dev-shm-usage"]


def screenshot(html, fragment, size, name):
    png = os.path.join(tmp, f"viewer_{name}.png")
    if os.path.exists(png):
        os.remove(png)
    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmp)
    try:
        # Generous timeout: a cold start on a loaded 2-core machine takes seconds. The page draws
        # before its load event, so the screenshot needs no waiting on timers.
        subprocess.run([chromium] + FLAGS + [f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}",
                                             f"--screenshot={png}", "file://" + os.path.abspath(html) + fragment],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=180)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    img = Image.open(png).convert("RGB")
    # The canvas: inside its frame, the rows and columns mostly of the frame's colour (text
    # antialiasing may hit that colour elsewhere, a pixel here and there).
    m, (w, h) = mask(img, FRAME), img.size
    ys = [y for y in range(h) if count(m, (0, y, w, y + 1)) > w // 2]
    xs = [x for x in range(w) if count(m, (x, 0, x + 1, h)) > (ys[-1] - ys[0]) // 2]
    return img, (xs[0] + 1, ys[0] + 1, xs[-1], ys[-1])


class Browser:
    """A headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
    it reads commands on fd 3 and answers on fd 4, messages ending in a NUL byte), to send real
    wheel, drag and pointer events to one page."""

    def __init__(self, url, size):
        self.profile = tempfile.mkdtemp(prefix="chromium-", dir=tmp)
        to_chrome, self.out = os.pipe()
        self.inp, from_chrome = os.pipe()

        def pipes():  # in the child: the two ends onto fds 3 and 4 (via fresh copies: they may be 3 or 4 now)
            reads, writes = os.dup(to_chrome), os.dup(from_chrome)
            os.dup2(reads, 3)
            os.dup2(writes, 4)

        self.proc = subprocess.Popen([chromium] + FLAGS + [f"--user-data-dir={self.profile}", "--remote-debugging-pipe",
                                                          f"--window-size={size[0]},{size[1]}", url],
                                     preexec_fn=pipes, close_fds=False, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(to_chrome)
        os.close(from_chrome)
        self.buffer, self.next_id, self.session = b"", 0, None
        page = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        for _ in range(600):  # until the page has loaded and drawn: at most a minute
            try:
                if self.js("location.protocol + document.readyState") == "file:complete":
                    return
            except RuntimeError:  # the blank page it starts with went away
                pass
            time.sleep(0.1)
        raise RuntimeError(f"chromium did not load {url}")

    def call(self, method, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self.out, json.dumps(message).encode() + b"\0")
        deadline = time.time() + 120
        while True:
            while b"\0" not in self.buffer:
                ready, _, _ = select.select([self.inp], [], [], max(0.0, deadline - time.time()))
                chunk = os.read(self.inp, 1 << 20) if ready else b""
                if not chunk:
                    raise RuntimeError(f"chromium did not answer {method}")
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\0", 1)
            reply = json.loads(line)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def js(self, expression):
        """The value of an expression, after the next frame (the viewer draws on animation frames)."""
        wrapped = f"new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r({expression}))))"
        return self.call("Runtime.evaluate", expression=wrapped, awaitPromise=True, returnByValue=True)["result"].get("value")

    def mouse(self, kind, x, y, **extra):
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, **extra)

    def close(self):
        try:
            self.call("Browser.close")
            self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            os.close(self.out)
            os.close(self.inp)
            shutil.rmtree(self.profile, ignore_errors=True)


def view_of(fragment):
    q = dict(part.split("=", 1) for part in fragment.lstrip("#").split("&"))
    return float(q["zoom"]), float(q["t"]), float(q["stage"]), q.get("sel")


class View:
    """Where the viewer puts things for a fragment's zoom, t (units) and stage."""

    def __init__(self, data, canvas, zoom, t, stage):
        self.d, self.canvas, self.zoom, self.stage = data, canvas, zoom, stage
        self.row = data["rowHeight"]
        self.pitch = self.row + GAP
        self.plot_w = canvas[2] - canvas[0] - LEFT - RIGHT
        self.total = data["last"] - data["first"]
        self.t = data["first"] + t * data["ticksPerUnit"]
        self.px_per_tick = zoom * self.plot_w / self.total
        self.rows = [s for s in range(data["p"]) if self.row_top(s) >= canvas[1] + AXIS and
                     self.row_top(s) + self.row <= canvas[3]]

    def x(self, tick):
        return self.canvas[0] + LEFT + (tick - self.t) * self.px_per_tick

    def row_top(self, s):
        return self.canvas[1] + AXIS + 2 + (s - self.stage) * self.pitch

    def plot_box(self, s):
        return (self.canvas[0] + LEFT, self.row_top(s), self.canvas[0] + LEFT + self.plot_w, self.row_top(s) + self.row)

    def gutter_box(self, s):
        return (self.canvas[0] + 2, self.row_top(s), self.canvas[0] + LEFT - 2, self.row_top(s) + self.row)

    def ops(self, s):
        o = self.d["stages"][s]["ops"]
        for i in range(0, len(o), 5):
            yield i // 5, o[i], o[i + 1], o[i + 2], o[i + 3], o[i + 4]

    def visible(self, start, end):
        """The part of a block inside the plot, in px: (x0, x1), or None."""
        left, right = self.canvas[0] + LEFT, self.canvas[0] + LEFT + self.plot_w
        x0, x1 = max(left, self.x(start)), min(right, self.x(end))
        return (x0, x1) if x1 > x0 else None

    def labelled(self):
        """Blocks whose visible part holds their microbatch number (7 px a digit and 4)."""
        n = 0
        for s in self.rows:
            for _, _, mb, _, start, end in self.ops(s):
                v = self.visible(start, end)
                n += v is not None and v[1] - v[0] >= 7 * len(str(mb)) + 5
        return n

    def area(self, kind, chunk=None, rows=None, strip=None):
        """px of a kind (and chunk) the times give in the rows (or their bottom strip, below the
        labels), less the 1 px edge of wide blocks."""
        total = 0.0
        for s in self.rows if rows is None else rows:
            for _, k, _, c, start, end in self.ops(s):
                v = self.visible(start, end)
                if k == kind and (chunk is None or c == chunk) and v:
                    w = v[1] - v[0]
                    total += (w - 1 if self.x(end) - self.x(start) >= 3 else w) * (strip or self.row)
        return total

    def strip_box(self, s, strip):
        box = self.plot_box(s)
        return (box[0], box[3] - strip, box[2], box[3])


def check_common(img, v, name, centres=True):
    # Stage labels in every row shown, the time axis labelled.
    text = dark(img)
    lows = [count(text, v.gutter_box(s)) for s in v.rows]
    expect(len(v.rows) > 0 and min(lows) >= 20,
           f"{name}: a stage label at the left of each of the {len(v.rows)} rows shown (fewest text px {min(lows)})")
    c = v.canvas
    axis = count(text, (c[0] + LEFT, c[1], c[0] + LEFT + v.plot_w, c[1] + AXIS))
    expect(axis >= 100, f"{name}: the time axis has labels ({axis} text px)")
    # No label cut by the frame: none touches its right edge, beside the memory column.
    edge = count(text, (c[0] + LEFT + v.plot_w - 2, c[1], c[0] + LEFT + v.plot_w + 1, c[1] + AXIS - 8))
    expect(edge == 0, f"{name}: no time-axis label cut at the frame's right edge ({edge} text px there)")
    if not centres:
        return text
    # Blocks where their times put them: the colour below the label line at each block's centre
    # (but under the card and its shadow).
    card = mask(img, CARD).getbbox() or (0, 0, 0, 0)
    hits = checked = 0
    for s in v.rows:
        for _, k, _, ch, start, end in v.ops(s):
            vis = v.visible(start, end)
            at = (int((vis[0] + vis[1]) / 2), v.row_top(s) + v.row - 2) if vis else None
            if at and card[0] - 8 <= at[0] < card[2] + 8 and card[1] - 8 <= at[1] < card[3] + 8:
                continue
            if vis and vis[1] - vis[0] >= 6:
                px = img.getpixel(at)
                hits += px == hex_rgb(v.d["fills"][k][ch])
                checked += 1
    expect(checked > 0 and hits >= 0.98 * checked,
           f"{name}: {hits} of {checked} blocks wider than 6 px show their colour at their centre")
    return text


# ZB-2p on 32 stages, 256 microbatches, the 1.5B model's Table 6 times.
problem = ["-p", "32", "-m", "256", "--tf", "18.522", "--tb", "18.086", "--tw", "9.337", "--tcomm", "0.601",
           "--mem-b", "1", "--mem-w", "0.3664"]
path, html, data = plan("zb2p", ["--method", "heuristic", "--mem-limit", "2p"] + problem)
simulated = subprocess.run([zbplan, "simulate", path], check=True, capture_output=True, text=True).stdout
makespan = float(re.search(r"makespan\s+([0-9.]+)", simulated).group(1))
expect(abs((data["last"] - data["first"]) / data["ticksPerUnit"] - makespan) < 1e-9 and
       all(len(st["ops"]) == 5 * 768 for st in data["stages"]),
       f"zb-2p p=32 m=256: the page holds 768 ops a stage over the simulated makespan {makespan}")
W = 2

# Fit width: blocks 1-2 px wide.
img, canvas = screenshot(html, "#zoom=1", (1400, 800), "fit")
fit = View(data, canvas, 1, 0, 0)
expect(len(fit.rows) == 32, f"fit width: all 32 stages shown in a 1400x800 window ({len(fit.rows)})")
text = check_common(img, fit, "fit width", centres=False)  # blocks 1-2 px: the areas below
inside = sum(count(text, fit.plot_box(s)) for s in fit.rows)
expect(fit.labelled() == 0 and inside < 30, f"fit width: no microbatch numbers ({inside} text px in the rows)")
w_mask = mask(img, hex_rgb(data["fills"][W][0]))
w_px = sum(count(w_mask, fit.plot_box(s)) for s in fit.rows)
w_want = fit.area(W)
expect(abs(w_px - w_want) <= 0.1 * w_want, f"fit width: W's colour covers {w_px} px, its times {w_want:.0f} px")
last = data["stages"][31]["ops"]
cool_start = max(last[i + 4] for i in range(0, len(last), 5) if last[i] == 1)  # the last B
cool = (int(fit.x(cool_start)) + 1, fit.row_top(31), int(fit.x(last[-1])) - 1, fit.row_top(31) + fit.row)
cool_w = count(w_mask, cool) / ((cool[2] - cool[0]) * fit.row)
expect(cool[2] - cool[0] > 40 and cool_w >= 0.95,
       f"fit width: stage 31's cool-down ({cool[2] - cool[0]} px after its last B) is {100 * cool_w:.1f} % W's colour")
expect(count(mask(img, CARD), canvas) == 0, "fit width: no card without a selection")
fit_img = img

# Zoomed in 40x, 200 time units in, from stage 10, with a block selected: a shorter window, so
# only some stages fit and the rows scroll.
t, stage = 6000, 10
probe = View(data, canvas, 40, t, stage)
sel_i = next(i for i, *_, start, end in probe.ops(12) if probe.x(start) > canvas[0] + LEFT + 0.3 * probe.plot_w)
img, canvas = screenshot(html, f"#zoom=40&t={t}&stage={stage}&sel=12,{sel_i}", (1400, 500), "zoomed")
zoom = View(data, canvas, 40, t, stage)
expect(zoom.rows[0] == stage and len(zoom.rows) < 32, f"zoomed: stages {zoom.rows[0]}-{zoom.rows[-1]} shown")
text = check_common(img, zoom, "zoomed")
same = all(ImageChops.difference(img.crop(zoom.gutter_box(s)), fit_img.crop(fit.gutter_box(s))).getbbox() is None
           for s in zoom.rows)
expect(same, "zoomed: each row's stage label is the one the fit view shows for that stage")
inside = sum(count(text, zoom.plot_box(s)) for s in zoom.rows)
labelled = zoom.labelled()
expect(labelled > 100 and inside >= 12 * labelled,
       f"zoomed: microbatch numbers in the {labelled} blocks wide enough ({inside} text px)")
# W's area in the 4 px below the labels, in the rows the card leaves free.
card_box = mask(img, CARD).getbbox() or (0, 0, 0, 0)
free = [s for s in zoom.rows if not (card_box[1] - 8 <= zoom.row_top(s) + zoom.row and zoom.row_top(s) <= card_box[3] + 8)]
w_mask = mask(img, hex_rgb(data["fills"][W][0]))
w_px = sum(count(w_mask, zoom.strip_box(s, 4)) for s in free)
w_want = zoom.area(W, rows=free, strip=4)
expect(len(free) >= 10 and abs(w_px - w_want) <= 0.03 * w_want,
       f"zoomed: W's colour covers {w_px} px below the labels of {len(free)} rows, its times less edges {w_want:.0f} px")
card = count(mask(img, CARD), (0, 0) + img.size)
expect(card >= 3000, f"zoomed: the selected block (stage 12, op {sel_i}) shows its card ({card} px)")

# Interaction: real wheel, drag, hover and click events through the DevTools protocol.
b = Browser("file://" + os.path.abspath(html), (1400, 800))
try:
    box = b.js("JSON.stringify(document.getElementById('zbpp-view').getBoundingClientRect())")
    box = json.loads(box)
    left, top = box["left"] + 1, box["top"] + 1  # inside the frame
    plot_w, total = box["width"] - 2 - LEFT - RIGHT, data["last"] - data["first"]
    y = top + AXIS + 2 + 5 * (data["rowHeight"] + GAP) + data["rowHeight"] / 2  # stage 5's row
    x = round(left + LEFT + 0.25 * plot_w)
    z0, t0, _, _ = view_of(b.js("location.hash"))
    at_cursor = t0 + (x - left - LEFT) * (total / data["ticksPerUnit"]) / (z0 * plot_w)
    b.mouse("mouseWheel", x, y, deltaX=0, deltaY=-400)
    z1, t1, _, _ = view_of(b.js("location.hash"))
    under = t1 + (x - left - LEFT) * (total / data["ticksPerUnit"]) / (z1 * plot_w)
    expect(abs(z1 - z0 * 2.2255409) < 1e-4 and abs(under - at_cursor) < 1e-3,
           f"wheel: zoom {z0} -> {z1}, the time under the cursor stays {at_cursor:.3f} ({under:.3f})")
    b.mouse("mousePressed", x, y, button="left", buttons=1, clickCount=1)
    b.mouse("mouseMoved", x - 100, y + 1, button="left", buttons=1)
    b.mouse("mouseMoved", x - 200, y, button="left", buttons=1)
    b.mouse("mouseReleased", x - 200, y, button="left", buttons=0, clickCount=1)
    z2, t2, _, sel = view_of(b.js("location.hash"))
    moved = 200 * (total / data["ticksPerUnit"]) / (z1 * plot_w)
    expect(z2 == z1 and abs(t2 - t1 - moved) < 1e-3 and sel is None,
           f"drag 200 px left: the view moves {t2 - t1:.3f} later ({moved:.3f}), nothing selected")
    # The block under the pointer, from the data: the first on stage 5 whose centre is in view.
    per_px = total / (z2 * plot_w)
    tick = lambda px: data["first"] + t2 * data["ticksPerUnit"] + (px - left - LEFT) * per_px
    ops = data["stages"][5]["ops"]
    i = next(i for i in range(0, len(ops), 5) if (ops[i + 3] + ops[i + 4]) / 2 > tick(x))
    bx = left + LEFT + ((ops[i + 3] + ops[i + 4]) / 2 - tick(left + LEFT)) / per_px
    name = data["kinds"][ops[i]] + str(ops[i + 1])
    b.mouse("mouseMoved", bx, y)
    shown = b.js("document.getElementById('zbpp-card').hidden ? '' : document.getElementById('zbpp-card').textContent")
    expect(shown.startswith(f"{name} on stage 5 (op {i // 5} of 768)"), f"hover over {name} on stage 5: card '{shown}'")
    b.mouse("mousePressed", bx, y, button="left", buttons=1, clickCount=1)
    b.mouse("mouseReleased", bx, y, button="left", buttons=0, clickCount=1)
    sel = view_of(b.js("location.hash"))[3]
    expect(sel == f"5,{i // 5}", f"click on {name}: the fragment selects it (sel={sel})")
    b.js("document.getElementById('zbpp-fit').click()")
    z3, t3, _, _ = view_of(b.js("location.hash"))
    expect(z3 == 1 and t3 == 0, f"fit width button: zoom {z3}, t {t3}")
finally:
    b.close()

# ZB-V: two chunks a stage, each kind in two shades.
path, html, data = plan("zbv", ["--method", "zb-v", "-p", "4", "-m", "8", "--tf", "1", "--tb", "1", "--tw", "0.5"])
img, canvas = screenshot(html, "", (1200, 400), "zbv")
v = View(data, canvas, 1, 0, 0)
check_common(img, v, "zb-v")
for k, kind in enumerate(data["kinds"][:3]):
    for c in range(2):
        px = sum(count(mask(img, hex_rgb(data["fills"][k][c])), v.strip_box(s, 4)) for s in v.rows)
        want = v.area(k, c, strip=4)
        expect(want > 0 and abs(px - want) <= 0.03 * want,
               f"zb-v: {kind} chunk {c} in its own shade {data['fills'][k][c]}: {px} px, its times {want:.0f} px")

print(f"{failures} failed")
sys.exit(1 if failures else 0)
