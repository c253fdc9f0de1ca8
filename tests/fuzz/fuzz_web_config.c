/* fuzz_web_config.c: libFuzzer target for the web configuration file
 * (--web.config.file, exporter-toolkit's format; pkg/config/web.c). Any input may
 * be rejected, with a message naming the file; what is accepted must hold what
 * the checks promise: TLS settings come with a certificate and a key, a client CA
 * with a client auth type, every user with a well-formed bcrypt hash, versions
 * among TLS 1.0-1.3. Passwords are not checked here: a hash may ask for 2^31
 * rounds. Anything else is a bug, and aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/config.h"
#include "profd/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bug(const char *what, const struct pd_err *err)
{
	fprintf(stderr, "fuzz_web_config: BUG: %s (%s)\n", what, err ? err->msg : "");
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 64 * 1024)
		return 0;
	struct pd_err err = {0};
	struct pd_web_config *wc = NULL;
	int rc = pd_web_config_parse((const char *)data, size, "web.yml", "/etc/profd", &wc, &err);
	if (rc) {
		if (wc || (rc == PD_EINVAL && strncmp(err.msg, "web.yml:", 8) != 0))
			bug("a rejected file with a config, or a message without its position", &err);
		return 0;
	}
	if (wc->tls_enabled) {
		if (!*wc->cert && !*wc->cert_file)
			bug("TLS without a certificate", NULL);
		if (!*wc->key && !*wc->key_file)
			bug("TLS without a key", NULL);
		if ((*wc->client_ca || *wc->client_ca_file) && wc->client_auth == PD_WEB_NO_CLIENT_CERT)
			bug("a client CA without a client auth type", NULL);
		if (*wc->cert_file && wc->cert_file[0] != '/')
			bug("a relative cert_file not joined to the directory", NULL);
	}
	if (wc->min_version < PD_WEB_TLS10 || wc->min_version > PD_WEB_TLS13 ||
	    wc->max_version < PD_WEB_TLS10 || wc->max_version > PD_WEB_TLS13)
		bug("a TLS version out of range", NULL);
	for (size_t i = 0; i < wc->nusers; i++)
		if (strlen(wc->users[i].hash) < 59 || wc->users[i].hash[0] != '$')
			bug("a user with a malformed hash", NULL);
	pd_web_config_destroy(wc);
	return 0;
}
