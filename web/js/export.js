// The profile view's export menu: the profile as pprof (.pb.gz), folded stacks (as
// flamegraph.pl reads them) and speedscope JSON from the API's file reports, the
// flame graph as shown as a standalone SVG file (drawn here from FlameView's layout:
// the same frames, colours, labels and zoom), and a copy of the view's link. The SVG
// writer (flameSvg) is pure, so node tests run it without a DOM.

import { apiUrl } from './api.js';
import { ROW_H, FONT, SEARCH_COLORS, frameColor, diffColor, fitLabel } from './flame.js';

// Text for XML: frame names come from the profile, which anyone may push. Characters
// XML 1.0 does not allow (control characters but tab and newline) become U+FFFD.
export function xmlEscape(s) {
  return String(s)
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '\ufffd')
    .replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]);
}

function num(v) {
  return String(Math.round(v * 100) / 100);
}

// A flame layout (layoutFlame's {rects, depths}) as an SVG document, drawn as FlameView
// draws it on its canvas. opts: width (CSS px), dark, diff, match(name) (the search, or
// null), charW (the label font's character width), title. Every frame is a
// <g class="frame"> with its full name as <title>, one <rect> and a <text> label when
// one fits.
export function flameSvg(layout, opts = {}) {
  const rects = (layout && layout.rects) || [];
  const width = Math.max(1, Math.round(opts.width || 0));
  const depths = rects.reduce((d, r) => Math.max(d, r.depth + 1), 0);
  const height = Math.max(ROW_H, depths * ROW_H);
  const charW = opts.charW || 7;
  const dark = !!opts.dark;
  const hl = dark ? SEARCH_COLORS.dark : SEARCH_COLORS.light;
  const out = [];
  out.push('<?xml version="1.0" encoding="UTF-8"?>\n');
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
    `viewBox="0 0 ${width} ${height}" data-theme="${dark ? 'dark' : 'light'}">\n`);
  out.push(`<title>${xmlEscape(opts.title || 'Flame graph')}</title>\n`);
  out.push(`<style>text { font: ${FONT.replace(/"/g, "'")}; dominant-baseline: central; }</style>\n`);
  out.push(`<rect class="background" width="100%" height="100%" fill="${dark ? '#17191d' : '#ffffff'}"/>\n`);
  for (const r of rects) {
    const n = r.node || {};
    const matched = !!opts.match && r.depth > 0 && opts.match(r.name);
    let c;
    if (matched) c = hl;
    else if (opts.diff) c = diffColor(n.baseTotal, n.total, dark);
    else c = frameColor(r.name, dark);
    const alpha = r.dim ? 0.45 : opts.match && !matched ? 0.5 : 1;
    const y = r.depth * ROW_H;
    const w = Math.max(r.w - 1, 0.5);
    const name = xmlEscape(r.name);
    out.push(`<g class="frame"${alpha < 1 ? ` opacity="${alpha}"` : ''}><title>${name}</title>` +
      `<rect x="${num(r.x)}" y="${y}" width="${num(w)}" height="${ROW_H - 1}" fill="${c.fill}"/>`);
    if (r.w > charW * 2 + 6) {
      const label = fitLabel(r.name, Math.floor((r.w - 6) / charW));
      if (label) out.push(`<text x="${num(r.x + 3)}" y="${y + ROW_H / 2}" fill="${c.text}">${xmlEscape(label)}</text>`);
    }
    out.push('</g>\n');
  }
  out.push('</svg>\n');
  return out.join('');
}

// A file name from words of the profile: 'heap', 'inuse_space' → 'heap-inuse_space.svg'.
export function svgFileName(...parts) {
  const base = parts.filter(Boolean).join('-').replace(/[^A-Za-z0-9._-]+/g, '_') || 'flamegraph';
  return base + '.svg';
}

function h(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v === undefined || v === null) continue;
    e.setAttribute(k, v === true ? '' : v);
  }
  e.append(...kids);
  return e;
}

