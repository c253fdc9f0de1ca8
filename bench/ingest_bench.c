/* ingest_bench.c: the push endpoints of other profilers against profd's own push,
 * through a running profd, on the same profiles. Every profile of a corpus is
 * pushed once per pass by a few libcurl connections in parallel (connection c
 * sends profiles c, c + C, c + 2C, ... in order, each on its own series), as:
 *   ref      POST /api/v1/profiles, the gzip pprof file as served (the reference)
 *   pprof    POST /ingest?format=pprof, the same bytes
 *   folded   POST /ingest (Pyroscope's folded "groups" body) of the profile's
 *            default sample type, as pd_pprof_folded writes it
 *   connect  POST /push.v1.PusherService/Push, application/proto: a PushRequest
 *            of one series with the gzip pprof as its one raw sample
 *   otlp     POST /v1development/profiles, application/x-protobuf: an
 *            ExportProfilesServiceRequest (opentelemetry-proto profiles/
 *            v1development) with one Profile per sample type over one dictionary,
 *            each in a ResourceProfiles of its own whose attributes name the type,
 *            a type's samples that are 0 in it left out (--otlp-zero-samples 1
 *            keeps them)
 * The bodies are made before a pass is timed; the time is from the first request
 * to the last answer, every answer checked to be a 200. Each pass runs the
 * reference, then the other cases in an order rotated from pass to pass. A case's
 * profiles per second is the median of its passes; its ratio is the median over
 * the passes of its rate over the reference's in the same pass, so that a change
 * in the load of the (shared) machine between passes moves both sides of a ratio.
 * The protobuf bodies are written here by hand (a few message types; no generated
 * code for them exists on every branch this builds on); the pprof is read with the
 * generated perftools.profiles code that pkg/pprof is built with.
 *
 * Series are (case, corpus folder, connection); every push has its own time, 1 ms
 * after the one before, and the pprof bodies carry it as time_nanos (appended to
 * the profile, gzip level 1 as Go writes profiles), so that passes and cases
 * append to the same series in order. A warm-up pass of every case over the
 * corpus sizes the timed passes: the corpus repeated until the reference takes
 * about --seconds.
 *
 * usage: ingest_bench --url http://127.0.0.1:PORT --corpus DIR [--name NAME]
 *                     [--conns N] [--passes N] [--per-type N] [--seconds S]
 *                     [--cases pprof,folded,connect,otlp] [--otlp-zero-samples 0|1] */
#define _POSIX_C_SOURCE 200809L
#include <curl/curl.h>
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profd/pprof.h"
#include "profd/util.h"
#include "profile.pb-c.h"

#define MAX_FILE ((size_t)64 << 20)
#define MAX_CONNS 16

typedef Perftools__Profiles__Profile PbProfile;

enum { C_REF, C_PPROF, C_FOLDED, C_CONNECT, C_OTLP, NCASES };
static const char *const case_names[NCASES] = {"ref", "pprof", "folded", "connect", "otlp"};
static const char *const case_show[NCASES] = {
    "POST /api/v1/profiles (reference)", "/ingest?format=pprof", "/ingest folded",
    "Connect Push (application/proto)", "OTLP /v1development/profiles"};

struct prof {
	char kind[32]; /* the corpus folder: heap, cpu, ... */
	uint8_t *gz;   /* the file as served */
	size_t gz_len;
	uint8_t *raw; /* gunzipped */
	size_t raw_len;
	uint8_t *folded; /* default sample type's folded stacks */
	size_t folded_len;
	char folded_type[64];
	char folded_units[16];
	uint8_t *otlp_dict; /* the OTLP dictionary message, encoded once */
	size_t otlp_dict_len;
	/* one OTLP Profile message per sample type, without its time_unix_nano */
	uint8_t **otlp_prof;
	size_t *otlp_prof_len;
	char **type_names; /* each sample type's name */
	size_t ntypes;
	size_t ntypes_stored; /* the types with a sample: the OTLP profiles stored */
	int64_t dur_ns;
};

/* One push of a pass: profile i at time t_ms, its pprof with that time_nanos. */
struct item {
	size_t i;
	int64_t t_ms;
	uint8_t *gz; /* the raw pprof with time_nanos = t_ms, gzip level 1 as Go writes it */
	size_t gz_len;
};

struct req {
	char url[1024];
	const char *ctype;
	const uint8_t *body;
	size_t len;
	uint8_t *owned;
};

