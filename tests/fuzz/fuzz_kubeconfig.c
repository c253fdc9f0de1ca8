/* fuzz_kubeconfig.c: libFuzzer target for kubeconfig files read by kubernetes_sd
 * (pd_k8s_kubeconfig_parse, pkg/discovery/k8s_client.c): YAML of any shape, with
 * base64 certificate data. A file is rejected with a message and leaves nothing
 * behind, or gives a client with an http(s) server URL and, for each TLS item,
 * a file or decoded data but never both. Anything else is a bug, and aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_watch_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bug(const char *what, const struct pd_err *err)
{
	fprintf(stderr, "fuzz_kubeconfig: BUG: %s (%s)\n", what, err ? err->msg : "");
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_k8s_client c;
	struct pd_err err = {0};
	if (size > 100000)
		return 0;
	int rc = pd_k8s_kubeconfig_parse(&c, (const char *)data, size, "/etc/kube/config", &err);
	if (rc) {
		if (!err.msg[0] || c.server || c.token || c.ca.data || c.cert.data || c.key.data)
			bug("a rejected file gave no message or left something behind", &err);
		return 0;
	}
	if (!c.server || (strncmp(c.server, "https://", 8) && strncmp(c.server, "http://", 7)))
		bug("a client without an http(s) server", NULL);
	if (c.server[strlen(c.server) - 1] == '/')
		bug("the server URL kept its trailing slash", NULL);
	if ((c.ca_file && c.ca.data) || (c.cert_file && c.cert.data) || (c.key_file && c.key.data))
		bug("a TLS item both as a file and as data", NULL);
	if ((c.cert_file || c.cert.data) != (c.key_file || c.key.data))
		bug("a certificate without a key or a key without a certificate", NULL);
	if ((c.token || c.token_file) && !c.auth_type)
		bug("a token without an authorization type", NULL);
	pd_k8s_client_fini(&c);
	return 0;
}
