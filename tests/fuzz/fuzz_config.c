/* fuzz_config.c: libFuzzer target for the configuration loader (pkg/config): the
 * YAML scrape configuration an operator writes, with its durations, sizes, label
 * sets, relabel rules (regexes compiled) and service discovery sections. Any input
 * may be rejected, with an error message; what is accepted must render (as
 * /api/v1/status/config shows it) to YAML that parses again and renders to the
 * same text, unless the render holds a `$`: external label values are shown
 * expanded from the environment (`$$` as `$`), as Prometheus shows them, so those
 * would be expanded again. A failed round trip is a bug, and aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/config.h"
#include "profd/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bug(const char *what, const struct pd_buf *a, const struct pd_buf *b, const struct pd_err *err)
{
	fprintf(stderr, "fuzz_config: BUG: %s\n--- first render:\n%.*s\n--- second:\n%.*s\n--- error: %s\n", what,
		a ? (int)a->len : 0, a ? (const char *)a->data : "", b ? (int)b->len : 0,
		b ? (const char *)b->data : "", err ? err->msg : "");
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 64 * 1024)
		return 0;
	struct pd_err err = {0};
	struct pd_config *cfg = NULL, *again = NULL;
	if (pd_config_parse((const char *)data, size, "fuzz.yml", &cfg, &err)) {
		if (cfg || !err.msg[0])
			bug("a rejected config without a message, or with a config", NULL, NULL, &err);
		return 0;
	}
	struct pd_buf a, b;
	pd_buf_init(&a, 0);
	pd_buf_init(&b, 0);
	if (pd_config_render(cfg, &a) == 0 && !memchr(a.data, '$', a.len)) {
		if (pd_config_parse((const char *)a.data, a.len, "rendered.yml", &again, &err))
			bug("the rendered config does not parse", &a, NULL, &err);
		if (pd_config_render(again, &b))
			bug("the reparsed config does not render", &a, NULL, NULL);
		if (a.len != b.len || memcmp(a.data, b.data, a.len))
			bug("rendering the reparsed config differs", &a, &b, NULL);
	}
	pd_buf_fini(&a);
	pd_buf_fini(&b);
	pd_config_destroy(again);
	pd_config_destroy(cfg);
	return 0;
}
