/* test_block.c: unit tests of persisted blocks (pkg/tsdb/block*.c, index*.c,
 * ulid.c): a block of 2000 series written and read back field by field, chunk
 * segments cut small, meta.json round trips and every kind of bad meta.json,
 * rejected series, aborted writers, and damaged files (every byte of an index
 * and a chunk segment flipped, sections rewritten with valid CRCs, truncations)
 * giving clear errors and never a crash. The chunk corruption tests run over
 * value chunks of both encodings: v1 chunks of made-up bytes, and a block of
 * real test profiles (testdata/profiles) in v2 (columnar) chunks beside v1 ones,
 * where a damaged chunk fails only the reads of its own profiles, with a clear
 * error, and every other profile still reads back equal (pd_pprof_compare). */
#define _GNU_SOURCE /* nftw's FTW_DEPTH */
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "block.h"
#include "block_int.h"
#include "profd/chunkenc.h"
#include "profd/pprof.h"
#include "wal.h"

#define T0 1700000000000ll
#define SPAN 7200000ll

/* ---- helpers -------------------------------------------------------------- */

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void rm_rf(const char *path)
{
	nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static char *make_tmpdir(void)
{
	char *t = strdup("/tmp/pd_test_block.XXXXXX");
	assert_non_null(mkdtemp(t));
	return t;
}

static size_t count_entries(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	FILE *f = popen(cmd, "r");
	size_t n = 0;
	assert_int_equal(fscanf(f, "%zu", &n), 1);
	pclose(f);
	return n;
}

static void expect_err(int rc, const struct pd_err *err, int code, const char *sub)
{
	if (rc != code)
		fail_msg("got %d (%s), want %d; message: %s", rc, pd_strerror(rc), code, err->msg);
	if (sub && !strstr(err->msg, sub))
		fail_msg("message \"%s\" does not mention \"%s\"", err->msg, sub);
}

/* The file's bytes, with a NUL after them. */
static uint8_t *read_file(const char *path, size_t *len)
{
	uint8_t *p;
	assert_int_equal(pd_file_read(path, 1 << 30, &p, len, NULL), 0);
	p = realloc(p, *len + 1);
	p[*len] = 0;
	return p;
}

static void write_file(const char *path, const void *p, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void patch_byte(const char *path, size_t off, uint8_t v)
{
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &v, 1, (off_t)off), 1);
	close(fd);
}

/* Writes n bytes at off in place (a mapping of the file sees them). */
static void patch_bytes(const char *path, size_t off, const uint8_t *p, size_t n)
{
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, p, n, (off_t)off), (ssize_t)n);
	close(fd);
}

