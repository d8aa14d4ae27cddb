// The zbplan show viewer: draws the schedule that zbplan embedded in this page (#zbpp-data, see
// render_html in io/render_svg.cpp) on a canvas. The wheel zooms the time axis around the
// cursor, dragging pans (time, and the stages when they do not all fit), a click selects a block;
// the stage labels, the peak memory and the time axis stay in view, microbatch numbers appear once
// a block is wide enough, and a card shows the block under the pointer (or the selected one).
// The view lives in the URL fragment, #zoom=8&t=1200&stage=0&sel=3,57 (zoom 1 fits the width; t,
// the time at the left edge, in the problem's unit; stage, the first row shown; sel, stage and op
// index): loading the page, editing the address, the wheel, drags and buttons all go through
// setView, so a link, or a headless screenshot, shows exactly that view.
'use strict';
(function () {
  const D = JSON.parse(document.getElementById('zbpp-data').textContent);
  const canvas = document.getElementById('zbpp-view');
  const ctx = canvas.getContext('2d');
  const card = document.getElementById('zbpp-card');

  // Layout in CSS px; rows are as tall as in the SVG picture.
  const LEFT = D.left || 70, RIGHT = 130, AXIS = 24, ROW = D.rowHeight, GAP = 4;
  const MROW = D.measured ? Math.floor(ROW / 2) : 0, PITCH = ROW + MROW + GAP;
  const OUTLINE_MIN = 3;  // narrower blocks get no white edge: it would wash their colour out
  const DIGIT = 7;        // px a digit of the 11 px labels takes; a label needs 4 px more
  const UNIT = D.ticksPerUnit, FIRST = D.first, TOTAL = Math.max(1, D.last - D.first);
  const N = 5;            // numbers an op: kind, microbatch, chunk, start, end

  // Zoom in at most until the shortest block fills the plot.
  let shortest = TOTAL;
  for (const st of D.stages)
    for (let i = 0; i < st.ops.length; i += N) shortest = Math.min(shortest, Math.max(1, st.ops[i + 4] - st.ops[i + 3]));
  const MAX_ZOOM = Math.max(16, TOTAL / shortest);

  let cssW = 0, cssH = 0, plotW = 1;
  let view = {zoom: 1, t: FIRST, stage: 0};
  let sel = null, hover = null, drag = null, pointer = null, drawPending = false;

  const rowsShown = () => Math.max(1, (cssH - AXIS - 2) / PITCH);
  const ticksPerPx = () => TOTAL / (view.zoom * plotW);
  const xOf = tick => LEFT + (tick - view.t) / ticksPerPx();
  const rowY = s => AXIS + 2 + (s - view.stage) * PITCH;
  const units = tick => (tick / UNIT).toFixed(6).replace(/\.?0+$/, '');
  const opName = (k, mb, c) => D.kinds[k] + mb + (c > 0 ? ':' + c : '');

  function layout() {
    const frame = canvas.offsetWidth - canvas.clientWidth;  // the border, both sides
    cssW = Math.max(LEFT + RIGHT + 100, document.documentElement.clientWidth - 16 - frame);
    const full = AXIS + 2 + D.p * PITCH;
    const room = window.innerHeight - canvas.getBoundingClientRect().top - window.scrollY - 8 - frame;
    cssH = Math.max(Math.min(full, AXIS + 2 + 4 * PITCH), Math.min(full, Math.floor(room)));
    plotW = cssW - LEFT - RIGHT;
    const dpr = window.devicePixelRatio || 1;
    canvas.style.width = cssW + 'px';
    canvas.style.height = cssH + 'px';
    canvas.width = Math.round(cssW * dpr);
    canvas.height = Math.round(cssH * dpr);
  }

  // The one way the view changes: clamps it, redraws and writes the fragment.
  function setView(v) {
    const zoom = Math.min(MAX_ZOOM, Math.max(1, Number.isFinite(v.zoom) ? v.zoom : 1));
    const shown = TOTAL / zoom;
    const t = Math.min(FIRST + TOTAL - shown, Math.max(FIRST, Number.isFinite(v.t) ? v.t : FIRST));
    const stage = Math.min(Math.max(0, D.p - Math.floor(rowsShown())), Math.max(0, Number.isFinite(v.stage) ? v.stage : 0));
    view = {zoom, t, stage};
    requestDraw();
  }

  function zoomAround(x, factor) {
    x = Math.min(LEFT + plotW, Math.max(LEFT, x));
    const anchor = view.t + (x - LEFT) * ticksPerPx();
    const zoom = Math.min(MAX_ZOOM, Math.max(1, view.zoom * factor));
    setView({zoom, t: anchor - (x - LEFT) * TOTAL / (zoom * plotW), stage: view.stage});
  }

  function panBy(dx, dy) {
    setView({zoom: view.zoom, t: view.t + dx * ticksPerPx(), stage: view.stage + dy / PITCH});
  }

  function fragment() {
    const parts = ['zoom=' + +view.zoom.toPrecision(6), 't=' + units(Math.round(view.t)),
                   'stage=' + Math.round(view.stage * 100) / 100];
    if (sel) parts.push('sel=' + sel.stage + ',' + sel.i);
    return '#' + parts.join('&');
  }

  function readFragment() {
    const q = new URLSearchParams(location.hash.slice(1));
    const num = name => (q.has(name) ? parseFloat(q.get(name)) : NaN);
    sel = null;
    const s = (q.get('sel') || '').split(',').map(Number);
    if (s.length === 2 && Number.isInteger(s[0]) && Number.isInteger(s[1]) && s[0] >= 0 && s[0] < D.p && s[1] >= 0 &&
        s[1] * N < D.stages[s[0]].ops.length)
      sel = {stage: s[0], i: s[1], measured: false};
    setView({zoom: num('zoom'), t: num('t') * UNIT, stage: num('stage')});
  }

  function requestDraw() {
    if (drawPending) return;
    drawPending = true;
    requestAnimationFrame(draw);
  }

  // The first op of a stage whose end is after tick (ops run one after another on a stage).
  function firstEndingAfter(ops, tick) {
    let lo = 0, hi = ops.length / N;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ops[mid * N + 4] <= tick) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  // One block: whole pixels, so runs of thin blocks tile without seams; the white left edge only
  // when the block is wide enough to keep its colour; the label where it fits in the visible part.
  function block(x0, x1, y, h, fill, label) {
    const right = LEFT + plotW;
    x0 = Math.round(Math.max(LEFT - 2, Math.min(right + 2, x0)));
    x1 = Math.round(Math.max(LEFT - 2, Math.min(right + 2, x1)));
    if (x1 <= x0) x1 = x0 + 1;
    ctx.fillStyle = fill;
    ctx.fillRect(x0, y, x1 - x0, h);
    if (x1 - x0 >= OUTLINE_MIN) {
      ctx.fillStyle = '#ffffff';
      ctx.fillRect(x0, y, 1, h);
    }
    if (label !== null) {
      const v0 = Math.max(x0 + 1, LEFT), v1 = Math.min(x1, right);
      if (v1 - v0 >= DIGIT * label.length + 4) {
        ctx.fillStyle = '#000000';
        ctx.fillText(label, (v0 + v1) / 2, y + h - 6);
      }
    }
  }

  function outlineOf(h) {
    if (!h) return;
    const st = D.stages[h.stage];
    const times = h.measured ? st.measured : st.ops;
    const at = h.measured ? 2 * h.i : N * h.i + 3;
    const x0 = Math.max(LEFT - 2, xOf(times[at])), x1 = Math.min(LEFT + plotW + 2, xOf(times[at + 1]));
    const y = rowY(h.stage) + (h.measured ? ROW + 1 : 0), hh = h.measured ? MROW - 1 : ROW;
    ctx.strokeStyle = '#000000';
    ctx.lineWidth = 2;
    ctx.strokeRect(Math.round(x0) - 1, y - 1, Math.max(1, Math.round(x1) - Math.round(x0)) + 2, hh + 2);
  }

  function draw() {
    drawPending = false;
    const dpr = window.devicePixelRatio || 1;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, cssW, cssH);
    const t0 = view.t, t1 = view.t + plotW * ticksPerPx();
    const firstRow = Math.max(0, Math.floor(view.stage));
    const lastRow = Math.min(D.p - 1, Math.ceil(view.stage + rowsShown()));
    ctx.font = '11px sans-serif';
    ctx.textBaseline = 'alphabetic';

    // The plot: row bands (idle time shows through), blocks, instructions, the measured rows.
    ctx.save();
    ctx.beginPath();
    ctx.rect(LEFT, AXIS, plotW, cssH - AXIS);
    ctx.clip();
    ctx.textAlign = 'center';
    for (let s = firstRow; s <= lastRow; ++s) {
      const st = D.stages[s], y = rowY(s), ops = st.ops;
      ctx.fillStyle = '#eeeeee';
      ctx.fillRect(LEFT, y, plotW, ROW);
      for (let i = firstEndingAfter(ops, t0); i * N < ops.length && ops[i * N + 3] < t1; ++i) {
        const o = i * N;
        block(xOf(ops[o + 3]), xOf(ops[o + 4]), y, ROW, D.fills[ops[o]][ops[o + 2]], ROW >= 14 ? String(ops[o + 1]) : null);
      }
      const ins = st.instructions;
      for (let i = 0; i < ins.length; i += 3) {
        if (ins[i + 1] < t0 || ins[i + 1] > t1) continue;
        const type = D.instructionTypes[ins[i]], x = Math.round(xOf(ins[i + 1]));
        ctx.fillStyle = type.colour;
        if (type.bar) ctx.fillRect(x, y - 2, 3, ROW + 4); else ctx.fillRect(x, y - 2, 1, 5);
      }
      if (D.measured) {
        const my = y + ROW + 1, m = st.measured;
        ctx.fillStyle = '#f6f6f6';
        ctx.fillRect(LEFT, my, plotW, MROW - 1);
        for (let i = 0; 2 * i < m.length; ++i) {
          if (m[2 * i + 1] < t0 || m[2 * i] > t1) continue;
          block(xOf(m[2 * i]), xOf(m[2 * i + 1]), my, MROW - 1, D.fills[ops[i * N]][ops[i * N + 2]], null);
        }
      }
    }
    outlineOf(sel);
    outlineOf(hover);
    ctx.restore();

    // What stays in view: stage labels (left), peak memory (right), the time axis (top).
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS, cssW, cssH - AXIS);
    ctx.clip();
    ctx.fillStyle = '#000000';
    for (let s = firstRow; s <= lastRow; ++s) {
      const y = rowY(s) + ROW - 6;
      ctx.textAlign = 'right';
      ctx.fillText(D.stages[s].label || 'stage ' + s, LEFT - 8, y);
      ctx.textAlign = 'left';
      ctx.fillText(D.stages[s].peak, LEFT + plotW + 8, y);
    }
    ctx.restore();
    ctx.fillStyle = '#000000';
    ctx.textAlign = 'left';
    ctx.fillText('peak memory', LEFT + plotW + 8, AXIS - 8);
    if (rowsShown() < D.p) {
      ctx.textAlign = 'right';
      ctx.fillText('stages ' + firstRow + '-' + Math.min(D.p - 1, Math.floor(view.stage + rowsShown() - 0.01)), LEFT - 8,
                   AXIS - 8);
    }
    axis(t0, t1);
    showCard();
    const f = fragment();
    if (location.hash !== f) {
      try { history.replaceState(null, '', f); } catch (e) { /* a page without history (some file viewers) */ }
    }
  }

  // Ticks about every 90 px at a 1-2-5 step, labelled with as many decimals as the step needs.
  function axis(t0, t1) {
    const raw = 90 * ticksPerPx(), p10 = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p10;
    const step = Math.max(1, Math.round((f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p10));
    const decimals = Math.min(6, Math.max(0, Math.ceil(-Math.log10(step / UNIT) - 1e-9)));
    ctx.save();
    ctx.beginPath();
    ctx.rect(LEFT - 1, 0, plotW + 2, AXIS);
    ctx.clip();
    ctx.fillStyle = '#888888';
    ctx.fillRect(LEFT, AXIS - 1, plotW, 1);
    for (let k = Math.ceil((t0 - FIRST) / step); FIRST + k * step <= t1; ++k) {
      const tick = FIRST + k * step, x = Math.round(xOf(tick)), text = (tick / UNIT).toFixed(decimals);
      ctx.fillStyle = '#888888';
      ctx.fillRect(x, AXIS - 7, 1, 6);
      ctx.fillStyle = '#000000';
      // Right of its tick, or left of it where the frame ends first (the last label, beside the
      // memory column), so that no label is cut.
      const fits = x + 3 + ctx.measureText(text).width <= LEFT + plotW;
      ctx.textAlign = fits ? 'left' : 'right';
      ctx.fillText(text, fits ? x + 3 : x - 3, AXIS - 9);
    }
    ctx.restore();
  }

  // The block at a point of the canvas: {stage, i, measured}, or null.
  function hit(x, y) {
    if (x < LEFT || x >= LEFT + plotW || y < AXIS) return null;
    const r = (y - AXIS - 2) / PITCH + view.stage, s = Math.floor(r);
    if (s < 0 || s >= D.p) return null;
    const within = (r - s) * PITCH, measured = within >= ROW;
    if (measured && (!D.measured || within >= ROW + MROW)) return null;
    const st = D.stages[s], tick = view.t + (x - LEFT) * ticksPerPx(), slack = 2 * ticksPerPx();
    // The block the time falls in; else the nearest within 2 px, so 1 px blocks can be pointed at.
    const times = measured ? st.measured : st.ops, stride = measured ? 2 : N, at = measured ? 0 : 3;
    const n = times.length / stride;
    let best = null, distance = slack;
    for (let i = measured ? 0 : Math.max(0, firstEndingAfter(st.ops, tick) - 1); i < n; ++i) {
      const start = times[i * stride + at], end = times[i * stride + at + 1];
      if (!measured && start > tick + slack) break;
      const d = tick < start ? start - tick : tick >= end ? tick - end : -1;
      if (d < distance) { best = {stage: s, i, measured}; distance = d; }
    }
    return best;
  }

  function showCard() {
    const h = hover || sel;
    if (!h || drag) { card.hidden = true; return; }
    const st = D.stages[h.stage], o = h.i * N, ops = st.ops;
    const span = (a, b) => units(a) + ' to ' + units(b) + ' (' + units(b - a) + ')';
    let text = '<b>' + opName(ops[o], ops[o + 1], ops[o + 2]) + '</b> on stage ' + h.stage +
               (D.chunks > 1 ? ', chunk ' + ops[o + 2] : '') + ' (op ' + h.i + ' of ' + ops.length / N + ')<br>';
    text += (h.measured ? 'planned ' : '') + span(ops[o + 3], ops[o + 4]);
    if (D.measured && 2 * h.i < st.measured.length) text += '<br>measured ' + span(st.measured[2 * h.i], st.measured[2 * h.i + 1]);
    card.innerHTML = text;
    card.hidden = false;
    const box = canvas.getBoundingClientRect();
    let x, y;
    if (hover && pointer) {
      x = pointer.x + 14;
      y = pointer.y + 14;
    } else {  // the selection: right of its block, while the block is in view
      const x1 = xOf(ops[o + 4]), ry = rowY(h.stage);
      if (x1 < LEFT || xOf(ops[o + 3]) > LEFT + plotW || ry < AXIS || ry > cssH) { card.hidden = true; return; }
      x = box.left + 1 + Math.min(x1, LEFT + plotW) + 8;
      y = box.top + 1 + ry;
    }
    const w = card.offsetWidth, hh = card.offsetHeight;
    if (x + w > window.innerWidth - 4) x = Math.max(4, x - w - 24);
    if (y + hh > window.innerHeight - 4) y = Math.max(4, y - hh - 24);
    card.style.left = x + 'px';
    card.style.top = y + 'px';
  }

  canvas.addEventListener('wheel', e => {
    e.preventDefault();
    const px = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? plotW : 1;
    const dx = e.deltaX * px, dy = e.deltaY * px;
    if (e.shiftKey || Math.abs(dx) > Math.abs(dy)) panBy(dx || dy, 0);
    else zoomAround(e.offsetX, Math.exp(-dy * 0.002));
  }, {passive: false});

  canvas.addEventListener('pointerdown', e => {
    if (e.button !== 0) return;
    drag = {x: e.clientX, y: e.clientY, t: view.t, stage: view.stage, moved: false};
    canvas.setPointerCapture(e.pointerId);
  });
  canvas.addEventListener('pointermove', e => {
    pointer = {x: e.clientX, y: e.clientY};
    if (drag) {
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
      drag.moved = true;
      canvas.classList.add('dragging');
      hover = null;
      setView({zoom: view.zoom, t: drag.t - dx * ticksPerPx(), stage: drag.stage - dy / PITCH});
      return;
    }
    const h = hit(e.offsetX, e.offsetY);
    if (JSON.stringify(h) !== JSON.stringify(hover)) { hover = h; requestDraw(); } else if (h) showCard();
  });
  canvas.addEventListener('pointerup', e => {
    if (drag && !drag.moved) {
      const h = hit(e.offsetX, e.offsetY);
      sel = h && !h.measured ? h : null;
    }
    drag = null;
    canvas.classList.remove('dragging');
    requestDraw();
  });
  canvas.addEventListener('pointerleave', () => { if (!drag) { hover = null; pointer = null; requestDraw(); } });
  document.getElementById('zbpp-in').onclick = () => zoomAround(LEFT + plotW / 2, 2);
  document.getElementById('zbpp-out').onclick = () => zoomAround(LEFT + plotW / 2, 0.5);
  document.getElementById('zbpp-fit').onclick = () => setView({zoom: 1, t: FIRST, stage: view.stage});
  window.addEventListener('keydown', e => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const keys = {'+': () => zoomAround(LEFT + plotW / 2, 2), '=': () => zoomAround(LEFT + plotW / 2, 2),
                  '-': () => zoomAround(LEFT + plotW / 2, 0.5), '0': () => setView({zoom: 1, t: FIRST, stage: 0}),
                  ArrowLeft: () => panBy(-plotW / 4, 0), ArrowRight: () => panBy(plotW / 4, 0),
                  ArrowUp: () => panBy(0, -PITCH), ArrowDown: () => panBy(0, PITCH),
                  Escape: () => { sel = null; requestDraw(); }};
    if (keys[e.key]) { keys[e.key](); e.preventDefault(); }
  });
  window.addEventListener('hashchange', () => { if (location.hash !== fragment()) readFragment(); });
  window.addEventListener('resize', () => { layout(); setView(view); });

  layout();
  readFragment();
  draw();  // now, not at the next frame: a screenshot taken at load shows the view
})();
