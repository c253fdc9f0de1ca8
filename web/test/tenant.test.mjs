// Unit tests of the UI's tenant (api.js): the page's tenant parameter, remembered for
// the tab, and the X-Scope-OrgID header every API call carries.
import test from 'node:test';
import assert from 'node:assert/strict';
import { tenantOf, apiHeaders } from '../js/api.js';

function memStore() {
  const m = new Map();
  return { getItem: (k) => (m.has(k) ? m.get(k) : null), setItem: (k, v) => m.set(k, String(v)) };
}

test('tenantOf reads ?tenant= and remembers it for the pages without it', () => {
  const s = memStore();
  assert.equal(tenantOf('', s), null);
  assert.equal(tenantOf('?query=heap&tenant=team-a', s), 'team-a');
  assert.equal(tenantOf('?query=heap', s), 'team-a');
  assert.equal(tenantOf('?tenant=team-b', s), 'team-b');
  assert.equal(tenantOf('', s), 'team-b');
  assert.equal(tenantOf('?tenant=x', null), 'x');
  const refusing = { getItem: () => { throw new Error('denied'); }, setItem: () => { throw new Error('denied'); } };
  assert.equal(tenantOf('?tenant=y', refusing), 'y');
  assert.equal(tenantOf('', refusing), null);
});

test('apiHeaders carries X-Scope-OrgID only with a tenant', () => {
  assert.deepEqual(apiHeaders('application/json', null), { Accept: 'application/json' });
  assert.deepEqual(apiHeaders('image/svg+xml', 'team-a'),
    { Accept: 'image/svg+xml', 'X-Scope-OrgID': 'team-a' });
  // node has neither location nor sessionStorage: no tenant
  assert.deepEqual(apiHeaders('application/json'), { Accept: 'application/json' });
});