static uint64_t file_size(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

/* ---- test data ------------------------------------------------------------ */

/* A value appended to a test chunk: a test profile, raw profile.proto with its
 * decoded form, or (prof NULL) bytes that are not a profile. */
struct titem {
	const char *file; /* under testdata/profiles; BYTES: not a profile */
	uint8_t *raw;
	size_t len;
	struct pd_pprof_profile *prof;
};

#define MAX_ITEMS 8
#define BYTES "" /* a value that is not a profile */

struct tchunk {
	int64_t mint, maxt;
	uint32_t count;
	uint8_t *ts, *vals;
	size_t ts_len, vals_len;
	/* chunks of test profiles only (make_chunk leaves them 0): the encoding and
	 * what was appended */
	int enc;
	const struct titem *items[MAX_ITEMS];
};

struct tseries {
	struct pd_lpair l[4];
	char buf[4][32];
	size_t nl;
	struct tchunk *c;
	size_t nc;
};

static int lcmp(const struct pd_lpair *a, size_t na, const struct pd_lpair *b, size_t nb)
{
	for (size_t i = 0; i < na && i < nb; i++) {
		int c = strcmp(a[i].name, b[i].name);
		if (!c)
			c = strcmp(a[i].value, b[i].value);
		if (c)
			return c;
	}
	return (na > nb) - (na < nb);
}

static int series_cmp(const void *a, const void *b)
{
	const struct tseries *x = a, *y = b;
	return lcmp(x->l, x->nl, y->l, y->nl);
}

static void make_chunk(struct tchunk *c, size_t series, size_t k, size_t n, int64_t start)
{
	struct pd_chunkenc_ts ts;
	struct pd_chunkenc_values *v = pd_chunkenc_values_create(4, 1);
	struct pd_err err = {0};
	pd_chunkenc_ts_init(&ts);
	for (size_t j = 0; j < n; j++) {
		int64_t t = start + (int64_t)j * 15000 + (int64_t)((series + j) % 5);
		char prof[160];
		int len = snprintf(prof, sizeof(prof),
				   "profile of series %zu chunk %zu sample %zu: "
				   "runtime.mallocgc runtime.newobject main.handler net/http.serve",
				   series, k, j);
		assert_int_equal(pd_chunkenc_ts_append(&ts, t, &err), 0);
		assert_int_equal(pd_chunkenc_values_append(v, (const uint8_t *)prof, (size_t)len, &err), 0);
		if (j == 0)
			c->mint = t;
		c->maxt = t;
	}
	size_t len;
	const uint8_t *b = pd_chunkenc_ts_bytes(&ts, &len);
	c->ts = malloc(len);
	memcpy(c->ts, b, len);
	c->ts_len = len;
	assert_int_equal(pd_chunkenc_values_seal(v, &c->vals, &c->vals_len, &err), 0);
	c->count = (uint32_t)n;
	pd_chunkenc_ts_fini(&ts);
	pd_chunkenc_values_destroy(v);
}

/* Test profiles, loaded once: raw (gunzipped, as the store keeps them) and
 * decoded. */
static struct titem loaded[32];
static size_t nloaded;

static const struct titem *test_item(const char *file)
{
	static struct titem opaque = {BYTES, (uint8_t *)"not a profile: bytes kept as they are",
				      37, NULL};
	struct pd_err err = {0};
	char path[1024];
	uint8_t *buf;
	size_t n;
	if (!file[0])
		return &opaque;
	for (size_t i = 0; i < nloaded; i++)
		if (!strcmp(loaded[i].file, file))
			return &loaded[i];
	assert_true(nloaded < sizeof(loaded) / sizeof(*loaded));
	struct titem *it = &loaded[nloaded++];
	snprintf(path, sizeof(path), "%s/profiles/%s", PD_TESTDATA, file);
	if (pd_file_read(path, (size_t)64 << 20, &buf, &n, &err))
		fail_msg("%s: %s", path, err.msg);
	it->file = file;
	if (pd_gzip_is(buf, n)) {
		if (pd_gunzip(buf, n, (size_t)64 << 20, &it->raw, &it->len, &err))
			fail_msg("%s: %s", path, err.msg);
		free(buf);
	} else {
		it->raw = buf;
		it->len = n;
	}
	if (pd_pprof_decode(&it->prof, it->raw, it->len, NULL, &err))
		fail_msg("%s: %s", path, err.msg);
	return it;
}

/* A chunk of the given encoding holding the n test profiles named (BYTES: a
 * value that is not a profile), from start every 15 s. */
static void make_chunk_of(struct tchunk *c, int enc, unsigned group, const char *const *files,
			  size_t n, int64_t start)
{
	struct pd_chunkenc_ts ts;
	struct pd_chunkenc_values *v = pd_chunkenc_values_create_enc(enc, group, 1);
	struct pd_err err = {0};
	assert_non_null(v);
	assert_true(n <= MAX_ITEMS);
	pd_chunkenc_ts_init(&ts);
	memset(c, 0, sizeof(*c));
	for (size_t j = 0; j < n; j++) {
		int64_t t = start + (int64_t)j * 15000 + (int64_t)(j % 3);
		const struct titem *it = test_item(files[j]);
		assert_int_equal(pd_chunkenc_ts_append(&ts, t, &err), 0);
		if (pd_chunkenc_values_append(v, it->raw, it->len, &err))
			fail_msg("appending %s: %s", it->file[0] ? it->file : "bytes", err.msg);
		c->items[j] = it;
		if (j == 0)
			c->mint = t;
		c->maxt = t;
	}
	size_t len;
	const uint8_t *b = pd_chunkenc_ts_bytes(&ts, &len);
	c->ts = malloc(len);
	memcpy(c->ts, b, len);
	c->ts_len = len;
	assert_int_equal(pd_chunkenc_values_seal(v, &c->vals, &c->vals_len, &err), 0);
	assert_int_equal(pd_chunkenc_values_encoding(c->vals, c->vals_len), enc);
	c->count = (uint32_t)n;
	c->enc = enc;
	pd_chunkenc_ts_fini(&ts);
	pd_chunkenc_values_destroy(v);
}

#define V1 PD_CHUNKENC_VALUES_ZSTD_GROUPS
#define V2 PD_CHUNKENC_VALUES_COLUMNAR

/* Series of test profiles, in label order; consecutive rows of one series are its
 * chunks. v2 chunks in groups of 2 (records delta coded within a group, reads
 * crossing groups) and of the default 32; heap's first chunk is v1, as a series
 * written before v2 became the default has, and mutex's only chunk. */
static const struct {
	const char *name, *instance;
	int enc;
	unsigned group;
	const char *files[MAX_ITEMS];
} mixed_spec[] = {
	{"allocs", "a", V2, 0, {"goapp/allocs.pb.gz", "goapp/delta-allocs.pb.gz"}},
	{"edge", "b", V2, 2,
	 {"edge/multi-types.pb", BYTES, "edge/sparse-ids.pb", "edge/no-mappings.pb",
	  "edge/empty-samples.pb", "edge/default-type.pb", "edge/zero-and-negative.pb"}},
	{"goroutine", "a", V2, 2,
	 {"goapp/goroutine.pb.gz", "goapp/goroutine.pb.gz", "goapp/threadcreate.pb.gz",
	  "goapp/mutex.pb.gz", "goapp/block.pb.gz"}},
	{"heap", "a", V1, 2, {"goapp/heap.pb.gz", "goapp/heap-2.pb.gz", BYTES}},
	{"heap", "a", V2, 2, {"goapp/heap-3.pb.gz", "goapp/heap.pb.gz", "goapp/heap-2.pb.gz"}},
	{"mutex", "c", V1, 0, {"goapp/mutex.pb.gz", "goapp/threadcreate.pb.gz"}},
};
#define NMIXED (sizeof(mixed_spec) / sizeof(*mixed_spec))

static size_t count_files(const char *const *files)
{
	size_t n = 0;
	while (n < MAX_ITEMS && files[n])
		n++;
	return n;
}

static struct tseries *make_mixed_series(size_t *n)
{
	struct tseries *s = calloc(NMIXED, sizeof(*s));
	size_t ns = 0;
	for (size_t i = 0; i < NMIXED; i++) {
		struct tseries *x = &s[ns ? ns - 1 : 0];
		if (!ns || strcmp(x->buf[0], mixed_spec[i].name) ||
		    strcmp(x->buf[1], mixed_spec[i].instance)) {
			x = &s[ns++];
			snprintf(x->buf[0], 32, "%s", mixed_spec[i].name);
			snprintf(x->buf[1], 32, "%s", mixed_spec[i].instance);
			x->l[0] = (struct pd_lpair){"__name__", x->buf[0]};
			x->l[1] = (struct pd_lpair){"instance", x->buf[1]};
			x->nl = 2;
			x->c = calloc(MAX_ITEMS, sizeof(*x->c));
		}
		size_t nf = count_files(mixed_spec[i].files);
		make_chunk_of(&x->c[x->nc], mixed_spec[i].enc, mixed_spec[i].group,
			      mixed_spec[i].files, nf, T0 + (int64_t)x->nc * 1000000);
		x->nc++;
	}
	for (size_t i = 1; i < ns; i++)
		assert_true(series_cmp(&s[i - 1], &s[i]) < 0);
	*n = ns;
	return s;
}

#define MAX_PROFILE ((size_t)64 << 20)

/* Profile i of the value chunk at ref, read as a store reads a block's. The
 * chunks here are written without timestamps, so any timestamp will do: it
 * matters only to a chunk whose encoding byte a test changed to the one of
 * relative times. */
static int read_value(const struct pd_block *b, uint64_t ref, size_t i, uint8_t **out,
		      size_t *len, struct pd_err *err)
{
	const uint8_t *p;
	size_t n;
	int rc = pd_block_chunk_bytes(b, ref, &p, &n, err);
	return rc ? rc
		  : pd_chunkenc_values_read_at(p, n, i, 1700000000000 + (int64_t)i, MAX_PROFILE, out,
					       len, err);
}

/* Every profile of the value chunk at ref reads back as what was appended: the
 * same profile (and for v1, whose chunks keep the bytes, the same bytes), or the
 * same bytes when it was not a profile. */
static void verify_values(const struct pd_block *b, uint64_t ref, const struct tchunk *c)
{
	struct pd_err err = {0};
	const uint8_t *p;
	size_t n;
	char why[512];
	assert_int_equal(pd_block_chunk_bytes(b, ref, &p, &n, &err), 0);
	assert_int_equal(pd_chunkenc_values_encoding(p, n), c->enc);
	assert_int_equal(pd_chunkenc_values_read_count(p, n, &err), c->count);
	for (size_t i = 0; i < c->count; i++) {
		const struct titem *it = c->items[i];
		uint8_t *out;
		size_t len;
		int rc = read_value(b, ref, i, &out, &len, &err);
		if (rc)
			fail_msg("v%d chunk, profile %zu (%s): %s", c->enc, i,
				 it->file[0] ? it->file : "bytes", err.msg);
		if (!it->prof || c->enc == V1) {
			assert_int_equal(len, it->len);
			assert_memory_equal(out, it->raw, len);
		}
		if (it->prof) {
			struct pd_pprof_profile *got;
			if (pd_pprof_decode(&got, out, len, NULL, &err))
				fail_msg("v%d chunk, profile %zu (%s) does not decode: %s", c->enc, i,
					 it->file, err.msg);
			if (pd_pprof_compare(it->prof, got, why, sizeof(why)))
				fail_msg("v%d chunk, profile %zu (%s) differs: %s", c->enc, i, it->file,
					 why);
			pd_pprof_destroy(got);
		}
		free(out);
	}
	uint8_t *out = NULL;
	size_t len;
	expect_err(read_value(b, ref, c->count, &out, &len, &err), &err, PD_ENOTFOUND, NULL);
}

/* The chunks of a block in file order: each chunk's timestamp entry, then its
 * value entry. */
struct centry {
	uint64_t ref;
	const struct tchunk *c;
	int vals;
};

static size_t block_entries(const struct pd_block *b, const struct tseries *s, size_t n,
			    struct centry *out, size_t cap)
{
	struct pd_err err = {0};
	uint64_t *all;
	size_t nall, k = 0;
	assert_int_equal(pd_block_all_series(b, &all, &nall, &err), 0);
	assert_int_equal(nall, n);
	for (size_t i = 0; i < nall; i++) {
		struct pd_lpair *l;
		struct pd_block_chunk_meta *c;
		size_t nl, nc;
		assert_int_equal(pd_block_series(b, all[i], &l, &nl, &c, &nc, &err), 0);
		assert_int_equal(nc, s[i].nc);
		for (size_t j = 0; j < nc; j++) {
			assert_true(k + 2 <= cap);
			out[k++] = (struct centry){c[j].ts_ref, &s[i].c[j], 0};
			out[k++] = (struct centry){c[j].vals_ref, &s[i].c[j], 1};
		}
		free(l);
		free(c);
	}
	free(all);
	for (size_t i = 1; i < k; i++)
		assert_true(out[i].ref > out[i - 1].ref);
	return k;
}

/* Every value chunk but the one at skip (0: none) reads back. */
static void verify_values_but(const struct pd_block *b, const struct centry *e, size_t ne,
			      uint64_t skip)
{
	for (size_t r = 0; r < ne; r++)
		if (e[r].vals && e[r].ref != skip)
			verify_values(b, e[r].ref, e[r].c);
}

/* Rewrites the CRC of the segment entry at off (of data length dlen after a
 * length of lw bytes and the kind byte) to match its bytes in img. */
static void fix_entry_crc(uint8_t *img, size_t off, size_t lw, size_t dlen)
{
	const uint8_t *kind = img + off + lw;
	pd_put_be32(img + off + lw + 1 + dlen, pd_crc32c(pd_crc32c(0, kind, 1), kind + 1, dlen));
}

/* n series with 1..max_chunks chunks each, sorted by labels. */
static struct tseries *make_series(size_t n, size_t max_chunks)
{
	static const char *names[] = {"allocs", "goroutine", "heap", "profile"};
	struct tseries *s = calloc(n, sizeof(*s));
	for (size_t i = 0; i < n; i++) {
		struct tseries *x = &s[i];
		snprintf(x->buf[0], 32, "%s", names[i % 4]);
		snprintf(x->buf[1], 32, "10.0.%zu.%zu:8080", i / 4 / 250, i / 4 % 250);
		snprintf(x->buf[2], 32, "job-%zu", i % 7);
		snprintf(x->buf[3], 32, "%s", i % 6 == 0 ? "a" : "b");
		x->l[x->nl++] = (struct pd_lpair){"__name__", x->buf[0]};
		x->l[x->nl++] = (struct pd_lpair){"instance", x->buf[1]};
		x->l[x->nl++] = (struct pd_lpair){"job", x->buf[2]};
		if (i % 3 == 0) /* a label some series lack */
			x->l[x->nl++] = (struct pd_lpair){"zone", x->buf[3]};
		x->nc = 1 + i % max_chunks;
		x->c = calloc(x->nc, sizeof(*x->c));
		for (size_t k = 0; k < x->nc; k++)
			make_chunk(&x->c[k], i, k, 1 + (i + k) % 6, T0 + (int64_t)k * 1000000);
	}
	qsort(s, n, sizeof(*s), series_cmp);
	/* the label pointers moved with the structs */
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < s[i].nl; j++)
			s[i].l[j].value = s[i].buf[j];
	return s;
}

static void free_series(struct tseries *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < s[i].nc; k++) {
			free(s[i].c[k].ts);
			free(s[i].c[k].vals);
		}
		free(s[i].c);
	}
	free(s);
}

