/* fuzz_k8s_watch.c: libFuzzer target for kubernetes_sd's watch streams: bytes an API
 * server (or anything in between) sends as a watch body, split into events by
 * pd_k8s_stream_feed and parsed by pd_k8s_event_parse (pkg/discovery/k8s_client.c).
 * The first byte sets how the body is cut into pieces (as the network would cut
 * it); every cut must give the same events as the body fed whole, no line may
 * exceed the limit, and a parsed event must point into its line. Anything else is
 * a bug, and aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_watch_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_EVENT 4096

struct run {
	uint64_t hash; /* over every event's bytes and outcome */
	size_t n;
};

static void bug(const char *what)
{
	fprintf(stderr, "fuzz_k8s_watch: BUG: %s\n", what);
	abort();
}

static int on_line(void *ctx, const char *line, size_t len, struct pd_err *err)
{
	struct run *r = ctx;
	struct pd_arena *a = pd_arena_create(1u << 24);
	struct pd_k8s_event ev;
	(void)err;
	if (!a)
		return 0;
	if (len > MAX_EVENT || len == 0)
		bug("a line past the limit, or an empty one, reached the callback");
	int rc = pd_k8s_event_parse(line, len, a, &ev, err);
	if (!rc) {
		if (!ev.object || ev.raw < line || ev.raw + ev.rawlen > line + len || !ev.rawlen ||
		    ev.raw[0] != '{' || ev.raw[ev.rawlen - 1] != '}')
			bug("an event's object is not a JSON object within its line");
		if ((ev.type == PD_K8S_EVENT_ADDED || ev.type == PD_K8S_EVENT_MODIFIED ||
		     ev.type == PD_K8S_EVENT_DELETED) &&
		    (!ev.name || !*ev.name))
			bug("an object event without a name was accepted");
	} else if (!err->msg[0]) {
		bug("a rejected event gave no message");
	}
	r->hash = pd_hash_bytes(line, len, r->hash ^ (uint64_t)(rc ? 1 : 2));
	r->n++;
	pd_arena_destroy(a);
	return 0; /* go on: the provider stops at the first bad event, the splitter need not */
}

static int feed(const uint8_t *body, size_t n, size_t step, struct run *r)
{
	struct pd_k8s_stream s;
	struct pd_err err = {0};
	int rc = 0;
	pd_k8s_stream_init(&s, MAX_EVENT);
	for (size_t off = 0; off < n && !rc; off += step)
		rc = pd_k8s_stream_feed(&s, (const char *)body + off,
		                        n - off < step ? n - off : step, on_line, r, &err);
	if (!rc)
		rc = pd_k8s_stream_end(&s, on_line, r, &err);
	if (s.line.len > MAX_EVENT + 1)
		bug("the splitter kept more than one event's worth");
	pd_k8s_stream_fini(&s);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run whole = {0}, cut = {0};
	if (size < 1 || size > 200000)
		return 0;
	size_t step = (size_t)data[0] % 17 + 1;
	int rc1 = feed(data + 1, size - 1, size, &whole);
	int rc2 = feed(data + 1, size - 1, step, &cut);
	if (rc1 != rc2 || (!rc1 && (whole.n != cut.n || whole.hash != cut.hash)))
		bug("cutting the body changed its events");
	return 0;
}
