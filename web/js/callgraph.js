// callgraph.js: the profile view's call graph: the server's report=svg (the graph of
// `go tool pprof -dot`, laid out by Graphviz) shown inline, panned by dragging,
// zoomed with the wheel or the +/- buttons, reset to fit; clicking a function's box
// focuses that function. The pure helpers at the top are unit-tested in Node.

import { apiHeaders } from './api.js';

// The function a node stands for, from its tooltip "name (cum)".
export function nodeName(tooltip) {
  const t = String(tooltip || '');
  const m = /^(.*) \([^()]*\)$/s.exec(t);
  return m ? m[1] : t;
}

// Zooms the view {x, y, k} by factor about the point (px, py) of the pane, keeping
// that point still; k stays within [min, max].
export function zoomAt(v, factor, px, py, min = 0.05, max = 20) {
  const k = Math.min(max, Math.max(min, v.k * factor));
  const f = k / v.k;
  return { x: px - (px - v.x) * f, y: py - (py - v.y) * f, k };
}

// The view that fits a w x h drawing into a pw x ph pane (never enlarged past 1),
// centred.
export function fitView(w, h, pw, ph) {
  if (!(w > 0 && h > 0 && pw > 0 && ph > 0)) return { x: 0, y: 0, k: 1 };
  const k = Math.min(1, pw / w, ph / h);
  return { x: (pw - w * k) / 2, y: (ph - h * k) / 2, k };
}

// ---------------------------------------------------------------------------------
// The view (browser only)

function h(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids) e.append(k);
  return e;
}

export class CallGraphView {
  // pane: the element to fill; opts.onFocus(name) when a function's box is clicked.
  constructor(pane, opts = {}) {
    this.opts = opts;
    this.url = '';
    this.loaded = '';
    this.ctrl = null;
    this.view = { x: 0, y: 0, k: 1 };
    this.size = { w: 0, h: 0 };
    this.focus = '';
    const btn = (id, label, title) => h('button', { type: 'button', class: 'pf-button cg-btn', id, title, 'aria-label': title }, label);
    this.zoomIn = btn('cg-zoom-in', '+', 'Zoom in');
    this.zoomOut = btn('cg-zoom-out', '−', 'Zoom out');
    this.reset = btn('cg-reset', 'Fit', 'Fit the whole graph (0)');
    this.status = h('span', { class: 'pf-muted cg-status', role: 'status' });
    this.stage = h('div', { class: 'cg-stage' });
    this.canvas = h('div', { id: 'callgraph', class: 'cg-canvas', tabindex: '0', 'data-state': 'empty',
      'aria-label': 'Call graph: drag to pan, wheel or +/- to zoom, 0 to fit' }, this.stage);
    this.root = h('div', { class: 'cg' },
      h('div', { class: 'pf-flame-bar cg-bar' }, this.zoomIn, this.zoomOut, this.reset, this.status), this.canvas);
    pane.append(this.root);
    this.bind();
  }

  bind() {
    const c = this.canvas;
    const rel = (e) => {
      const r = c.getBoundingClientRect();
      return [e.clientX - r.left, e.clientY - r.top];
    };
    this.zoomIn.addEventListener('click', () => this.zoomBy(1.25));
    this.zoomOut.addEventListener('click', () => this.zoomBy(0.8));
    this.reset.addEventListener('click', () => this.fit());
    c.addEventListener('wheel', (e) => {
      if (!this.size.w) return;
      e.preventDefault();
      const [px, py] = rel(e);
      this.apply(zoomAt(this.view, Math.exp(-e.deltaY * 0.0015), px, py));
    }, { passive: false });
    let drag = null;
    c.addEventListener('pointerdown', (e) => {
      if (e.button !== 0) return;
      drag = { x: e.clientX, y: e.clientY, v: { ...this.view }, moved: false };
    });
    c.addEventListener('pointermove', (e) => {
      if (!drag) return;
      const dx = e.clientX - drag.x;
      const dy = e.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
      if (!drag.moved) c.setPointerCapture(e.pointerId);
      drag.moved = true;
      c.classList.add('cg-dragging');
      this.apply({ x: drag.v.x + dx, y: drag.v.y + dy, k: drag.v.k });
    });
    const end = () => {
      if (drag && drag.moved) this.justDragged = true;
      drag = null;
      c.classList.remove('cg-dragging');
    };
    c.addEventListener('pointerup', end);
    c.addEventListener('pointercancel', end);
    c.addEventListener('click', (e) => {
      if (this.justDragged) {
        this.justDragged = false;
        return;
      }
      const g = e.target.closest && e.target.closest('g.node');
      if (!g) return;
      e.preventDefault();
      const name = g.dataset.name;
      if (name) {
        this.setFocus(name);
        if (this.opts.onFocus) this.opts.onFocus(name);
      }
    });
    c.addEventListener('keydown', (e) => {
      if (e.key === '+' || e.key === '=') this.zoomBy(1.25);
      else if (e.key === '-') this.zoomBy(0.8);
      else if (e.key === '0') this.fit();
      else return;
      e.preventDefault();
    });
  }