static void to_block_chunks(const struct tseries *s, struct pd_block_chunk *out)
{
	for (size_t k = 0; k < s->nc; k++)
		out[k] = (struct pd_block_chunk){s->c[k].mint,	 s->c[k].maxt, s->c[k].count,
						 s->c[k].ts,	 s->c[k].ts_len, s->c[k].vals,
						 s->c[k].vals_len};
}

/* Writes the series as a block in parent; returns the block's directory. */
static char *write_block(const char *parent, const struct tseries *s, size_t n, uint64_t segsize)
{
	struct pd_block_writer *w;
	struct pd_err err = {0};
	char ulid[27];
	assert_int_equal(pd_block_writer_create(&w, parent, T0, T0 + SPAN, 1, NULL, 0, &err), 0);
	if (segsize)
		pd_block_writer_set_segment_size(w, segsize);
	for (size_t i = 0; i < n; i++) {
		struct pd_block_chunk c[8];
		to_block_chunks(&s[i], c);
		int rc = pd_block_writer_add_series(w, s[i].l, s[i].nl, c, s[i].nc, &err);
		if (rc)
			fail_msg("series %zu: %s", i, err.msg);
	}
	int rc = pd_block_writer_finish(w, ulid, &err);
	if (rc)
		fail_msg("finish: %s", err.msg);
	return pd_path_join(parent, ulid);
}

/* Checks everything the block holds against the series it was written from. */
static void verify_block(const struct pd_block *b, const struct tseries *s, size_t n)
{
	struct pd_err err = {0};
	const struct pd_block_meta *m = pd_block_meta(b);
	uint64_t chunks = 0, samples = 0, tsb = 0, vb = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < s[i].nc; k++) {
			chunks++;
			samples += s[i].c[k].count;
			tsb += s[i].c[k].ts_len;
			vb += s[i].c[k].vals_len;
		}
	assert_int_equal(m->num_series, n);
	assert_int_equal(m->num_chunks, chunks);
	assert_int_equal(m->num_samples, samples);
	assert_int_equal(m->ts_bytes, tsb);
	assert_int_equal(m->value_bytes, vb);
	assert_int_equal(m->mint, T0);
	assert_int_equal(m->maxt, T0 + SPAN);
	assert_int_equal(m->level, 1);
	assert_int_equal(m->nsources, 1);
	assert_string_equal(m->sources[0], m->ulid);

	uint64_t *all;
	size_t nall;
	assert_int_equal(pd_block_all_series(b, &all, &nall, &err), 0);
	assert_int_equal(nall, n);
	for (size_t i = 0; i < n; i++) {
		struct pd_lpair *l;
		struct pd_block_chunk_meta *c;
		size_t nl, nc;
		if (i)
			assert_true(all[i] > all[i - 1]);
		assert_int_equal(pd_block_series(b, all[i], &l, &nl, &c, &nc, &err), 0);
		assert_int_equal(lcmp(l, nl, s[i].l, s[i].nl), 0);
		assert_int_equal(nc, s[i].nc);
		for (size_t k = 0; k < nc; k++) {
			const struct tchunk *t = &s[i].c[k];
			const uint8_t *p;
			size_t len;
			assert_int_equal(c[k].mint, t->mint);
			assert_int_equal(c[k].maxt, t->maxt);
			assert_int_equal(c[k].count, t->count);
			assert_int_equal(pd_block_chunk_bytes(b, c[k].ts_ref, &p, &len, &err), 0);
			assert_int_equal(len, t->ts_len);
			assert_memory_equal(p, t->ts, len);
			assert_int_equal(pd_block_chunk_bytes(b, c[k].vals_ref, &p, &len, &err), 0);
			assert_int_equal(len, t->vals_len);
			assert_memory_equal(p, t->vals, len);
		}
		free(l);
		free(c);
	}

	free(all);
}

static int pair_cmp(const void *a, const void *b)
{
	return lcmp(a, 1, b, 1);
}

/* Label names, values and the postings of every pair. */
static void verify_postings(const struct pd_block *b, const struct tseries *s, size_t n)
{
	struct pd_err err = {0};
	size_t np = 0;
	struct pd_lpair *pairs = malloc(n * 4 * sizeof(*pairs));
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < s[i].nl; j++)
			pairs[np++] = s[i].l[j];
	qsort(pairs, np, sizeof(*pairs), pair_cmp);
	size_t u = 0;
	for (size_t i = 0; i < np; i++)
		if (!u || pair_cmp(&pairs[u - 1], &pairs[i]))
			pairs[u++] = pairs[i];
	np = u;

	uint64_t *all;
	size_t nall;
	assert_int_equal(pd_block_all_series(b, &all, &nall, &err), 0);

	const char **names;
	size_t nn;
	assert_int_equal(pd_block_label_names(b, &names, &nn, &err), 0);
	size_t k = 0;
	for (size_t i = 0; i < np; i++) {
		if (i && !strcmp(pairs[i].name, pairs[i - 1].name))
			continue;
		assert_true(k < nn);
		assert_string_equal(names[k], pairs[i].name);
		k++;
		const char **vals;
		size_t nv, j = i;
		assert_int_equal(pd_block_label_values(b, pairs[i].name, &vals, &nv, &err), 0);
		for (size_t x = 0; x < nv; x++, j++) {
			assert_true(j < np);
			assert_string_equal(pairs[j].name, pairs[i].name);
			assert_string_equal(vals[x], pairs[j].value);
		}
		assert_true(j == np || strcmp(pairs[j].name, pairs[i].name));
		free(vals);
	}
	assert_int_equal(k, nn);
	free(names);

	uint64_t *want = malloc(n * sizeof(*want));
	for (size_t i = 0; i < np; i++) {
		size_t nw = 0;
		for (size_t x = 0; x < n; x++)
			for (size_t j = 0; j < s[x].nl; j++)
				if (!pair_cmp(&s[x].l[j], &pairs[i]))
					want[nw++] = all[x];
		uint64_t *got;
		size_t ng;
		assert_int_equal(pd_block_postings(b, pairs[i].name, pairs[i].value, &got, &ng, &err), 0);
		assert_int_equal(ng, nw);
		assert_memory_equal(got, want, nw * sizeof(*want));
		free(got);
	}
	free(want);

	/* absent names and values */
	static const char *const absent[][2] = {
		{"nope", "x"}, {"job", "job-99"}, {"job", ""}, {"", ""}, {"zone", "c"}, {"aaa", "a"}};
	for (size_t i = 0; i < sizeof(absent) / sizeof(*absent); i++) {
		uint64_t *got;
		size_t ng = 99;
		assert_int_equal(pd_block_postings(b, absent[i][0], absent[i][1], &got, &ng, &err), 0);
		assert_int_equal(ng, 0);
		free(got);
	}
	const char **vals;
	size_t nv = 99;
	assert_int_equal(pd_block_label_values(b, "nope", &vals, &nv, &err), 0);
	assert_int_equal(nv, 0);
	free(vals);
	assert_int_equal(pd_block_label_values(b, "", &vals, &nv, &err), 0);
	assert_int_equal(nv, 0);
	free(vals);
	free(all);
	free(pairs);
}

/* Calls every reader function on everything the block claims to hold; with a
 * damaged block they may fail, but only with PD_ECORRUPT or PD_ENOTFOUND. */
static void walk_block(const struct pd_block *b)
{
	struct pd_err err = {0};
	const char **names;
	size_t nn;
	int rc;
#define OK_OR_DAMAGED(rc) assert_true((rc) == 0 || (rc) == PD_ECORRUPT || (rc) == PD_ENOTFOUND)
	assert_int_equal(pd_block_label_names(b, &names, &nn, &err), 0);
	for (size_t i = 0; i < nn; i++) {
		const char **vals;
		size_t nv;
		assert_int_equal(pd_block_label_values(b, names[i], &vals, &nv, &err), 0);
		for (size_t j = 0; j < nv; j++) {
			uint64_t *refs;
			size_t nr;
			rc = pd_block_postings(b, names[i], vals[j], &refs, &nr, &err);
			OK_OR_DAMAGED(rc);
			if (!rc)
				free(refs);
		}
		free(vals);
	}
	free(names);
	uint64_t *all;
	size_t nall;
	rc = pd_block_all_series(b, &all, &nall, &err);
	OK_OR_DAMAGED(rc);
	if (rc)
		return;
	for (size_t i = 0; i < nall; i++) {
		struct pd_lpair *l;
		struct pd_block_chunk_meta *c;
		size_t nl, nc;
		rc = pd_block_series(b, all[i], &l, &nl, &c, &nc, &err);
		OK_OR_DAMAGED(rc);
		if (rc)
			continue;
		for (size_t k = 0; k < nc; k++) {
			const uint8_t *p;
			size_t len;
			OK_OR_DAMAGED(pd_block_chunk_bytes(b, c[k].ts_ref, &p, &len, &err));
			OK_OR_DAMAGED(pd_block_chunk_bytes(b, c[k].vals_ref, &p, &len, &err));
		}
		free(l);
		free(c);
	}
	free(all);
#undef OK_OR_DAMAGED
}

/* ---- tests ---------------------------------------------------------------- */

