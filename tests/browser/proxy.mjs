// proxy.mjs: a small reverse proxy for the browser test of profd under a path, in the
// way an nginx `location /profd/ { proxy_pass http://upstream; }` serves it: requests
// whose path is /profd or lies under /profd/ go to profd with the path unchanged
// (nothing is stripped) and with X-Forwarded-* headers; every other request is
// answered 404 by the proxy itself and written, one a line, to OUTSIDE_LOG, so the
// test can tell that the UI asked for nothing outside its prefix.
//
//   node proxy.mjs PORT_FILE UPSTREAM_FILE OUTSIDE_LOG PREFIX LIMIT_SECONDS
//
// It listens on a free port of 127.0.0.1 and writes the port to PORT_FILE; profd's
// address (host:port) is read from UPSTREAM_FILE at the first request, so the proxy
// can start first and profd be given the proxy's URL as its --web.external-url. It
// exits by itself after LIMIT_SECONDS.
import http from 'node:http';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';

const [portFile, upstreamFile, outsideLog, prefix, limit] = process.argv.slice(2);
if (!limit) {
  console.error('usage: node proxy.mjs PORT_FILE UPSTREAM_FILE OUTSIDE_LOG PREFIX LIMIT_SECONDS');
  process.exit(2);
}
writeFileSync(outsideLog, '');
let upstream = null;

const server = http.createServer((req, res) => {
  const path = req.url.split('?')[0];
  if (path !== prefix && !path.startsWith(prefix + '/')) {
    appendFileSync(outsideLog, req.url + '\n');
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('outside the proxied path ' + prefix + '/\n');
    return;
  }
  if (!upstream) {
    try {
      upstream = readFileSync(upstreamFile, 'utf8').trim() || null;
    } catch (e) {
      upstream = null;
    }
    if (!upstream) {
      res.writeHead(502, { 'Content-Type': 'text/plain' });
      res.end('no upstream yet\n');
      return;
    }
  }
  const colon = upstream.lastIndexOf(':');
  const headers = {
    ...req.headers,
    'x-forwarded-for': req.socket.remoteAddress,
    'x-forwarded-proto': 'http',
    'x-forwarded-host': req.headers.host || '',
  };
  const up = http.request({
    host: upstream.slice(0, colon), port: Number(upstream.slice(colon + 1)),
    method: req.method, path: req.url, headers,
  }, (ur) => {
    res.writeHead(ur.statusCode, ur.headers);
    ur.pipe(res);
  });
  up.on('error', (e) => {
    if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'text/plain' });
    res.end('upstream: ' + e.message + '\n');
  });
  req.pipe(up);
});
server.listen(0, '127.0.0.1', () => writeFileSync(portFile, String(server.address().port)));
setTimeout(() => process.exit(0), Number(limit) * 1000).unref();
process.on('SIGTERM', () => process.exit(0));
