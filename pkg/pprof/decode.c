/* decode.c: bytes -> validated profile. Gzip is detected by its magic and inflated
 * under a size cap and, for input from outside, a ratio cap; the protobuf is
 * unpacked into an arena with a memory cap, by the hand-written decoder of
 * pbdecode.c when it handles the bytes and by protobuf-c otherwise; when protobuf-c
 * refuses them, a wire-format scan says why. The counts of samples and of labels
 * per sample are checked last, when the caller asks. Bytes that are no protobuf
 * profile are tried as the legacy formats of legacy.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "legacy_int.h"
#include "pprof_int.h"

static void *arena_alloc(void *data, size_t size)
{
	return pd_arena_alloc(data, size);
}

static void arena_free(void *data, void *ptr)
{
	(void)data;
	(void)ptr;
}

void pd_pprof_arena_allocator(ProtobufCAllocator *alloc, struct pd_arena *arena)
{
	alloc->alloc = arena_alloc;
	alloc->free = arena_free;
	alloc->allocator_data = arena;
}

int pd_pprof_adopt(struct pd_pprof_profile **out, struct pd_arena *arena, pb_profile *pb,
		   size_t *str_len, struct pd_err *err)
{
	struct pd_pprof_profile *p = calloc(1, sizeof(*p));
	*out = NULL;
	if (!p) {
		free(str_len);
		pd_arena_destroy(arena);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	p->arena = arena;
	p->pb = pb;
	p->str_len = str_len;
	pd_u64map_init(&p->mappings.sparse);
	pd_u64map_init(&p->locations.sparse);
	pd_u64map_init(&p->functions.sparse);
	int rc = pd_pprof_validate(p, err);
	if (rc) {
		pd_pprof_destroy(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* protobuf-c keeps a key of field number 0 written in two or more bytes (80 00) as
 * an unknown field, and would write it back as the key 00, which no decoder takes.
 * pprof skips such a field as it skips any unknown one: drop it, so that what we
 * encode from this profile decodes again. */
static void drop_zero_in(ProtobufCMessage *m)
{
	if (!m)
		return;
	unsigned k = 0;
	for (unsigned i = 0; i < m->n_unknown_fields; i++)
		if (m->unknown_fields[i].tag != 0)
			m->unknown_fields[k++] = m->unknown_fields[i];
	m->n_unknown_fields = k;
}

static void drop_field_zero(pb_profile *pb)
{
	drop_zero_in(&pb->base);
	drop_zero_in((ProtobufCMessage *)pb->period_type);
	for (size_t i = 0; i < pb->n_sample_type; i++)
		drop_zero_in(&pb->sample_type[i]->base);
	for (size_t i = 0; i < pb->n_sample; i++) {
		drop_zero_in(&pb->sample[i]->base);
		for (size_t k = 0; k < pb->sample[i]->n_label; k++)
			drop_zero_in(&pb->sample[i]->label[k]->base);
	}
	for (size_t i = 0; i < pb->n_mapping; i++)
		drop_zero_in(&pb->mapping[i]->base);
	for (size_t i = 0; i < pb->n_location; i++) {
		drop_zero_in(&pb->location[i]->base);
		for (size_t k = 0; k < pb->location[i]->n_line; k++)
			drop_zero_in(&pb->location[i]->line[k]->base);
	}
	for (size_t i = 0; i < pb->n_function; i++)
		drop_zero_in(&pb->function[i]->base);
}

const char *pd_pprof_limit_name(int limit)
{
	static const char *const names[PD_PPROF_LIMIT_COUNT] = {
	    "", "decompressed_size", "decompression_ratio", "decoded_size", "samples", "sample_labels"};
	return limit > 0 && limit < PD_PPROF_LIMIT_COUNT ? names[limit] : "";
}

/* The limits on what the profile holds, checked once it is decoded (its memory
 * is bounded by the arena's cap already). */
static int check_counts(const pb_profile *pb, const struct pd_pprof_decode_opts *opts, int *hit,
			struct pd_err *err)
{
	if (!opts)
		return 0;
	if (opts->max_samples && pb->n_sample > opts->max_samples) {
		*hit = PD_PPROF_LIMIT_SAMPLES;
		return pd_err_set(err, PD_ETOOBIG,
				  "the profile has %zu samples, more than the limit of %zu", pb->n_sample,
				  opts->max_samples);
	}
	if (opts->max_sample_labels)
		for (size_t i = 0; i < pb->n_sample; i++)
			if (pb->sample[i]->n_label > opts->max_sample_labels) {
				*hit = PD_PPROF_LIMIT_SAMPLE_LABELS;
				return pd_err_set(err, PD_ETOOBIG,
						  "sample %zu has %zu labels, more than the limit of %zu "
						  "labels per sample",
						  i, pb->sample[i]->n_label, opts->max_sample_labels);
			}
	return 0;
}

/* The protobuf decoding of data (raw, not gzip). */
static int decode_pb(struct pd_pprof_profile **out, const uint8_t *data, size_t raw_len,
		     const struct pd_pprof_decode_opts *opts, int *hit, struct pd_err *err)
{
	int rc;
	size_t limit = opts && opts->max_memory ? opts->max_memory : 0;
	if (!limit)
		limit = raw_len > (SIZE_MAX - (1u << 20)) / 16 ? SIZE_MAX : raw_len * 16 + (1u << 20);
	struct pd_arena *arena = pd_arena_create(limit);
	if (!arena) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto end;
	}
	pb_profile *pb = NULL;
	if (!(opts && opts->protobuf_c_only))
		pb = pd_pprof_pb_decode(arena, data, raw_len);
	if (pb)
		goto adopt;
	if (pd_arena_exhausted(arena)) {
		/* its whole need is past the cap, and protobuf-c's would be too */
		pd_arena_destroy(arena);
		goto too_big;
	}
	if (pd_arena_used(arena)) {
		/* what the fast decoder left before giving up does not count */
		pd_arena_destroy(arena);
		if (!(arena = pd_arena_create(limit))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto end;
		}
	}
	ProtobufCAllocator alloc;
	pd_pprof_arena_allocator(&alloc, arena);
	pb = perftools__profiles__profile__unpack(&alloc, raw_len, data);
	if (!pb) {
		int exhausted = pd_arena_exhausted(arena);
		pd_arena_destroy(arena);
		if (exhausted)
			goto too_big;
		rc = pd_pprof_wire_diagnose(data, raw_len, err);
		goto end;
	}
	drop_field_zero(pb);
