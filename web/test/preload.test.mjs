// index.html's preload list against the module graph: every module app.js reaches,
// through static imports and import(), has a <link rel="modulepreload">, and no link
// names a module that is not reached; the profile view's stylesheet is linked from
// the page itself. So a cold load fetches every module at once, and the list cannot go
// stale when a module or an import is added.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

const WEB = join(dirname(fileURLToPath(import.meta.url)), '..');
const html = readFileSync(join(WEB, 'index.html'), 'utf8');

// The relative modules a module's source imports ('./x.js'), comments left out.
function importsOf(source) {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const out = new Set();
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]+)\1/g;
  for (const m of code.matchAll(re)) out.add(m[2]);
  return [...out];
}

// Every module reached from entry ('js/app.js'), as paths relative to web/.
function moduleGraph(entry) {
  const seen = new Set();
  const todo = [entry];
  while (todo.length) {
    const f = todo.pop();
    if (seen.has(f)) continue;
    seen.add(f);
    const src = readFileSync(join(WEB, f), 'utf8');
    for (const imp of importsOf(src)) todo.push(normalize(join(dirname(f), imp)));
  }
  return seen;
}

const attr = (tag, name) => {
  const m = new RegExp(`\\b${name}\\s*=\\s*"([^"]*)"`).exec(tag);
  return m ? m[1] : null;
};
const links = [...html.matchAll(/<link\b[^>]*>/g)].map((m) => m[0]);

test('importsOf reads static, multi-line and dynamic imports', () => {
  const src = `import { a } from './a.js';\nimport {\n  b,\n} from "./b.js";\n// import { c } from './c.js';\n` +
    `const m = await import('./d.js');\nimport './e.js';\nconst s = 'from ./f.js';`;
  assert.deepEqual(importsOf(src).sort(), ['./a.js', './b.js', './d.js', './e.js']);
});

test('index.html preloads exactly the modules app.js reaches', () => {
  const script = /<script type="module" src="([^"]+)"><\/script>/.exec(html);
  assert.ok(script, 'index.html loads one module script');
  const graph = moduleGraph(script[1]);
  assert.ok(graph.has('js/profile.js'), 'the profile view (loaded by import()) is in the graph');
  const preloaded = links.filter((l) => attr(l, 'rel') === 'modulepreload').map((l) => attr(l, 'href'));
  assert.equal(new Set(preloaded).size, preloaded.length, 'a module preloaded twice');
  assert.deepEqual([...preloaded].sort(), [...graph].sort(),
    'the <link rel="modulepreload"> list of index.html differs from the modules app.js imports');
  // every module in js/ is reached, so none is served without being preloaded
  const files = readdirSync(join(WEB, 'js')).filter((f) => f.endsWith('.js')).map((f) => 'js/' + f);
  assert.deepEqual(files.sort(), [...graph].sort(), 'a module in js/ that app.js does not reach');
  // the links come before the script, so the parser finds them first
  for (const href of preloaded) {
    assert.ok(html.indexOf(`href="${href}"`) < script.index, `${href} is preloaded before the script tag`);
  }
});

test('index.html runs sides.js on its own, as soon as its few imports have come', () => {
  // on /compare it starts the page's requests when it runs (sides.test.mjs): so it is
  // loaded async, ahead of the rest, and imports only modules that import nothing more
  const tag = /<script type="module" async src="js\/sides\.js"><\/script>/.exec(html);
  assert.ok(tag, 'index.html loads js/sides.js as an async module');
  const app = /<script type="module" src="([^"]+)"><\/script>/.exec(html);
  assert.ok(tag.index < app.index, 'before app.js');
  const graph = moduleGraph('js/sides.js');
  assert.deepEqual([...graph].sort(), ['js/api.js', 'js/base.js', 'js/format.js', 'js/sides.js']);
  // its modules are the first preloaded, so that they are asked for first
  const preloaded = links.filter((l) => attr(l, 'rel') === 'modulepreload').map((l) => attr(l, 'href'));
  assert.deepEqual(preloaded.slice(0, graph.size).sort(), [...graph].sort());
});

test('index.html links the profile view\'s stylesheet', () => {
  const sheets = links.filter((l) => attr(l, 'rel') === 'stylesheet').map((l) => attr(l, 'href'));
  for (const f of readdirSync(join(WEB, 'css'))) {
    assert.ok(sheets.includes('css/' + f), `css/${f} is linked from index.html`);
  }
  // and profile.js looks for that link before adding one
  const pjs = readFileSync(join(WEB, 'js/profile.js'), 'utf8');
  assert.match(pjs, /css\/profile\.css/);
});
