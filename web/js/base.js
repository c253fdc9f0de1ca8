// Where the UI lives. profd serves it under --web.route-prefix and writes that prefix
// into the page's <base href> ("/profd/"): links, assets and API calls are relative to
// it, and the helpers here turn a page of the UI ('/', '/targets', '/status') into a
// path under it and back. --web.external-url, written into a meta tag, is where the
// absolute links the UI hands out (copy link) point. The pure helpers take the base as
// a parameter, so they run in node too.

// The path of a document's base URL, with a trailing slash: '/profd/' or '/'.
export function basePathOf(doc) {
  try {
    const p = new URL(doc.baseURI).pathname;
    return p.endsWith('/') ? p : p.replace(/[^/]*$/, '');
  } catch (e) {
    return '/';
  }
}

export const BASE = typeof document !== 'undefined' ? basePathOf(document) : '/';

// The page of an absolute path: '/profd/targets' → '/targets'; the base itself, with
// or without its slash, is '/'; null for a path outside the base.
export function innerPath(pathname, base = BASE) {
  const p = pathname || '/';
  if (base === '/') return p;
  if (p === base.slice(0, -1)) return '/';
  return p.startsWith(base) ? '/' + p.slice(base.length) : null;
}

// The absolute path of a page: '/targets' → '/profd/targets', '/' → '/profd/'.
export function pagePath(page, base = BASE) {
  return base + String(page || '/').replace(/^\/+/, '');
}

// The external URL with a trailing slash: the meta tag's value, else the page's origin
// and base (what the browser sees, when profd was given no external URL).
export function externalBase(meta, origin, base = BASE) {
  if (meta) return meta.replace(/\/+$/, '') + '/';
  return (origin || '') + base;
}

// An absolute link to a page and its query string (search with or without its '?'),
// under the external URL.
export function externalLink(page, search, ext) {
  const s = String(search || '').replace(/^\?/, '');
  return ext + String(page || '/').replace(/^\/+/, '') + (s ? '?' + s : '');
}

// externalBase of this page.
export function pageExternalBase() {
  if (typeof document === 'undefined') return BASE;
  const m = document.querySelector('meta[name="profd-external-url"]');
  return externalBase(m ? m.getAttribute('content') : '', location.origin, BASE);
}
