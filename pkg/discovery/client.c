/* client.c: copying, freeing and fingerprinting HTTP client settings, which the
 * scrape engine and loops keep their own copies of. */
#include <stdlib.h>
#include <string.h>

#include "profd/discovery.h"

static char *sdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

void pd_http_client_config_copy(struct pd_http_client_config *d, const struct pd_http_client_config *c)
{
	d->basic_auth_username = sdup(c->basic_auth_username);
	d->basic_auth_password = sdup(c->basic_auth_password);
	d->basic_auth_password_file = sdup(c->basic_auth_password_file);
	d->authorization_type = sdup(c->authorization_type);
	d->authorization_credentials = sdup(c->authorization_credentials);
	d->authorization_credentials_file = sdup(c->authorization_credentials_file);
	d->tls_ca_file = sdup(c->tls_ca_file);
	d->tls_cert_file = sdup(c->tls_cert_file);
	d->tls_key_file = sdup(c->tls_key_file);
	d->tls_server_name = sdup(c->tls_server_name);
	d->tls_insecure_skip_verify = c->tls_insecure_skip_verify;
	d->proxy_url = sdup(c->proxy_url);
	d->follow_redirects = c->follow_redirects;
}

void pd_http_client_config_free(struct pd_http_client_config *c)
{
	free((char *)c->basic_auth_username);
	free((char *)c->basic_auth_password);
	free((char *)c->basic_auth_password_file);
	free((char *)c->authorization_type);
	free((char *)c->authorization_credentials);
	free((char *)c->authorization_credentials_file);
	free((char *)c->tls_ca_file);
	free((char *)c->tls_cert_file);
	free((char *)c->tls_key_file);
	free((char *)c->tls_server_name);
	free((char *)c->proxy_url);
	memset(c, 0, sizeof(*c));
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	return s ? pd_hash_bytes(s, strlen(s), h) : pd_hash_u64(h, 0x5a5a);
}

uint64_t pd_http_client_config_hash(const struct pd_http_client_config *c)
{
	uint64_t h = 1;
	if (!c)
		return h;
	h = hash_str(h, c->basic_auth_username);
	h = hash_str(h, c->basic_auth_password);
	h = hash_str(h, c->basic_auth_password_file);
	h = hash_str(h, c->authorization_type);
	h = hash_str(h, c->authorization_credentials);
	h = hash_str(h, c->authorization_credentials_file);
	h = hash_str(h, c->tls_ca_file);
	h = hash_str(h, c->tls_cert_file);
	h = hash_str(h, c->tls_key_file);
	h = hash_str(h, c->tls_server_name);
	h = hash_str(h, c->proxy_url);
	return pd_hash_u64(h, (uint64_t)c->tls_insecure_skip_verify * 2 + (uint64_t)c->follow_redirects);
}