static void test_ulid(void **state)
{
	char a[27], b[27], c[27];
	pd_ulid_new(a, 0);
	assert_int_equal(strlen(a), 26);
	assert_memory_equal(a, "0000000000", 10); /* time part */
	assert_true(pd_ulid_valid(a));
	pd_ulid_new(b, 0);
	assert_string_not_equal(a, b); /* 80 random bits */
	/* 1469918176385 ms is 01ARYZ6S41 in the ULID spec's example */
	pd_ulid_new(c, 1469918176385ll);
	assert_memory_equal(c, "01ARYZ6S41", 10);
	/* lexicographic order is time order */
	char prev[27];
	pd_ulid_new(prev, 1);
	for (int64_t t = 2; t < (1ll << 48); t = t * 3 + 7) {
		char cur[27];
		pd_ulid_new(cur, t);
		assert_true(strcmp(prev, cur) < 0);
		assert_true(pd_ulid_valid(cur));
		memcpy(prev, cur, 27);
	}
	pd_ulid_new(c, (1ll << 48) - 1);
	assert_memory_equal(c, "7ZZZZZZZZZ", 10);
	assert_false(pd_ulid_valid("01ARYZ6S41TSV4RRFFQ69G5FA"));   /* 25 */
	assert_false(pd_ulid_valid("01ARYZ6S41TSV4RRFFQ69G5FAVV")); /* 27 */
	assert_false(pd_ulid_valid("01ARYZ6S41TSV4RRFFQ69G5FAI"));  /* I is not Crockford */
	assert_false(pd_ulid_valid("81ARYZ6S41TSV4RRFFQ69G5FAV"));  /* > 128 bits */
	assert_false(pd_ulid_valid("01aryz6s41tsv4rrffq69g5fav"));  /* upper case only */
	assert_true(pd_ulid_valid("01ARYZ6S41TSV4RRFFQ69G5FAV"));
}

static void test_roundtrip(void **state)
{
	const size_t n = 2000;
	struct tseries *s = make_series(n, 4);
	char *parent = make_tmpdir();
	char *dir = write_block(parent, s, n, 0);
	struct pd_block *b;
	struct pd_err err = {0};

	assert_int_equal(count_entries(parent), 1); /* no .tmp left */
	int rc = pd_block_open(&b, dir, &err);
	if (rc)
		fail_msg("open: %s", err.msg);
	assert_string_equal(pd_block_dir(b), dir);
	assert_true(pd_ulid_valid(pd_block_meta(b)->ulid));
	assert_string_equal(strrchr(dir, '/') + 1, pd_block_meta(b)->ulid);
	verify_block(b, s, n);
	verify_postings(b, s, n);

	/* size is the sum of the files */
	char *p = pd_path_join(dir, "index"), *q = pd_path_join(dir, "meta.json");
	char *seg = pd_path_join(dir, "chunks/000001");
	assert_int_equal(pd_block_size(b), file_size(p) + file_size(q) + file_size(seg));
	free(p);
	free(q);
	free(seg);

	/* refs that are not series: no crash, a clear error or nonsense */
	struct pd_lpair *l;
	struct pd_block_chunk_meta *c;
	size_t nl, nc;
	assert_int_equal(pd_block_series(b, 0, &l, &nl, &c, &nc, &err), PD_ENOTFOUND);
	assert_int_equal(pd_block_series(b, UINT64_MAX, &l, &nl, &c, &nc, &err), PD_ENOTFOUND);
	const uint8_t *cp;
	size_t clen;
	expect_err(pd_block_chunk_bytes(b, 0, &cp, &clen, &err), &err, PD_ECORRUPT, "segment");
	expect_err(pd_block_chunk_bytes(b, 7ull << 32 | 8, &cp, &clen, &err), &err, PD_ECORRUPT,
		   "no segment 000007");
	expect_err(pd_block_chunk_bytes(b, 1ull << 32 | 0xfffffff0u, &cp, &clen, &err), &err,
		   PD_ECORRUPT, "outside the segment");
	pd_block_close(b);
	pd_block_close(NULL);

	free(dir);
	rm_rf(parent);
	free(parent);
	free_series(s, n);
}

static void test_segments_cut(void **state)
{
	const size_t n = 300;
	struct tseries *s = make_series(n, 4);
	char *parent = make_tmpdir();
	char *dir = write_block(parent, s, n, 4096);
	struct pd_block *b;
	struct pd_err err = {0};
	assert_int_equal(pd_block_open(&b, dir, &err), 0);
	assert_true(b->nsegs > 10);
	uint64_t total = 0;
	for (size_t i = 0; i < b->nsegs; i++) {
		assert_true(b->segs[i].size <= 4096);
		total += b->segs[i].size;
	}
	verify_block(b, s, n);
	char *p = pd_path_join(dir, "index"), *q = pd_path_join(dir, "meta.json");
	assert_int_equal(pd_block_size(b), total + file_size(p) + file_size(q));
	free(p);
	free(q);
	pd_block_close(b);

	/* a missing segment in the middle is found on open */
	char *seg = pd_path_join(dir, "chunks/000003");
	assert_int_equal(unlink(seg), 0);
	expect_err(pd_block_open(&b, dir, &err), &err, PD_ECORRUPT, "segment 000003 is missing");
	free(seg);

	free(dir);
	rm_rf(parent);
	free(parent);
	free_series(s, n);
}

static void test_empty_block(void **state)
{
	char *parent = make_tmpdir();
	struct pd_block_writer *w;
	struct pd_block *b;
	struct pd_err err = {0};
	char ulid[27];
	assert_int_equal(pd_block_writer_create(&w, parent, -100, 100, 1, NULL, 0, &err), 0);
	assert_int_equal(pd_block_writer_finish(w, ulid, &err), 0);
	char *dir = pd_path_join(parent, ulid);
	assert_int_equal(pd_block_open(&b, dir, &err), 0);
	assert_int_equal(pd_block_meta(b)->num_series, 0);
	assert_int_equal(pd_block_meta(b)->mint, -100);
	const char **names;
	size_t nn;
	uint64_t *all;
	size_t nall;
	assert_int_equal(pd_block_label_names(b, &names, &nn, &err), 0);
	assert_int_equal(nn, 0);
	free(names);
	assert_int_equal(pd_block_all_series(b, &all, &nall, &err), 0);
	assert_int_equal(nall, 0);
	free(all);
	pd_block_close(b);
	free(dir);
	rm_rf(parent);
	free(parent);
}

static void test_rejected_series(void **state)
{
	struct tseries *s = make_series(10, 3);
	char *parent = make_tmpdir();
	struct pd_block_writer *w;
	struct pd_err err = {0};
	struct pd_block_chunk c[8];
	char ulid[27];

	assert_int_equal(pd_block_writer_create(&w, parent, T0, T0 + SPAN, 1, NULL, 0, &err), 0);
	to_block_chunks(&s[5], c);
	assert_int_equal(pd_block_writer_add_series(w, s[5].l, s[5].nl, c, s[5].nc, &err), 0);
	/* out of order, and a duplicate */
	to_block_chunks(&s[4], c);
	expect_err(pd_block_writer_add_series(w, s[4].l, s[4].nl, c, s[4].nc, &err), &err, PD_EINVAL,
		   "label order");
	to_block_chunks(&s[5], c);
	expect_err(pd_block_writer_add_series(w, s[5].l, s[5].nl, c, s[5].nc, &err), &err, PD_EINVAL,
		   "added twice");
	/* a prefix sorts first */
	assert_true(s[5].nl > 1);
	expect_err(pd_block_writer_add_series(w, s[5].l, s[5].nl - 1, c, s[5].nc, &err), &err,
		   PD_EINVAL, "label order");
	/* bad label sets */
	struct pd_lpair unsorted[] = {{"job", "x"}, {"instance", "y"}};
	expect_err(pd_block_writer_add_series(w, unsorted, 2, NULL, 0, &err), &err, PD_EINVAL,
		   "not sorted");
	struct pd_lpair dup[] = {{"zz", "x"}, {"zz", "y"}};
	expect_err(pd_block_writer_add_series(w, dup, 2, NULL, 0, &err), &err, PD_EINVAL,
		   "not sorted and unique");
	struct pd_lpair empty[] = {{"", "x"}};
	expect_err(pd_block_writer_add_series(w, empty, 1, NULL, 0, &err), &err, PD_EINVAL,
		   "empty label name");
	expect_err(pd_block_writer_add_series(w, empty, 0, NULL, 0, &err), &err, PD_EINVAL,
		   "no labels");

	/* bad chunks, on a series that would otherwise be fine */
	to_block_chunks(&s[6], c);
	assert_true(s[6].nc >= 2 || s[7].nc >= 2);
	const struct tseries *x = s[6].nc >= 2 ? &s[6] : &s[7];
	to_block_chunks(x, c);
	struct pd_block_chunk bad[8];
	memcpy(bad, c, sizeof(c));
	bad[1].mint = bad[0].maxt; /* overlaps */
	expect_err(pd_block_writer_add_series(w, x->l, x->nl, bad, x->nc, &err), &err, PD_EINVAL,
		   "not after chunk 0");
	memcpy(bad, c, sizeof(c));
	bad[0].mint = T0 - 1;
	expect_err(pd_block_writer_add_series(w, x->l, x->nl, bad, x->nc, &err), &err, PD_EINVAL,
		   "outside the block");
	memcpy(bad, c, sizeof(c));
	bad[0].count++;
	expect_err(pd_block_writer_add_series(w, x->l, x->nl, bad, x->nc, &err), &err, PD_EINVAL,
		   "timestamp chunk holds");
	memcpy(bad, c, sizeof(c));
	bad[1].vals = c[0].vals;
	bad[1].vals_len = c[0].vals_len;
	if (c[0].count != c[1].count)
		expect_err(pd_block_writer_add_series(w, x->l, x->nl, bad, x->nc, &err), &err,
			   PD_EINVAL, "value chunk holds");
	memcpy(bad, c, sizeof(c));
	bad[0].ts_len = 0;
	expect_err(pd_block_writer_add_series(w, x->l, x->nl, bad, x->nc, &err), &err, PD_EINVAL,
		   "empty");

	/* the writer is still good after rejections */
	for (size_t i = 6; i < 10; i++) {
		to_block_chunks(&s[i], c);
		assert_int_equal(pd_block_writer_add_series(w, s[i].l, s[i].nl, c, s[i].nc, &err), 0);
	}
	assert_int_equal(pd_block_writer_finish(w, ulid, &err), 0);
	char *dir = pd_path_join(parent, ulid);
	struct pd_block *b;
	assert_int_equal(pd_block_open(&b, dir, &err), 0);
	verify_block(b, s + 5, 5);
	pd_block_close(b);
	free(dir);

	/* bad arguments to create */
	expect_err(pd_block_writer_create(&w, parent, 10, 10, 1, NULL, 0, &err), &err, PD_EINVAL,
		   "empty");
	expect_err(pd_block_writer_create(&w, parent, 0, 10, 0, NULL, 0, &err), &err, PD_EINVAL,
		   "level");
	char bad_src[1][27] = {"not a ulid"};
	expect_err(pd_block_writer_create(&w, parent, 0, 10, 2, (const char(*)[27])bad_src, 1, &err),
		   &err, PD_EINVAL, "source 0");
	expect_err(pd_block_writer_create(&w, "/nonexistent/dir", 0, 10, 1, NULL, 0, &err), &err,
		   PD_EIO, "/nonexistent/dir");

	rm_rf(parent);
	free(parent);
	free_series(s, 10);
}

