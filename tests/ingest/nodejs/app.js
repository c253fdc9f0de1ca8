// app.js: a Node.js program that burns CPU in one named function and keeps some
// memory, profiled by @pyroscope/nodejs, which pushes its wall and heap profiles to
// the server given as the first argument (profd's /ingest), every 2 s.
//   node app.js http://127.0.0.1:PORT SECONDS
'use strict';
const Pyroscope = require('@pyroscope/nodejs');

const server = process.argv[2];
const seconds = Number(process.argv[3] || 30);

Pyroscope.init({
  serverAddress: server,
  appName: 'checkout-node',
  tags: { region: 'eu-west', 'deployment.environment': 'test' },
  flushIntervalMs: 2000,
  wall: { samplingDurationMs: 2000, samplingIntervalMicros: 1000 },
  heap: { samplingIntervalBytes: 16 * 1024 },
});
Pyroscope.start();

const kept = [];
// the hot function the test looks for in report=top
function profdHotLoop(n) {
  let x = 0;
  for (let i = 0; i < n; i++) x += Math.sqrt(i) * Math.sin(i);
  kept.push(new Array(256).fill(x));
  if (kept.length > 2000) kept.splice(0, 1000);
  return x;
}

const end = Date.now() + seconds * 1000;
function tick() {
  if (Date.now() > end) {
    Pyroscope.stop().then(() => process.exit(0));
    return;
  }
  profdHotLoop(2e5);
  setImmediate(tick);
}
tick();
