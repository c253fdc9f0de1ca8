/* pbwire.c: a protobuf message unpacked with protobuf-c, after a walk of its
 * bytes along the message's descriptor that tells the client which field and
 * which byte offset are wrong (protobuf-c says only that it failed): a truncated
 * varint or length, a length past the end of its message, a wire type the field
 * cannot have, messages nested more than WALK_DEPTH deep (protobuf-c itself
 * recurses without a bound). The walk reads tags, varints and lengths only. */
#include <protobuf-c/protobuf-c.h>
#include <stdio.h>
#include <string.h>

#include "ingest_int.h"

#define WALK_DEPTH 100

/* Reads a varint at *p (< end); 0, or -1 when truncated or longer than 10 bytes. */
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	for (unsigned i = 0; i < 10; i++) {
		if (*p >= end)
			return -1;
		uint8_t b = *(*p)++;
		r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -1;
}

/* Field number id of d (protobuf_c_message_descriptor_get_field, inline: the walk
 * looks up every field it meets, and most messages have one range of numbers). */
static inline const ProtobufCFieldDescriptor *field_of(const ProtobufCMessageDescriptor *d,
                                                       uint64_t id)
{
	const ProtobufCIntRange *r = d->field_ranges;
	for (unsigned i = 0; i < d->n_field_ranges; i++) {
		/* range i: numbers start_value on, as many as fields up to range i + 1's
		 * (the last entry is a sentinel holding n_fields) */
		uint64_t first = (uint64_t)r[i].start_value;
		uint64_t n = (uint64_t)(r[i + 1].orig_index - r[i].orig_index);
		if (id >= first && id - first < n)
			return d->fields + r[i].orig_index + (id - first);
	}
	return NULL;
}

/* Whether the n bytes at p are whole varints (none longer than 10 bytes), the
 * check of a packed array's loop in one pass over its bytes. */
static int whole_varints(const uint8_t *p, size_t n)
{
	unsigned run = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] & 0x80) {
			if (++run == 10)
				return 0;
		} else {
			run = 0;
		}
	}
	return run == 0;
}

/* The wire type a non-packed field of type t has. */
static unsigned wire_of(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 1;
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
		return 5;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_BYTES:
	case PROTOBUF_C_TYPE_MESSAGE:
		return 2;
	default:
		return 0;
	}
}

struct walk {
	const uint8_t *start;
	/* the fields the walk is in, outermost first (the path of an error, written
	 * out only when there is one) */
	const ProtobufCFieldDescriptor *in[WALK_DEPTH + 2];
	unsigned nin;
	struct pd_err *err;
	/* what protobuf-c will allocate to unpack the body, estimated as the walk
	 * goes (each message's struct, each repeated element's slot, each string's
	 * bytes), against max_mem */
	size_t mem, max_mem;
};

/* Charges n bytes of the unpacked message; 1 past the budget. */
static int charge(struct walk *w, size_t n)
{
	if (n > w->max_mem || w->mem > w->max_mem - n)
		return 1;
	w->mem += n;
	return 0;
}

static int bad(struct walk *w, const uint8_t *at, const char *what)
{
	char path[256] = "";
	for (unsigned i = 0; i < w->nin; i++) {
		size_t plen = strlen(path);
		snprintf(path + plen, sizeof path - plen, "%s%s", plen ? "." : "", w->in[i]->name);
	}
	return pd_err_set(w->err, PD_EINVAL, "protobuf is malformed at byte %zu%s%s: %s",
	                  (size_t)(at - w->start), path[0] ? ", in field " : "", path, what);
}