function saveBlob(text, type, name) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

// The menu. opts: diff (folded stacks and speedscope cannot show a diff's changes:
// their entries are disabled, saying why), flame (the FlameView whose graph the SVG
// is), name() (words for the SVG's file name), copyLink(button) (the app's: the view's
// URL to the clipboard; without it, no entry). update(params) points the API entries
// at the view's /api/v1/query parameters (with sample_index).
export class ExportMenu {
  constructor(opts = {}) {
    this.opts = opts;
    this.el = h('details', { id: 'export-menu', class: 'pf-export' });
    const summary = h('summary', { class: 'pf-button', title: 'Download the profile or the flame graph, or copy a link' }, 'Export');
    const list = h('div', { class: 'pf-export-list', role: 'menu' });
    const item = (id, label, title, extra = {}) =>
      h('a', { id, role: 'menuitem', class: 'pf-export-item', download: '', title, ...extra }, label);
    this.pprof = item('export-pprof', 'pprof (.pb.gz)', 'The profile, for go tool pprof');
    this.folded = item('export-folded', 'Folded stacks (.txt)', 'One line per stack, as flamegraph.pl reads them');
    this.speedscope = item('export-speedscope', 'speedscope (.json)', 'For speedscope.app: every sample type, this one shown first');
    this.svg = h('button', { type: 'button', id: 'export-svg', role: 'menuitem', class: 'pf-export-item',
      title: 'The flame graph as shown (zoom, search, theme), as an SVG file' }, 'Flame graph (.svg)');
    list.append(this.pprof, this.folded, this.speedscope, this.svg);
    if (opts.diff) {
      for (const a of [this.folded, this.speedscope]) {
        a.setAttribute('aria-disabled', 'true');
        a.title = 'A diff holds changes, not amounts: use pprof or the SVG';
      }
    }
    if (opts.copyLink) {
      this.copy = h('button', { type: 'button', id: 'profile-copy-link', role: 'menuitem', class: 'pf-export-item',
        title: 'Copy a link to this view (under --web.external-url)' }, 'Copy link');
      this.copy.addEventListener('click', () => opts.copyLink(this.copy));
      list.append(this.copy);
    }
    this.svg.addEventListener('click', () => this.saveSvg());
    this.el.append(summary, list);
    this._onDoc = (e) => {
      if (this.el.open && !this.el.contains(e.target)) this.el.open = false;
    };
    this._onKey = (e) => {
      if (e.key === 'Escape' && this.el.open) {
        this.el.open = false;
        summary.focus();
      }
    };
    document.addEventListener('click', this._onDoc);
    this.el.addEventListener('keydown', this._onKey);
  }

  update(params) {
    this.pprof.href = apiUrl('query', { ...params, report: 'proto', sample_index: undefined });
    if (this.opts.diff) {
      this.folded.removeAttribute('href');
      this.speedscope.removeAttribute('href');
    } else {
      this.folded.href = apiUrl('query', { ...params, report: 'folded' });
      this.speedscope.href = apiUrl('query', { ...params, report: 'speedscope' });
    }
  }

  // The SVG of what the flame graph shows now.
  svgText() {
    const f = this.opts.flame;
    return flameSvg(f.layout, {
      width: f.cssW, dark: f.dark, diff: f.diff, match: f.match ? (n) => f._isMatch(n) : null,
      charW: f._charW, title: (this.opts.name ? this.opts.name() : []).filter(Boolean).join(' '),
    });
  }

  saveSvg() {
    const f = this.opts.flame;
    if (!f || !f.layout || !f.layout.rects.length) return;
    saveBlob(this.svgText(), 'image/svg+xml', svgFileName(...(this.opts.name ? this.opts.name() : [])));
    this.el.open = false;
  }

  destroy() {
    document.removeEventListener('click', this._onDoc);
  }
}
