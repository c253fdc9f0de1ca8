/* ingest: profiles in the formats other profilers push, turned into pprof profiles
 * that profd stores as it stores a scraped one (docs/ingest.md has the mapping).
 * Three front doors:
 *   - Pyroscope's `POST /ingest`: pprof, folded stacks (groups, lines), JFR (with
 *     pyroscope-java's context labels), speedscope JSON (pd_ingest_pyroscope);
 *   - Pyroscope's `push.v1.PusherService/Push` as Connect sends it, binary or JSON
 *     (pd_ingest_connect_push);
 *   - OpenTelemetry's OTLP profiles over HTTP, binary or JSON
 *     (pd_ingest_otlp).
 * Each call reads one request body (already un-gzipped by the HTTP layer when it
 * came with Content-Encoding) and fills a batch of profiles, each with its series
 * labels and time; nothing here touches the store, the network or files, so a
 * request that fails stores nothing. Every size that the body controls is bounded
 * by struct pd_ingest_limits; a limit hit is PD_ETOOBIG with a message naming the
 * limit's flag and batch->limit_hit saying which. This package uses util, labels
 * and pprof only. */
#ifndef PROFD_INGEST_H
#define PROFD_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "profd/util.h"

struct pd_labels;
struct pd_pprof_profile;

/* ---- limits ---------------------------------------------------------------- */

/* What one request may make. Zero fields take the PD_INGEST_DEFAULT_* values. */
struct pd_ingest_limits {
	size_t max_decompressed;   /* bytes of a part after gunzip (a gzip pprof, a JFR) */
	unsigned max_ratio;        /* gzip inflation of such a part */
	size_t max_samples;        /* samples (stacks) in one converted profile */
	size_t max_stack_depth;    /* frames in one stack */
	size_t max_labels;         /* labels of one series, __name__ included */
	size_t max_label_name_len; /* bytes of a label name */
	size_t max_label_value_len; /* bytes of a label value */
	size_t max_symbol_len;     /* bytes of a function or file name */
	size_t max_profiles;       /* profiles one request may turn into */
	unsigned max_json_depth;   /* nesting of a JSON body */
	size_t max_json_size;      /* bytes of a JSON body (speedscope, Connect, OTLP) */
	/* memory all the profiles of one request may hold at once, before they are
	 * stored (their pprof bytes and decoded copies, and a protobuf body
	 * unpacked) */
	size_t max_request_memory;
	/* a pprof the client sent, decoded (pd_pprof_decode_opts' max_memory and
	 * max_sample_labels; 0: pprof.h's PD_PPROF_STORE_* defaults) */
	size_t max_decoded_memory;
	size_t max_sample_labels;
	/* the legacy readers' limits on a pushed legacy profile (pd_pprof_decode_opts'
	 * legacy_max_*: frames of a sample, bytes of a text line, map entries; 0:
	 * pprof.h's PD_PPROF_LEGACY_* defaults) */
	size_t legacy_max_depth, legacy_max_line, legacy_max_maps;
};

#define PD_INGEST_DEFAULT_MAX_DECOMPRESSED ((size_t)64 << 20)
#define PD_INGEST_DEFAULT_MAX_RATIO 100u
#define PD_INGEST_DEFAULT_MAX_SAMPLES ((size_t)1000000)
#define PD_INGEST_DEFAULT_MAX_STACK_DEPTH ((size_t)2048)
#define PD_INGEST_DEFAULT_MAX_LABELS ((size_t)30)
#define PD_INGEST_DEFAULT_MAX_LABEL_NAME_LEN ((size_t)1024)
#define PD_INGEST_DEFAULT_MAX_LABEL_VALUE_LEN ((size_t)2048)
#define PD_INGEST_DEFAULT_MAX_SYMBOL_LEN ((size_t)65535)
#define PD_INGEST_DEFAULT_MAX_PROFILES ((size_t)10000)
#define PD_INGEST_DEFAULT_MAX_JSON_DEPTH 64u
#define PD_INGEST_DEFAULT_MAX_JSON_SIZE ((size_t)16 << 20)
#define PD_INGEST_DEFAULT_MAX_REQUEST_MEMORY ((size_t)512 << 20)

