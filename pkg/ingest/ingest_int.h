/* ingest_int.h: what the converters of pkg/ingest share: a pprof profile builder
 * that interns strings, functions and locations and merges samples with the same
 * stack and labels (builder.c), the Pyroscope series naming (series.c), and each
 * format's entry point. */
#ifndef PD_INGEST_INT_H
#define PD_INGEST_INT_H

#include <stddef.h>
#include <stdint.h>

#include "profd/ingest.h"
#include "profd/labels.h"
#include "profd/pprof.h"
#include "profd/util.h"

/* ---- the profile builder (builder.c) --------------------------------------- */

struct ingest_pb;

/* A builder bound by lim (its limits are copied; symbol lengths, samples and stack
 * depth are checked as frames and samples are added). NULL when out of memory. */
struct ingest_pb *ingest_pb_create(const struct pd_ingest_limits *lim);
void ingest_pb_destroy(struct ingest_pb *b);

/* The index of string s (len bytes, NUL bytes allowed) in the string table, added
 * once; 0 for the empty string. -1 when out of memory (ingest_pb_err says so). */
int64_t ingest_pb_str(struct ingest_pb *b, const char *s, size_t len);

/* Adds a sample type (in order: value i of every sample is sample type i). */
int ingest_pb_sample_type(struct ingest_pb *b, const char *type, const char *unit);
/* Sets the period type, unit and period. */
int ingest_pb_period(struct ingest_pb *b, const char *type, const char *unit, int64_t period);
/* Sets time_nanos and duration_nanos. */
void ingest_pb_time(struct ingest_pb *b, int64_t time_nanos, int64_t duration_nanos);
/* Adds a comment string. */
int ingest_pb_comment(struct ingest_pb *b, const char *s, size_t len);

/* The id of the function (name, system_name, filename, start_line), interned:
 * the same four give the same id. 0 and an error (ingest_pb_err) when a name is
 * longer than lim->max_symbol_len (PD_ETOOBIG, PD_INGEST_LIMIT_SYMBOL_LEN) or out
 * of memory. system_name NULL: the same as name. */
uint64_t ingest_pb_function(struct ingest_pb *b, const char *name, size_t name_len,
			    const char *system_name, size_t system_name_len, const char *file,
			    size_t file_len, int64_t start_line);

/* The index of s (len bytes) as a function or file name: ingest_pb_str after the
 * max_symbol_len check of ingest_pb_function. -1 on error (ingest_pb_err). */
int64_t ingest_pb_symbol(struct ingest_pb *b, const char *s, size_t len);
/* The hash of s (len bytes) as the builder's string table hashes it, and
 * ingest_pb_symbol given that hash: for a converter that interns one name in
 * several builders, hashing it once. */
uint64_t ingest_pb_str_hash(const char *s, size_t len);
int64_t ingest_pb_symbol_hashed(struct ingest_pb *b, const char *s, size_t len, uint64_t hash);
/* ingest_pb_function with its names already indices of the string table (from
 * ingest_pb_symbol), for a converter that remembers them. */
uint64_t ingest_pb_function_strs(struct ingest_pb *b, int64_t name, int64_t system_name,
				 int64_t file, int64_t start_line);

/* A mapping's id (interned by all its fields); filename/build_id may be NULL. */
uint64_t ingest_pb_mapping(struct ingest_pb *b, uint64_t start, uint64_t limit, uint64_t offset,
			   const char *filename, size_t filename_len, const char *build_id,
			   size_t build_id_len, int has_functions);

/* One line of a location: a function and its line (0: unknown). */
struct ingest_pb_line {
	uint64_t function_id;
	int64_t line;
};

/* The id of the location with these lines (innermost first), mapping (0: none)
 * and address, interned. 0 on error. */
uint64_t ingest_pb_location(struct ingest_pb *b, uint64_t mapping_id, uint64_t address,
			    const struct ingest_pb_line *lines, size_t nlines);
/* Shorthand: the location of one function at one line, without a mapping. */
uint64_t ingest_pb_frame(struct ingest_pb *b, uint64_t function_id, int64_t line);

/* A sample label: a string value (str_len bytes) or, when str is NULL, a number
 * with an optional unit. */
struct ingest_pb_label {
	const char *key;
	size_t key_len;
	const char *str;
	size_t str_len;
	int64_t num;
	const char *num_unit;
};

/* Adds values (one per sample type) to the sample with these locations (leaf
 * first) and labels; a sample with the same stack and labels as an earlier one
 * gets the values added to it (merge 1), or is kept apart (merge 0). Stacks
 * deeper than lim->max_stack_depth and more samples than lim->max_samples fail
 * with PD_ETOOBIG. */
int ingest_pb_sample(struct ingest_pb *b, const uint64_t *locs, size_t nlocs,
		     const int64_t *values, size_t nvalues, const struct ingest_pb_label *labels,
		     size_t nlabels, int merge);

/* How many samples the builder holds. */
size_t ingest_pb_nsamples(const struct ingest_pb *b);

/* The first error the builder met (sticky): 0, or a PD_E code with the message in
 * *err and the limit hit in *limit (may be NULL). */
int ingest_pb_err(const struct ingest_pb *b, struct pd_err *err, int *limit);

/* Keeps only sample types keep[0..nk) (ascending indices), in every sample too;
 * for a converter that learns which types it has only at the end. */