static struct prof *profs;
static size_t nprofs;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("ingest_bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- a protobuf writer ---------------------------------------------------------- */

static void put(struct pd_buf *b, const void *p, size_t n)
{
	if (pd_buf_append(b, p, n))
		die("out of memory");
}

static void varint(struct pd_buf *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;
	do {
		t[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			t[n] |= 0x80;
		n++;
	} while (v);
	put(b, t, n);
}

static void tag(struct pd_buf *b, unsigned field, unsigned wire)
{
	varint(b, (uint64_t)field << 3 | wire);
}

/* a varint field, left out when zero (proto3) */
static void f_varint(struct pd_buf *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	tag(b, field, 0);
	varint(b, v);
}

static void f_bytes(struct pd_buf *b, unsigned field, const void *p, size_t n)
{
	tag(b, field, 2);
	varint(b, n);
	put(b, p, n);
}

static void f_str(struct pd_buf *b, unsigned field, const char *s)
{
	f_bytes(b, field, s, strlen(s));
}

static void f_msg(struct pd_buf *b, unsigned field, const struct pd_buf *m)
{
	f_bytes(b, field, m->data, m->len);
}

static void f_fixed64(struct pd_buf *b, unsigned field, uint64_t v)
{
	uint8_t t[8];
	if (!v)
		return;
	for (int i = 0; i < 8; i++)
		t[i] = (uint8_t)(v >> (8 * i));
	tag(b, field, 1);
	put(b, t, 8);
}

/* ---- pprof to OTLP profiles ------------------------------------------------------ */

/* index of id in a table of ids (pprof ids are usually 1..n in order) */
static size_t id_index(const uint64_t *ids, size_t n, uint64_t id, const char *what)
{
	if (id >= 1 && id <= n && ids[id - 1] == id)
		return (size_t)id - 1;
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return i;
	die("a location refers to a missing %s %" PRIu64, what, id);
}

/* attribute table entries: key, string value or number and unit, deduplicated */
struct attr {
	int64_t key, str, num, unit;
};
struct attrs {
	struct attr *v;
	size_t n, cap;
	int32_t *slot; /* open addressing, index + 1 */
	size_t nslot;
};

static uint64_t attr_hash(const struct attr *a)
{
	uint64_t h = 1469598103934665603ull;
	int64_t f[4] = {a->key, a->str, a->num, a->unit};
	for (int i = 0; i < 4; i++)
		h = (h ^ (uint64_t)f[i]) * 1099511628211ull;
	return h;
}

static int32_t attr_intern(struct attrs *t, const struct attr *a)
{
	if (2 * (t->n + 1) >= t->nslot) {
		size_t ns = t->nslot ? 2 * t->nslot : 64;
		int32_t *s = calloc(ns, sizeof *s);
		if (!s)
			die("out of memory");
		for (size_t i = 0; i < t->n; i++) {
			size_t k = attr_hash(&t->v[i]) & (ns - 1);
			while (s[k])
				k = (k + 1) & (ns - 1);
			s[k] = (int32_t)i + 1;
		}
		free(t->slot);
		t->slot = s;
		t->nslot = ns;
	}
	size_t k = attr_hash(a) & (t->nslot - 1);
	while (t->slot[k]) {
		const struct attr *x = &t->v[t->slot[k] - 1];
		if (x->key == a->key && x->str == a->str && x->num == a->num && x->unit == a->unit)
			return t->slot[k]; /* table index: entry 0 is the zero one */
		k = (k + 1) & (t->nslot - 1);
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->v = realloc(t->v, t->cap * sizeof *t->v);
		if (!t->v)
			die("out of memory");
	}
	t->v[t->n++] = *a;
	t->slot[k] = (int32_t)t->n;
	return (int32_t)t->n;
}

/* 1: OTLP profiles keep samples whose value is 0 for their type (--otlp-zero-samples) */
static int otlp_zeros;

/* Fills p->otlp_dict (a ProfilesDictionary message) and p->otlp_prof (one Profile
 * message per sample type, its time left for the push to add). The tables' entry 0
 * is the zero value, as the format asks; sample i's stack is stack i + 1. A type's
 * profile leaves out the samples that are 0 in it (a heap profile's freed
 * allocations in its inuse types), unless otlp_zeros. */
static void to_otlp(struct prof *p, const PbProfile *pb)
{
	struct pd_buf d, m, s, tmp;
	pd_buf_init(&d, 0);
	pd_buf_init(&m, 0);
	pd_buf_init(&s, 0);
	pd_buf_init(&tmp, 0);
	uint64_t *map_ids = calloc(pb->n_mapping + 1, sizeof *map_ids);
	uint64_t *loc_ids = calloc(pb->n_location + 1, sizeof *loc_ids);
	uint64_t *fn_ids = calloc(pb->n_function + 1, sizeof *fn_ids);
	if (!map_ids || !loc_ids || !fn_ids)
		die("out of memory");
	for (size_t i = 0; i < pb->n_mapping; i++)
		map_ids[i] = pb->mapping[i]->id;
	for (size_t i = 0; i < pb->n_location; i++)
		loc_ids[i] = pb->location[i]->id;
	for (size_t i = 0; i < pb->n_function; i++)
		fn_ids[i] = pb->function[i]->id;

	/* mapping_table = 1 */
	f_msg(&d, 1, &m);
	for (size_t i = 0; i < pb->n_mapping; i++) {
		const Perftools__Profiles__Mapping *x = pb->mapping[i];
		m.len = 0;
		f_varint(&m, 1, x->memory_start);
		f_varint(&m, 2, x->memory_limit);
		f_varint(&m, 3, x->file_offset);
		f_varint(&m, 4, (uint64_t)x->filename);
		f_msg(&d, 1, &m);
	}
	/* location_table = 2 */
	m.len = 0;
	f_msg(&d, 2, &m);
	for (size_t i = 0; i < pb->n_location; i++) {
		const Perftools__Profiles__Location *x = pb->location[i];
		m.len = 0;
		if (x->mapping_id)
			f_varint(&m, 1,
			         id_index(map_ids, pb->n_mapping, x->mapping_id, "mapping") + 1);
		f_varint(&m, 2, x->address);
		for (size_t k = 0; k < x->n_line; k++) {
			s.len = 0;
			f_varint(
			    &s, 1,
			    id_index(fn_ids, pb->n_function, x->line[k]->function_id, "function") +
			        1);
			f_varint(&s, 2, (uint64_t)x->line[k]->line);
			f_msg(&m, 3, &s);
		}
		f_msg(&d, 2, &m);
	}
	/* function_table = 3 */
	m.len = 0;
	f_msg(&d, 3, &m);
	for (size_t i = 0; i < pb->n_function; i++) {
		const Perftools__Profiles__Function *x = pb->function[i];
		m.len = 0;
		f_varint(&m, 1, (uint64_t)x->name);
		f_varint(&m, 2, (uint64_t)x->system_name);
		f_varint(&m, 3, (uint64_t)x->filename);
		f_varint(&m, 4, (uint64_t)x->start_line);
		f_msg(&d, 3, &m);
	}
	/* string_table = 5: pprof's own ("" first) */
	for (size_t i = 0; i < pb->n_string_table; i++)
		f_str(&d, 5, pb->string_table[i]);
	/* the attributes of every sample, interned; stack_table = 7 */
	struct attrs at = {0};
	int32_t **sattr = calloc(pb->n_sample + 1, sizeof *sattr);
	if (!sattr)
		die("out of memory");
	m.len = 0;
	f_msg(&d, 7, &m);
	for (size_t i = 0; i < pb->n_sample; i++) {
		const Perftools__Profiles__Sample *x = pb->sample[i];
		m.len = 0;
		s.len = 0;
		for (size_t k = 0; k < x->n_location_id; k++)
			varint(&s,
			       id_index(loc_ids, pb->n_location, x->location_id[k], "location") +
			           1);
		if (s.len)
			f_msg(&m, 1, &s);
		f_msg(&d, 7, &m);
		if (x->n_label) {
			sattr[i] = calloc(x->n_label + 1, sizeof **sattr);
			if (!sattr[i])
				die("out of memory");
			for (size_t k = 0; k < x->n_label; k++) {
				const Perftools__Profiles__Label *l = x->label[k];
				struct attr a = {l->key, l->str, l->str ? 0 : l->num, l->num_unit};
				sattr[i][k] = attr_intern(&at, &a);
			}
		}
	}
	/* attribute_table = 6 */
	m.len = 0;
	f_msg(&d, 6, &m);
	for (size_t i = 0; i < at.n; i++) {
		m.len = 0;
		s.len = 0;
		f_varint(&m, 1, (uint64_t)at.v[i].key);
		if (at.v[i].str)
			f_varint(&s, 8, (uint64_t)at.v[i].str); /* string_value_strindex */
		else {
			tag(&s, 3, 0); /* int_value, zero included */
			varint(&s, (uint64_t)at.v[i].num);
		}
		f_msg(&m, 2, &s);
		f_varint(&m, 3, (uint64_t)at.v[i].unit);
		f_msg(&d, 6, &m);
	}
	/* one Profile per sample type */
	pd_buf_fini(&m);
	p->otlp_prof = calloc(pb->n_sample_type + 1, sizeof *p->otlp_prof);
	p->otlp_prof_len = calloc(pb->n_sample_type + 1, sizeof *p->otlp_prof_len);
	p->type_names = calloc(pb->n_sample_type + 1, sizeof *p->type_names);
	if (!p->otlp_prof || !p->otlp_prof_len || !p->type_names)
		die("out of memory");
	for (size_t t = 0; t < pb->n_sample_type; t++) {
		int64_t ti = pb->sample_type[t]->type;
		if (ti < 0 || (size_t)ti >= pb->n_string_table)
			die("sample type %zu: string %" PRId64 " is out of the string table", t,
			    ti);
		if (!(p->type_names[t] = strdup(pb->string_table[ti])))
			die("out of memory");
		pd_buf_init(&m, 0);
		s.len = 0;
		f_varint(&s, 1, (uint64_t)pb->sample_type[t]->type);
		f_varint(&s, 2, (uint64_t)pb->sample_type[t]->unit);
		f_msg(&m, 1, &s);
		size_t kept = 0;
		for (size_t i = 0; i < pb->n_sample; i++) {
			const Perftools__Profiles__Sample *x = pb->sample[i];
			int64_t v = t < x->n_value ? x->value[t] : 0;
			if (!v && !otlp_zeros)
				continue;
			kept++;
			s.len = 0;
			f_varint(&s, 1, i + 1);
			if (x->n_label) {
				tmp.len = 0;
				for (size_t k = 0; k < x->n_label; k++)
					varint(&tmp, (uint64_t)sattr[i][k]);
				f_msg(&s, 2, &tmp);
			}
			tmp.len = 0;
			varint(&tmp, (uint64_t)v);
			f_msg(&s, 4, &tmp);
			f_msg(&m, 2, &s);
		}
		f_varint(&m, 4, (uint64_t)pb->duration_nanos);
		if (pb->period_type) {
			s.len = 0;
			f_varint(&s, 1, (uint64_t)pb->period_type->type);
			f_varint(&s, 2, (uint64_t)pb->period_type->unit);
			f_msg(&m, 5, &s);
		}
		f_varint(&m, 6, (uint64_t)pb->period);
		p->otlp_prof[t] = pd_buf_steal(&m, &p->otlp_prof_len[t]);
		p->ntypes_stored += kept > 0;
	}
	p->otlp_dict = pd_buf_steal(&d, &p->otlp_dict_len);
	p->ntypes = pb->n_sample_type;
	for (size_t i = 0; i < pb->n_sample; i++)
		free(sattr[i]);
	free(sattr);
	free(at.v);
	free(at.slot);
	free(map_ids);
	free(loc_ids);
	free(fn_ids);
	pd_buf_fini(&m);
	pd_buf_fini(&s);
	pd_buf_fini(&tmp);
}

/* ---- the corpus ------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static const char *units_of(const char *unit)
{
	if (strcmp(unit, "bytes") == 0)
		return "bytes";
	if (strcmp(unit, "count") == 0)
		return "objects";
	return "samples";
}

/* The type suffix of a folded push's name, as Pyroscope names the type: the
 * sample type, but for Go's block and mutex types (block_duration, mutex_count,
 * ...) and goroutine (goroutines); threadcreate, which Pyroscope has no name
 * for, is pushed as goroutines (a count of stacks as well). */
static void folded_suffix(char *out, size_t size, const char *kind, const char *type)
{
	int delay = strcmp(type, "delay") == 0, cont = strcmp(type, "contentions") == 0;
	if (delay || cont)
		snprintf(out, size, "%s_%s", strcmp(kind, "mutex") == 0 ? "mutex" : "block",
		         delay ? "duration" : "count");
	else if (strcmp(type, "goroutine") == 0 || strcmp(type, "threadcreate") == 0)
		snprintf(out, size, "goroutines");
	else
		snprintf(out, size, "%s", type);
}

static void load_one(struct prof *p, const char *path, const char *kind)
{
	struct pd_err err = {0};
	snprintf(p->kind, sizeof p->kind, "%s", kind);
	if (pd_file_read(path, MAX_FILE, &p->gz, &p->gz_len, &err))
		die("%s: %s", path, err.msg);
	if (pd_gzip_is(p->gz, p->gz_len)) {
		if (pd_gunzip(p->gz, p->gz_len, MAX_FILE, &p->raw, &p->raw_len, &err))
			die("%s: %s", path, err.msg);
	} else {
		p->raw = malloc(p->gz_len);
		if (!p->raw)
			die("out of memory");
		memcpy(p->raw, p->gz, p->gz_len);
		p->raw_len = p->gz_len;
	}
	struct pd_pprof_profile *d = NULL;
	if (pd_pprof_decode(&d, p->raw, p->raw_len, NULL, &err))
		die("%s: %s", path, err.msg);
	int si = pd_pprof_default_sample_index(d);
	if (si < 0)
		die("%s: no sample type", path);
	folded_suffix(p->folded_type, sizeof p->folded_type, kind,
	              pd_pprof_sample_type(d, (size_t)si));
	snprintf(p->folded_units, sizeof p->folded_units, "%s",
	         units_of(pd_pprof_sample_unit(d, (size_t)si)));
	struct pd_buf b;
	pd_buf_init(&b, MAX_FILE);
	if (pd_pprof_folded(d, si, &b, &err))
		die("%s: folded: %s", path, err.msg);
	p->folded = pd_buf_steal(&b, &p->folded_len);
	p->dur_ns = pd_pprof_duration_nanos(d);
	pd_pprof_destroy(d);
	PbProfile *pb = perftools__profiles__profile__unpack(NULL, p->raw_len, p->raw);
	if (!pb)
		die("%s: not a profile.proto message", path);
	to_otlp(p, pb);
	perftools__profiles__profile__free_unpacked(pb, NULL);
}

/* Every DIR/<kind>/<n>.pb.gz, kinds by name, files by n, at most per_type each. */
static void load_corpus(const char *dir, size_t per_type)
{
	DIR *dd = opendir(dir);
	if (!dd)
		die("cannot open corpus %s", dir);
	char *kinds[64];
	size_t nk = 0;
	struct dirent *e;
	while ((e = readdir(dd)) && nk < 64)
		if (e->d_name[0] != '.' && strlen(e->d_name) < 32)
			kinds[nk++] = strdup(e->d_name);
	closedir(dd);
	qsort(kinds, nk, sizeof kinds[0], cmp_str);
	size_t cap = 0;
	for (size_t k = 0; k < nk; k++) {
		char path[4096];
		for (size_t n = 1; !per_type || n <= per_type; n++) {
			snprintf(path, sizeof path, "%s/%s/%zu.pb.gz", dir, kinds[k], n);
			FILE *f = fopen(path, "rb");
			if (!f)
				break;
			fclose(f);
			if (nprofs == cap) {
				cap = cap ? 2 * cap : 256;
				profs = realloc(profs, cap * sizeof *profs);
				if (!profs)
					die("out of memory");
			}
			memset(&profs[nprofs], 0, sizeof profs[0]);
			load_one(&profs[nprofs++], path, kinds[k]);
		}
		free(kinds[k]);
	}
	if (!nprofs)
		die("no DIR/<type>/<n>.pb.gz files in %s", dir);
}

/* ---- requests ---------------------------------------------------------------------- */

static const char *base_url;

/* The request of case cs for item x, sent by connection c: series (kind, c) of
 * the case's own naming, at x->t_ms. */
static void build(struct req *r, int cs, const struct item *x, int c)
{
	const struct prof *p = &profs[x->i];
	char *u = r->url;
	size_t us = sizeof r->url;
	int64_t t = x->t_ms, until = t + (p->dur_ns > 0 ? p->dur_ns / 1000000 : 10000);
	char cb[16];
	snprintf(cb, sizeof cb, "%d", c);
	r->owned = NULL;
	switch (cs) {
	case C_REF:
		snprintf(u, us,
		         "%s/api/v1/"
		         "profiles?labels=%s%%7Bjob%%3D%%22bench%%22%%2Ccase%%3D%%22ref%%22%%"
		         "2Cconn%%3D%%22%d%%22"
		         "%%7D",
		         base_url, p->kind, c);
		r->ctype = "application/octet-stream";
		r->body = x->gz;
		r->len = x->gz_len;
		break;
	case C_PPROF:
		snprintf(u, us,
		         "%s/"
		         "ingest?format=pprof&name=bench.%s%%7Bkind%%3D%s%%2Ccase%%3Dpprof%%2Cconn%"
		         "%3D%d%%7D"
		         "&from=%" PRId64 "&until=%" PRId64,
		         base_url, p->kind, p->kind, c, t, until);
		r->ctype = "application/octet-stream";
		r->body = x->gz;
		r->len = x->gz_len;
		break;
	case C_FOLDED:
		snprintf(u, us,
		         "%s/"
		         "ingest?name=bench.%s%%7Bkind%%3D%s%%2Ccase%%3Dfolded%%2Cconn%%3D%d%%7D&"
		         "from=%" PRId64 "&until=%" PRId64 "&units=%s&sampleRate=100&spyName=gospy",
		         base_url, p->folded_type, p->kind, c, t, until, p->folded_units);
		r->ctype = "text/plain";
		r->body = p->folded;
		r->len = p->folded_len;
		break;
	case C_CONNECT: {
		struct pd_buf b, s, l;
		pd_buf_init(&b, 0);
		pd_buf_init(&s, 0);
		pd_buf_init(&l, 0);
		const char *kv[][2] = {{"__name__", p->kind},
		                       {"service_name", "bench"},
		                       {"kind", p->kind},
		                       {"case", "connect"},
		                       {"conn", cb}};
		for (size_t k = 0; k < sizeof kv / sizeof kv[0]; k++) {
			l.len = 0;
			f_str(&l, 1, kv[k][0]);
			f_str(&l, 2, kv[k][1]);
			f_msg(&s, 1, &l);
		}
		l.len = 0;
		f_bytes(&l, 1, x->gz, x->gz_len);
		f_msg(&s, 2, &l);
		f_msg(&b, 1, &s);
		r->owned = pd_buf_steal(&b, &r->len);
		r->body = r->owned;
		pd_buf_fini(&s);
		pd_buf_fini(&l);
		snprintf(u, us, "%s/push.v1.PusherService/Push", base_url);
		r->ctype = "application/proto";
		break;
	}
	case C_OTLP: {
		/* one ResourceProfiles per sample type, its name among the resource's
		 * attributes, so that each type is a series of its own */
		struct pd_buf b, rp, res, kvb, av, sp, pr;
		pd_buf_init(&b, 0);
		pd_buf_init(&rp, 0);
		pd_buf_init(&res, 0);
		pd_buf_init(&kvb, 0);
		pd_buf_init(&av, 0);
		pd_buf_init(&sp, 0);
		pd_buf_init(&pr, 0);
		for (size_t k = 0; k < p->ntypes; k++) {
			const char *kv[][2] = {{"service.name", "bench"},
			                       {"case", "otlp"},
			                       {"kind", p->kind},
			                       {"conn", cb},
			                       {"sample_type", p->type_names[k]}};
			rp.len = 0;
			res.len = 0;
			sp.len = 0;
			for (size_t j = 0; j < sizeof kv / sizeof kv[0]; j++) {
				kvb.len = 0;
				av.len = 0;
				f_str(&kvb, 1, kv[j][0]);
				f_str(&av, 1, kv[j][1]);
				f_msg(&kvb, 2, &av);
				f_msg(&res, 1, &kvb);
			}
			f_msg(&rp, 1, &res);
			pr.len = 0;
			put(&pr, p->otlp_prof[k], p->otlp_prof_len[k]);
			f_fixed64(&pr, 3, (uint64_t)t * 1000000);
			f_msg(&sp, 2, &pr);
			f_msg(&rp, 2, &sp);
			f_msg(&b, 1, &rp);
		}
		f_bytes(&b, 2, p->otlp_dict, p->otlp_dict_len);
		r->owned = pd_buf_steal(&b, &r->len);
		r->body = r->owned;
		pd_buf_fini(&rp);
		pd_buf_fini(&res);
		pd_buf_fini(&kvb);
		pd_buf_fini(&av);
		pd_buf_fini(&sp);
		pd_buf_fini(&pr);
		snprintf(u, us, "%s/v1development/profiles", base_url);
		r->ctype = "application/x-protobuf";
		break;
	}
	}
}

/* ---- a timed pass ------------------------------------------------------------------- */

struct worker {
	pthread_t th;
	int c, nconns;
	struct req *reqs; /* all of the pass's requests; this worker sends its share */
	size_t nreqs;
	size_t sent, failed;
	long first_code;
	char first_err[640];
	char resp[256]; /* the start of the current answer's body */
	size_t resp_len;
	pthread_barrier_t *start;
};

static size_t sink(char *p, size_t sz, size_t n, void *u)
{
	struct worker *w = u;
	size_t len = sz * n, room = sizeof w->resp - 1 - w->resp_len;
	size_t k = len < room ? len : room;
	memcpy(w->resp + w->resp_len, p, k);
	w->resp_len += k;
	return len;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	CURL *h = curl_easy_init();
	if (!h)
		die("curl_easy_init failed");
	char ct[128];
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	pthread_barrier_wait(w->start);
	for (size_t i = (size_t)w->c; i < w->nreqs; i += (size_t)w->nconns) {
		struct req *r = &w->reqs[i];
		snprintf(ct, sizeof ct, "Content-Type: %s", r->ctype);
		struct curl_slist *hd = curl_slist_append(NULL, ct);
		hd = curl_slist_append(hd, "Expect:");
		curl_easy_setopt(h, CURLOPT_URL, r->url);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, (const char *)r->body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
		long code = 0;
		w->resp_len = 0;
		CURLcode rc = curl_easy_perform(h);
		if (rc == CURLE_OK)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		curl_slist_free_all(hd);
		w->sent++;
		if (code != 200 && ++w->failed == 1) {
			w->first_code = code;
			w->resp[w->resp_len] = 0;
			for (char *q = w->resp; *q; q++)
				if (*q < ' ')
					*q = ' ';
			snprintf(w->first_err, sizeof w->first_err, "%s [%s]",
			         rc != CURLE_OK ? curl_easy_strerror(rc) : w->resp,
			         r->url + strlen(base_url));
		}
	}
	curl_easy_cleanup(h);
	return NULL;
}

/* The items of a pass: every profile `repeat` times, at times from *next_ms on,
 * 1 ms apart, so that each series' times rise across passes and cases. */
static struct item *make_items(size_t repeat, int64_t *next_ms)
{
	size_t n = nprofs * repeat;
	struct item *v = calloc(n, sizeof *v);
	struct pd_buf b;
	struct pd_err err = {0};
	if (!v)
		die("out of memory");
	pd_buf_init(&b, 0);
	for (size_t g = 0; g < n; g++) {
		struct item *x = &v[g];
		x->i = g % nprofs;
		x->t_ms = (*next_ms)++;
		/* time_nanos = 9, appended: of a repeated scalar field the last counts */
		b.len = 0;
		put(&b, profs[x->i].raw, profs[x->i].raw_len);
		tag(&b, 9, 0);
		varint(&b, (uint64_t)x->t_ms * 1000000);
		if (pd_gzip(b.data, b.len, 1, &x->gz, &x->gz_len, &err))
			die("gzip: %s", err.msg);
	}
	pd_buf_fini(&b);
	return v;
}

static void free_items(struct item *v, size_t n)
{
	for (size_t g = 0; g < n; g++)
		free(v[g].gz);
	free(v);
}

/* Runs case cs over the items; returns the seconds, or -1 when a request failed
 * (the first failure is printed). */
static double run_pass(int cs, const struct item *items, size_t n, int nconns)
{
	struct req *reqs = calloc(n, sizeof *reqs);
	struct worker ws[MAX_CONNS];
	pthread_barrier_t start;
	if (!reqs)
		die("out of memory");
	for (size_t g = 0; g < n; g++)
		build(&reqs[g], cs, &items[g], (int)(g % (size_t)nconns));
	pthread_barrier_init(&start, NULL, (unsigned)nconns + 1);
	for (int c = 0; c < nconns; c++) {
		ws[c] = (struct worker){
		    .c = c, .nconns = nconns, .reqs = reqs, .nreqs = n, .start = &start};
		if (pthread_create(&ws[c].th, NULL, work, &ws[c]))
			die("pthread_create failed");
	}
	pthread_barrier_wait(&start);
	double t0 = now_s();
	size_t failed = 0;
	for (int c = 0; c < nconns; c++) {
		pthread_join(ws[c].th, NULL);
		if (ws[c].failed && !failed)
			fprintf(
			    stderr,
			    "ingest_bench: %s: %zu of %zu requests failed; first: HTTP %ld %s\n",
			    case_names[cs], ws[c].failed, ws[c].sent, ws[c].first_code,
			    ws[c].first_err);
		failed += ws[c].failed;
	}
	double t = now_s() - t0;
	pthread_barrier_destroy(&start);
	for (size_t g = 0; g < n; g++)
		free(reqs[g].owned);
	free(reqs);
	return failed ? -1 : t;
}

/* ---- what was stored ------------------------------------------------------------------ */

static size_t grow(char *p, size_t sz, size_t n, void *u)
{
	return pd_buf_append(u, p, sz * n) ? 0 : sz * n;
}

/* GET url into b; the HTTP status, 0 when the request failed. */
static long get(CURL *h, const char *url, struct pd_buf *b)
{
	long code = 0;
	b->len = 0;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, grow);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	return code;
}

/* The total of sample type `type` in p, -1 when p has no such type. */
static int64_t total_of(const struct pd_pprof_profile *p, const char *type)
{
	for (size_t k = 0; k < pd_pprof_sample_type_count(p); k++)
		if (strcmp(pd_pprof_sample_type(p, k), type) == 0)
			return pd_pprof_sum(p, (int)k);
	return -1;
}

/* After the warm-up pass: for the first profile of every corpus folder, the
 * profile each of the cases ref, pprof, connect and otlp stored at its time is
 * fetched (GET /api/v1/query?report=proto) and every sample type's sum compared
 * with the pushed profile's (OTLP's CPU sample counts as the cpu nanoseconds
 * profd makes of them); folded must have stored a profile there. Dies on a
 * difference: the cases must store the same profiles to be compared. Cases that
 * failed are left out. Returns how many stored profiles were checked. */
static size_t check_stored(const int *order, int nc, const int *bad, const struct item *items,
                           int nconns)
{
	CURL *h = curl_easy_init();
	struct pd_buf b;
	struct pd_err err = {0};
	size_t checked = 0;
	if (!h)
		die("curl_easy_init failed");
	pd_buf_init(&b, MAX_FILE);
	for (size_t i = 0; i < nprofs; i++) {
		const struct prof *p = &profs[i];
		if (i > 0 && strcmp(profs[i - 1].kind, p->kind) == 0)
			continue;
		struct pd_pprof_profile *src = NULL;
		if (pd_pprof_decode(&src, p->raw, p->raw_len, NULL, &err))
			die("%s: %s", p->kind, err.msg);
		int c = (int)(i % (size_t)nconns);
		for (int k = 0; k < nc; k++) {
			int cs = order[k];
			if (bad[cs])
				continue;
			/* OTLP: one series per sample type, each with that type alone */
			size_t ntry = cs == C_OTLP ? p->ntypes : 1;
			for (size_t ty = 0; ty < ntry; ty++) {
				const char *only = cs == C_OTLP ? p->type_names[ty] : NULL;
				if (only && total_of(src, only) == 0)
					continue; /* no samples: not sent */
				char sel[512], url[2048];
				if (cs == C_REF)
					snprintf(sel, sizeof sel, "%s{case=\"ref\",conn=\"%d\"}",
					         p->kind, c);
				else
					snprintf(sel, sizeof sel,
					         "{case=\"%s\",conn=\"%d\",kind=\"%s\"%s%s%s}",
					         case_names[cs], c, p->kind,
					         only ? ",sample_type=\"" : "", only ? only : "",
					         only ? "\"" : "");
				char *q = curl_easy_escape(h, sel, 0);
				snprintf(url, sizeof url,
				         "%s/api/v1/query?query=%s&time=%.3f&report=proto",
				         base_url, q, (double)items[i].t_ms / 1000);
				curl_free(q);
				long code = get(h, url, &b);
				if (code != 200)
					die("check: %s %s at %" PRId64 " ms: HTTP %ld %.*s",
					    case_names[cs], sel, items[i].t_ms, code,
					    (int)(b.len < 300 ? b.len : 300), (const char *)b.data);
				struct pd_pprof_profile *got = NULL;
				if (pd_pprof_decode(&got, b.data, b.len, NULL, &err))
					die("check: %s %s: the stored profile: %s", case_names[cs],
					    sel, err.msg);
				for (size_t t = 0; t < pd_pprof_sample_type_count(src); t++) {
					const char *tn = pd_pprof_sample_type(src, t);
					if (cs == C_FOLDED || (only && strcmp(tn, only) != 0))
						continue;
					int64_t want = pd_pprof_sum(src, (int)t),
					        have = total_of(got, tn);
					/* OTLP's CPU samples (count, period cpu nanoseconds) are
					 * stored as cpu nanoseconds, count x period, as Pyroscope
					 * stores an eBPF profiler's */
					if (cs == C_OTLP && have < 0 &&
					    strcmp(tn, "samples") == 0 &&
					    strcmp(pd_pprof_period_type(src), "cpu") == 0) {
						have = total_of(got, "cpu");
						want *= pd_pprof_period(src);
					}
					if (have != want)
						die("check: %s stored %s with %s %" PRId64
						    " where the pushed profile has %" PRId64,
						    case_names[cs], sel, tn, have, want);
				}
				pd_pprof_destroy(got);
				checked++;
			}
		}
		pd_pprof_destroy(src);
	}
	pd_buf_fini(&b);
	curl_easy_cleanup(h);
	return checked;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *corpus = NULL, *name = NULL, *cases = "pprof,folded,connect,otlp";
	int nconns = 4, passes = 5;
	size_t per_type = 0;
	double seconds = 3;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			die("%s needs a value (see the usage at the top of bench/ingest_bench.c)",
			    a);
		if (strcmp(a, "--url") == 0)
			base_url = v;
		else if (strcmp(a, "--corpus") == 0)
			corpus = v;
		else if (strcmp(a, "--name") == 0)
			name = v;
		else if (strcmp(a, "--conns") == 0)
			nconns = atoi(v);
		else if (strcmp(a, "--passes") == 0)
			passes = atoi(v);
		else if (strcmp(a, "--per-type") == 0)
			per_type = (size_t)atol(v);
		else if (strcmp(a, "--seconds") == 0)
			seconds = atof(v);
		else if (strcmp(a, "--cases") == 0)
			cases = v;
		else if (strcmp(a, "--otlp-zero-samples") == 0)
			otlp_zeros = atoi(v) != 0;
		else
			die("unknown option %s", a);
		i++;
	}
	if (!base_url || !corpus)
		die("usage: ingest_bench --url URL --corpus DIR [--name NAME] [--conns N] "
		    "[--passes N] [--per-type N] [--seconds S] [--cases "
		    "pprof,folded,connect,otlp]");
	if (nconns < 1 || nconns > MAX_CONNS)
		die("--conns must be 1..%d", MAX_CONNS);
	if (passes < 1 || passes > 99)
		die("--passes must be 1..99");
	if (!(seconds > 0 && seconds < 600))
		die("--seconds must be between 0 and 600");
	int order[NCASES], nc = 0;
	order[nc++] = C_REF;
	for (int k = 1; k < NCASES; k++) {
		const char *s = strstr(cases, case_names[k]);
		size_t n = strlen(case_names[k]);
		if (s && (s == cases || s[-1] == ',') && (s[n] == 0 || s[n] == ','))
			order[nc++] = k;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		die("curl_global_init failed");
	load_corpus(corpus, per_type);
	size_t gz = 0, raw = 0, types = 0, stored = 0, fb = 0, ob = 0;
	for (size_t i = 0; i < nprofs; i++) {
		gz += profs[i].gz_len;
		raw += profs[i].raw_len;
		types += profs[i].ntypes;
		stored += profs[i].ntypes_stored;
		fb += profs[i].folded_len;
		ob += profs[i].otlp_dict_len;
		for (size_t k = 0; k < profs[i].ntypes; k++)
			ob += profs[i].otlp_prof_len[k];
	}
	/* the times: from an hour ago on, 1 ms apart */
	int64_t next_ms = ((int64_t)time(NULL) - 3600) * 1000;
	/* a warm-up pass of every case over the corpus once, the reference's rate
	 * sizing the timed passes to about `seconds` each */
	struct item *items = make_items(1, &next_ms);
	int bad[NCASES] = {0};
	double tref = 0;
	for (int k = 0; k < nc; k++) {
		double s = run_pass(order[k], items, nprofs, nconns);
		if (s < 0)
			bad[order[k]] = 1;
		if (order[k] == C_REF)
			tref = s;
	}
	if (bad[C_REF] || tref <= 0)
		die("the reference pushes failed");
	size_t checked = check_stored(order, nc, bad, items, nconns);
	free_items(items, nprofs);
	size_t repeat = (size_t)(seconds / tref + 0.5);
	if (repeat < 1)
		repeat = 1;
	size_t n = nprofs * repeat;
	printf("corpus %s: %zu profiles (%s), %.1f KB gzip / %.1f KB raw pprof / %.1f KB folded / "
	       "%.1f KB OTLP each on average, %.2f sample types; %d connections; %d passes per "
	       "case of %zu pushes (the corpus %zu times)\n",
	       name ? name : corpus, nprofs, corpus, gz / 1024.0 / nprofs, raw / 1024.0 / nprofs,
	       fb / 1024.0 / nprofs, ob / 1024.0 / nprofs, (double)types / nprofs, nconns, passes,
	       n, repeat);
	printf("checked: %zu stored profiles of the warm-up pass (every case, the first profile "
	       "of each folder) hold what was pushed, every sample type's sum equal\n",
	       checked);
	fflush(stdout);

	double t[NCASES][100], tp[NCASES][100], rt[NCASES][100];
	int nt[NCASES] = {0}, nr[NCASES] = {0};
	for (int pass = 0; pass < passes; pass++) {
		items = make_items(repeat, &next_ms);
		for (int k = 0; k < nc; k++) {
			/* the reference first, the others rotated */
			int cs = k == 0 ? C_REF : order[1 + (k - 1 + pass) % (nc - 1)];
			tp[cs][pass] = -1;
			if (bad[cs])
				continue;
			double s = run_pass(cs, items, n, nconns);
			if (s < 0)
				bad[cs] = 1;
			else
				t[cs][nt[cs]++] = tp[cs][pass] = s;
		}
		for (int k = 1; k < nc; k++) {
			int cs = order[k];
			if (tp[cs][pass] > 0 && tp[C_REF][pass] > 0)
				rt[cs][nr[cs]++] = tp[C_REF][pass] / tp[cs][pass];
		}
		free_items(items, n);
	}
	double med[NCASES] = {0};
	for (int cs = 0; cs < NCASES; cs++)
		if (nt[cs]) {
			qsort(t[cs], (size_t)nt[cs], sizeof(double), cmp_dbl);
			med[cs] = t[cs][nt[cs] / 2];
		}
	double ref = med[C_REF] > 0 ? n / med[C_REF] : 0;
	printf("%-36s %10s %8s %8s %10s %7s %7s %7s %5s\n", "case", "profiles/s", "min", "max",
	       "ref prof/s", "ratio", "min", "max", "aim");
	for (int k = 0; k < nc; k++) {
		int cs = order[k];
		if (bad[cs] || !med[cs]) {
			printf("%-36s %12s\n", case_show[cs], "failed");
			continue;
		}
		double r = n / med[cs], lo = n / t[cs][nt[cs] - 1], hi = n / t[cs][0];
		double aim = cs == C_PPROF ? 0.8 : 0.5;
		if (cs == C_REF) {
			printf("%-36s %10.0f %8.0f %8.0f\n", case_show[cs], r, lo, hi);
			continue;
		}
		qsort(rt[cs], (size_t)nr[cs], sizeof(double), cmp_dbl);
		double ratio = rt[cs][nr[cs] / 2];
		printf("%-36s %10.0f %8.0f %8.0f %10.0f %6.2fx %6.2fx %6.2fx %4.1fx %s\n",
		       case_show[cs], r, lo, hi, ref, ratio, rt[cs][0], rt[cs][nr[cs] - 1], aim,
		       ratio >= aim ? "met" : "NOT met");
	}
	for (int k = 1; k < nc; k++)
		if (order[k] == C_OTLP && !bad[C_OTLP] && med[C_OTLP] > 0) {
			double per = (double)stored / nprofs, r = n / med[C_OTLP];
			qsort(rt[C_OTLP], (size_t)nr[C_OTLP], sizeof(double), cmp_dbl);
			printf(
			    "OTLP stores each sample type with samples as a profile of its own "
			    "(%.2f "
			    "per pushed profile): %.0f stored profiles/s, %.2fx the reference's\n",
			    per, r * per, rt[C_OTLP][nr[C_OTLP] / 2] * per);
		}
	return 0;
}