/* Which limit a request hit (batch->limit_hit), for refusal metrics. */
enum pd_ingest_limit {
	PD_INGEST_LIMIT_NONE = 0,
	PD_INGEST_LIMIT_DECOMPRESSED,
	PD_INGEST_LIMIT_RATIO,
	PD_INGEST_LIMIT_SAMPLES,
	PD_INGEST_LIMIT_STACK_DEPTH,
	PD_INGEST_LIMIT_LABELS,
	PD_INGEST_LIMIT_LABEL_NAME_LEN,
	PD_INGEST_LIMIT_LABEL_VALUE_LEN,
	PD_INGEST_LIMIT_SYMBOL_LEN,
	PD_INGEST_LIMIT_PROFILES,
	PD_INGEST_LIMIT_JSON_DEPTH,
	PD_INGEST_LIMIT_JSON_SIZE,
	PD_INGEST_LIMIT_REQUEST_MEMORY,
};

/* The limit's metric reason ("stack_depth") and its flag
 * ("--ingest.max-stack-depth"); static strings. */
const char *pd_ingest_limit_reason(int limit);
const char *pd_ingest_limit_flag(int limit);

/* lim with every zero field replaced by its default. */
struct pd_ingest_limits pd_ingest_limits_resolve(const struct pd_ingest_limits *lim);

/* ---- what a request turns into ---------------------------------------------- */

/* One profile to store. */
struct pd_ingest_profile {
	struct pd_labels *labels; /* the series, __name__ and service_name included; owned */
	uint8_t *pprof;           /* the profile as uncompressed profile.proto; owned */
	size_t len;
	/* the same profile decoded and validated, when the converter has it (owned;
	 * NULL: the caller decodes pprof) */
	struct pd_pprof_profile *decoded;
	int64_t t_ms; /* the time it is stored at (ms since the epoch) */
	/* the gzip stream the client sent whose content is exactly pprof (owned;
	 * NULL: none), which the store's WAL keeps instead of compressing pprof */
	uint8_t *gz;
	size_t gzlen;
};

/* What one request turned into. Zero-initialise; pd_ingest_batch_fini frees. */
struct pd_ingest_batch {
	struct pd_ingest_profile *v;
	size_t n, cap;
	int limit_hit; /* enum pd_ingest_limit, when a call failed with PD_ETOOBIG */
	size_t memory; /* what its profiles are charged (max_request_memory) */
	/* parts of the request that were left out while the rest was kept (OTLP's
	 * partial success): how many profiles, and why (the first reason) */
	size_t rejected;
	char rejected_msg[256];
	/* the format the request was in ("pprof", "folded", "jfr", ...), a static
	 * string set by the call, for metrics; NULL when it was never known */
	const char *format;
};

/* Appends a profile to b, taking ownership of labels, pprof and decoded (freed
 * here on failure too). PD_ETOOBIG past lim->max_profiles (limit_hit
 * PD_INGEST_LIMIT_PROFILES) or when the batch's profiles would take more than
 * lim->max_request_memory (PD_INGEST_LIMIT_REQUEST_MEMORY; a profile is charged
 * its bytes, and four times them more when decoded); PD_ENOMEM. */
int pd_ingest_batch_add(struct pd_ingest_batch *b, const struct pd_ingest_limits *lim,
			struct pd_labels *labels, uint8_t *pprof, size_t len,
			struct pd_pprof_profile *decoded, int64_t t_ms, struct pd_err *err);

/* Frees what b holds and zeroes it. */
void pd_ingest_batch_fini(struct pd_ingest_batch *b);

/* ---- Pyroscope's /ingest --------------------------------------------------- */

/* The request's query parameters as they came (NULL: absent) and its Content-Type;
 * borrowed for the call. */
struct pd_ingest_params {
	const char *name;             /* `app.cpu{env=staging,region=eu}` */
	const char *from, *until;     /* any form Pyroscope's attime.Parse takes */
	const char *sample_rate;      /* Hz; default 100 */
	const char *spy_name;         /* e.g. "nodespy"; default "unknown" */
	const char *units;            /* samples, objects, bytes, ...; default samples */
	const char *aggregation_type; /* sum or average; default sum */
	const char *format;           /* pprof, groups, lines, jfr, speedscope, trie, tree */
	const char *content_type;
	int64_t now_ms; /* the clock, for absent and relative times */
};