static void test_abort(void **state)
{
	struct tseries *s = make_series(50, 3);
	char *parent = make_tmpdir();
	struct pd_block_writer *w;
	struct pd_err err = {0};
	struct pd_block_chunk c[8];

	assert_int_equal(pd_block_writer_create(&w, parent, T0, T0 + SPAN, 1, NULL, 0, &err), 0);
	assert_int_equal(count_entries(parent), 1); /* the .tmp directory */
	for (size_t i = 0; i < 50; i++) {
		to_block_chunks(&s[i], c);
		assert_int_equal(pd_block_writer_add_series(w, s[i].l, s[i].nl, c, s[i].nc, &err), 0);
	}
	pd_block_writer_abort(w);
	assert_int_equal(count_entries(parent), 0);
	pd_block_writer_abort(NULL);

	/* a block under a name that is not its ULID (a .tmp left by a crash) is
	 * not opened */
	char ulid[27];
	assert_int_equal(pd_block_writer_create(&w, parent, T0, T0 + SPAN, 1, NULL, 0, &err), 0);
	assert_int_equal(pd_block_writer_finish(w, ulid, &err), 0);
	char *dir = pd_path_join(parent, ulid);
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "%s.tmp", ulid);
	char *tdir = pd_path_join(parent, tmp);
	assert_int_equal(rename(dir, tdir), 0);
	struct pd_block *b;
	expect_err(pd_block_open(&b, tdir, &err), &err, PD_ECORRUPT, "is not the block's ULID");
	assert_null(b);
	expect_err(pd_block_open(&b, dir, &err), &err, PD_ENOTFOUND, "meta.json");
	free(dir);
	free(tdir);

	rm_rf(parent);
	free(parent);
	free_series(s, 50);
}

static void test_meta_roundtrip(void **state)
{
	struct pd_block_meta m = {0}, r;
	char src[3][27];
	struct pd_buf out;
	struct pd_err err = {0};
	pd_ulid_new(m.ulid, T0);
	for (int i = 0; i < 3; i++)
		pd_ulid_new(src[i], T0 - 1000 * (3 - i));
	m.mint = INT64_MIN;
	m.maxt = INT64_MAX;
	m.num_series = 1;
	m.num_chunks = 2;
	m.num_samples = UINT64_MAX;
	m.ts_bytes = 4;
	m.value_bytes = 5;
	m.level = 3;
	m.sources = src;
	m.nsources = 3;
	pd_buf_init(&out, 0);
	assert_int_equal(pd_block_meta_format(&m, &out), 0);
	int rc = pd_block_meta_parse((const char *)out.data, out.len, &r, &err);
	if (rc)
		fail_msg("%s\n%.*s", err.msg, (int)out.len, (const char *)out.data);
	assert_string_equal(r.ulid, m.ulid);
	assert_int_equal(r.mint, INT64_MIN);
	assert_int_equal(r.maxt, INT64_MAX);
	assert_int_equal(r.num_series, 1);
	assert_int_equal(r.num_chunks, 2);
	assert_int_equal(r.num_samples, UINT64_MAX);
	assert_int_equal(r.ts_bytes, 4);
	assert_int_equal(r.value_bytes, 5);
	assert_int_equal(r.level, 3);
	assert_int_equal(r.nsources, 3);
	for (int i = 0; i < 3; i++)
		assert_string_equal(r.sources[i], src[i]);
	free(r.sources);

	/* every prefix of the text is an error, never a crash */
	for (size_t cut = 0; cut + 1 < out.len; cut++) {
		assert_int_equal(pd_block_meta_parse((const char *)out.data, cut, &r, &err),
				 PD_ECORRUPT);
		assert_null(r.sources);
	}
	pd_buf_fini(&out);

	/* unknown fields of any shape are skipped; whitespace is free */
	const char *ext = "  {\"thanos\": {\"labels\": {\"a\": \"b\\u00e9\\n\"}, \"x\": [1, -2.5e+3, true, "
			  "false, null, [], {}]},\r\n\"ulid\":\"01ARYZ6S41TSV4RRFFQ69G5FAV\",\"minTime\":"
			  "-5,\"maxTime\":0,\"stats\":{\"numSamples\":0,\"numSeries\":0,\"numChunks\":0,"
			  "\"numTimestampBytes\":0,\"numValueBytes\":0,\"new\":\"x\"},\"compaction\":{"
			  "\"level\":1,\"sources\":[\"01ARYZ6S41TSV4RRFFQ69G5FAV\"],\"parents\":[]},"
			  "\"version\":1}\n";
	rc = pd_block_meta_parse(ext, strlen(ext), &r, &err);
	if (rc)
		fail_msg("%s", err.msg);
	assert_int_equal(r.mint, -5);
	assert_int_equal(r.idle, 0);
	free(r.sources);

	/* a block of idle series: the compaction hint, written and read back */
	m.idle = 1;
	pd_buf_init(&out, 0);
	assert_int_equal(pd_block_meta_format(&m, &out), 0);
	assert_non_null(strstr((const char *)out.data, "\"hints\": [\n\t\t\t\"from-idle-series\"\n\t\t]"));
	assert_int_equal(pd_block_meta_parse((const char *)out.data, out.len, &r, &err), 0);
	assert_int_equal(r.idle, 1);
	assert_int_equal(r.level, 3);
	free(r.sources);
	pd_buf_fini(&out);
}

/* A valid meta.json with one substitution of `from` by `to`. */
static int parse_edited(const char *from, const char *to, struct pd_err *err)
{
	static const char base[] =
		"{\"ulid\": \"01ARYZ6S41TSV4RRFFQ69G5FAV\", \"minTime\": 100, \"maxTime\": 200, "
		"\"stats\": {\"numSamples\": 1, \"numSeries\": 2, \"numChunks\": 3, "
		"\"numTimestampBytes\": 4, \"numValueBytes\": 5}, \"compaction\": {\"level\": 1, "
		"\"sources\": [\"01ARYZ6S41TSV4RRFFQ69G5FAV\"]}, \"version\": 1}";
	char buf[1024];
	const char *at = strstr(base, from);
	assert_non_null(at);
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
	struct pd_block_meta m;
	int rc = pd_block_meta_parse(buf, strlen(buf), &m, err);
	free(m.sources);
	return rc;
}

