/* fuzz_querier_request.c: libFuzzer target for the request bodies of the query
 * API (querier.v1.QuerierService, pkg/api/querier.c): the input's first byte
 * picks the method's request message (low 3 bits) and the encoding (0x80: JSON),
 * the rest is the body, read as the server reads it (pd_ingest_pb_read: the
 * pbwire walk before protobuf-c's unpack, or pbjson.c). Any body may be refused;
 * an accepted one must be written as JSON (pbjson_write.c) within a bound of its
 * size, that JSON must be read back, and written again it must be the same text.
 * A broken property aborts. */
#include <protobuf-c/protobuf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/ingest.h"
#include "querier.pb-c.h"
#include "types.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bug(const char *what, const struct pd_buf *a, const struct pd_buf *b)
{
	fprintf(stderr, "fuzz_querier_request: BUG: %s\n", what);
	if (a)
		fprintf(stderr, "  first:  %.*s\n", (int)(a->len > 2000 ? 2000 : a->len), a->data);
	if (b)
		fprintf(stderr, "  second: %.*s\n", (int)(b->len > 2000 ? 2000 : b->len), b->data);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const ProtobufCMessageDescriptor *const reqs[8] = {
	    &querier__v1__profile_types_request__descriptor,
	    &types__v1__label_names_request__descriptor,
	    &types__v1__label_values_request__descriptor,
	    &querier__v1__series_request__descriptor,
	    &querier__v1__select_merge_stacktraces_request__descriptor,
	    &querier__v1__select_merge_profile_request__descriptor,
	    &querier__v1__select_series_request__descriptor,
	    &querier__v1__diff_request__descriptor,
	};
	if (size < 1 || size > 1 << 16)
		return 0;
	const ProtobufCMessageDescriptor *d = reqs[data[0] & 7];
	int json = (data[0] & 0x80) != 0;
	struct pd_ingest_limits lim = {.max_json_depth = 32, .max_decoded_memory = 8u << 20};
	struct pd_err err = {0};
	ProtobufCMessage *m = NULL, *m2 = NULL;
	/* the body in a buffer of its own size, so that reads past it are caught */
	uint8_t *body = malloc(size - 1 ? size - 1 : 1);
	if (!body)
		return 0;
	memcpy(body, data + 1, size - 1);
	if (pd_ingest_pb_read(d, body, size - 1, json, &lim, &m, &err)) {
		if (!err.msg[0])
			bug("a refusal without a message", NULL, NULL);
		free(body);
		return 0;
	}
	struct pd_buf a, b;
	/* every byte of the body becomes at most 6 ("\uFFFD" for 1), numbers ~25 */
	size_t max = 64 * size + 4096;
	pd_buf_init(&a, max);
	pd_buf_init(&b, max);
	if (pd_ingest_pb_json(m, &a))
		bug("an accepted request could not be written as JSON", &a, NULL);
	if (pd_ingest_pb_read(d, a.data, a.len, 1, &lim, &m2, &err)) {
		fprintf(stderr, "  %s\n", err.msg);
		bug("the JSON written is not read back", &a, NULL);
	}
	if (pd_ingest_pb_json(m2, &b))
		bug("the JSON read back could not be written", &a, NULL);
	if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
		bug("the JSON written twice differs", &a, &b);
	protobuf_c_message_free_unpacked(m, NULL);
	protobuf_c_message_free_unpacked(m2, NULL);
	pd_buf_fini(&a);
	pd_buf_fini(&b);
	free(body);
	return 0;
}
