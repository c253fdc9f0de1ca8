/* jfr_int.h: what the files of the JFR converter share: the reader of the JFR
 * binary format (jfr_parse.c, with jfr_meta.c, jfr_pool.c and jfr_value.c), which
 * hands each event of interest to a callback with the chunk's constant pools at
 * hand; a small hash map with three-word keys (jfr_map.c); the renaming of
 * JVM-generated class and library names (jfr_symbols.c); and the context labels
 * of pyroscope-java (jfr_labels.c). jfr.c turns the events into profiles. */
#ifndef PD_INGEST_JFR_INT_H
#define PD_INGEST_JFR_INT_H

#include <stddef.h>
#include <stdint.h>

#include "ingest_int.h"

/* ---- a map from three 64-bit words to a 32-bit value (jfr_map.c) ---------- */

struct jfr_map_slot {
	uint64_t a, b, c;
	uint32_t val; /* 0: empty slot; stored values are val + 1 */
};

struct jfr_map {
	struct jfr_map_slot *v;
	size_t cap, len;
};

void jfr_map_init(struct jfr_map *m);
void jfr_map_fini(struct jfr_map *m);
/* Empties m, keeping its memory. */
void jfr_map_clear(struct jfr_map *m);
/* 1 and *val when (a, b, c) is there, else 0. */
int jfr_map_get(const struct jfr_map *m, uint64_t a, uint64_t b, uint64_t c, uint32_t *val);
/* Inserts or replaces; PD_ENOMEM when the table cannot grow. */
int jfr_map_put(struct jfr_map *m, uint64_t a, uint64_t b, uint64_t c, uint32_t val);

/* ---- the reader (jfr_parse.c and the files of jfr_parse_int.h) ------------ */

/* A string of the recording: bytes (UTF-8, pointing into the recording or into
 * the reader's arena), or a reference into the java.lang.String pool. */
struct jfr_str {
	const char *s;
	uint32_t len;
	uint8_t is_ref; /* 1: ref names a java.lang.String constant */
	uint64_t ref;
};

/* The events the converter reads. */
enum jfr_ev {
	JFR_EV_EXECUTION_SAMPLE = 0, /* jdk.ExecutionSample */
	JFR_EV_WALL_CLOCK,           /* profiler.WallClockSample */
	JFR_EV_ALLOC_IN_NEW_TLAB,    /* jdk.ObjectAllocationInNewTLAB */
	JFR_EV_ALLOC_OUTSIDE_TLAB,   /* jdk.ObjectAllocationOutsideTLAB */
	JFR_EV_ALLOC_SAMPLE,         /* jdk.ObjectAllocationSample */
	JFR_EV_LIVE_OBJECT,          /* profiler.LiveObject */
	JFR_EV_MONITOR_ENTER,        /* jdk.JavaMonitorEnter */
	JFR_EV_THREAD_PARK,          /* jdk.ThreadPark */
	JFR_EV_MALLOC,               /* profiler.Malloc */
	JFR_EV_ACTIVE_SETTING,       /* jdk.ActiveSetting */
	JFR_EV_COUNT
};

/* One event's fields of interest; a field the event type does not declare (with
 * the expected type) is 0. */
struct jfr_event {
	int type; /* enum jfr_ev */
	uint64_t stack_trace, state, context_id, span_id, span_name;
	uint64_t samples, tlab_size, allocation_size, weight, duration, size;
	struct jfr_str name, value;
};

/* A distinct frame of a chunk: a method at a line. The reader numbers the
 * chunk's distinct frames from 0 (their frame keys) as it reads the stacks, so
 * that the converter can cache what it makes of a frame in an array. */
struct jfr_frame {
	uint64_t method;
	uint32_t line;
};

struct jfr_stack {
	const uint32_t *frames; /* frame keys (jfr_frames), leaf first */
	uint32_t n;
};

struct jfr_parser;

/* What the reader calls: event for each event of enum jfr_ev, chunk_end after the
 * last event of each chunk (while its constant pools are still there). A non-zero
 * return stops the reading with that code (the callback fills the error). */
