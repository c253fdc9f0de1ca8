/* fuzz_wal.c: libFuzzer target for the write-ahead log's reader, which reads
 * back whatever a crash, a full disk or bit rot left on disk
 * (docs/format/wal.md), and for the store's replay of it into the head. Each
 * input becomes one or two WAL segment files (or a checkpoint) in a per-process
 * temporary directory (under $TMPDIR, default /tmp); pd_wal_replay then reads
 * them with callbacks that touch every byte delivered, and must not crash. When
 * the replay succeeds (repairing a damaged tail if it must), the WAL must be
 * usable again: pd_wal_open, a commit, a cut and another commit must succeed,
 * and a second replay must deliver exactly what the first delivered plus the two
 * new commits, with nothing left to repair. Anything else is a bug, and aborts.
 *
 * Sample payloads are what the store would replay: the seeds' payloads are real
 * profiles (raw profile.proto from testdata/profiles, read from
 * PD_FUZZ_TESTDATA, set by tests/fuzz/CMakeLists.txt) for odd series refs and
 * short texts that are not profiles for even ones; one of the two commits after
 * the repair holds a profile too. With bit 7 the repaired directory is then
 * opened as a store (read-only), whose head replays the WAL through its value
 * chunk appender (encoding 2 decomposes profiles; other bytes are kept opaque):
 * opening may fail, but when it succeeds every sample it lists must read back as
 * a payload the WAL delivered for that series (the labels of the latest series
 * entry of the sample's ref before it) and time: the same profile
 * (pd_pprof_compare) when that payload is one, otherwise the same bytes.
 *
 * First byte of the input:
 *   bits 0-1  0: a valid segment header, then the rest as records
 *             1: the rest is the whole segment file (header included)
 *             2: the rest as records, after a header with version byte 1 and
 *                random reserved bytes taken from the rest
 *             3: like 0, split into two segments at a point the next byte picks
 *   bit 2     fix up the CRC of every record that fits in the file
 *   bit 3     build the records: the rest is a sequence of (length as a uvarint,
 *             payload) pieces, each wrapped in a commit record with a valid CRC
 *             (zstd-compressed when the length is odd), so mutations reach the
 *             payload decoder and the profiles in it
 *   bit 4     put the segment(s) in checkpoint.00000004/, followed by a valid
 *             segment 00000005 with one commit
 *   bits 5-6  number of the first segment: 1, 7, 99999999 or 4294967290 (a few
 *             below the last number, whose cut is refused)
 *   bit 7     replay into a store and read back, as above
 *
 * PD_FUZZ_WRITE_SEEDS=DIR makes the binary write its seed corpus into DIR and
 * exit; PD_FUZZ_VERBOSE=1 makes it print the replay's outcome. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "profd/pprof.h"
#include "profd/tsdb.h"
#include "profd/util.h"
#include "wal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char pd_fuzz_root[96]; /* the per-process temporary directory */
static char pd_fuzz_dir[128]; /* root/wal */
static int pd_fuzz_verbose;

/* Test profiles for sample payloads, raw (gunzipped, as the store keeps them). */
static const char *const pd_fuzz_prof_files[] = {
    "goapp/threadcreate.pb.gz", "edge/multi-types.pb", "edge/no-mappings.pb",
    "edge/sparse-ids.pb",
};
#define PD_FUZZ_NPROF (sizeof(pd_fuzz_prof_files) / sizeof(pd_fuzz_prof_files[0]))
static struct {
	uint8_t *p;
	size_t len;
} pd_fuzz_prof[PD_FUZZ_NPROF];

static void pd_fuzz_bug(const char *what, const struct pd_err *err)
{
	fprintf(stderr, "fuzz_wal: BUG: %s%s%s\n", what, err ? ": " : "", err ? err->msg : "");
	abort();
}