static void test_meta_bad(void **state)
{
	static const struct {
		const char *from, *to, *want;
	} cases[] = {
		{"\"ulid\": \"01ARYZ6S41TSV4RRFFQ69G5FAV\", ", "", "field \"ulid\" is missing"},
		{"\"minTime\": 100, ", "", "field \"minTime\" is missing"},
		{"\"numSeries\": 2, ", "", "field \"stats.numSeries\" is missing"},
		{"\"numValueBytes\": 5", "\"numValueByte\": 5", "field \"stats.numValueBytes\" is missing"},
		{"\"level\": 1, ", "", "field \"compaction.level\" is missing"},
		{", \"version\": 1", "", "field \"version\" is missing"},
		{"\"stats\"", "\"statz\"", "field \"stats\" is missing"},
		{"\"minTime\": 100", "\"minTime\": \"100\"", "field \"minTime\": expected an integer, found a string"},
		{"\"maxTime\": 200", "\"maxTime\": 2.5", "field \"maxTime\": 2.5 is not an integer"},
		{"\"maxTime\": 200", "\"maxTime\": 2e2", "field \"maxTime\""},
		{"\"maxTime\": 200", "\"maxTime\": 50", "field \"maxTime\": 50 is not after minTime"},
		{"\"maxTime\": 200", "\"maxTime\": 9223372036854775808", "field \"maxTime\": 9223372036854775808 is out of range"},
		{"\"numSamples\": 1", "\"numSamples\": -1", "field \"stats.numSamples\": -1 is out of range"},
		{"\"numSamples\": 1", "\"numSamples\": 18446744073709551616", "stats.numSamples"},
		{"\"numChunks\": 3", "\"numChunks\": null", "field \"stats.numChunks\": expected an integer, found null"},
		{"\"numChunks\": 3", "\"numChunks\": 03", "stats"},
		{"\"level\": 1", "\"level\": 0", "field \"compaction.level\": 0 is out of range"},
		{"\"level\": 1", "\"level\": true", "field \"compaction.level\": expected an integer, found a boolean"},
		{"[\"01ARYZ6S41TSV4RRFFQ69G5FAV\"]", "[]", "field \"compaction.sources\" is empty"},
		{"[\"01ARYZ6S41TSV4RRFFQ69G5FAV\"]", "[\"01ARYZ\"]", "field \"compaction.sources\": \"01ARYZ\" is not a ULID"},
		{"[\"01ARYZ6S41TSV4RRFFQ69G5FAV\"]", "[\"01ARYZ6S41TSV4RRFFQ69G5FAV\" 1]", "field \"compaction.sources\": byte"},
		{"[\"01ARYZ6S41TSV4RRFFQ69G5FAV\"]", "\"01ARYZ6S41TSV4RRFFQ69G5FAV\"", "field \"compaction.sources\": expected an array of ULIDs, found a string"},
		{"\"ulid\": \"01ARYZ6S41TSV4RRFFQ69G5FAV\"", "\"ulid\": 1", "field \"ulid\": expected a ULID string, found a number"},
		{"\"ulid\": \"01ARYZ6S41TSV4RRFFQ69G5FAV\"", "\"ulid\": \"01ARYZ6S41TSV4RRFFQ69G5FAVXXXXXXXXXXX\"", "field \"ulid\""},
		{"\"stats\": {", "\"stats\": [", "field \"stats\": expected an object, found an array"},
		{"\"version\": 1", "\"version\": 2", "field \"version\": unsupported version 2"},
		{"\"version\": 1", "\"version\": 1, \"version\": 1", "field \"version\" appears twice"},
		{"\"numSeries\": 2", "\"numSeries\": 2, \"numSeries\": 2", "field \"stats.numSeries\" appears twice"},
		{"\"version\": 1}", "\"version\": 1} x", "the end of the input"},
		{"\"version\": 1}", "\"version\": 1,}", "byte"},
		{"\"minTime\": 100", "\"minTime\" 100", "':'"},
		{"\"level\": 1, ", "\"hints\": \"from-idle-series\", \"level\": 1, ", "field \"compaction.hints\": expected an array of strings, found a string"},
		{"\"level\": 1, ", "\"hints\": [1], \"level\": 1, ", "field \"compaction.hints\": expected an array of strings, found a number"},
		{"\"level\": 1, ", "\"hints\": [\"a\" \"b\"], \"level\": 1, ", "field \"compaction.hints\": byte"},
		{"\"level\": 1, ", "\"hints\": [], \"hints\": [], \"level\": 1, ", "field \"compaction.hints\" appears twice"},
	};
	struct pd_err err = {0};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		int rc = parse_edited(cases[i].from, cases[i].to, &err);
		if (rc != PD_ECORRUPT || !strstr(err.msg, cases[i].want))
			fail_msg("case %zu (%s -> %s): rc %d, message \"%s\", want \"%s\"", i,
				 cases[i].from, cases[i].to, rc, err.msg, cases[i].want);
	}
	/* garbage */
	static const char *const garbage[] = {"",	  "   ",   "hello", "[1,2]",	    "{",
					      "{\"ulid\"", "\x01", "{}",   "{\"a\":tru}", "{\"a\":\"\\x\"}",
					      "{\"a\":\"\x01\"}"};
	for (size_t i = 0; i < sizeof(garbage) / sizeof(*garbage); i++) {
		struct pd_block_meta m;
		int rc = pd_block_meta_parse(garbage[i], strlen(garbage[i]), &m, &err);
		if (rc != PD_ECORRUPT)
			fail_msg("garbage %zu accepted", i);
		assert_true(strlen(err.msg) > 0);
	}
	/* deep nesting of an unknown field is bounded */
	char deep[300];
	size_t k = 0;
	k += (size_t)sprintf(deep, "{\"x\":");
	while (k < 250)
		deep[k++] = '[';
	deep[k] = 0;
	struct pd_block_meta m;
	expect_err(pd_block_meta_parse(deep, strlen(deep), &m, &err), &err, PD_ECORRUPT,
		   "nested too deeply");
}

static void test_meta_in_block(void **state)
{
	struct tseries *s = make_series(5, 2);
	char *parent = make_tmpdir();
	char *dir = write_block(parent, s, 5, 0);
	char *path = pd_path_join(dir, "meta.json");
	size_t len;
	uint8_t *orig = read_file(path, &len);
	struct pd_block *b;
	struct pd_err err = {0};

	/* the file as written parses, and is the documented shape */
	struct pd_block_meta m;
	assert_int_equal(pd_block_meta_parse((const char *)orig, len, &m, &err), 0);
	assert_int_equal(m.num_series, 5);
	free(m.sources);
	assert_non_null(strstr((const char *)orig, "\"numTimestampBytes\": "));
	assert_non_null(strstr((const char *)orig, "\"version\": 1\n}\n"));

	/* a field missing from the file: the message names the file and the field */
	char *cut = strstr((const char *)orig, "\t\t\"numChunks\"");
	assert_non_null(cut);
	char *nl = strchr(cut, '\n');
	write_file(path, orig, (size_t)(cut - (char *)orig));
	FILE *f = fopen(path, "ab");
	fputs(nl + 1, f);
	fclose(f);
	expect_err(pd_block_open(&b, dir, &err), &err, PD_ECORRUPT, "meta.json: field \"stats.numChunks\" is missing");
	assert_non_null(strstr(err.msg, dir));
	write_file(path, "not json", 8);
	expect_err(pd_block_open(&b, dir, &err), &err, PD_ECORRUPT, "meta.json");
	unlink(path);
	expect_err(pd_block_open(&b, dir, &err), &err, PD_ENOTFOUND, "meta.json");
	write_file(path, orig, len);
	assert_int_equal(pd_block_open(&b, dir, &err), 0);
	pd_block_close(b);

	free(orig);
	free(path);
	free(dir);
	rm_rf(parent);
	free(parent);
	free_series(s, 5);
}

/* Section boundaries of an index image, from its TOC. */
static void index_sections(const uint8_t *p, size_t len, uint64_t off[5])
{
	for (int i = 0; i < 4; i++)
		off[i] = pd_get_be64(p + len - PD_INDEX_TOC_SIZE + 8 * i);
	off[4] = len - PD_INDEX_TOC_SIZE;
}