adopt:
	if ((rc = check_counts(pb, opts, hit, err))) {
		pd_arena_destroy(arena);
		goto end;
	}
	/* the strings' lengths come from the wire: an entry may hold NUL bytes */
	size_t *str_len = malloc((pb->n_string_table ? pb->n_string_table : 1) * sizeof(*str_len));
	if (!str_len) {
		pd_arena_destroy(arena);
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto end;
	}
	if ((rc = pd_pprof_wire_string_lengths(data, raw_len, str_len, pb->n_string_table, err))) {
		free(str_len);
		pd_arena_destroy(arena);
		goto end;
	}
	rc = pd_pprof_adopt(out, arena, pb, str_len, err);
	goto end;
too_big:
	*hit = PD_PPROF_LIMIT_MEMORY;
	rc = pd_err_set(err, PD_ETOOBIG,
			"decoding needs more than the memory limit of %zu bytes", limit);
end:
	return rc;
}

int pd_pprof_decode(struct pd_pprof_profile **out, const uint8_t *buf, size_t len,
		    const struct pd_pprof_decode_opts *opts, struct pd_err *err)
{
	int hit_local = 0;
	int *hit = opts && opts->limit_hit ? opts->limit_hit : &hit_local;
	*hit = PD_PPROF_LIMIT_NONE;
	if (opts && opts->legacy)
		*opts->legacy = 0;
	size_t max = opts && opts->max_decompressed ? opts->max_decompressed
						    : PD_PPROF_DEFAULT_MAX_DECOMPRESSED;
	uint8_t *raw = NULL;
	size_t raw_len = len;
	const uint8_t *data = buf;
	int rc;

	*out = NULL;
	if (len == 0)
		return pd_err_set(err, PD_EINVAL, "empty input: a profile has at least a string table");
	if (pd_gzip_is(buf, len)) {
		unsigned ratio = opts ? opts->max_ratio : 0;
		struct pd_inflate_opts io = {.format = PD_INFLATE_GZIP, .max = max, .max_ratio = ratio};
		if ((rc = pd_inflate(buf, len, &io, &raw, &raw_len, err))) {
			if (rc == PD_ETOOBIG)
				*hit = ratio && len <= max / ratio ? PD_PPROF_LIMIT_RATIO
								   : PD_PPROF_LIMIT_DECOMPRESSED;
			return rc;
		}
		data = raw;
	} else if (len > max) {
		*hit = PD_PPROF_LIMIT_DECOMPRESSED;
		return pd_err_set(err, PD_ETOOBIG, "profile of %zu bytes exceeds the limit of %zu bytes",
				  len, max);
	}
	if (raw_len == 0) {
		rc = pd_err_set(err, PD_EINVAL, "empty profile: a profile has at least a string table");
		goto out;
	}
	rc = decode_pb(out, data, raw_len, opts, hit, err);
	if (rc && rc != PD_ENOMEM && *hit == PD_PPROF_LIMIT_NONE) {
		/* not a protobuf profile: perhaps one of the legacy formats pprof reads */
		struct pd_err lerr = {0};
		int lrc = pd_pprof_legacy_decode(out, data, raw_len, opts, &lerr);
		if (lrc == PD_PPROF_LEGACY_NOT_MINE) {
			char pb_msg[PD_ERR_MSG_MAX];
			snprintf(pb_msg, sizeof(pb_msg), "%s", err ? err->msg : "");
			pd_err_set(err, rc,
				   "%s; nor is it a legacy profile (tried " PD_PPROF_LEGACY_FORMATS ")",
				   pb_msg);
		} else {
			rc = lrc;
			if (rc && err)
				*err = lerr;
			if (!rc && opts && opts->legacy)
				*opts->legacy = 1;
		}
	}
out:
	free(raw);
	return rc;
}

int pd_pprof_read_file(struct pd_pprof_profile **out, const char *path,
		       const struct pd_pprof_decode_opts *opts, struct pd_err *err)
{
	uint8_t *buf;
	size_t len;
	size_t max = opts && opts->max_decompressed ? opts->max_decompressed
						    : PD_PPROF_DEFAULT_MAX_DECOMPRESSED;
	int rc = pd_file_read(path, max, &buf, &len, err);
	if (rc)
		return rc;
	rc = pd_pprof_decode(out, buf, len, opts, err);
	free(buf);
	if (rc)
		pd_err_prefix(err, "%s", path);
	return rc;
}

void pd_pprof_destroy(struct pd_pprof_profile *p)
{
	if (!p)
		return;
	free(p->mappings.dense);
	free(p->locations.dense);
	free(p->functions.dense);
	pd_u64map_fini(&p->mappings.sparse);
	pd_u64map_fini(&p->locations.sparse);
	pd_u64map_fini(&p->functions.sparse);
	free(p->str_len);
	pd_arena_destroy(p->arena);
	free(p);
}
