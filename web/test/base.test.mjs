// Unit tests of base.js: pages of the UI under a route prefix (<base href>), and the
// absolute links built from --web.external-url.
import test from 'node:test';
import assert from 'node:assert/strict';
import { basePathOf, innerPath, pagePath, externalBase, externalLink, BASE } from '../js/base.js';
import { routeOf } from '../js/app.js';
import { apiUrl } from '../js/api.js';

test('basePathOf reads the document base URL', () => {
  assert.equal(basePathOf({ baseURI: 'http://h:1/profd/' }), '/profd/');
  assert.equal(basePathOf({ baseURI: 'http://h:1/' }), '/');
  assert.equal(basePathOf({ baseURI: 'http://h:1/a/b/index.html' }), '/a/b/');
  assert.equal(basePathOf({ baseURI: 'not a url' }), '/');
  assert.equal(BASE, '/'); // node has no document
});

test('innerPath and pagePath under a prefix', () => {
  assert.equal(innerPath('/profd/', '/profd/'), '/');
  assert.equal(innerPath('/profd', '/profd/'), '/');
  assert.equal(innerPath('/profd/targets', '/profd/'), '/targets');
  assert.equal(innerPath('/targets', '/profd/'), null);
  assert.equal(innerPath('/profdx/targets', '/profd/'), null);
  assert.equal(innerPath('/targets', '/'), '/targets');
  assert.equal(pagePath('/', '/profd/'), '/profd/');
  assert.equal(pagePath('/targets', '/profd/'), '/profd/targets');
  assert.equal(pagePath('/status', '/'), '/status');
});

test('routeOf under a prefix', () => {
  assert.equal(routeOf('/a/b/', '/a/b/'), '/');
  assert.equal(routeOf('/a/b/targets', '/a/b/'), '/targets');
  assert.equal(routeOf('/a/b/status/', '/a/b/'), '/status');
  assert.equal(routeOf('/targets', '/a/b/'), null); // outside the prefix
  assert.equal(routeOf('/a/b/api/v1/labels', '/a/b/'), null);
});

test('apiUrl under a prefix', () => {
  assert.equal(apiUrl('labels', {}, '/profd/'), '/profd/api/v1/labels');
  assert.equal(apiUrl('/series', { 'match[]': ['a', 'b'] }, '/profd/'), '/profd/api/v1/series?match%5B%5D=a&match%5B%5D=b');
  assert.equal(apiUrl('labels'), '/api/v1/labels');
});

test('external links follow --web.external-url, else the page', () => {
  assert.equal(externalBase('http://proxy/profd', 'http://127.0.0.1:9', '/profd/'), 'http://proxy/profd/');
  assert.equal(externalBase('http://proxy/profd///', 'x', '/'), 'http://proxy/profd/');
  // a proxy that strips the path: the external URL has it, the route prefix does not
  assert.equal(externalBase('http://proxy/outer', 'http://127.0.0.1:9', '/'), 'http://proxy/outer/');
  assert.equal(externalBase('', 'http://127.0.0.1:9', '/profd/'), 'http://127.0.0.1:9/profd/');
  assert.equal(externalLink('/', '?query=heap&range=1h', 'http://proxy/profd/'), 'http://proxy/profd/?query=heap&range=1h');
  assert.equal(externalLink('/targets', '', 'http://proxy/profd/'), 'http://proxy/profd/targets');
});
