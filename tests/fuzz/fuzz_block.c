/* fuzz_block.c: libFuzzer target for persisted blocks, the files a store reads
 * back from disk (docs/format/index.md, meta.md, chunk-segments.md, chunks.md).
 * At start it writes one small valid block with the block writer into a
 * per-process temporary directory (under $TMPDIR, default /tmp): 3 series, 5
 * chunks in 3 chunk segments, holding real profiles from testdata/profiles
 * (small goapp profiles and the valid edge cases, gunzipped as the store keeps
 * them) and a few values that are not profiles. Four value chunks are encoding 2
 * (columnar, groups of 2 and 32), one is encoding 1 (zstd groups). Before any
 * input, every profile of the intact template is read back through the block
 * reader and through the store and must equal what was appended
 * (pd_pprof_compare; bytes that are not a profile byte for byte).
 *
 * Each input then replaces one file of a copy of that block, chosen by its first
 * byte, and the block is opened and walked through everything a reader can ask
 * for: label names and values, postings, every series, every chunk's bytes,
 * timestamps and profiles, and the chunks' merges. With bit 3 of the first byte
 * the directory is also opened as a store (read-only) and queried. Any file may
 * be rejected, but nothing may crash, leak, or break what block.h and chunkenc.h
 * promise (ascending refs, sorted labels, ascending timestamps, no profile above
 * max_profile); a profile read back from a damaged chunk may be any bytes, which
 * the pprof decoder must then take without crashing.
 *
 * With bit 4 of the first byte (0x10) the rest is instead the block's tombstones
 * file (docs/format/tombstones.md), with its CRC32C fixed up when bit 5 (0x20) is
 * set too, beside the template's other files: the block is walked (and with bit 3
 * the store queried) under those deletions, and a file that parses must parse
 * again the same after tomb_encode. Without bit 4 the block has no tombstones.
 *
 * First byte, low 3 bits:
 *   0  the rest is the index             1  the index, with its CRCs fixed up
 *   2  the rest is meta.json             3  chunks/000001
 *   4  chunks/000001, entry CRCs fixed   5  chunks/000002, entry CRCs fixed
 *   6  chunks/000001 after a valid       7  only the chunk decoders
 *      header, entry CRCs fixed
 * Segment 1 holds the chunks of cpu (v2) and heap{job="db"} (v1), segment 2 the
 * value chunk of heap{job="api"}'s first chunk (v2, 5 samples in 3 groups),
 * segment 3 the rest. The chunk decoders (pd_chunkenc_ts_iter,
 * pd_chunkenc_values_read and _merge) also run on the rest of every input.
 *
 * The test profiles are read from PD_FUZZ_TESTDATA (the source tree's testdata,
 * set by tests/fuzz/CMakeLists.txt). PD_FUZZ_WRITE_SEEDS=DIR makes the binary
 * write its seed corpus (the template block's files under each mode, and single
 * chunks of either encoding) into DIR and exit; PD_FUZZ_VERBOSE=1 makes it print
 * why a block or store was refused. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "block.h"
#include "block_int.h"
#include "profd/chunkenc.h"
#include "profd/pprof.h"
#include "profd/tsdb.h"
#include "profd/util.h"
#include "wal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The template block is renamed to this fixed ULID so that seed files (meta.json
 * names its directory) stay valid from run to run. */
#define PD_FUZZ_ULID "01HG0000000000000000000000"
#define PD_FUZZ_MAX_PROFILE ((size_t)1 << 20)
#define PD_FUZZ_MAX_WALK 256 /* series, chunks, profiles looked at per input */

static char pd_fuzz_root[96];   /* the per-process temporary directory */
static char pd_fuzz_store[128]; /* root/store: the store holding the block */
static char pd_fuzz_block[192]; /* root/store/<ULID> */

struct pd_fuzz_file {
	char rel[32];
	uint8_t *p;
	size_t len;
};
/* the template's files, as written: meta.json, index, chunks/000001, ... */
#define PD_FUZZ_MAX_SEGS 8
static struct pd_fuzz_file pd_fuzz_files[2 + PD_FUZZ_MAX_SEGS];
static int pd_fuzz_nfiles;
enum { F_META, F_INDEX, F_SEG1, F_SEG2, F_TS = 100, F_VALS, F_VALS_V1 };
/* for seeds: a timestamp chunk and its v2 value chunk (5 samples in 3 groups),
 * and a v1 value chunk */
static struct pd_fuzz_file pd_fuzz_seed_ts, pd_fuzz_seed_vals, pd_fuzz_seed_vals_v1;

static void pd_fuzz_die(const char *what, const struct pd_err *err)
{
	fprintf(stderr, "fuzz_block: %s: %s\n", what, err ? err->msg : "");
	abort();
}

static void pd_fuzz_bug(const char *what)
{
	fprintf(stderr, "fuzz_block: BUG: %s\n", what);
	abort();
}