/* Converts one /ingest request. Errors: PD_EINVAL for a malformed parameter or
 * body (the message names the parameter or the byte/line), PD_ETOOBIG for a limit
 * (b->limit_hit), PD_EINCOMPAT for a format profd does not read (the binary trie
 * and tree formats: the HTTP layer answers 415). b may hold profiles on success
 * only; on failure it is left empty. */
int pd_ingest_pyroscope(const struct pd_ingest_params *q, const uint8_t *body, size_t len,
			const struct pd_ingest_limits *lim, struct pd_ingest_batch *b,
			struct pd_err *err);

/* ---- Connect: push.v1.PusherService/Push ----------------------------------- */

/* Converts one PushRequest body, protobuf (json 0) or Connect's JSON (json 1).
 * Errors as for pd_ingest_pyroscope (PD_EINVAL: Connect's invalid_argument). */
int pd_ingest_connect_push(const uint8_t *body, size_t len, int json,
			   const struct pd_ingest_limits *lim, int64_t now_ms,
			   struct pd_ingest_batch *b, struct pd_err *err);

/* ---- OpenTelemetry: OTLP profiles over HTTP -------------------------------- */

/* Converts one ExportProfilesServiceRequest (opentelemetry-proto's
 * profiles/v1development), protobuf (json 0) or OTLP/JSON (json 1). Profiles that
 * cannot be converted are counted in b->rejected (with the first reason) while the
 * rest are kept; a body that cannot be read at all is PD_EINVAL. */
int pd_ingest_otlp(const uint8_t *body, size_t len, int json, const struct pd_ingest_limits *lim,
		   int64_t now_ms, struct pd_ingest_batch *b, struct pd_err *err);

/* The ExportProfilesServiceResponse that answers a request pd_ingest_otlp read
 * into b: partial_success with b->rejected and b->rejected_msg when profiles were
 * left out, empty otherwise; protobuf (json 0) or OTLP/JSON (json 1). *out is
 * malloc'd and the caller's. PD_ENOMEM only. */
int pd_ingest_otlp_response(const struct pd_ingest_batch *b, int json, uint8_t **out,
			    size_t *out_len, struct pd_err *err);

/* ---- multipart/form-data ---------------------------------------------------- */

/* One part of a multipart/form-data body (RFC 7578); pointers into the body. */
struct pd_ingest_part {
	const char *name; /* the form field's name, NUL-terminated, in the part array */
	const char *filename; /* "" when the part has none */
	const uint8_t *data;
	size_t len;
	char name_buf[64];
	char filename_buf[256];
};

/* Splits body by the boundary of content_type into at most max parts; *n is how
 * many were found. PD_EINVAL with a message for a body that is not well formed;
 * PD_ETOOBIG past max parts. */
int pd_ingest_multipart(const uint8_t *body, size_t len, const char *content_type,
			struct pd_ingest_part *parts, size_t max, size_t *n, struct pd_err *err);

/* The first part named name, or NULL. */
const struct pd_ingest_part *pd_ingest_part_get(const struct pd_ingest_part *parts, size_t n,
						const char *name);

/* ---- protobuf messages of other APIs (pbjson_write.c) ----------------------- */

struct ProtobufCMessageDescriptor;
struct ProtobufCMessage;

/* Reads a request body as a message of type d (a protobuf-c descriptor, e.g. of
 * the query API's messages compiled from pkg/ingest/proto/): protobuf (json 0),
 * walked before protobuf-c unpacks it and bounded by lim->max_decoded_memory, or
 * its proto3 JSON form (json 1), nested at most lim->max_json_depth deep. *out is
 * the caller's (protobuf_c_message_free_unpacked(*out, NULL)). PD_EINVAL names
 * the field path and byte offset of what is wrong; PD_ETOOBIG for a limit. */
int pd_ingest_pb_read(const struct ProtobufCMessageDescriptor *d, const uint8_t *body, size_t len,
		      int json, const struct pd_ingest_limits *lim, struct ProtobufCMessage **out,
		      struct pd_err *err);
/* Appends m in its proto3 JSON form to b (lowerCamelCase names, 64-bit integers
 * as strings, default values left out). 0, or pd_buf's PD_ETOOBIG / PD_ENOMEM /
 * PD_EFULL; m is only read. */
int pd_ingest_pb_json(const struct ProtobufCMessage *m, struct pd_buf *b);

#endif
