// profile.js: runs a small workload (classes, closures, JSON, regular
// expressions) under @datadog/pprof's wall-time and heap profilers and writes
// both profiles as gzip pprof files:
//
//   NODE_PATH=DIR/node_modules node profile.js OUTDIR
'use strict';
const fs = require('fs');
const path = require('path');
const { time, heap, encode } = require('@datadog/pprof');

class Matrix {
  constructor(n) {
    this.n = n;
    this.v = new Float64Array(n * n).map((_, i) => (i % 13) / 7);
  }
  multiply(o) {
    const r = new Matrix(this.n);
    for (let i = 0; i < this.n; i++)
      for (let j = 0; j < this.n; j++) {
        let s = 0;
        for (let k = 0; k < this.n; k++) s += this.v[i * this.n + k] * o.v[k * this.n + j];
        r.v[i * this.n + j] = s;
      }
    return r;
  }
}

function jsonRoundTrip(n) {
  const o = [];
  for (let i = 0; i < n; i++) o.push({ id: i, name: `item-${i}`, tags: ['a', 'b', String(i % 5)] });
  return JSON.parse(JSON.stringify(o)).length;
}

const words = /([a-z]+)-(\d+)/g;
function regexScan(n) {
  let s = '';
  for (let i = 0; i < n; i++) s += `word-${i} `;
  let c = 0;
  for (const _ of s.matchAll(words)) c++;
  return c;
}

const kept = [];
async function main() {
  const out = process.argv[2];
  heap.start(16 * 1024, 64);
  time.start({ intervalMicros: 2000, durationMillis: 60000 });
  const end = Date.now() + 1500;
  let acc = 0;
  while (Date.now() < end) {
    const m = new Matrix(40);
    acc += m.multiply(m).v[3];
    acc += jsonRoundTrip(300);
    acc += regexScan(500);
    if (kept.length < 400) kept.push(new Matrix(8), { big: 'x'.repeat(2048) });
    await new Promise((r) => setImmediate(r));
  }
  const wall = time.stop();
  const h = heap.profile();
  fs.writeFileSync(path.join(out, 'wall.pb.gz'), await encode(wall));
  fs.writeFileSync(path.join(out, 'heap.pb.gz'), await encode(h));
  return acc;
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