static int pd_fuzz_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void pd_fuzz_rm_rf(const char *path)
{
	nftw(path, pd_fuzz_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void pd_fuzz_cleanup(void)
{
	if (pd_fuzz_root[0])
		pd_fuzz_rm_rf(pd_fuzz_root);
}

static void pd_fuzz_write(const char *path, const uint8_t *p, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	size_t off = 0;
	if (fd < 0)
		pd_fuzz_bug("cannot create a file in the temporary directory", NULL);
	while (off < len) {
		ssize_t n = write(fd, p + off, len - off);
		if (n <= 0)
			pd_fuzz_bug("cannot write a file in the temporary directory", NULL);
		off += (size_t)n;
	}
	close(fd);
}

/* ---- building segment bytes ------------------------------------------------ */

static const uint8_t pd_fuzz_header[8] = {'P', 'D', 'W', 'L', 1, 0, 0, 0};

static void pd_fuzz_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void pd_fuzz_put(struct pd_buf *b, const void *p, size_t n)
{
	if (pd_buf_append(b, p, n))
		pd_fuzz_bug("out of memory", NULL);
}

static void pd_fuzz_put_uvarint(struct pd_buf *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;
	while (v >= 0x80) {
		t[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	t[n++] = (uint8_t)v;
	pd_fuzz_put(b, t, n);
}

/* Appends a record of type 1 holding payload p, zstd-compressed when asked. */
static void pd_fuzz_record(struct pd_buf *b, const uint8_t *p, size_t len, int zstd)
{
	uint8_t h[10];
	void *z = NULL;
	if (zstd) {
		size_t cap = ZSTD_compressBound(len);
		z = malloc(cap ? cap : 1);
		size_t n = z ? ZSTD_compress(z, cap, p, len, 1) : 0;
		if (!z || ZSTD_isError(n))
			pd_fuzz_bug("ZSTD_compress failed", NULL);
		p = z;
		len = n;
	}
	h[0] = 1;
	h[1] = zstd ? 1 : 0;
	pd_fuzz_be32(h + 2, (uint32_t)len);
	pd_fuzz_be32(h + 6, pd_crc32c(pd_crc32c(0, h, 6), p, len));
	pd_fuzz_put(b, h, sizeof(h));
	pd_fuzz_put(b, p, len);
	free(z);
}

static void pd_fuzz_load_profiles(void)
{
	struct pd_err err = {0};
	char path[512];
	for (size_t i = 0; i < PD_FUZZ_NPROF; i++) {
		uint8_t *buf, *raw;
		size_t n, rn;
		snprintf(path, sizeof(path), "%s/profiles/%s", PD_FUZZ_TESTDATA, pd_fuzz_prof_files[i]);
		if (pd_file_read(path, (size_t)1 << 24, &buf, &n, &err))
			pd_fuzz_bug("reading a test profile", &err);
		if (pd_gzip_is(buf, n)) {
			if (pd_gunzip(buf, n, (size_t)1 << 24, &raw, &rn, &err))
				pd_fuzz_bug(path, &err);
			free(buf);
			buf = raw;
			n = rn;
		}
		pd_fuzz_prof[i].p = buf;
		pd_fuzz_prof[i].len = n;
	}
}

/* A valid commit payload: n series with refs ref, ref+1, ..., and one sample of
 * each at t, t+1, ...: a test profile for an odd ref, a short text otherwise. */
static void pd_fuzz_commit_payload(struct pd_buf *b, uint64_t ref, size_t n, int64_t t)
{
	static const char *const l[] = {"__name__", "heap", "job", "fuzz"};
	static const char text[] = "a profile";
	pd_fuzz_put_uvarint(b, n);
	for (size_t k = 0; k < n; k++) {
		pd_fuzz_put_uvarint(b, ref + k);
		pd_fuzz_put_uvarint(b, 3);
		for (int i = 0; i < 4; i++) {
			pd_fuzz_put_uvarint(b, strlen(l[i]));
			pd_fuzz_put(b, l[i], strlen(l[i]));
		}
		pd_fuzz_put_uvarint(b, 1);
		pd_fuzz_put(b, "n", 1);
		pd_fuzz_put_uvarint(b, 1);
		pd_fuzz_put(b, &"0123456789"[(ref + k) % 10], 1);
	}
	pd_fuzz_put_uvarint(b, n);
	for (size_t k = 0; k < n; k++) {
		int64_t tk = t + (int64_t)k;
		pd_fuzz_put_uvarint(b, ref + k);
		pd_fuzz_put_uvarint(b, ((uint64_t)tk << 1) ^ (uint64_t)(tk >> 63));
		if ((ref + k) & 1) {
			size_t which = (size_t)((ref + k) / 2 % PD_FUZZ_NPROF);
			pd_fuzz_put_uvarint(b, pd_fuzz_prof[which].len);
			pd_fuzz_put(b, pd_fuzz_prof[which].p, pd_fuzz_prof[which].len);
		} else {
			pd_fuzz_put_uvarint(b, sizeof(text) - 1);
			pd_fuzz_put(b, text, sizeof(text) - 1);
		}
	}
}

/* Recomputes the CRC of every record of seg (from off) that lies in the file. */
static void pd_fuzz_fix_crcs(uint8_t *seg, size_t len, size_t off)
{
	while (off <= len && len - off >= 10) {
		uint8_t *h = seg + off;
		uint32_t n =
		    (uint32_t)h[2] << 24 | (uint32_t)h[3] << 16 | (uint32_t)h[4] << 8 | h[5];
		if (n > len - off - 10)
			return;
		pd_fuzz_be32(h + 6, pd_crc32c(pd_crc32c(0, h, 6), h + 10, n));
		off += 10 + (size_t)n;
	}
}

/* ---- replay ---------------------------------------------------------------- */

/* What a replay delivered, kept for the store's read-back: series as the key of
 * their labels (name NUL value NUL ...), samples with their payloads, all in one
 * buffer. */
struct pd_fuzz_log_series {
	uint64_t ref;
	size_t key, klen; /* offset and length in bytes */
};
struct pd_fuzz_log_sample {
	uint64_t ref;
	int64_t t;
	size_t p, len;    /* offset and length in bytes */
	size_t key, klen; /* the labels of ref's latest series entry before it;
			   * klen SIZE_MAX: none */
};
struct pd_fuzz_log {
	struct pd_buf bytes;
	struct pd_fuzz_log_series *series;
	size_t nseries, cseries;
	struct pd_fuzz_log_sample *samples;
	size_t nsamples, csamples;
};

static void *pd_fuzz_grow(void *p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? *cap * 2 : 16;
	p = realloc(p, *cap * size);
	if (!p)
		pd_fuzz_bug("out of memory", NULL);
	return p;
}

struct pd_fuzz_seen {
	uint64_t series, samples;             /* delivered */
	uint64_t hseries, hsamples;           /* a hash of everything delivered, per kind */
	uint64_t limit_series, limit_samples; /* hash only this many (UINT64_MAX: all) */
	uint64_t max_ref;                     /* the largest series ref delivered */
	struct pd_fuzz_log *log;              /* NULL: keep nothing */
};

static uint64_t pd_fuzz_mix(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static int pd_fuzz_on_series(void *ctx, uint64_t ref, const struct pd_lpair *l, size_t n)
{
	struct pd_fuzz_seen *s = ctx;
	uint64_t h = s->hseries;
	if (ref > s->max_ref)
		s->max_ref = ref;
	h = pd_fuzz_mix(h, &ref, sizeof(ref));
	for (size_t i = 0; i < n; i++) {
		if (i && strcmp(l[i - 1].name, l[i].name) >= 0)
			pd_fuzz_bug("replay delivered labels that are not sorted and unique", NULL);
		h = pd_fuzz_mix(h, l[i].name, strlen(l[i].name) + 1);
		h = pd_fuzz_mix(h, l[i].value, strlen(l[i].value) + 1);
	}
	if (s->series++ < s->limit_series)
		s->hseries = h;
	if (s->log) {
		struct pd_fuzz_log *g = s->log;
		struct pd_fuzz_log_series *e = NULL;
		/* a later entry of a ref names the series of the samples after it */
		for (size_t i = 0; i < g->nseries && !e; i++)
			if (g->series[i].ref == ref)
				e = &g->series[i];
		if (!e) {
			g->series =
			    pd_fuzz_grow(g->series, &g->cseries, g->nseries, sizeof(*g->series));
			e = &g->series[g->nseries++];
		}
		e->ref = ref;
		e->key = g->bytes.len;
		for (size_t i = 0; i < n; i++) {
			pd_fuzz_put(&g->bytes, l[i].name, strlen(l[i].name) + 1);
			pd_fuzz_put(&g->bytes, l[i].value, strlen(l[i].value) + 1);
		}
		e->klen = g->bytes.len - e->key;
	}
	return 0;
}

static int pd_fuzz_on_sample(void *ctx, uint64_t ref, int64_t t, const uint8_t *p, size_t len)
{
	struct pd_fuzz_seen *s = ctx;
	uint64_t h = s->hsamples;
	h = pd_fuzz_mix(h, &ref, sizeof(ref));
	h = pd_fuzz_mix(h, &t, sizeof(t));
	h = pd_fuzz_mix(h, p, len);
	if (s->samples++ < s->limit_samples)
		s->hsamples = h;
	if (s->log) {
		struct pd_fuzz_log *g = s->log;
		g->samples = pd_fuzz_grow(g->samples, &g->csamples, g->nsamples, sizeof(*g->samples));
		size_t key = 0, klen = SIZE_MAX;
		for (size_t i = 0; i < g->nseries && klen == SIZE_MAX; i++)
			if (g->series[i].ref == ref) {
				key = g->series[i].key;
				klen = g->series[i].klen;
			}
		g->samples[g->nsamples++] =
		    (struct pd_fuzz_log_sample){ref, t, g->bytes.len, len, key, klen};
		pd_fuzz_put(&g->bytes, p, len);
	}
	return 0;
}

/* pd_wal_open, a commit, a cut, a commit, of a new series with the given ref:
 * one the WAL does not use yet, past the largest it does, as the store's head
 * gives a new series. */
static void pd_fuzz_append(uint64_t ref)
{
	static const struct pd_lpair l[] = {{"__name__", "cpu"}, {"job", "after-repair"}};
	struct pd_wal_opts o = {.segment_size = 0, .sync = PD_WAL_SYNC_NONE};
	struct pd_wal *w = NULL;
	struct pd_err err = {0};
	const uint8_t prof[] = "new";

	if (pd_wal_open(&w, pd_fuzz_dir, &o, &err))
		pd_fuzz_bug("pd_wal_open after a successful replay", &err);
	if (pd_wal_add_series(w, ref, l, 2, &err) || pd_wal_add_sample(w, ref, 1, prof, 3, &err) ||
	    pd_wal_commit(w, &err))
		pd_fuzz_bug("a commit after a successful replay", &err);
	if (pd_wal_cut(w, &err))
		pd_fuzz_bug("pd_wal_cut after a successful replay", &err);
	if (pd_wal_add_sample(w, ref, 2, pd_fuzz_prof[0].p, pd_fuzz_prof[0].len, &err) ||
	    pd_wal_commit(w, &err))
		pd_fuzz_bug("a commit after a cut", &err);
	(void)pd_wal_size(w);
	pd_wal_close(w);
}

static int pd_fuzz_match_all(const void *ctx, const char *value)
{
	return 1;
}

/* Whether got is payload p as the store gives it back: the same profile when p
 * decodes as one (as the value chunk appender decides), else the same bytes. */
static int pd_fuzz_same_payload(const uint8_t *p, size_t len, const uint8_t *got, size_t glen,
                                char *why, size_t size)
{
	struct pd_pprof_profile *a, *b;
	struct pd_err err = {0};
	if (pd_pprof_decode(&a, p, len, NULL, &err)) {
		snprintf(why, size, "bytes differ");
		return glen == len && (len == 0 || memcmp(p, got, len) == 0);
	}
	int same = 0;
	if (pd_pprof_decode(&b, got, glen, NULL, &err) == 0) {
		same = pd_pprof_compare(a, b, why, size) == 0;
		pd_pprof_destroy(b);
	} else {
		snprintf(why, size, "the profile read back does not decode: %s", err.msg);
	}
	pd_pprof_destroy(a);
	return same;
}

/* The WAL directory opened as a store (read-only): its head replays the WAL
 * through the value chunk appenders; every sample listed must read back as a
 * payload the replay delivered for that series and time. */
#define PD_FUZZ_MAX_READS 256
static void pd_fuzz_store(const struct pd_fuzz_log *g)
{
	struct pd_tsdb *db = NULL;
	struct pd_storage_result *r = NULL;
	struct pd_tsdb_opts o;
	struct pd_err err = {0};
	struct pd_storage_matcher all = {"__name__", pd_fuzz_match_all, NULL};
	struct pd_buf key;
	size_t reads = 0;
	char why[512];

	pd_tsdb_opts_init(&o);
	o.read_only = 1;
	o.retention_ms = -1;
	if (pd_tsdb_open(&db, pd_fuzz_root, &o, &err)) {
		if (pd_fuzz_verbose)
			fprintf(stderr, "fuzz_wal: store: %s\n", err.msg);
		return;
	}
	if (pd_tsdb_select(db, &all, 1, INT64_MIN, INT64_MAX, 0, &r, &err))
		pd_fuzz_bug("pd_tsdb_select over a replayed head", &err);
	pd_buf_init(&key, 0);
	for (size_t i = 0; i < r->nseries && reads < PD_FUZZ_MAX_READS; i++) {
		const struct pd_storage_series *se = &r->series[i];
		key.len = 0;
		for (size_t j = 0; j < se->nlabels; j++) {
			pd_fuzz_put(&key, se->labels[j].name, strlen(se->labels[j].name) + 1);
			pd_fuzz_put(&key, se->labels[j].value, strlen(se->labels[j].value) + 1);
		}
		for (size_t k = 0; k < se->nts && reads < PD_FUZZ_MAX_READS; k++, reads++) {
			uint8_t *out = NULL;
			size_t len = 0, candidates = 0;
			int found = 0;
			if (k && se->ts[k] <= se->ts[k - 1])
				pd_fuzz_bug("select gave timestamps out of order", NULL);
			if (pd_tsdb_read(db, se->labels, se->nlabels, se->ts[k], &out, &len, &err))
				pd_fuzz_bug("a sample of the replayed head does not read back", &err);
			why[0] = '\0';
			for (size_t x = 0; x < g->nsamples && !found; x++) {
				const struct pd_fuzz_log_sample *sa = &g->samples[x];
				if (sa->t != se->ts[k])
					continue;
				if (sa->klen != key.len ||
				    memcmp(g->bytes.data + sa->key, key.data, key.len))
					continue;
				candidates++;
				found = pd_fuzz_same_payload(g->bytes.data + sa->p, sa->len, out, len, why,
				                             sizeof(why));
			}
			if (!found) {
				fprintf(stderr,
				        "fuzz_wal: series %zu sample at %lld: %zu bytes read back, %zu "
				        "payload(s) delivered for it; last difference: %s\n",
				        i, (long long)se->ts[k], len, candidates, why);
				pd_fuzz_bug("the store gave back another payload than the WAL held", NULL);
			}
			free(out);
		}
	}
	if (pd_fuzz_verbose)
		fprintf(stderr, "fuzz_wal: store: %zu series, %zu samples read back\n", r->nseries,
		        reads);
	pd_buf_fini(&key);
	pd_storage_result_destroy(r);
	pd_tsdb_close(db);
}

static void pd_fuzz_replay(int store)
{
	struct pd_fuzz_seen a = {.limit_series = UINT64_MAX, .limit_samples = UINT64_MAX}, b;
	struct pd_wal_replay_cb cb = {pd_fuzz_on_series, pd_fuzz_on_sample, &a, NULL};
	struct pd_wal_replay_stats st, st2;
	struct pd_err err = {0};
	int rc;

	rc = pd_wal_replay(pd_fuzz_dir, &cb, &st, &err);
	if (pd_fuzz_verbose)
		fprintf(stderr,
		        "fuzz_wal: replay: rc %d (%s) records %llu series %llu samples %llu "
		        "truncated %d segment %u offset %llu: %s\n",
		        rc, rc ? err.msg : "ok", (unsigned long long)st.records,
		        (unsigned long long)st.series, (unsigned long long)st.samples, st.truncated,
		        st.segment, (unsigned long long)st.offset, st.reason);
	if (rc)
		return; /* a newer format (PD_EINCOMPAT) is left alone */
	if (st.series != a.series || st.samples != a.samples)
		pd_fuzz_bug("replay stats disagree with what the callbacks got", NULL);

	pd_fuzz_append(a.max_ref + 1 ? a.max_ref + 1 : 1);

	struct pd_fuzz_log log = {0};
	pd_buf_init(&log.bytes, 0);
	b = (struct pd_fuzz_seen){.limit_series = a.series, .limit_samples = a.samples,
	                          .log = store ? &log : NULL};
	cb.ctx = &b;
	if ((rc = pd_wal_replay(pd_fuzz_dir, &cb, &st2, &err)))
		pd_fuzz_bug("replay of a repaired WAL after commits", &err);
	if (st2.truncated) {
		fprintf(stderr, "fuzz_wal: second replay cut segment %u at %llu: %s\n", st2.segment,
		        (unsigned long long)st2.offset, st2.reason);
		pd_fuzz_bug("a repaired WAL with two new commits needed repair again", NULL);
	}
	if (st2.records != st.records + 2 || b.series != a.series + 1 ||
	    b.samples != a.samples + 2) {
		fprintf(stderr,
		        "fuzz_wal: first replay %llu records, %llu series, %llu samples; "
		        "second %llu, %llu, %llu\n",
		        (unsigned long long)st.records, (unsigned long long)a.series,
		        (unsigned long long)a.samples, (unsigned long long)st2.records,
		        (unsigned long long)b.series, (unsigned long long)b.samples);
		pd_fuzz_bug("the second replay is not the first plus the two new commits", NULL);
	}
	if (b.hseries != a.hseries || b.hsamples != a.hsamples)
		pd_fuzz_bug("the second replay delivered other records than the first", NULL);
	if (store)
		pd_fuzz_store(&log);
	pd_buf_fini(&log.bytes);
	free(log.series);
	free(log.samples);
}

/* ---- libFuzzer entry points ------------------------------------------------ */

static void pd_fuzz_seg_path(char *out, size_t cap, const char *dir, uint32_t num)
{
	snprintf(out, cap, "%s/%08u", dir, num);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t first_num[4] = {1, 7, 99999999u, 4294967290u};
	struct pd_buf seg;
	char path[256], cpdir[192];

	if (size < 1)
		return 0;
	uint8_t m = data[0];
	const uint8_t *body = data + 1;
	size_t len = size - 1;
	int hdr = m & 3, fix = m & 4, build = m & 8, cp = m & 16, store = m & 128;
	uint32_t num = cp ? 1 : first_num[(m >> 5) & 3];

	pd_fuzz_rm_rf(pd_fuzz_dir);
	if (mkdir(pd_fuzz_dir, 0755))
		pd_fuzz_bug("mkdir", NULL);
	const char *segdir = pd_fuzz_dir;
	if (cp) {
		snprintf(cpdir, sizeof(cpdir), "%s/checkpoint.00000004", pd_fuzz_dir);
		if (mkdir(cpdir, 0755))
			pd_fuzz_bug("mkdir", NULL);
		segdir = cpdir;
	}

	pd_buf_init(&seg, 0);
	size_t split = 0; /* hdr 3: the second segment starts at this offset of seg */
	if (hdr == 1) {
		pd_fuzz_put(&seg, body, len);
	} else {
		pd_fuzz_put(&seg, pd_fuzz_header, sizeof(pd_fuzz_header));
		if (hdr == 2 && len >= 3) {
			memcpy(seg.data + 5, body, 3);
			body += 3;
			len -= 3;
		}
		if (hdr == 3 && len >= 1) {
			split = body[0];
			body++;
			len--;
		}
		if (build) {
			/* (uvarint length, payload) pieces, each a commit record */
			size_t pos = 0;
			while (pos < len) {
				uint64_t n = 0;
				for (int shift = 0; pos < len && shift < 64; shift += 7) {
					uint8_t c = body[pos++];
					n |= (uint64_t)(c & 0x7f) << shift;
					if (!(c & 0x80))
						break;
				}
				if (n > len - pos)
					n = len - pos;
				pd_fuzz_record(&seg, body + pos, (size_t)n, n & 1);
				pos += (size_t)n;
			}
		} else {
			pd_fuzz_put(&seg, body, len);
		}
	}
	if (fix && !build)
		pd_fuzz_fix_crcs(seg.data, seg.len, 8);

	if (hdr == 3) {
		/* split after `split` records (or bytes, when they do not parse) */
		size_t off = 8;
		for (size_t k = 0; k < split % 8 && off <= seg.len && seg.len - off >= 10; k++) {
			const uint8_t *h = seg.data + off;
			uint32_t n = (uint32_t)h[2] << 24 | (uint32_t)h[3] << 16 |
			             (uint32_t)h[4] << 8 | h[5];
			if (n > seg.len - off - 10)
				break;
			off += 10 + (size_t)n;
		}
		if (split & 8)
			off = 8 + (split >> 4) * (seg.len - 8) / 16;
		pd_fuzz_seg_path(path, sizeof(path), segdir, num);
		pd_fuzz_write(path, seg.data, off);
		struct pd_buf two;
		pd_buf_init(&two, 0);
		pd_fuzz_put(&two, pd_fuzz_header, sizeof(pd_fuzz_header));
		pd_fuzz_put(&two, seg.data + off, seg.len - off);
		pd_fuzz_seg_path(path, sizeof(path), segdir, num + 1);
		pd_fuzz_write(path, two.data, two.len);
		pd_buf_fini(&two);
	} else {
		pd_fuzz_seg_path(path, sizeof(path), segdir, num);
		pd_fuzz_write(path, seg.data, seg.len);
	}
	pd_buf_fini(&seg);

	if (cp) {
		/* the WAL goes on after the checkpoint with one valid commit */
		struct pd_buf s5, pl;
		pd_buf_init(&s5, 0);
		pd_buf_init(&pl, 0);
		pd_fuzz_put(&s5, pd_fuzz_header, sizeof(pd_fuzz_header));
		pd_fuzz_commit_payload(&pl, 99, 1, 1700000000000ll);
		pd_fuzz_record(&s5, pl.data, pl.len, 0);
		pd_fuzz_seg_path(path, sizeof(path), pd_fuzz_dir, 5);
		pd_fuzz_write(path, s5.data, s5.len);
		pd_buf_fini(&s5);
		pd_buf_fini(&pl);
	}

	pd_fuzz_replay(store);
	return 0;
}

/* Seeds: valid segments of a few commits under several modes. */
static void pd_fuzz_write_seeds(const char *dir)
{
	static const struct {
		uint8_t mode;
		const char *name;
	} seeds[] = {
	    {0x00, "records"},          {0x04, "records-crc"},  {0x01, "segment"},
	    {0x06, "version-crc"},      {0x07, "split-crc"},    {0x14, "checkpoint-crc"},
	    {0x24, "seg7-crc"},         {0x64, "seg-high-crc"}, {0x08, "built"},
	    {0x18, "built-checkpoint"}, {0x84, "records-crc-db"}, {0x88, "built-db"},
	    {0x94, "checkpoint-crc-db"},
	};
	struct pd_buf recs, pl, built, f;
	char path[512];

	pd_buf_init(&recs, 0);
	pd_buf_init(&built, 0);
	for (int i = 0; i < 3; i++) {
		pd_buf_init(&pl, 0);
		/* the last one with 3 series, compressed */
		pd_fuzz_commit_payload(&pl, (uint64_t)i + 1, i == 2 ? 3 : 1,
		                       1700000000000ll + 15000 * i);
		pd_fuzz_record(&recs, pl.data, pl.len, i == 2);
		pd_fuzz_put_uvarint(&built, pl.len);
		pd_fuzz_put(&built, pl.data, pl.len);
		pd_buf_fini(&pl);
	}
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		uint8_t m = seeds[i].mode;
		pd_buf_init(&f, 0);
		pd_fuzz_put(&f, &m, 1);
		if ((m & 3) == 1)
			pd_fuzz_put(&f, pd_fuzz_header, sizeof(pd_fuzz_header));
		if ((m & 3) == 2)
			pd_fuzz_put(&f, "\0\0\0", 3);
		if ((m & 3) == 3)
			pd_fuzz_put(&f, "\x01", 1);
		if (m & 8)
			pd_fuzz_put(&f, built.data, built.len);
		else
			pd_fuzz_put(&f, recs.data, recs.len);
		snprintf(path, sizeof(path), "%s/%s", dir, seeds[i].name);
		pd_fuzz_write(path, f.data, f.len);
		pd_buf_fini(&f);
	}
	pd_buf_fini(&recs);
	pd_buf_fini(&built);
}

/* A crash ends the process without its atexit handlers, leaving its temporary
 * directory behind: remove those of processes that no longer exist. */
static void pd_fuzz_sweep(const char *tmp)
{
	static const char prefix[] = "pd_fuzz_wal.";
	char path[256];
	DIR *d = opendir(tmp);
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end;
		if (strncmp(e->d_name, prefix, sizeof(prefix) - 1))
			continue;
		long pid = strtol(e->d_name + sizeof(prefix) - 1, &end, 10);
		if (end == e->d_name + sizeof(prefix) - 1 || *end != '.' || pid <= 0)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "%s/%s", tmp, e->d_name);
		nftw(path, pd_fuzz_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
	closedir(d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !tmp[0] || strlen(tmp) > 40)
		tmp = "/tmp";
	pd_fuzz_sweep(tmp);
	snprintf(pd_fuzz_root, sizeof(pd_fuzz_root), "%s/pd_fuzz_wal.%ld.XXXXXX", tmp,
	         (long)getpid());
	if (!mkdtemp(pd_fuzz_root)) {
		pd_fuzz_root[0] = '\0';
		pd_fuzz_bug("mkdtemp", NULL);
	}
	atexit(pd_fuzz_cleanup);
	snprintf(pd_fuzz_dir, sizeof(pd_fuzz_dir), "%s/wal", pd_fuzz_root);
	pd_fuzz_verbose = getenv("PD_FUZZ_VERBOSE") != NULL;
	pd_fuzz_load_profiles();
	const char *seeds = getenv("PD_FUZZ_WRITE_SEEDS");
	if (seeds) {
		pd_fuzz_write_seeds(seeds);
		exit(0);
	}
	return 0;
}