static int pd_fuzz_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void pd_fuzz_cleanup(void)
{
	if (pd_fuzz_root[0])
		nftw(pd_fuzz_root, pd_fuzz_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void pd_fuzz_write(const char *path, const uint8_t *p, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	size_t off = 0;
	if (fd < 0)
		pd_fuzz_die(path, NULL);
	while (off < len) {
		ssize_t n = write(fd, p + off, len - off);
		if (n <= 0)
			pd_fuzz_die(path, NULL);
		off += (size_t)n;
	}
	close(fd);
}

/* ---- the template block ---------------------------------------------------- */

/* What a template chunk holds: test profiles (testdata/profiles/<file>, stored
 * raw, gunzipped, as the store keeps them) and, with file NULL, bytes that are
 * not a profile, which a v2 chunk keeps as an opaque record. */
struct pd_fuzz_chunk_spec {
	const char *labels; /* the series, for messages */
	int encoding;       /* PD_CHUNKENC_VALUES_... */
	unsigned group;     /* 0: the encoding's default */
	int64_t t0, step;
	size_t n;
	const char *file[6];
};

/* Series in label order, chunks in time order. cpu{job=api} and the three chunks
 * of heap{job=api} are v2 (groups of 2, so that records are delta coded within a
 * group and reads cross groups); heap{job=db,...} is a v1 chunk. */
static const struct pd_fuzz_chunk_spec pd_fuzz_spec[] = {
    {"cpu{job=api}", PD_CHUNKENC_VALUES_COLUMNAR, 2, 0, 15000, 3,
     {"goapp/threadcreate.pb.gz", "goapp/mutex.pb.gz", "goapp/threadcreate.pb.gz"}},
    {"heap{job=db}", PD_CHUNKENC_VALUES_ZSTD_GROUPS, 2, 5, 30000, 4,
     {"edge/no-functions.pb", NULL, "edge/zero-and-negative.pb", "edge/unpacked.pb"}},
    {"heap{job=api} a", PD_CHUNKENC_VALUES_COLUMNAR, 2, 0, 10000, 5,
     {"goapp/goroutine.pb.gz", "goapp/goroutine.pb.gz", "edge/multi-types.pb", NULL,
      "edge/no-mappings.pb"}},
    {"heap{job=api} b", PD_CHUNKENC_VALUES_COLUMNAR, 2, 100000, 10000, 2,
     {"edge/sparse-ids.pb", "edge/default-type.pb"}},
    {"heap{job=api} c", PD_CHUNKENC_VALUES_COLUMNAR, 0, 200000, 60000, 1,
     {"edge/empty-samples.pb"}},
};
#define PD_FUZZ_NCHUNKS (sizeof(pd_fuzz_spec) / sizeof(pd_fuzz_spec[0]))
#define PD_FUZZ_CHUNK_V2_SEED 2 /* the chunk behind the chunk-ts and chunk-vals seeds */
#define PD_FUZZ_CHUNK_V1_SEED 1 /* the chunk behind the chunk-vals-v1 seed */

/* A value appended to a template chunk, as appended, and its timestamp. */
struct pd_fuzz_item {
	uint8_t *p;
	size_t len;
	struct pd_pprof_profile *prof; /* NULL: not a profile */
	int64_t t;
};
static struct pd_fuzz_item pd_fuzz_items[PD_FUZZ_NCHUNKS][6];
static struct pd_block_chunk pd_fuzz_built[PD_FUZZ_NCHUNKS];

/* testdata/profiles/<rel>, gunzipped */
static void pd_fuzz_load(const char *rel, uint8_t **out, size_t *len)
{
	struct pd_err err = {0};
	char path[512];
	uint8_t *buf, *raw;
	size_t n;
	snprintf(path, sizeof(path), "%s/profiles/%s", PD_FUZZ_TESTDATA, rel);
	if (pd_file_read(path, (size_t)1 << 24, &buf, &n, &err))
		pd_fuzz_die("reading a test profile for the template", &err);
	if (pd_gzip_is(buf, n)) {
		if (pd_gunzip(buf, n, (size_t)1 << 24, &raw, len, &err))
			pd_fuzz_die(path, &err);
		free(buf);
		*out = raw;
		return;
	}
	*out = buf;
	*len = n;
}

/* Chunk k of the spec, each sample jittered a little from t0 + i * step. */
static void pd_fuzz_chunk(size_t k, int64_t base)
{
	const struct pd_fuzz_chunk_spec *sp = &pd_fuzz_spec[k];
	struct pd_block_chunk *c = &pd_fuzz_built[k];
	struct pd_chunkenc_ts ts;
	struct pd_chunkenc_values *v = pd_chunkenc_values_create_enc(sp->encoding, sp->group, 1);
	struct pd_err err = {0};
	uint8_t *vals;
	size_t len;

	if (!v)
		pd_fuzz_die("pd_chunkenc_values_create_enc", NULL);
	pd_chunkenc_ts_init(&ts);
	for (size_t i = 0; i < sp->n; i++) {
		struct pd_fuzz_item *it = &pd_fuzz_items[k][i];
		it->t = base + sp->t0 + (int64_t)i * sp->step + (int64_t)(i % 3);
		if (sp->file[i]) {
			pd_fuzz_load(sp->file[i], &it->p, &it->len);
			if (pd_pprof_decode(&it->prof, it->p, it->len, NULL, &err))
				pd_fuzz_die(sp->file[i], &err);
		} else {
			char text[96];
			int n = snprintf(text, sizeof(text), "not a profile: %s sample %zu",
			                 sp->labels, i);
			it->p = malloc((size_t)n);
			memcpy(it->p, text, (size_t)n);
			it->len = (size_t)n;
		}
		if (pd_chunkenc_ts_append(&ts, it->t, &err) ||
		    pd_chunkenc_values_append_at(v, it->t, it->p, it->len, NULL, &err))
			pd_fuzz_die("building a chunk", &err);
		if (i == 0)
			c->mint = it->t;
		c->maxt = it->t;
	}
	const uint8_t *tb = pd_chunkenc_ts_bytes(&ts, &len);
	uint8_t *tc = malloc(len);
	memcpy(tc, tb, len);
	if (pd_chunkenc_values_seal(v, &vals, &c->vals_len, &err))
		pd_fuzz_die("sealing a chunk", &err);
	if (pd_chunkenc_values_encoding(vals, c->vals_len) != sp->encoding)
		pd_fuzz_bug("a sealed value chunk does not have the encoding it was created with");
	c->ts = tc;
	c->ts_len = len;
	c->vals = vals;
	c->count = (uint32_t)sp->n;
	pd_chunkenc_ts_fini(&ts);
	pd_chunkenc_values_destroy(v);
}

/* got must be item it: the same profile (pd_pprof_compare) when it is one,
 * otherwise the same bytes. */
static void pd_fuzz_check_same(const struct pd_fuzz_item *it, const uint8_t *got, size_t len,
                               const char *where, size_t k, size_t i)
{
	struct pd_pprof_profile *g;
	struct pd_err err = {0};
	char why[512];

	if (!it->prof) {
		if (len != it->len || memcmp(got, it->p, len)) {
			fprintf(stderr, "fuzz_block: %s: %s, sample %zu\n", where, pd_fuzz_spec[k].labels,
			        i);
			pd_fuzz_bug("bytes that are not a profile changed in the template block");
		}
		return;
	}
	if (pd_pprof_decode(&g, got, len, NULL, &err)) {
		fprintf(stderr, "fuzz_block: %s: %s, sample %zu: %s\n", where, pd_fuzz_spec[k].labels,
		        i, err.msg);
		pd_fuzz_bug("a profile read back from the template block does not decode");
	}
	if (pd_pprof_compare(it->prof, g, why, sizeof(why))) {
		fprintf(stderr, "fuzz_block: %s: %s, sample %zu (%s): %s\n", where,
		        pd_fuzz_spec[k].labels, i, pd_fuzz_spec[k].file[i], why);
		pd_fuzz_bug("a profile read back from the template block is not what was appended");
	}
	pd_pprof_destroy(g);
}

/* The intact template, read back through the block reader: every chunk's bytes
 * as written, and every profile in it what was appended. */
static void pd_fuzz_check_template_block(const char *dir)
{
	struct pd_block *b = NULL;
	struct pd_err err = {0};
	uint64_t *refs = NULL;
	size_t nr = 0, k = 0;

	if (pd_block_open(&b, dir, &err) || pd_block_all_series(b, &refs, &nr, &err))
		pd_fuzz_die("opening the template block", &err);
	for (size_t s = 0; s < nr; s++) {
		struct pd_lpair *l = NULL;
		struct pd_block_chunk_meta *c = NULL;
		size_t nl, nc;
		if (pd_block_series(b, refs[s], &l, &nl, &c, &nc, &err))
			pd_fuzz_die("reading a series of the template block", &err);
		for (size_t j = 0; j < nc; j++, k++) {
			const struct pd_block_chunk *w = &pd_fuzz_built[k];
			const uint8_t *p;
			size_t len;
			if (k >= PD_FUZZ_NCHUNKS || c[j].count != pd_fuzz_spec[k].n)
				pd_fuzz_bug("the template block does not hold the chunks written");
			if (pd_block_chunk_bytes(b, c[j].vals_ref, &p, &len, &err))
				pd_fuzz_die("reading a chunk of the template block", &err);
			if (len != w->vals_len || memcmp(p, w->vals, len))
				pd_fuzz_bug("a value chunk of the template block changed on disk");
			if (pd_chunkenc_values_read_count(p, len, &err) != (int64_t)pd_fuzz_spec[k].n)
				pd_fuzz_bug("a template value chunk has the wrong count");
			for (size_t i = 0; i < pd_fuzz_spec[k].n; i++) {
				uint8_t *out;
				size_t olen;
				if (pd_chunkenc_values_read_at(p, len, i, pd_fuzz_items[k][i].t,
				                               PD_FUZZ_MAX_PROFILE, &out, &olen, &err))
					pd_fuzz_die("reading a profile of the template block", &err);
				pd_fuzz_check_same(&pd_fuzz_items[k][i], out, olen, "block", k, i);
				free(out);
			}
		}
		free(l);
		free(c);
	}
	if (k != PD_FUZZ_NCHUNKS)
		pd_fuzz_bug("the template block does not hold the chunks written");
	free(refs);
	pd_block_close(b);
}

static int pd_fuzz_match_all(const void *ctx, const char *value)
{
	return 1;
}

/* The intact template through the store (pd_tsdb_select and pd_tsdb_read): every
 * sample there, with what was appended. */
static void pd_fuzz_check_template_store(void)
{
	struct pd_tsdb *db = NULL;
	struct pd_storage_result *r = NULL;
	struct pd_tsdb_opts o;
	struct pd_err err = {0};
	struct pd_storage_matcher all = {"__name__", pd_fuzz_match_all, NULL};
	size_t k = 0, i = 0, total = 0;

	pd_tsdb_opts_init(&o);
	o.read_only = 1;
	o.wal_disabled = 1;
	o.retention_ms = -1;
	o.max_profile = PD_FUZZ_MAX_PROFILE;
	if (pd_tsdb_open(&db, pd_fuzz_store, &o, &err) ||
	    pd_tsdb_select(db, &all, 1, INT64_MIN, INT64_MAX, 0, &r, &err))
		pd_fuzz_die("opening the template block as a store", &err);
	for (size_t s = 0; s < r->nseries; s++) {
		const struct pd_storage_series *se = &r->series[s];
		for (size_t j = 0; j < se->nts; j++) {
			uint8_t *out;
			size_t len;
			while (k < PD_FUZZ_NCHUNKS && i == pd_fuzz_spec[k].n) {
				k++;
				i = 0;
			}
			if (k == PD_FUZZ_NCHUNKS || se->ts[j] != pd_fuzz_items[k][i].t)
				pd_fuzz_bug("the store lists other samples than the template holds");
			if (pd_tsdb_read(db, (const struct pd_storage_label *)se->labels, se->nlabels,
			                 se->ts[j], &out, &len, &err))
				pd_fuzz_die("pd_tsdb_read of the template block", &err);
			pd_fuzz_check_same(&pd_fuzz_items[k][i], out, len, "store", k, i);
			free(out);
			i++;
			total++;
		}
	}
	size_t want = 0;
	for (size_t c = 0; c < PD_FUZZ_NCHUNKS; c++)
		want += pd_fuzz_spec[c].n;
	if (total != want)
		pd_fuzz_bug("the store lists other samples than the template holds");
	pd_storage_result_destroy(r);
	pd_tsdb_close(db);
}

static void pd_fuzz_make_template(void)
{
	/* series in label order: the block writer wants them so */
	static const struct pd_lpair s1[] = {{"__name__", "cpu"}, {"job", "api"}};
	static const struct pd_lpair s2[] = {{"__name__", "heap"},
	                                     {"instance", "10.0.0.1:80"},
	                                     {"job", "db"},
	                                     {"zone", "eu\xc3\xa9"}};
	static const struct pd_lpair s3[] = {{"__name__", "heap"}, {"job", "api"}};
	const int64_t t0 = 1700000000000ll;
	struct pd_block_writer *w = NULL;
	struct pd_err err = {0};
	char ulid[27], path[256], gen[128];

	snprintf(gen, sizeof(gen), "%s/gen", pd_fuzz_root);
	if (mkdir(gen, 0755) || mkdir(pd_fuzz_store, 0755))
		pd_fuzz_die("mkdir", NULL);
	if (pd_block_writer_create(&w, gen, t0, t0 + 7200000, 1, NULL, 0, &err))
		pd_fuzz_die("pd_block_writer_create", &err);
	for (size_t k = 0; k < PD_FUZZ_NCHUNKS; k++)
		pd_fuzz_chunk(k, t0);
	/* small segments, so that the block has a few: the first holds the v2 chunk
	 * of cpu and the v1 chunk of heap{job=db}, the second the first v2 value
	 * chunk of heap{job=api}, the third the rest */
	pd_block_writer_set_segment_size(w, 2048);
	if (pd_block_writer_add_series(w, s1, 2, &pd_fuzz_built[0], 1, &err) ||
	    pd_block_writer_add_series(w, s2, 4, &pd_fuzz_built[1], 1, &err) ||
	    pd_block_writer_add_series(w, s3, 2, &pd_fuzz_built[2], 3, &err))
		pd_fuzz_die("add_series", &err);
	if (pd_block_writer_finish(w, ulid, &err))
		pd_fuzz_die("pd_block_writer_finish", &err);

	/* keep the files, meta.json with the fixed ULID */
	for (int i = 0; i < 2 + PD_FUZZ_MAX_SEGS; i++) {
		struct pd_fuzz_file *f = &pd_fuzz_files[i];
		if (i < 2)
			snprintf(f->rel, sizeof(f->rel), "%s", i == F_META ? "meta.json" : "index");
		else
			snprintf(f->rel, sizeof(f->rel), "chunks/%06d", i - 1);
		snprintf(path, sizeof(path), "%s/%s/%s", gen, ulid, f->rel);
		if (i >= 2 && access(path, F_OK))
			break;
		if (pd_file_read(path, (size_t)1 << 24, &f->p, &f->len, &err))
			pd_fuzz_die("reading the template block", &err);
		pd_fuzz_nfiles++;
	}
	if (pd_fuzz_nfiles < 2 + 2 || pd_fuzz_nfiles > 2 + PD_FUZZ_MAX_SEGS - 1)
		pd_fuzz_die("the template block should have from 2 to 7 chunk segments", NULL);
	snprintf(path, sizeof(path), "%s/%s", gen, ulid);
	pd_fuzz_check_template_block(path);
	for (size_t i = 0; i + 26 <= pd_fuzz_files[F_META].len; i++)
		if (memcmp(pd_fuzz_files[F_META].p + i, ulid, 26) == 0)
			memcpy(pd_fuzz_files[F_META].p + i, PD_FUZZ_ULID, 26);
	snprintf(path, sizeof(path), "%s/chunks", pd_fuzz_block);
	if (mkdir(pd_fuzz_block, 0755) || mkdir(path, 0755))
		pd_fuzz_die("mkdir", NULL);
	/* the template as the store sees it, under its fixed ULID */
	for (int i = 0; i < pd_fuzz_nfiles; i++) {
		snprintf(path, sizeof(path), "%s/%s", pd_fuzz_block, pd_fuzz_files[i].rel);
		pd_fuzz_write(path, pd_fuzz_files[i].p, pd_fuzz_files[i].len);
	}
	pd_fuzz_check_template_store();

	const struct pd_block_chunk *c2 = &pd_fuzz_built[PD_FUZZ_CHUNK_V2_SEED];
	const struct pd_block_chunk *c1 = &pd_fuzz_built[PD_FUZZ_CHUNK_V1_SEED];
	pd_fuzz_seed_ts = (struct pd_fuzz_file){"", (uint8_t *)c2->ts, c2->ts_len};
	pd_fuzz_seed_vals = (struct pd_fuzz_file){"", (uint8_t *)c2->vals, c2->vals_len};
	pd_fuzz_seed_vals_v1 = (struct pd_fuzz_file){"", (uint8_t *)c1->vals, c1->vals_len};
}

/* ---- CRC fix-ups: let mutations reach past the checksums -------------------- */

static void pd_fuzz_fix_index(uint8_t *p, size_t len)
{
	const size_t min = PD_INDEX_HEADER_SIZE + 4 * PD_SECTION_OVERHEAD + PD_INDEX_TOC_SIZE;
	if (len < min)
		return;
	size_t toc = len - PD_INDEX_TOC_SIZE;
	for (int i = 0; i < 4; i++) {
		uint64_t off = pd_get_be64(p + toc + 8 * i);
		if (off < PD_INDEX_HEADER_SIZE || off > toc - PD_SECTION_OVERHEAD)
			continue;
		uint64_t n = pd_get_be64(p + off);
		if (n > toc - off - PD_SECTION_OVERHEAD)
			continue;
		pd_put_be32(p + off + 8 + n, pd_crc32c(0, p + off + 8, (size_t)n));
	}
	pd_put_be32(p + toc + 32, pd_crc32c(0, p + toc, 32));
}

static void pd_fuzz_fix_segment(uint8_t *p, size_t len)
{
	size_t pos = PD_SEGMENT_HEADER_SIZE;
	while (pos < len) {
		struct pd_dec d;
		pd_dec_init(&d, p + pos, len - pos);
		uint64_t n = pd_dec_uvarint(&d);
		const uint8_t *kind = pd_dec_bytes(&d, 1);
		const uint8_t *data = pd_dec_bytes(&d, n);
		uint8_t *crc = (uint8_t *)pd_dec_bytes(&d, 4);
		if (d.err)
			return;
		pd_put_be32(crc, pd_crc32c(pd_crc32c(0, kind, 1), data, (size_t)n));
		pos += d.pos;
	}
}

/* ---- reading everything ---------------------------------------------------- */

static uint64_t pd_fuzz_sink;
static int pd_fuzz_verbose; /* PD_FUZZ_VERBOSE set: say why files were refused */

static void pd_fuzz_say(const char *what, const struct pd_err *err)
{
	if (pd_fuzz_verbose)
		fprintf(stderr, "fuzz_block: %s: %s\n", what, err->msg);
}

static void pd_fuzz_touch(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		pd_fuzz_sink += b[i];
}

/* A profile read back from a chunk, maybe a damaged one: any bytes, which the
 * pprof decoder must take without crashing. */
static void pd_fuzz_profile(const uint8_t *p, size_t len)
{
	struct pd_pprof_decode_opts o = {.max_decompressed = PD_FUZZ_MAX_PROFILE};
	struct pd_pprof_profile *prof;
	struct pd_err err = {0};
	if (pd_pprof_decode(&prof, p, len, &o, &err) == 0) {
		int si = pd_pprof_default_sample_index(prof);
		pd_fuzz_sink += pd_pprof_sample_count(prof) + pd_pprof_location_count(prof);
		if (si >= 0)
			pd_fuzz_sink += (uint64_t)pd_pprof_total(prof, si);
		pd_pprof_destroy(prof);
	}
}

static int pd_fuzz_on_merged(void *ctx, struct pd_pprof_profile *p, size_t first, size_t count,
                             size_t bytes)
{
	size_t *next = ctx;
	if (first != *next || count == 0)
		pd_fuzz_bug("a chunk merge emitted profiles out of order, or none of them");
	*next = first + count;
	pd_fuzz_sink += pd_pprof_sample_count(p) + bytes;
	pd_pprof_destroy(p);
	return 0;
}

/* The timestamp and value chunk decoders over any bytes. */
static void pd_fuzz_chunks(const uint8_t *p, size_t len)
{
	struct pd_chunkenc_ts_iter it;
	struct pd_err err = {0};
	uint16_t count = pd_chunkenc_ts_count(p, len);
	size_t n = 0;
	int64_t prev = 0;

	pd_chunkenc_ts_iter_init(&it, p, len);
	while (pd_chunkenc_ts_iter_next(&it)) {
		int64_t t = pd_chunkenc_ts_iter_at(&it);
		if (n && t <= prev) {
			fprintf(stderr, "fuzz_block: timestamp %zu is %lld after %lld; chunk:", n,
			        (long long)t, (long long)prev);
			for (size_t i = 0; i < len && i < 64; i++)
				fprintf(stderr, " %02x", p[i]);
			fprintf(stderr, "\n");
			pd_fuzz_bug(
			    "timestamp chunk iterator did not ascend (docs/format/chunks.md: "
			    "a delta that is not positive is corrupt)");
		}
		prev = t;
		n++;
	}
	if (!pd_chunkenc_ts_iter_err(&it) && n != count)
		pd_fuzz_bug("timestamp chunk ended cleanly before its count");
	if (n > count)
		pd_fuzz_bug("timestamp chunk iterator gave more than its count");

	int64_t nv = pd_chunkenc_values_read_count(p, len, &err);
	/* timestamps for a chunk of relative times: any will do, even ones whose
	 * nanoseconds wrap */
	int64_t tv[16];
	for (size_t i = 0; i < 16; i++)
		tv[i] = (int64_t)(i * 2500) + (len % 2 ? INT64_MAX / 4 : 1700000000000);
	for (int64_t i = 0; i < nv && i < 16; i++) {
		uint8_t *out = NULL;
		size_t olen = 0;
		if (pd_chunkenc_values_read_at(p, len, (size_t)i, tv[i], PD_FUZZ_MAX_PROFILE, &out,
		                               &olen, &err) == 0) {
			if (olen > PD_FUZZ_MAX_PROFILE)
				pd_fuzz_bug("a profile above max_profile was returned");
			pd_fuzz_touch(out, olen);
			pd_fuzz_profile(out, olen);
			free(out);
		}
	}
	/* merged by stack id (v2) or one by one (v1), as the store's merges read */
	size_t next = 0, to = nv < 16 ? (size_t)nv : 16;
	if (nv > 0 && pd_chunkenc_values_merge_at(p, len, 0, to, tv, PD_FUZZ_MAX_PROFILE,
	                                          pd_fuzz_on_merged, &next, &err) == 0 &&
	    next != to)
		pd_fuzz_bug("a chunk merge succeeded without covering every profile");
	/* one past the end must be refused */
	uint8_t *out = NULL;
	size_t olen;
	if (nv >= 0 && pd_chunkenc_values_read_at(p, len, (size_t)nv, tv[0], PD_FUZZ_MAX_PROFILE,
	                                          &out, &olen, &err) == 0)
		pd_fuzz_bug("profile count of a value chunk read past its end");
	free(out);
}

static size_t pd_fuzz_budget;

static void pd_fuzz_series(const struct pd_block *b, uint64_t ref)
{
	struct pd_lpair *l = NULL;
	struct pd_block_chunk_meta *c = NULL;
	struct pd_err err = {0};
	size_t nl = 0, nc = 0;

	if (!pd_fuzz_budget)
		return;
	pd_fuzz_budget--;
	if (pd_block_series(b, ref, &l, &nl, &c, &nc, &err)) {
		pd_fuzz_say("pd_block_series", &err);
		return;
	}
	for (size_t i = 0; i < nl; i++) {
		pd_fuzz_touch(l[i].value, strlen(l[i].value));
		if (!l[i].name[0] || (i && strcmp(l[i - 1].name, l[i].name) >= 0))
			pd_fuzz_bug("series labels are not sorted by name, or a name is empty");
	}
	for (size_t i = 0; i < nc && pd_fuzz_budget; i++, pd_fuzz_budget--) {
		const uint8_t *p;
		size_t len;
		if (c[i].count == 0 || c[i].maxt < c[i].mint)
			pd_fuzz_bug("a chunk meta with no samples or maxt before mint");
		if (pd_block_chunk_bytes(b, c[i].ts_ref, &p, &len, &err) == 0)
			pd_fuzz_chunks(p, len);
		else
			pd_fuzz_say("pd_block_chunk_bytes", &err);
		if (pd_block_chunk_bytes(b, c[i].vals_ref, &p, &len, &err) == 0)
			pd_fuzz_chunks(p, len);
		else
			pd_fuzz_say("pd_block_chunk_bytes", &err);
	}
	free(l);
	free(c);
}

static void pd_fuzz_check_refs(const uint64_t *r, size_t n, const char *what)
{
	for (size_t i = 1; i < n; i++)
		if (r[i] <= r[i - 1])
			pd_fuzz_bug(what);
}

static void pd_fuzz_walk_block(void)
{
	struct pd_block *b = NULL;
	struct pd_err err = {0};
	const char **names = NULL;
	uint64_t *refs = NULL;
	size_t nn = 0, nr = 0;

	if (pd_block_open(&b, pd_fuzz_block, &err)) {
		pd_fuzz_say("pd_block_open", &err);
		return;
	}
	const struct pd_block_meta *m = pd_block_meta(b);
	if (strcmp(m->ulid, PD_FUZZ_ULID) || m->maxt <= m->mint || !m->nsources)
		pd_fuzz_bug("a block opened with a wrong ULID, an empty range or no sources");
	(void)pd_block_size(b);
	(void)pd_block_dir(b);
	pd_fuzz_budget = PD_FUZZ_MAX_WALK;

	if (pd_block_all_series(b, &refs, &nr, &err) == 0) {
		pd_fuzz_check_refs(refs, nr, "all-series postings are not ascending");
		for (size_t i = 0; i < nr; i++) {
			size_t nt;
			const struct tomb_entry *iv = tomb_find(pd_block_tombstones(b), refs[i], &nt);
			for (size_t k = 0; k < nt; k++)
				if (iv[k].ref != refs[i] || iv[k].mint > iv[k].maxt)
					pd_fuzz_bug("tomb_find gave another series' or a bad interval");
			pd_fuzz_series(b, refs[i]);
		}
		free(refs);
		refs = NULL;
	}
	if (pd_block_label_names(b, &names, &nn, &err) == 0) {
		for (size_t i = 0; i < nn; i++) {
			const char **vals = NULL;
			size_t nv = 0;
			if (i && strcmp(names[i - 1], names[i]) >= 0)
				pd_fuzz_bug("label names are not sorted");
			if (pd_block_label_values(b, names[i], &vals, &nv, &err))
				continue;
			for (size_t k = 0; k < nv && pd_fuzz_budget; k++) {
				if (k && strcmp(vals[k - 1], vals[k]) >= 0)
					pd_fuzz_bug("label values are not sorted");
				if (pd_block_postings(b, names[i], vals[k], &refs, &nr, &err))
					continue;
				pd_fuzz_check_refs(refs, nr, "postings are not ascending");
				for (size_t j = 0; j < nr && j < 4; j++)
					pd_fuzz_series(b, refs[j]);
				free(refs);
				refs = NULL;
			}
			free(vals);
		}
		free(names);
	}
	/* lookups of things that are not there */
	if (pd_block_postings(b, "job", "no such value", &refs, &nr, &err) == 0)
		free(refs);
	refs = NULL;
	if (pd_block_postings(b, "", NULL, &refs, &nr, &err) == 0)
		free(refs);
	const char **vals = NULL;
	if (pd_block_label_values(b, "no_such_label", &vals, &nn, &err) == 0)
		free(vals);
	struct pd_lpair *l;
	struct pd_block_chunk_meta *c;
	size_t nl, nc;
	if (pd_block_series(b, 0, &l, &nl, &c, &nc, &err) == 0) {
		free(l);
		free(c);
	}
	if (pd_block_series(b, UINT64_MAX, &l, &nl, &c, &nc, &err) == 0) {
		free(l);
		free(c);
	}
	const uint8_t *p;
	size_t len;
	(void)pd_block_chunk_bytes(b, 0, &p, &len, &err);
	(void)pd_block_chunk_bytes(b, UINT64_MAX, &p, &len, &err);
	(void)pd_block_chunk_bytes(b, (1ull << 32) | 0xffffffffu, &p, &len, &err);
	pd_block_close(b);
}

/* The store's view: select everything, read some profiles, list labels. */
static void pd_fuzz_walk_store(void)
{
	struct pd_tsdb *db = NULL;
	struct pd_storage_result *r = NULL;
	struct pd_tsdb_opts o;
	struct pd_err err = {0};
	struct pd_storage_matcher all = {"__name__", pd_fuzz_match_all, NULL};
	char **s = NULL;
	size_t n = 0, reads = 0;

	pd_tsdb_opts_init(&o);
	o.read_only = 1;
	o.wal_disabled = 1;
	o.retention_ms = -1;
	o.max_profile = PD_FUZZ_MAX_PROFILE;
	if (pd_tsdb_open(&db, pd_fuzz_store, &o, &err)) {
		pd_fuzz_say("pd_tsdb_open", &err);
		return;
	}
	if (pd_tsdb_select(db, &all, 1, INT64_MIN, INT64_MAX, 0, &r, &err) == 0) {
		for (size_t i = 0; i < r->nseries; i++) {
			const struct pd_storage_series *se = &r->series[i];
			for (size_t k = 0; k < se->nts && reads < 32; k++, reads++) {
				uint8_t *out = NULL;
				size_t len = 0;
				if (k && se->ts[k] <= se->ts[k - 1])
					pd_fuzz_bug("select gave timestamps out of order");
				if (pd_tsdb_read(db, (const struct pd_storage_label *)se->labels,
				                 se->nlabels, se->ts[k], &out, &len, &err) == 0) {
					if (len > PD_FUZZ_MAX_PROFILE)
						pd_fuzz_bug("the store returned a profile above max_profile");
					pd_fuzz_touch(out, len);
					pd_fuzz_profile(out, len);
					free(out);
				}
			}
		}
		pd_storage_result_destroy(r);
	}
	if (pd_tsdb_label_names(db, NULL, 0, INT64_MIN, INT64_MAX, &s, &n, &err) == 0)
		pd_storage_strings_free(s, n);
	if (pd_tsdb_label_values(db, "job", NULL, 0, INT64_MIN, INT64_MAX, &s, &n, &err) == 0)
		pd_storage_strings_free(s, n);
	pd_tsdb_close(db);
}

/* meta.json text: accepted text formats to text that parses to the same meta. */
static void pd_fuzz_meta_roundtrip(const uint8_t *p, size_t len)
{
	struct pd_block_meta m = {0}, m2 = {0};
	struct pd_err err = {0};
	struct pd_buf b;

	pd_buf_init(&b, 0);
	if (pd_block_meta_parse((const char *)p, len, &m, &err))
		goto out;
	if (pd_block_meta_format(&m, &b))
		pd_fuzz_bug("formatting a parsed meta.json failed");
	if (pd_block_meta_parse((const char *)b.data, b.len, &m2, &err))
		pd_fuzz_bug("a formatted meta.json does not parse");
	if (strcmp(m.ulid, m2.ulid) || m.mint != m2.mint || m.maxt != m2.maxt ||
	    m.num_series != m2.num_series || m.num_chunks != m2.num_chunks ||
	    m.num_samples != m2.num_samples || m.ts_bytes != m2.ts_bytes ||
	    m.value_bytes != m2.value_bytes || m.level != m2.level || m.nsources != m2.nsources ||
	    (m.nsources && memcmp(m.sources, m2.sources, m.nsources * sizeof(*m.sources))))
		pd_fuzz_bug("meta.json changed in a format/parse round trip");
out:
	free(m.sources);
	free(m2.sources);
	pd_buf_fini(&b);
}

/* ---- tombstones ---------------------------------------------------------------- */

/* A parsed tombstones file must keep what tombstones.c promises (ascending, no
 * overlaps, mint <= maxt) and read back the same after encoding. */
static void pd_fuzz_tombstones(const uint8_t *p, size_t len)
{
	struct tombstones t, t2;
	struct pd_buf b;
	struct pd_err err = {0};
	if (tomb_decode(p, len, &t, "tombstones", &err))
		return;
	for (size_t i = 0; i < t.n; i++) {
		if (t.v[i].mint > t.v[i].maxt)
			pd_fuzz_bug("a tombstone with mint after maxt was accepted");
		if (i && (t.v[i].ref < t.v[i - 1].ref ||
		          (t.v[i].ref == t.v[i - 1].ref && t.v[i].mint <= t.v[i - 1].maxt)))
			pd_fuzz_bug("tombstones out of order or overlapping were accepted");
		size_t n;
		const struct tomb_entry *iv = tomb_find(&t, t.v[i].ref, &n);
		if (!iv || !tomb_covers(iv, n, t.v[i].mint) || !tomb_covers(iv, n, t.v[i].maxt))
			pd_fuzz_bug("tomb_find does not find an interval of the table");
	}
	pd_buf_init(&b, 0);
	if (tomb_encode(&t, &b) == 0) {
		if (tomb_decode(b.data, b.len, &t2, "re-encoded", &err))
			pd_fuzz_bug("re-encoded tombstones do not parse");
		else if (t2.n != t.n || (t.n && memcmp(t.v, t2.v, t.n * sizeof(*t.v))))
			pd_fuzz_bug("tombstones changed in an encode/decode round trip");
		tomb_fini(&t2);
	}
	pd_buf_fini(&b);
	tomb_fini(&t);
}

/* The seed: a valid tombstones file for the template, deleting part of its first
 * series and all of its last one. */
static void pd_fuzz_tombstones_seed(struct pd_buf *out)
{
	struct pd_block *b;
	struct pd_err err = {0};
	struct tombstones t;
	uint64_t *refs = NULL;
	size_t nr = 0;
	tomb_init(&t);
	if (pd_block_open(&b, pd_fuzz_block, &err) || pd_block_all_series(b, &refs, &nr, &err))
		pd_fuzz_die("the template block", &err);
	const struct pd_block_meta *m = pd_block_meta(b);
	if (nr && tomb_add(&t, refs[0], m->mint, m->mint + (m->maxt - m->mint) / 2))
		pd_fuzz_die("out of memory", NULL);
	if (nr > 1 && tomb_add(&t, refs[nr - 1], INT64_MIN, INT64_MAX))
		pd_fuzz_die("out of memory", NULL);
	tomb_normalize(&t);
	if (tomb_encode(&t, out))
		pd_fuzz_die("encoding tombstones", NULL);
	free(refs);
	tomb_fini(&t);
	pd_block_close(b);
}

/* ---- libFuzzer entry points ------------------------------------------------ */

static void pd_fuzz_write_seeds(const char *dir)
{
	static const struct {
		uint8_t mode;
		int file;
		const char *name;
	} seeds[] = {
	    {0, F_INDEX, "index"},        {1, F_INDEX, "index-crc"},   {2, F_META, "meta"},
	    {3, F_SEG1, "seg1"},          {4, F_SEG1, "seg1-crc"},     {5, F_SEG2, "seg2-crc"},
	    {9, F_INDEX, "index-crc-db"}, {12, F_SEG1, "seg1-crc-db"}, {6, F_SEG1, "seg1-body"},
	    {7, F_TS, "chunk-ts"},        {7, F_VALS, "chunk-vals"},   {7, F_VALS_V1, "chunk-vals-v1"},
	};
	char path[512];
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		const struct pd_fuzz_file *f = seeds[i].file == F_TS        ? &pd_fuzz_seed_ts
		                               : seeds[i].file == F_VALS    ? &pd_fuzz_seed_vals
		                               : seeds[i].file == F_VALS_V1 ? &pd_fuzz_seed_vals_v1
		                                                            : &pd_fuzz_files[seeds[i].file];
		size_t skip = seeds[i].mode == 6 ? PD_SEGMENT_HEADER_SIZE : 0; /* mode 6 adds it */
		uint8_t *p = malloc(f->len - skip + 1);
		p[0] = seeds[i].mode;
		memcpy(p + 1, f->p + skip, f->len - skip);
		snprintf(path, sizeof(path), "%s/%s", dir, seeds[i].name);
		pd_fuzz_write(path, p, f->len - skip + 1);
		free(p);
	}
	struct pd_buf t;
	pd_buf_init(&t, 0);
	pd_fuzz_tombstones_seed(&t);
	static const struct {
		uint8_t mode;
		const char *name;
	} tseeds[] = {{0x18, "tombstones-db"}, {0x38, "tombstones-crc-db"}};
	for (size_t i = 0; i < 2; i++) {
		uint8_t *p = malloc(t.len + 1);
		p[0] = tseeds[i].mode;
		memcpy(p + 1, t.data, t.len);
		snprintf(path, sizeof(path), "%s/%s", dir, tseeds[i].name);
		pd_fuzz_write(path, p, t.len + 1);
		free(p);
	}
	pd_buf_fini(&t);
}

/* A crash ends the process without its atexit handlers, leaving its temporary
 * directory behind: remove those of processes that no longer exist. */
static void pd_fuzz_sweep(const char *tmp)
{
	static const char prefix[] = "pd_fuzz_block.";
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
	snprintf(pd_fuzz_root, sizeof(pd_fuzz_root), "%s/pd_fuzz_block.%ld.XXXXXX", tmp,
	         (long)getpid());
	if (!mkdtemp(pd_fuzz_root)) {
		pd_fuzz_root[0] = '\0';
		pd_fuzz_die("mkdtemp", NULL);
	}
	atexit(pd_fuzz_cleanup);
	pd_fuzz_verbose = getenv("PD_FUZZ_VERBOSE") != NULL;
	snprintf(pd_fuzz_store, sizeof(pd_fuzz_store), "%s/store", pd_fuzz_root);
	snprintf(pd_fuzz_block, sizeof(pd_fuzz_block), "%s/%s", pd_fuzz_store, PD_FUZZ_ULID);
	pd_fuzz_make_template();
	const char *seeds = getenv("PD_FUZZ_WRITE_SEEDS");
	if (seeds) {
		pd_fuzz_write_seeds(seeds);
		exit(0);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int target[8] = {F_INDEX, F_INDEX, F_META, F_SEG1, F_SEG1, F_SEG2, F_SEG1, -1};
	char path[256];

	if (size < 1)
		return 0;
	uint8_t mode = data[0] & 7;
	int store = data[0] & 8;
	const uint8_t *body = data + 1;
	size_t len = size - 1;
	int t = target[mode];

	snprintf(path, sizeof(path), "%s/" PD_TOMB_FILE, pd_fuzz_block);
	if (data[0] & 0x10) {
		/* the template's files and this tombstones file */
		uint8_t *copy = malloc(len ? len : 1);
		memcpy(copy, body, len);
		if ((data[0] & 0x20) && len >= 4)
			pd_put_be32(copy + len - 4, pd_crc32c(0, copy, len - 4));
		pd_fuzz_write(path, copy, len);
		for (int i = 0; i < pd_fuzz_nfiles; i++) {
			snprintf(path, sizeof(path), "%s/%s", pd_fuzz_block, pd_fuzz_files[i].rel);
			pd_fuzz_write(path, pd_fuzz_files[i].p, pd_fuzz_files[i].len);
		}
		pd_fuzz_tombstones(copy, len);
		free(copy);
		pd_fuzz_walk_block();
		if (store)
			pd_fuzz_walk_store();
		return 0;
	}
	unlink(path); /* only the inputs above have deletions */

	if (t >= 0) {
		size_t hdr = mode == 6 ? PD_SEGMENT_HEADER_SIZE : 0, flen = hdr + len;
		uint8_t *copy = malloc(flen ? flen : 1);
		memcpy(copy, pd_fuzz_files[F_SEG1].p, hdr);
		memcpy(copy + hdr, body, len);
		if (mode == 1)
			pd_fuzz_fix_index(copy, flen);
		else if (mode >= 4 && mode <= 6)
			pd_fuzz_fix_segment(copy, flen);
		for (int i = 0; i < pd_fuzz_nfiles; i++) {
			snprintf(path, sizeof(path), "%s/%s", pd_fuzz_block, pd_fuzz_files[i].rel);
			if (i == t)
				pd_fuzz_write(path, copy, flen);
			else
				pd_fuzz_write(path, pd_fuzz_files[i].p, pd_fuzz_files[i].len);
		}
		free(copy);
		pd_fuzz_walk_block();
		if (store)
			pd_fuzz_walk_store();
		if (mode == 2)
			pd_fuzz_meta_roundtrip(body, len);
	}
	pd_fuzz_chunks(body, len);
	return 0;
}
