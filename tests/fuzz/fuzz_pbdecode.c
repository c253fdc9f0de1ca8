/* fuzz_pbdecode.c: differential libFuzzer target of the hand-written protobuf
 * decoder (pkg/pprof/pbdecode.c) against protobuf-c, on raw (not gzipped) bytes:
 *  - whenever the fast path accepts an input, protobuf-c accepts it too and the two
 *    message trees pack to the same bytes;
 *  - whenever protobuf-c accepts an input that packs back to the same bytes and
 *    has no unknown field (a canonical encoding), the fast path accepts it too;
 *  - pd_pprof_decode with and without the fast path gives the same result code,
 *    the same message on failure, and equal profiles on success.
 * Any difference aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"

/* Enough for any input the fuzzer makes (its default -max_len is 4096), so that
 * the two unpackers never part ways on the memory limit. */
#define PD_FUZZ_ARENA ((size_t)256 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void pd_fuzz_bug(const char *what)
{
	fprintf(stderr, "fuzz_pbdecode: BUG: %s\n", what);
	abort();
}

static uint8_t *pd_fuzz_pack(const pb_profile *m, size_t *len)
{
	*len = perftools__profiles__profile__get_packed_size(m);
	uint8_t *b = malloc(*len ? *len : 1);
	if (!b || perftools__profiles__profile__pack(m, b) != *len)
		pd_fuzz_bug("pack");
	return b;
}

/* Whether any message of the tree kept an unknown field. */
static int pd_fuzz_unknown(const pb_profile *pb)
{
	size_t n = pb->base.n_unknown_fields;
	if (pb->period_type)
		n += pb->period_type->base.n_unknown_fields;
	for (size_t i = 0; i < pb->n_sample_type; i++)
		n += pb->sample_type[i]->base.n_unknown_fields;
	for (size_t i = 0; i < pb->n_sample; i++) {
		n += pb->sample[i]->base.n_unknown_fields;
		for (size_t k = 0; k < pb->sample[i]->n_label; k++)
			n += pb->sample[i]->label[k]->base.n_unknown_fields;
	}
	for (size_t i = 0; i < pb->n_mapping; i++)
		n += pb->mapping[i]->base.n_unknown_fields;
	for (size_t i = 0; i < pb->n_location; i++) {
		n += pb->location[i]->base.n_unknown_fields;
		for (size_t k = 0; k < pb->location[i]->n_line; k++)
			n += pb->location[i]->line[k]->base.n_unknown_fields;
	}
	for (size_t i = 0; i < pb->n_function; i++)
		n += pb->function[i]->base.n_unknown_fields;
	return n != 0;
}

static void pd_fuzz_unpackers(const uint8_t *data, size_t size)
{
	struct pd_arena *fa = pd_arena_create(PD_FUZZ_ARENA), *pa = pd_arena_create(PD_FUZZ_ARENA);
	if (!fa || !pa)
		pd_fuzz_bug("arena");
	ProtobufCAllocator alloc;
	pd_pprof_arena_allocator(&alloc, pa);
	pb_profile *slow = perftools__profiles__profile__unpack(&alloc, size, data);
	pb_profile *fast = pd_pprof_pb_decode(fa, data, size);
	if (fast && !slow)
		pd_fuzz_bug("the fast path accepts what protobuf-c refuses");
	if (slow) {
		size_t sl, fl;
		uint8_t *sb = pd_fuzz_pack(slow, &sl);
		if (fast) {
			uint8_t *fb = pd_fuzz_pack(fast, &fl);
			if (fl != sl || memcmp(fb, sb, sl) != 0)
				pd_fuzz_bug("the two trees pack to different bytes");
			if (fast->base.descriptor != slow->base.descriptor)
				pd_fuzz_bug("different descriptors");
			free(fb);
		} else if (sl == size && memcmp(sb, data, size) == 0 && !pd_fuzz_unknown(slow)) {
			pd_fuzz_bug("a canonical encoding is left to protobuf-c");
		}
		free(sb);
	}
	pd_arena_destroy(fa);
	pd_arena_destroy(pa);
}

static void pd_fuzz_decoders(const uint8_t *data, size_t size)
{
	struct pd_pprof_decode_opts fast_opts = {.max_decompressed = (size_t)4 << 20},
	                            slow_opts = {.max_decompressed = (size_t)4 << 20,
	                                         .protobuf_c_only = 1};
	struct pd_pprof_profile *a = NULL, *b = NULL;
	struct pd_err ea = {0}, eb = {0};
	int ra = pd_pprof_decode(&a, data, size, &fast_opts, &ea);
	int rb = pd_pprof_decode(&b, data, size, &slow_opts, &eb);
	if (ra != rb)
		pd_fuzz_bug("pd_pprof_decode's result depends on the fast path");
	if (ra && strcmp(ea.msg, eb.msg) != 0)
		pd_fuzz_bug("pd_pprof_decode's message depends on the fast path");
	char why[256];
	if (!ra && pd_pprof_compare(a, b, why, sizeof(why))) {
		fprintf(stderr, "fuzz_pbdecode: %s\n", why);
		pd_fuzz_bug("the profiles differ");
	}
	pd_pprof_destroy(a);
	pd_pprof_destroy(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* gzip goes through the same unpackers after inflating: the raw bytes are
	 * what matter here */
	if (pd_gzip_is(data, size))
		return 0;
	pd_fuzz_unpackers(data, size);
	pd_fuzz_decoders(data, size);
	return 0;
}
