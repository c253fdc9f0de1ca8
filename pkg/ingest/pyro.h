/* pyro.h: what the files of Pyroscope's /ingest share (pyroscope.c dispatches to
 * pyro_name.c, pyro_time.c, folded.c, speedscope.c and pyro_pprof.c): the parsed
 * `name`, the times, the profile types a name's suffix selects, and one request's
 * state as the converters see it. */
#ifndef PD_INGEST_PYRO_H
#define PD_INGEST_PYRO_H

#include "ingest_int.h"

/* ---- the `name` parameter (pyro_name.c) ------------------------------------- */

/* A parsed `app.cpu{env=staging,region=eu}`. Everything points into buf. */
struct pyro_name {
	char *buf;               /* owned */
	const char *full;        /* the part before '{', trimmed: "app.cpu" */
	const char *app;         /* full without its last dot-separated part: "app" */
	const char *type;        /* that part ("cpu"), or "cpu" when full has no dot */
	struct ingest_label *ls; /* the labels, owned; the last of a repeated name wins */
	size_t n;
};

/* Parses s as Pyroscope's labelset.Parse does: a service name of
 * [A-Za-z0-9_./-] before an optional `{k=v,...}`, label names of [A-Za-z0-9_.],
 * keys and values trimmed. PD_EINVAL naming the character and its byte offset.
 * *out is the caller's (pyro_name_fini), also after a failure. */
int pyro_name_parse(const char *s, struct pyro_name *out, struct pd_err *err);
void pyro_name_fini(struct pyro_name *nm);

/* ---- `from` and `until` (pyro_time.c) -------------------------------------- */

/* Parses a time as Pyroscope's attime.Parse does, into ms since the epoch:
 * digits only are YYYYMMDD (8 digits forming a date) or Unix seconds, ms, us or
 * ns by their count (13, 16, 19 digits; any other count: seconds); `now`, or
 * nothing, with offsets such as `-1h`, `+30m`, `-1h30min` (units s, min/m, h, d,
 * w, mon/M, y; a number without a unit counts nothing, as Pyroscope's does);
 * RFC 3339. PD_EINVAL for anything else, naming what was not understood. */
int pyro_time_parse(const char *s, int64_t now_ms, int64_t *ms, struct pd_err *err);

/* ---- profile types ---------------------------------------------------------- */

/* What a name's type suffix (or a speedscope unit) makes, as Pyroscope's
 * convertMetadata says, with profd's series name. */
struct pyro_type {
	const char *suffix;  /* "cpu", "alloc_space", ... */
	const char *metric;  /* Pyroscope's metric ("process_cpu") */
	const char *name;    /* profd's __name__ ("profile") */
	const char *st_type; /* the sample type ("samples", "inuse_space") */
	const char *st_unit; /* its unit */
	int timed;           /* 1: counts of samples at sampleRate: cpu or wall */
};

/* The type of suffix, or NULL when Pyroscope knows no such type. */
const struct pyro_type *pyro_type_find(const char *suffix);
/* The known suffixes, comma-separated, for messages. */
const char *pyro_type_list(void);

/* ---- one request ------------------------------------------------------------ */

struct pyro_req {
	const struct pd_ingest_params *q;
	struct pd_ingest_limits lim; /* resolved */
	struct pyro_name name;
	int64_t from_ms, until_ms;
	int from_given;
	uint32_t sample_rate;
	const char *spy_name; /* never NULL ("unknown" by default) */
	int spy_given;        /* the request named a spy */
	const char *units;
	const char *aggregation;
	int aggregation_given;
	struct pd_ingest_batch *out;
};

/* The series labels of a profile of this request: __name__=metric, the name's
 * labels plus extra (n_extra of them, e.g. profile_name; may be NULL),
 * service_name=service unless the name has one, pyroscope_spy when the request
 * named a spy. *out is the caller's. Sets r->out->limit_hit on PD_ETOOBIG. */
int pyro_series(struct pyro_req *r, const char *metric, const char *service,
                const struct ingest_label *extra, size_t n_extra, struct pd_labels **out,
                struct pd_err *err);

/* Finishes builder pb (time, duration, the aggregation comment) and adds its
 * profile to r->out under labels (taken, freed on failure too); pb stays the
 * caller's. The builder's limit, when it hit one, goes to r->out->limit_hit. */
int pyro_add_built(struct pyro_req *r, struct ingest_pb *pb, struct pd_labels *labels,
                   struct pd_err *err);

/* A builder for a profile of type t at sample rate rate: the sample type (cpu or
 * wall in nanoseconds with its period when t is timed and rate is not 0, else t's
 * own), and *scale, what each count is multiplied by. NULL when out of memory. */
struct ingest_pb *pyro_builder(const struct pyro_req *r, const struct pyro_type *t, uint32_t rate,
                               int64_t *scale);

/* Repairs a pprof of an old .NET agent in place as Pyroscope does (pyro_dotnet.c):
 * '-' in sample type names becomes '_', and functions that all have id 0, as many
 * as the locations, take the locations' ids. *raw (malloc'd, the caller's) may be
 * replaced. 0, or PD_ENOMEM; a profile it cannot read is left as it is. */
int pyro_dotnet_fix(uint8_t **raw, size_t *len);

/* The converters; each fills r->out. */
int pyro_folded(struct pyro_req *r, const uint8_t *body, size_t len, int lines, struct pd_err *err);
int pyro_speedscope(struct pyro_req *r, const uint8_t *body, size_t len, struct pd_err *err);
int pyro_pprof(struct pyro_req *r, const uint8_t *body, size_t len, struct pd_err *err);

#endif