struct jfr_callbacks {
	int (*event)(void *ctx, struct jfr_parser *p, const struct jfr_event *ev);
	int (*chunk_end)(void *ctx, struct jfr_parser *p);
};

/* Limits of one reading: work counts fields and array elements decoded and
 * bytes of strings transcoded; memory is what the pools may take. */
struct jfr_limits {
	uint64_t max_work;
	size_t max_memory;
};

/* Reads the recording buf (len bytes, borrowed for the call), chunk by chunk.
 * Errors: PD_EINVAL with a message naming the byte offset, PD_ETOOBIG when a
 * limit of lim is passed, PD_ENOMEM, or the code a callback returned. */
int jfr_parse(const uint8_t *buf, size_t len, const struct jfr_limits *lim,
              const struct jfr_callbacks *cb, void *ctx, struct pd_err *err);

/* Lookups in the current chunk's constant pools, for the callbacks; the results
 * are borrowed until the chunk ends. NULL / 0 when the id is not there. */
const struct jfr_stack *jfr_stack(const struct jfr_parser *p, uint64_t id);
/* The number of entries of the stack trace pool, and the index there (below
 * that number) of the stack of id; -1 when it is not there. */
size_t jfr_stack_count(const struct jfr_parser *p);
long jfr_stack_index(const struct jfr_parser *p, uint64_t id);
/* The chunk's distinct frames, indexed by frame key; *n of them. */
const struct jfr_frame *jfr_frames(const struct jfr_parser *p, size_t *n);
/* The number of entries of the method pool, and the index there (below that
 * number) of the method of id; -1 when it is not there. */
size_t jfr_method_count(const struct jfr_parser *p);
long jfr_method_index(const struct jfr_parser *p, uint64_t id);
/* The method's class and name symbol. */
int jfr_method(const struct jfr_parser *p, uint64_t id, uint64_t *class_id, uint64_t *name_sym);
/* The class's name symbol. */
int jfr_class(const struct jfr_parser *p, uint64_t id, uint64_t *name_sym);
/* A symbol's string ("" when missing, as the reference converter has it). */
struct jfr_str jfr_symbol(const struct jfr_parser *p, uint64_t id);
/* A thread state's name; 0 when the state is not in the pool. */
int jfr_thread_state(const struct jfr_parser *p, uint64_t id, struct jfr_str *name);
/* s with a string-pool reference resolved ("" when it is missing). */
struct jfr_str jfr_resolve(const struct jfr_parser *p, struct jfr_str s);
/* Adds n to the work counted against the limit; PD_ETOOBIG past it (err filled). */
int jfr_charge(struct jfr_parser *p, uint64_t n, struct pd_err *err);

/* ---- JVM-generated names (jfr_symbols.c) ------------------------------------ */

/* Writes s (n bytes) to out with the numbers of JVM-generated classes and of
 * extracted native libraries replaced by "_" (Foo$$Lambda$12/0x0000800 ->
 * Foo$$Lambda_, GeneratedMethodAccessor12 -> GeneratedMethodAccessor_, ...), as
 * Pyroscope's converter names them. out must hold n + 2 bytes; returns the length
 * written. */
size_t jfr_symbol_normalize(const char *s, size_t n, char *out);

/* ---- context labels (jfr_labels.c) ----------------------------------------- */

struct jfr_labels;

/* Decodes a LabelsSnapshot (pkg/ingest/proto/jfr_labels.proto) of len bytes (0:
 * none), using at most max_memory bytes. *out is the caller's
 * (jfr_labels_destroy). PD_EINVAL for a body that is not one. */
int jfr_labels_decode(const uint8_t *buf, size_t len, size_t max_memory, struct jfr_labels **out,
                      struct pd_err *err);
void jfr_labels_destroy(struct jfr_labels *l);

/* The labels of context id: *n pairs of string ids, borrowed; 0 when the
 * context is not there. */
int jfr_labels_context(const struct jfr_labels *l, uint64_t id, const int64_t **keys,
                       const int64_t **values, size_t *n);
/* The string of id; 0 when missing. */
int jfr_labels_string(const struct jfr_labels *l, int64_t id, const char **s, size_t *len);

#endif