/* 0 when nothing wrong was found in [p, end) as message d; PD_EINVAL otherwise. */
static int walk(struct walk *w, const ProtobufCMessageDescriptor *d, const uint8_t *p,
                const uint8_t *end, unsigned depth)
{
	if (depth > WALK_DEPTH)
		return bad(w, p, "messages nest too deep");
	while (p < end) {
		const uint8_t *at = p;
		uint64_t tag, v;
		if (varint(&p, end, &tag))
			return bad(w, at, "truncated field tag");
		unsigned wt = (unsigned)(tag & 7);
		uint64_t id = tag >> 3;
		if (id == 0 || id > 536870911u)
			return bad(w, at, "field number 0 or too large");
		const ProtobufCFieldDescriptor *f = field_of(d, id);
		unsigned nin = w->nin;
		if (f)
			w->in[w->nin++] = f;
		int rc = 0;
		if (f && wt != wire_of(f->type) &&
		    !(wt == 2 && f->label == PROTOBUF_C_LABEL_REPEATED && wire_of(f->type) != 2)) {
			char msg[96];
			snprintf(msg, sizeof msg,
			         "wire type %u where the field (number %u) needs %u", wt,
			         (unsigned)id, wire_of(f->type));
			rc = bad(w, at, msg);
		} else if (wt == 0) {
			if (varint(&p, end, &v))
				rc = bad(w, at, "truncated varint");
			else if (f && f->label == PROTOBUF_C_LABEL_REPEATED && charge(w, 8))
				rc = pd_err_set(w->err, PD_ETOOBIG,
						"the protobuf body would take more than %zu bytes of "
						"memory unpacked (%s)",
						w->max_mem,
						pd_ingest_limit_flag(PD_INGEST_LIMIT_REQUEST_MEMORY));
		} else if (wt == 1 || wt == 5) {
			size_t n = wt == 1 ? 8 : 4;
			if ((size_t)(end - p) < n)
				rc = bad(w, at, "truncated fixed-size value");
			else
				p += n;
		} else if (wt == 2) {
			if (varint(&p, end, &v))
				rc = bad(w, at, "truncated length");
			else if (v > (uint64_t)(end - p))
				rc = bad(w, at, "length runs past the end of the message");
			else {
				size_t need = 0;
				if (f && f->type == PROTOBUF_C_TYPE_MESSAGE)
					need = ((const ProtobufCMessageDescriptor *)f->descriptor)
						   ->sizeof_message;
				else if (f && f->label == PROTOBUF_C_LABEL_REPEATED &&
					 wire_of(f->type) != 2)
					need = (size_t)v * 8; /* a packed array, 8 bytes a value */
				else
					need = (size_t)v + 1;
				if (f && charge(w, need + 16))
					rc = pd_err_set(w->err, PD_ETOOBIG,
							"the protobuf body would take more than %zu "
							"bytes of memory unpacked (%s)",
							w->max_mem,
							pd_ingest_limit_flag(
							    PD_INGEST_LIMIT_REQUEST_MEMORY));
				else if (f && f->type == PROTOBUF_C_TYPE_MESSAGE)
					rc = walk(w, f->descriptor, p, p + v, depth + 1);
				else if (f && f->label == PROTOBUF_C_LABEL_REPEATED &&
				         wire_of(f->type) != 2) {
					/* a packed array: whole values only */
					const uint8_t *q = p, *qe = p + v;
					unsigned fw = wire_of(f->type);
					if (fw == 0 ? whole_varints(p, (size_t)v)
					            : (size_t)v % (fw == 1 ? 8u : 4u) == 0)
						q = qe; /* whole: the loop below finds where not */
					while (!rc && q < qe) {
						if (fw == 0) {
							uint64_t x;
							if (varint(&q, qe, &x))
								rc = bad(w, q,
								         "truncated varint in a "
								         "packed array");
						} else if ((size_t)(qe - q) < (fw == 1 ? 8u : 4u)) {
							rc = bad(
							    w, q,
							    "truncated value in a packed array");
						} else {
							q += fw == 1 ? 8 : 4;
						}
					}
				}
				p += v;
			}
		} else {
			rc = bad(w, at, "wire type 3, 4, 6 or 7 (groups are not read)");
		}
		if (rc)
			return rc;
		w->nin = nin;
	}
	return 0;
}

/* protobuf-c's allocations, from an arena: a message of thousands of small
 * parts is freed in one call instead of a walk that frees each */
static void *arena_alloc(void *a, size_t n)
{
	return pd_arena_alloc(a, n);
}

static void arena_free(void *a, void *p)
{
	(void)a;
	(void)p;
}

int ingest_pb_unpack_plain(const struct ProtobufCMessageDescriptor *d, const uint8_t *body,
                           size_t len, size_t max_mem, struct ProtobufCMessage **out,
                           struct pd_err *err)
{
	struct walk w = {.start = body, .err = err, .max_mem = max_mem};
	*out = NULL;
	int rc = walk(&w, d, body, body + len, 0);
	if (rc)
		return rc;
	if ((*out = protobuf_c_message_unpack(d, NULL, len, body)))
		return 0;
	return pd_err_set(err, PD_EINVAL, "the body (%zu bytes) is not a valid %s message", len,
	                  d->name);
}

int ingest_pb_unpack(const struct ProtobufCMessageDescriptor *d, const uint8_t *body, size_t len,
                     size_t max_mem, struct ProtobufCMessage **out, struct pd_arena **arena,
                     struct pd_err *err)
{
	/* walked first: protobuf-c recurses into nested messages without a bound,
	 * and OTLP's AnyValue nests without one, so the depth is checked here, and
	 * it allocates a struct for every message, so what it will take is too */
	struct walk w = {.start = body, .err = err, .max_mem = max_mem};
	*out = NULL;
	*arena = NULL;
	int rc = walk(&w, d, body, body + len, 0);
	if (rc)
		return rc;
	struct pd_arena *a = pd_arena_create(0); /* the walk bounded what it takes */
	if (!a)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	ProtobufCAllocator al = {.alloc = arena_alloc, .free = arena_free, .allocator_data = a};
	*out = protobuf_c_message_unpack(d, &al, len, body);
	if (*out) {
		*arena = a;
		return 0;
	}
	pd_arena_destroy(a);
	/* the bytes look well formed: protobuf-c failed on what the walk does not
	 * check (a bad oneof, a required field) or ran out of memory */
	return pd_err_set(err, PD_EINVAL, "the body (%zu bytes) is not a valid %s message", len,
	                  d->name);
}
