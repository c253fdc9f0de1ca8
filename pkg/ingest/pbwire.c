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
	char path[256];
	struct pd_err *err;
};

static int bad(struct walk *w, const uint8_t *at, const char *what)
{
	return pd_err_set(w->err, PD_EINVAL, "protobuf is malformed at byte %zu%s%s: %s",
	                  (size_t)(at - w->start), w->path[0] ? ", in field " : "", w->path, what);
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
		const ProtobufCFieldDescriptor *f =
		    protobuf_c_message_descriptor_get_field(d, (unsigned)id);
		size_t plen = strlen(w->path);
		if (f)
			snprintf(w->path + plen, sizeof w->path - plen, "%s%s", plen ? "." : "",
			         f->name);
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
				if (f && f->type == PROTOBUF_C_TYPE_MESSAGE)
					rc = walk(w, f->descriptor, p, p + v, depth + 1);
				else if (f && f->label == PROTOBUF_C_LABEL_REPEATED &&
				         wire_of(f->type) != 2) {
					/* a packed array: whole values only */
					const uint8_t *q = p, *qe = p + v;
					unsigned fw = wire_of(f->type);
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
		w->path[plen] = 0;
	}
	return 0;
}

int ingest_pb_unpack(const struct ProtobufCMessageDescriptor *d, const uint8_t *body, size_t len,
                     struct ProtobufCMessage **out, struct pd_err *err)
{
	/* walked first: protobuf-c recurses into nested messages without a bound,
	 * and OTLP's AnyValue nests without one, so the depth is checked here */
	struct walk w = {.start = body, .err = err};
	*out = NULL;
	int rc = walk(&w, d, body, body + len, 0);
	if (rc)
		return rc;
	*out = protobuf_c_message_unpack(d, NULL, len, body);
	if (*out)
		return 0;
	/* the bytes look well formed: protobuf-c failed on what the walk does not
	 * check (a bad oneof, a required field) or ran out of memory */
	return pd_err_set(err, PD_EINVAL, "the body (%zu bytes) is not a valid %s message", len,
	                  d->name);
}
