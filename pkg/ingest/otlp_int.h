/* otlp_int.h: what the two files of the OTLP converter share: short names for
 * the generated protobuf-c types of the request, a profile's conversion (the
 * builder's ids of the dictionary's entries it met) and a profile's header, and
 * the conversion of a group of profiles into one pprof profile (otlp_profile.c),
 * which otlp.c calls for each group of the profiles of a scope. */
#ifndef PD_INGEST_OTLP_INT_H
#define PD_INGEST_OTLP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "ingest_int.h"
#include "otlp_profiles_service.pb-c.h"

typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Profile;
typedef Opentelemetry__Proto__Profiles__V1development__Sample Sample;
typedef Opentelemetry__Proto__Profiles__V1development__Location Location;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping Mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Function Function;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit Attr;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
    Request;

/* The builder's id of a dictionary entry, valid in the profile whose conversion
 * has generation gen (so that a request of many profiles over a large dictionary
 * never clears the tables between profiles). */
struct memo {
	uint64_t id;
	uint32_t gen;
};

/* What one profile's conversion keeps: the builder's ids of the dictionary's
 * entries it met. */
struct conv {
	const Dict *d;
	struct ingest_pb *pb;
	struct memo *loc_id, *fn_id, *map_id;
	struct memo *sym_id; /* a string's index as a function or file name, plus 1 */
	uint32_t gen;
	const uint8_t *map_has_fn; /* per mapping: every location of it has functions */
	struct pd_err *err;
};

/* What a profile's header says: its sample type, its period type, and whether
 * its sample counts become CPU nanoseconds (the eBPF profiler's samples:count with a
 * cpu:nanoseconds period, unless a cpu:nanoseconds profile of the same group has
 * them already, as a Go CPU profile sent as OTLP has). */
struct head {
	const char *type, *unit, *ptype, *punit;
	int to_nanos;
};

/* ---- one pprof profile from OTLP profiles (otlp_profile.c) ----------------- */

/* The string form of an attribute value, as Pyroscope takes it: a string, an
 * integer in decimal (written in buf), or the one element of an array of those;
 * NULL otherwise. d may be NULL: then a string_value_strindex is NULL too. */
const char *otlp_any_string(const Dict *d, const AnyValue *v, char *buf, size_t size);
/* Reads profile p's header into *h; PD_EINVAL (in c->err) when it is not one. */
int otlp_head_of(struct conv *c, const Profile *p, struct head *h);
/* The sample type a profile is stored under. */
void otlp_stored_type(const struct head *h, const char **type, const char **unit);
/* Converts the n profiles ps (of one time and period, each of another sample
 * type) into one pprof profile: *raw, *decoded and the name Pyroscope would give
 * it in *metric (NULL: by its sample types). *bad is the member that failed. */
int otlp_convert(struct conv *c, const Profile *const *ps, const struct head *hs, size_t n,
                 const struct pd_ingest_limits *lim, int64_t now_ms, uint8_t **raw,
                 size_t *rlen, struct pd_pprof_profile **decoded, const char **metric,
                 size_t *bad, int *limit);

#endif