int ingest_pb_select_types(struct ingest_pb *b, const size_t *keep, size_t nk);

/* Serialises the profile as uncompressed profile.proto into *out (malloc'd, the
 * caller's) and, when decoded is not NULL, builds and validates it into *decoded
 * (the caller's). The builder can be destroyed afterwards. */
int ingest_pb_finish(struct ingest_pb *b, uint8_t **out, size_t *out_len,
		     struct pd_pprof_profile **decoded, struct pd_err *err);

/* ---- the batch (batch.c) --------------------------------------------------------- */

/* Keeps a copy of gz, the gzip stream whose content is exactly the pprof bytes of
 * the profile last added to b, for the store's WAL (pd_storage_append_gzip). Best
 * effort: without the memory (or past max_request_memory) nothing is kept and the
 * WAL compresses the profile. */
void ingest_batch_keep_gzip(struct pd_ingest_batch *b, const struct pd_ingest_limits *lim,
			    const uint8_t *gz, size_t len);

/* ---- series labels (series.c) ---------------------------------------------- */

/* A label as a client sent it (not NUL-terminated). */
struct ingest_label {
	const char *name;
	size_t name_len;
	const char *value;
	size_t value_len;
};

/* Builds the series labels of an ingested profile into *out (the caller's):
 * __name__=metric, then ls, whose names are sanitized as Pyroscope does (dots
 * become underscores; other invalid names are PD_EINVAL; names starting with "__"
 * and empty values are left out), and service_name=fallback_service when ls has
 * none (PD_EINVAL when neither names a service). Label count and name and value
 * lengths are checked against lim (PD_ETOOBIG, *limit set). */
int ingest_series(const struct ingest_label *ls, size_t n, const char *metric,
		  const char *fallback_service, const struct pd_ingest_limits *lim,
		  struct pd_labels **out, int *limit, struct pd_err *err);

/* ---- protobuf messages (pbjson.c, pbwire.c) --------------------------------- */

struct ProtobufCMessageDescriptor;
struct ProtobufCMessage;

/* Fills a new message of type d from its proto3 JSON form (body, len bytes), nested
 * at most lim->max_json_depth deep (past it PD_ETOOBIG, *limit
 * PD_INGEST_LIMIT_JSON_DEPTH). *out is the caller's, freed with
 * protobuf_c_message_free_unpacked(*out, NULL). PD_EINVAL names the field path
 * ("resourceProfiles[0].resource.attributes[2].key") or the byte offset. */
int ingest_pbjson_parse(const struct ProtobufCMessageDescriptor *d, const uint8_t *body,
			size_t len, const struct pd_ingest_limits *lim, struct ProtobufCMessage **out,
			int *limit, struct pd_err *err);

/* Unpacks a protobuf message of type d (protobuf-c's unpack), nested at most 100
 * messages deep and taking at most about max_mem bytes (estimated before
 * anything is allocated; past it PD_ETOOBIG). When the bytes are not a valid
 * message, PD_EINVAL with a message naming the field path and the byte offset
 * where they stop making sense. *out is allocated in *arena, the caller's:
 * pd_arena_destroy(*arena) frees it (not protobuf_c_message_free_unpacked). Both
 * are NULL on error. */
int ingest_pb_unpack(const struct ProtobufCMessageDescriptor *d, const uint8_t *body, size_t len,
		     size_t max_mem, struct ProtobufCMessage **out, struct pd_arena **arena,
		     struct pd_err *err);
/* The same, with protobuf-c's own allocator: *out is freed with
 * protobuf_c_message_free_unpacked(*out, NULL). For small messages. */
int ingest_pb_unpack_plain(const struct ProtobufCMessageDescriptor *d, const uint8_t *body,
			   size_t len, size_t max_mem, struct ProtobufCMessage **out,
			   struct pd_err *err);

/* ---- profile names (connect.c) ---------------------------------------------- */

/* profd's __name__ for a pushed pprof p that a client named metric (Pyroscope's
 * name, e.g. "process_cpu", "memory"; NULL or "": none), as docs/ingest.md maps
 * them: by p's default sample type when it says what the profile is, else by the
 * metric; a metric profd does not know is returned sanitized in buf (size bytes).
 * NULL when there is neither. The result is static, or buf. */
const char *ingest_profile_name(const struct pd_pprof_profile *p, const char *metric, char *buf,
				size_t size);

/* ---- format entry points, each in its own file ------------------------------- */

/* The parsed /ingest metadata that converters read (pyroscope.c fills it). */
struct ingest_meta {
	struct pd_labels *labels; /* the name's labels, service_name included; borrowed */
	const char *app;          /* the application name without its type suffix */
	const char *type;         /* the suffix after the last dot ("cpu", "alloc_objects") */
	int64_t from_ms, until_ms;
	uint32_t sample_rate; /* Hz */
	const char *spy_name;
	const char *units;
	const char *aggregation;
	int64_t now_ms;
};

/* JFR (jfr.c and its helpers): body is the JFR file, or a multipart body with
 * `jfr` and `labels` parts when content_type is multipart/form-data; each event
 * type and context-label set becomes one profile in out. */
int ingest_jfr(const struct ingest_meta *m, const uint8_t *body, size_t len,
	       const char *content_type, const struct pd_ingest_limits *lim,
	       struct pd_ingest_batch *out, struct pd_err *err);

#endif