  zoomBy(f) {
    const r = this.canvas.getBoundingClientRect();
    this.apply(zoomAt(this.view, f, r.width / 2, r.height / 2));
  }

  fit() {
    const r = this.canvas.getBoundingClientRect();
    this.apply(fitView(this.size.w, this.size.h, r.width, r.height));
  }

  apply(v) {
    this.view = v;
    this.stage.style.transform = `translate(${v.x}px, ${v.y}px) scale(${v.k})`;
    this.canvas.dataset.zoom = v.k.toFixed(3);
  }

  setState(s, text = '') {
    this.canvas.dataset.state = s;
    this.status.textContent = text;
  }

  // Marks the box of name (or none).
  setFocus(name) {
    this.focus = name || '';
    for (const g of this.stage.querySelectorAll('g.node')) g.classList.toggle('cg-focus', g.dataset.name === this.focus);
  }

  // Shows the graph at url (report=svg); fetched only when it changed. visible: the
  // pane is shown (a hidden pane is fetched once it is).
  async show(url, visible) {
    this.url = url;
    if (!visible || this.loaded === url) return;
    if (this.ctrl) this.ctrl.abort();
    const ctrl = new AbortController();
    this.ctrl = ctrl;
    this.loaded = url;
    this.setState('loading', 'Laying out…');
    try {
      const r = await fetch(url, { signal: ctrl.signal, headers: apiHeaders('image/svg+xml') });
      const text = await r.text();
      if (ctrl.signal.aborted) return;
      const type = r.headers.get('content-type') || '';
      if (!r.ok || !type.startsWith('image/svg+xml')) {
        let m = text;
        try {
          const j = JSON.parse(text);
          m = j.error || (j.data === null ? 'No profile.' : text);
        } catch (e) { /* not JSON */ }
        this.stage.textContent = '';
        this.size = { w: 0, h: 0 };
        this.loaded = '';
        this.setState(r.ok ? 'empty' : 'error', m);
        return;
      }
      this.render(text);
    } catch (e) {
      if (e.name === 'AbortError' || ctrl.signal.aborted) return;
      this.loaded = '';
      this.setState('error', e && e.message ? e.message : String(e));
    }
  }

  render(text) {
    const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
    const svg = doc.documentElement;
    if (!svg || svg.nodeName !== 'svg') {
      this.setState('error', 'The server\'s SVG could not be read.');
      return;
    }
    // Graphviz's links would navigate: keep their tooltips as titles, drop the links
    for (const a of svg.querySelectorAll('a')) {
      const t = a.getAttributeNS('http://www.w3.org/1999/xlink', 'title') || a.getAttribute('title');
      const g = doc.createElementNS('http://www.w3.org/2000/svg', 'g');
      while (a.firstChild) g.append(a.firstChild);
      if (t) {
        const tt = doc.createElementNS('http://www.w3.org/2000/svg', 'title');
        tt.textContent = t;
        g.prepend(tt);
        g.dataset.tooltip = t;
      }
      a.replaceWith(g);
    }
    let n = 0;
    for (const g of svg.querySelectorAll('g.node')) {
      // function boxes are N1, N2, …; the legend is a box too, but no function
      const id = g.querySelector('title');
      if (!id || !/^N\d+$/.test(id.textContent)) {
        g.classList.replace('node', 'cg-legend');
        continue;
      }
      const tip = g.querySelector('[data-tooltip]');
      if (tip) g.dataset.name = nodeName(tip.dataset.tooltip);
      n++;
    }
    const w = parseFloat(svg.getAttribute('width')) * 4 / 3 || 0; // pt -> px
    const hh = parseFloat(svg.getAttribute('height')) * 4 / 3 || 0;
    svg.setAttribute('width', String(w));
    svg.setAttribute('height', String(hh));
    svg.classList.add('cg-svg');
    this.stage.textContent = '';
    this.stage.append(document.importNode(svg, true));
    this.size = { w, h: hh };
    this.setFocus(this.focus);
    this.canvas.dataset.nodes = String(n);
    this.setState(n ? 'ready' : 'empty', n ? `${n} function${n === 1 ? '' : 's'}` : 'No functions to show.');
    this.fit();
  }

  destroy() {
    if (this.ctrl) this.ctrl.abort();
    this.root.remove();
  }
}