static void test_index_corruption(void **state)
{
	const size_t n = 12;
	struct tseries *s = make_series(n, 3);
	char *parent = make_tmpdir();
	char *dir = write_block(parent, s, n, 0);
	char *path = pd_path_join(dir, "index");
	size_t len;
	uint8_t *orig = read_file(path, &len);
	uint64_t sec[5];
	struct pd_block *b;
	struct pd_err err = {0};
	static const char *const names[] = {"symbol table", "series", "postings",
					    "postings offset table"};
	index_sections(orig, len, sec);

	/* one byte in the content of each section: that section's CRC */
	for (int i = 0; i < 4; i++) {
		size_t at = (size_t)(sec[i] + 8 + (sec[i + 1] - sec[i] - 8) / 2);
		char want[64];
		snprintf(want, sizeof(want), "index: %s: CRC mismatch", names[i]);
		patch_byte(path, at, orig[at] ^ 0x10);
		expect_err(pd_block_open(&b, dir, &err), &err, PD_ECORRUPT, want);
		assert_null(b);
		patch_byte(path, at, orig[at]);
	}
	patch_byte(path, 0, 'X');
	expect_err(pd_block_open(&b, dir, &err), &err, PD_ECORRUPT, "index: header: bad magic");
	patch_byte(path, 0, orig[0]);
	patch_byte(path, 4, 9);
	expect_err(pd_block_open(&b, dir, &err), &err, PD_ECORRUPT, "unsupported index version 9");
	patch_byte(path, 4, orig[4]);
	patch_byte(path, len - 5, orig[len - 5] ^ 1);
	expect_err(pd_block_open(&b, dir, &err), &err, PD_ECORRUPT, "table of contents: CRC mismatch");
	patch_byte(path, len - 5, orig[len - 5]);

	/* every byte, flipped in turn: always a clean error */
	for (size_t at = 0; at < len; at++) {
		patch_byte(path, at, orig[at] ^ 0xff);
		int rc = pd_block_open(&b, dir, &err);
		if (rc != PD_ECORRUPT)
			fail_msg("byte %zu flipped: rc %d (%s)", at, rc, err.msg);
		assert_non_null(strstr(err.msg, "index: "));
		patch_byte(path, at, orig[at]);
	}

	/* damage behind valid CRCs: the decoders' own bounds checks */
	uint8_t *img = malloc(len);
	for (size_t at = sec[0] + 8; at < sec[4]; at++) {
		int i = 0;
		while (i < 3 && at >= sec[i + 1])
			i++;
		uint64_t clen = pd_get_be64(orig + sec[i]);
		if (at >= sec[i] + 8 + clen)
			continue; /* a CRC */
		for (int pattern = 0; pattern < 2; pattern++) {
			memcpy(img, orig, len);
			img[at] = pattern ? (uint8_t)(orig[at] + 1) : orig[at] ^ 0xff;
			pd_put_be32(img + sec[i] + 8 + clen,
				    pd_crc32c(0, img + sec[i] + 8, (size_t)clen));
			write_file(path, img, len);
			int rc = pd_block_open(&b, dir, &err);
			assert_true(rc == 0 || rc == PD_ECORRUPT);
			if (rc == 0) {
				walk_block(b);
				pd_block_close(b);
			}
		}
	}
	free(img);

	/* truncations */
	size_t cuts[] = {0, 1, 7, 8, 20, len / 2, len - PD_INDEX_TOC_SIZE, len - 1};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(*cuts); i++) {
		write_file(path, orig, cuts[i]);
		expect_err(pd_block_open(&b, dir, &err), &err, PD_ECORRUPT, "index");
	}
	unlink(path);
	expect_err(pd_block_open(&b, dir, &err), &err, PD_ENOTFOUND, "index");
	write_file(path, orig, len);
	assert_int_equal(pd_block_open(&b, dir, &err), 0);
	verify_block(b, s, n);
	pd_block_close(b);

	free(orig);
	free(path);
	free(dir);
	rm_rf(parent);
	free(parent);
	free_series(s, n);
}

static void test_chunk_corruption(void **state)
{
	const size_t n = 8;
	struct tseries *s = make_series(n, 3);
	char *parent = make_tmpdir();
	char *dir = write_block(parent, s, n, 0);
	char *path = pd_path_join(dir, "chunks/000001");
	size_t len;
	uint8_t *orig = read_file(path, &len);
	struct pd_block *b;
	struct pd_err err = {0};

	/* all chunk refs in file order */
	assert_int_equal(pd_block_open(&b, dir, &err), 0);
	uint64_t refs[64];
	size_t nrefs = 0;
	uint64_t *all;
	size_t nall;
	assert_int_equal(pd_block_all_series(b, &all, &nall, &err), 0);
	for (size_t i = 0; i < nall; i++) {
		struct pd_lpair *l;
		struct pd_block_chunk_meta *c;
		size_t nl, nc;
		assert_int_equal(pd_block_series(b, all[i], &l, &nl, &c, &nc, &err), 0);
		for (size_t k = 0; k < nc; k++) {
			refs[nrefs++] = c[k].ts_ref;
			refs[nrefs++] = c[k].vals_ref;
		}
		free(l);
		free(c);
	}
	free(all);
	assert_int_equal(refs[0], 1ull << 32 | PD_SEGMENT_HEADER_SIZE);

	/* flip every byte of every entry: exactly the entry holding it fails, with
	 * an error naming the segment and the entry's offset (the mapping sees the
	 * file change) */
	for (size_t at = PD_SEGMENT_HEADER_SIZE; at < len; at++) {
		patch_byte(path, at, orig[at] ^ 0x55);
		size_t bad = 0;
		for (size_t r = 0; r < nrefs; r++) {
			uint64_t start = refs[r] & 0xffffffffu;
			uint64_t end = r + 1 < nrefs ? refs[r + 1] & 0xffffffffu : len;
			const uint8_t *p;
			size_t plen;
			int rc = pd_block_chunk_bytes(b, refs[r], &p, &plen, &err);
			if (at >= start && at < end) {
				char want[64];
				snprintf(want, sizeof(want), "chunks/000001: entry at offset %llu",
					 (unsigned long long)start);
				expect_err(rc, &err, PD_ECORRUPT, want);
				bad++;
			} else {
				assert_int_equal(rc, 0);
			}
		}
		assert_int_equal(bad, 1);
		patch_byte(path, at, orig[at]);
	}
	pd_block_close(b);

	/* a damaged header is found on open */
	patch_byte(path, 1, 0);
	expect_err(pd_block_open(&b, dir, &err), &err, PD_ECORRUPT, "chunks/000001: bad magic");
	patch_byte(path, 1, orig[1]);
	patch_byte(path, 4, 2);
	expect_err(pd_block_open(&b, dir, &err), &err, PD_ECORRUPT, "chunk segment version 2");
	patch_byte(path, 4, orig[4]);

	/* truncated segment: entries past the cut fail, earlier ones still read */
	size_t cut = (size_t)(refs[nrefs / 2] & 0xffffffffu) + 3;
	write_file(path, orig, cut);
	assert_int_equal(pd_block_open(&b, dir, &err), 0);
	for (size_t r = 0; r < nrefs; r++) {
		const uint8_t *p;
		size_t plen;
		int rc = pd_block_chunk_bytes(b, refs[r], &p, &plen, &err);
		if (r < nrefs / 2)
			assert_int_equal(rc, 0);
		else if (r == nrefs / 2)
			expect_err(rc, &err, PD_ECORRUPT, "runs past the end of the file");
		else
			expect_err(rc, &err, PD_ECORRUPT, "outside the segment");
	}
	pd_block_close(b);
	write_file(path, orig, 5);
	expect_err(pd_block_open(&b, dir, &err), &err, PD_ECORRUPT, "too short for a chunk segment");
	unlink(path);
	expect_err(pd_block_open(&b, dir, &err), &err, PD_ECORRUPT, "no chunk segments");

	free(orig);
	free(path);
	free(dir);
	rm_rf(parent);
	free(parent);
	free_series(s, n);
}

/* Whether rc and err are a clear refusal of a damaged value chunk: PD_ECORRUPT
 * saying so, a claimed size over the limit, or (its count damaged) an index past
 * its end. */
static int refused_clearly(int rc, const struct pd_err *err)
{
	return (rc == PD_ECORRUPT && strstr(err->msg, "value chunk")) || rc == PD_ETOOBIG ||
	       rc == PD_ENOTFOUND;
}

/* Flips the byte at `at` of the segment (under the entries' CRCs): exactly the
 * entry holding it fails, naming the segment and its offset, and so does every
 * read of its profiles; with `full`, every other chunk's profiles still read
 * back. */
static void check_flip(const struct pd_block *b, const char *path, const uint8_t *orig,
		       size_t len, const struct centry *e, size_t ne, size_t at, int full)
{
	struct pd_err err = {0};
	size_t bad = 0;
	patch_byte(path, at, orig[at] ^ 0x55);
	for (size_t r = 0; r < ne; r++) {
		uint64_t start = e[r].ref & 0xffffffffu;
		uint64_t end = r + 1 < ne ? e[r + 1].ref & 0xffffffffu : len;
		const uint8_t *p;
		size_t plen;
		int rc = pd_block_chunk_bytes(b, e[r].ref, &p, &plen, &err);
		if (at < start || at >= end) {
			if (rc)
				fail_msg("byte %zu flipped: entry at %llu fails: %s", at,
					 (unsigned long long)start, err.msg);
			continue;
		}
		char want[64];
		snprintf(want, sizeof(want), "chunks/000001: entry at offset %llu",
			 (unsigned long long)start);
		expect_err(rc, &err, PD_ECORRUPT, want);
		bad++;
		for (size_t i = 0; e[r].vals && i < e[r].c->count; i++) {
			uint8_t *out = NULL;
			size_t olen;
			expect_err(read_value(b, e[r].ref, i, &out, &olen, &err), &err, PD_ECORRUPT, want);
		}
		if (full)
			verify_values_but(b, e, ne, e[r].ref);
	}
	assert_int_equal(bad, 1);
	patch_byte(path, at, orig[at]);
}

/* A block of test profiles in v2 chunks beside v1 ones: every profile reads back
 * as appended. Damage to a chunk, under its entry's CRC or behind a valid one, and
 * a chunk cut short fail only the reads of that chunk's profiles, with a clear
 * error, and never a crash; every other chunk still reads back. */
static void test_chunk_corruption_v2(void **state)
{
	size_t n;
	struct tseries *s = make_mixed_series(&n);
	char *parent = make_tmpdir();
	char *dir = write_block(parent, s, n, 0);
	char *path = pd_path_join(dir, "chunks/000001");
	size_t len;
	uint8_t *orig = read_file(path, &len);
	uint8_t *img = malloc(len);
	struct pd_block *b;
	struct pd_err err = {0};
	struct centry e[32];

	assert_int_equal(pd_block_open(&b, dir, &err), 0);
	assert_int_equal(b->nsegs, 1);
	verify_block(b, s, n);
	size_t ne = block_entries(b, s, n, e, 32);
	verify_values_but(b, e, ne, 0);

	/* 1. bytes flipped under the CRCs: the first bytes (length, kind), a middle
	 * one and the last ones (CRC) of every entry, with every other chunk read
	 * back for the middle ones; and every 97th byte of the file */
	for (size_t r = 0; r < ne; r++) {
		size_t start = e[r].ref & 0xffffffffu;
		size_t end = r + 1 < ne ? e[r + 1].ref & 0xffffffffu : len;
		size_t at[] = {start, start + 1, start + 2, (start + end) / 2, end - 4, end - 1};
		for (size_t k = 0; k < sizeof(at) / sizeof(*at); k++)
			check_flip(b, path, orig, len, e, ne, at[k], k == 3);
	}
	for (size_t at = PD_SEGMENT_HEADER_SIZE; at < len; at += 97)
		check_flip(b, path, orig, len, e, ne, at, 0);

	/* 2. a v2 value chunk's bytes changed behind a valid CRC: every byte of its
	 * header and every 61st byte of its frames, xor 0xff and plus 1. Its reads
	 * are refused clearly or give bytes (a changed literal in a zstd frame goes
	 * unnoticed) that the pprof decoder takes or refuses; a changed encoding byte
	 * is refused (but for 2 -> 3, below). With a byte of its frames changed, every other chunk
	 * still reads back. */
	for (size_t r = 0; r < ne; r++) {
		if (!e[r].vals || e[r].c->enc != V2)
			continue;
		size_t start = e[r].ref & 0xffffffffu;
		struct pd_dec d;
		pd_dec_init(&d, orig + start, len - start);
		size_t dlen = (size_t)pd_dec_uvarint(&d), lw = d.pos;
		size_t data = start + lw + 1;
		assert_int_equal(dlen, e[r].c->vals_len);
		for (size_t k = 0; k < dlen; k += k < 24 ? 1 : 61) {
			for (int pattern = 0; pattern < 2; pattern++) {
				int any = 0;
				memcpy(img, orig, len);
				img[data + k] = pattern ? (uint8_t)(orig[data + k] + 1) : orig[data + k] ^ 0xff;
				fix_entry_crc(img, start, lw, dlen);
				patch_bytes(path, data + k, img + data + k, 1);
				patch_bytes(path, data + dlen, img + data + dlen, 4);
				for (size_t i = 0; i < e[r].c->count; i++) {
					uint8_t *out = NULL;
					size_t olen;
					int rc = read_value(b, e[r].ref, i, &out, &olen, &err);
					if (rc == 0) {
						struct pd_pprof_profile *prof;
						if (pd_pprof_decode(&prof, out, olen, NULL, &err) == 0)
							pd_pprof_destroy(prof);
						free(out);
						continue;
					}
					if (!refused_clearly(rc, &err))
						fail_msg("chunk at %zu, byte %zu changed: profile %zu: rc %d (%s)",
							 start, k, i, rc, err.msg);
					any = 1;
				}
				/* except 2 -> 3, the byte of the same encoding with times
				 * relative to the timestamps: its profiles read, with other
				 * times */
				if (k == 0 && !any && img[data] != PD_CHUNKENC_VALUES_COLUMNAR_REL)
					fail_msg("chunk at %zu: a changed encoding byte was read", start);
				if (k == (dlen / 2) && pattern == 0)
					verify_values_but(b, e, ne, e[r].ref);
				patch_bytes(path, data + k, orig + data + k, 1);
				patch_bytes(path, data + dlen, orig + data + dlen, 4);
			}
		}
		verify_values(b, e[r].ref, e[r].c);
	}

	/* 3. value chunks of either encoding cut short: the entry's length lowered in
	 * place (a varint of the same width, the CRC rewritten, the rest of its bytes
	 * left unread). A v2 chunk's count and every read of its profiles are refused
	 * as damaged; a v1 chunk refuses the reads whose group was cut off and gives
	 * the others back as they were. Every other chunk still reads back. */
	for (size_t r = 0; r < ne; r++) {
		if (!e[r].vals)
			continue;
		size_t start = e[r].ref & 0xffffffffu;
		size_t end = r + 1 < ne ? e[r + 1].ref & 0xffffffffu : len;
		struct pd_dec d;
		pd_dec_init(&d, orig + start, len - start);
		size_t dlen = (size_t)pd_dec_uvarint(&d), lw = d.pos;
		size_t cuts[] = {1, 2, 5, dlen / 3, dlen / 2, dlen - 1};
		for (size_t k = 0; k < sizeof(cuts) / sizeof(*cuts); k++) {
			size_t cut = cuts[k];
			memcpy(img, orig, len);
			for (size_t j = 0; j < lw; j++)
				img[start + j] = (uint8_t)(((cut >> (7 * j)) & 0x7f) | (j + 1 < lw ? 0x80 : 0));
			img[start + lw] = orig[start + lw]; /* kind */
			fix_entry_crc(img, start, lw, cut);
			patch_bytes(path, start, img + start, lw + 1 + cut + 4);
			const uint8_t *p;
			size_t plen;
			assert_int_equal(pd_block_chunk_bytes(b, e[r].ref, &p, &plen, &err), 0);
			assert_int_equal(plen, cut);
			/* a v1 chunk's count is in its header alone, whose frame table is
			 * checked by the reads */
			int64_t count = pd_chunkenc_values_read_count(p, plen, &err);
			int v1_header = e[r].c->enc == V1 && count == (int64_t)e[r].c->count;
			if (!v1_header && (count != PD_ECORRUPT || !strstr(err.msg, "value chunk")))
				fail_msg("v%d chunk at %zu cut to %zu of %zu bytes: count %lld (%s)",
					 e[r].c->enc, start, cut, dlen, (long long)count, err.msg);
			for (size_t i = 0; i < e[r].c->count; i++) {
				uint8_t *out = NULL;
				size_t olen;
				int rc = read_value(b, e[r].ref, i, &out, &olen, &err);
				if (rc == 0 && e[r].c->enc == V1) {
					/* a v1 read needs only its own group's frame */
					assert_int_equal(olen, e[r].c->items[i]->len);
					assert_memory_equal(out, e[r].c->items[i]->raw, olen);
					free(out);
					continue;
				}
				expect_err(rc, &err, PD_ECORRUPT, "value chunk");
			}
			if (k == 4)
				verify_values_but(b, e, ne, e[r].ref);
			patch_bytes(path, start, orig + start, end - start);
		}
		verify_values(b, e[r].ref, e[r].c);
	}
	pd_block_close(b);

	/* 4. the segment file cut inside the largest v2 value chunk: the chunks before
	 * it read back, it runs past the end of the file, the ones after it are
	 * outside the segment */
	size_t rv = 0, most = 0;
	for (size_t r = 0; r < ne; r++)
		if (e[r].vals && e[r].c->enc == V2 && e[r].c->vals_len > most) {
			most = e[r].c->vals_len;
			rv = r;
		}
	assert_true(rv > 0 && rv + 1 < ne);
	size_t vstart = e[rv].ref & 0xffffffffu;
	write_file(path, orig, vstart + most / 2);
	assert_int_equal(pd_block_open(&b, dir, &err), 0);
	for (size_t r = 0; r < ne; r++) {
		const uint8_t *p;
		size_t plen;
		uint8_t *out = NULL;
		size_t olen;
		if (r < rv && e[r].vals)
			verify_values(b, e[r].ref, e[r].c);
		else if (r < rv)
			assert_int_equal(pd_block_chunk_bytes(b, e[r].ref, &p, &plen, &err), 0);
		else if (r == rv)
			expect_err(read_value(b, e[r].ref, 0, &out, &olen, &err), &err, PD_ECORRUPT,
				   "runs past the end of the file");
		else
			expect_err(read_value(b, e[r].ref, 0, &out, &olen, &err), &err, PD_ECORRUPT,
				   "outside the segment");
	}
	pd_block_close(b);
	write_file(path, orig, len);
	assert_int_equal(pd_block_open(&b, dir, &err), 0);
	verify_values_but(b, e, ne, 0);
	pd_block_close(b);

	free(img);
	free(orig);
	free(path);
	free(dir);
	rm_rf(parent);
	free(parent);
	free_series(s, n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ulid),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_segments_cut),
		cmocka_unit_test(test_empty_block),
		cmocka_unit_test(test_rejected_series),
		cmocka_unit_test(test_abort),
		cmocka_unit_test(test_meta_roundtrip),
		cmocka_unit_test(test_meta_bad),
		cmocka_unit_test(test_meta_in_block),
		cmocka_unit_test(test_index_corruption),
		cmocka_unit_test(test_chunk_corruption),
		cmocka_unit_test(test_chunk_corruption_v2),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
