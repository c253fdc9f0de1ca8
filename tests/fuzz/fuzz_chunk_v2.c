/* fuzz_chunk_v2.c: libFuzzer target for the columnar value chunk (encoding 2,
 * docs/format/chunks.md). Two things come from outside: chunk bytes read back
 * from disk, and the profiles that targets send, which the appender decomposes.
 *
 * First byte, low two bits:
 *   0  the rest is a sealed chunk: its count and every profile in it are read
 *      (with a 1 MiB profile limit, and timestamps for a chunk of relative
 *      times, and for one of byte 5 totals of two types); each profile that
 *      comes out must decode.
 *   2  the rest is a chunk's sections uncompressed, so that mutations reach the
 *      table and record decoders rather than zstd: tables_len (varint), the
 *      serialised tables, then the records of one group; every record is decoded,
 *      and then each again as a single read does (the records before it stepped
 *      over, with either form of the delta state), which must give the same
 *      profile.
 *   1, 3  the rest is a profile: it is appended three times to an appender with a
 *      group of 2 (so that records are delta-coded and span groups), the chunk is
 *      sealed, and each copy read from the appender and from the sealed bytes
 *      must equal what went in: the same bytes when the input is not a profile,
 *      otherwise the same profile (pd_pprof_compare). With 3, the appender is on
 *      shared symbols that another appender has filled with the profile first (so
 *      records are encoded against a frozen view of them), the seal moves the
 *      records onto the chunk's own tables, and the appends give timestamps, so
 *      that the chunk's times are relative to them (encoding byte 4: the tables
 *      against the dictionary, repeats as runs), as in the store; one is far
 *      from the profile's time, so that the field wraps. That chunk is also
 *      sealed as the store seals it beside a timestamp chunk with the totals
 *      section (byte 5: holes), and read back beside it.
 *
 * PD_FUZZ_WRITE_SEEDS=DIR makes the binary write sealed chunks of the profiles
 * given after it (mode 0 seeds) into DIR and exit:
 *   PD_FUZZ_WRITE_SEEDS=dir fuzz_chunk_v2 a.pb b.pb ... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/chunkenc.h"
#include "profd/pprof.h"
#include "profd/util.h"
#include "v2_int.h"
#include <zstd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PROFILE ((size_t)1 << 20)

static void read_chunk(const uint8_t *p, size_t n)
{
	struct pd_err err = {0};
	int64_t count = pd_chunkenc_values_read_count(p, n, &err);
	if (count <= 0)
		return;
	/* for a chunk of byte 5, a timestamp chunk with totals of two types (it
	 * takes values from them: they need not be the profiles', the reads need
	 * only not fail but as damage); other chunks are read at timestamps alone */
	int five = p[0] == PD_CHUNKENC_VALUES_COLUMNAR_TOTALS;
	struct pd_chunkenc_ts tc;
	struct pd_chunkenc_totals *tot = pd_chunkenc_totals_create();
	const char *ty[] = {"contentions", "delay"}, *un[] = {"count", "nanoseconds"};
	pd_chunkenc_ts_init(&tc);
	if (!tot)
		abort();
	for (int64_t i = 0; five && i < count; i++) {
		int64_t sums[2] = {i * 7, -i * 1000003};
		if (pd_chunkenc_ts_append(&tc, 1700000000000 + i * 15000 + (int64_t)(n % 7),
		                          &err) ||
		    pd_chunkenc_totals_append(tot, 2, ty, un, sums, 0, &err))
			abort();
	}
	size_t tl, xl;
	const uint8_t *tb = pd_chunkenc_ts_bytes(&tc, &tl),
	              *xb = pd_chunkenc_totals_bytes(tot, &xl);
	uint8_t *tsc = malloc(tl + xl + 1);
	if (!tsc)
		abort();
	if (tl) /* none when not five */
		memcpy(tsc, tb, tl);
	if (xl)
		memcpy(tsc + tl, xb, xl);
	for (int64_t i = 0; i < count && i < 64; i++) {
		uint8_t *out;
		size_t len;
		/* timestamps for a chunk of relative times (bytes 3 and 4; 5 has tsc) */
		int64_t t = 1700000000000 + i * 15000 + (int64_t)(n % 7);
		if (five ? pd_chunkenc_values_read_tc(p, n, tsc, tl + xl, (size_t)i, MAX_PROFILE,
		                                      &out, &len, &err)
		         : pd_chunkenc_values_read_at(p, n, (size_t)i, t, MAX_PROFILE, &out, &len,
		                                      &err))
			continue;
		if (len > MAX_PROFILE)
			abort();
		struct pd_pprof_profile *prof;
		if (pd_pprof_decode(&prof, out, len, NULL, &err) == 0)
			pd_pprof_destroy(prof);
		free(out);
	}
	free(tsc);
	pd_chunkenc_totals_destroy(tot);
	pd_chunkenc_ts_fini(&tc);
}

static void check_same(const uint8_t *in, size_t n, const struct pd_pprof_profile *want,
                       const uint8_t *got, size_t glen)
{
	if (!want) {
		if (glen != n || (n && memcmp(in, got, n)))
			abort();
		return;
	}
	struct pd_pprof_profile *g;
	struct pd_err err = {0};
	char why[512];
	if (pd_pprof_decode(&g, got, glen, NULL, &err)) {
		fprintf(stderr, "the stored profile does not decode: %s\n", err.msg);
		abort();
	}
	if (pd_pprof_compare(want, g, why, sizeof(why))) {
		fprintf(stderr, "round trip changed the profile: %s\n", why);
		abort();
	}
	pd_pprof_destroy(g);
}

static void round_trip(const uint8_t *p, size_t n, int shared)
{
	struct pd_err err = {0};
	struct pd_pprof_profile *want = NULL;
	if (pd_pprof_decode(&want, p, n, NULL, &err))
		want = NULL;
	struct pd_chunkenc_symbols *sym = NULL;
	struct pd_chunkenc_values *other = NULL, *c;
	if (shared) {
		if (!(sym = pd_chunkenc_symbols_create()) ||
		    !(other = pd_chunkenc_values_create_shared(sym, 2, 1)) ||
		    pd_chunkenc_values_append(other, p, n, &err))
			abort();
		c = pd_chunkenc_values_create_shared(sym, 2, 1);
	} else {
		c = pd_chunkenc_values_create_enc(PD_CHUNKENC_VALUES_COLUMNAR, 2, 1);
	}
	if (!c)
		abort();
	/* on shared symbols, with times relative to timestamps too, as the head
	 * appends; the first one far from the profile's time, so that it wraps */
	int64_t ts[3] = {INT64_MIN / 1000, 1700000000000, 1700000015000};
	int appended = 0;
	for (int k = 0; k < 3; k++)
		if ((shared ? pd_chunkenc_values_append_at(c, ts[k], p, n, NULL, &err)
		            : pd_chunkenc_values_append(c, p, n, &err)) == 0)
			appended++;
	if (appended != 3)
		abort(); /* nothing but memory may refuse an append */
	uint8_t *sealed;
	size_t slen;
	if (pd_chunkenc_values_seal(c, &sealed, &slen, &err))
		abort();
	for (size_t i = 0; i < 3; i++) {
		uint8_t *a, *b;
		size_t al, bl;
		int64_t t = shared ? ts[i] : PD_CHUNKENC_NO_TS;
		if (pd_chunkenc_values_get_at(c, i, t, &a, &al, &err) ||
		    pd_chunkenc_values_read_at(sealed, slen, i, t, SIZE_MAX / 4, &b, &bl, &err)) {
			fprintf(stderr, "reading back failed: %s\n", err.msg);
			abort();
		}
		check_same(p, n, want, a, al);
		check_same(p, n, want, b, bl);
		free(a);
		free(b);
	}
	free(sealed);
	if (shared) {
		/* as the store seals it, beside its timestamp chunk and totals: byte 5,
		 * its columns leaving values to the totals */
		struct pd_chunkenc_ts tc;
		struct pd_chunkenc_totals *tot = pd_chunkenc_totals_create();
		pd_chunkenc_ts_init(&tc);
		for (int k = 0; k < 3; k++)
			if (!tot || pd_chunkenc_ts_append(&tc, ts[k], &err) ||
			    pd_chunkenc_totals_append_profile(tot, want, &err))
				abort();
		size_t tl, xl;
		const uint8_t *tb = pd_chunkenc_ts_bytes(&tc, &tl);
		const uint8_t *xb = pd_chunkenc_totals_bytes(tot, &xl);
		uint8_t *tsc = malloc(tl + xl);
		if (!tsc || pd_chunkenc_values_seal_totals(c, &sealed, &slen, &err))
			abort();
		memcpy(tsc, tb, tl);
		memcpy(tsc + tl, xb, xl);
		for (size_t i = 0; i < 3; i++) {
			uint8_t *b;
			size_t bl;
			if (pd_chunkenc_values_read_tc(sealed, slen, tsc, tl + xl, i, SIZE_MAX / 4,
			                               &b, &bl, &err)) {
				fprintf(stderr, "reading back beside totals failed: %s\n", err.msg);
				abort();
			}
			check_same(p, n, want, b, bl);
			free(b);
		}
		free(tsc);
		free(sealed);
		pd_chunkenc_totals_destroy(tot);
		pd_chunkenc_ts_fini(&tc);
	}
	pd_pprof_destroy(want);
	pd_chunkenc_values_destroy(c);
	pd_chunkenc_values_destroy(other);
	pd_chunkenc_symbols_unref(sym);
}

/* Record k of the group in g as a single read gets it: the records before it
 * stepped over (V2_WANT_STATE) with a dense or a packed state, record k decoded
 * and encoded. 0 and *out (malloc'd; NULL for opaque bytes), or an error. */
static int read_as_single(const struct v2_tables *t, const uint8_t *g, size_t glen, int k,
                          int dense, uint8_t **out, size_t *len)
{
	struct v2_prev prev = {0};
	struct v2_rd r = {g, glen, 0, 0};
	struct pd_err err = {0};
	int rc = 0;
	*out = NULL;
	*len = 0;
	if (dense)
		v2_prev_dense(&prev, t->nnode);
	for (int j = 0; j <= k && !rc; j++) {
		struct v2_decoded d;
		if ((rc = v2_record_decode(t, &prev, &r, j == k ? V2_WANT_PROFILE : V2_WANT_STATE,
		                           &d, &err)))
			break;
		if (j == k && !d.opaque)
			rc = pd_pprof_parts_encode(&d.parts, out, len, &err);
		v2_decoded_fini(&d);
	}
	v2_prev_fini(&prev);
	return rc;
}

static void read_sections(const uint8_t *p, size_t n)
{
	struct v2_rd r = {p, n, 0, 0};
	uint64_t tl = v2_uv(&r);
	if (r.bad || tl > n - r.pos)
		return;
	struct v2_tables t;
	struct pd_err err = {0};
	v2_tables_init(&t);
	if (v2_tables_read(&t, p + r.pos, (size_t)tl, &err) == 0) {
		/* every record decoded in full, in order */
		enum { MAXREC = 64 };
		uint8_t *full[MAXREC];
		size_t full_len[MAXREC];
		int nfull = 0;
		struct v2_prev prev = {0};
		const uint8_t *gp = p + r.pos + tl;
		size_t glen = n - r.pos - (size_t)tl;
		struct v2_rd g = {gp, glen, 0, 0};
		for (int k = 0; k < MAXREC && (g.pos < g.len || prev.run_left); k++) {
			struct v2_decoded d;
			if (v2_record_decode(&t, &prev, &g, V2_WANT_PROFILE, &d, &err))
				break;
			full[k] = NULL;
			full_len[k] = 0;
			if (!d.opaque) {
				uint8_t *out;
				size_t len;
				if (pd_pprof_parts_encode(&d.parts, &out, &len, &err) == 0) {
					struct pd_pprof_profile *prof;
					if (pd_pprof_decode(&prof, out, len, NULL, &err) == 0)
						pd_pprof_destroy(prof);
					full[k] = out;
					full_len[k] = len;
				}
			}
			nfull = k + 1;
			v2_decoded_fini(&d);
		}
		v2_prev_fini(&prev);
		/* read one by one, stepping over the records before: the same profiles
		 * wherever the full decode got (stepping checks no more than decoding) */
		for (int k = 0; k < nfull; k++) {
			uint8_t *out;
			size_t len;
			if (read_as_single(&t, gp, glen, k, k % 2 == 0, &out, &len)) {
				fprintf(stderr,
				        "record %d decodes in full but not after stepping\n", k);
				abort();
			}
			if (full[k] &&
			    (!out || len != full_len[k] || memcmp(out, full[k], len) != 0)) {
				fprintf(stderr,
				        "record %d differs when the ones before are stepped over\n",
				        k);
				abort();
			}
			free(out);
		}
		for (int k = 0; k < nfull; k++)
			free(full[k]);
	}
	v2_tables_fini(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		round_trip(data + 1, size - 1, data[0] & 2);
	else if (data[0] & 2)
		read_sections(data + 1, size - 1);
	else
		read_chunk(data + 1, size - 1);
	return 0;
}

/* Writes the uncompressed sections of sealed chunk s (tables and first group) as a
 * mode-2 seed. */
static void write_sections(const char *path, const uint8_t *s, size_t sl)
{
	struct v2_rd q = {s, sl, 1, 0};
	uint64_t count = v2_uv(&q), group = v2_uv(&q), tl = v2_uv(&q), fl = 0;
	uint64_t nframes = group ? (count + group - 1) / group : 0;
	for (uint64_t k = 0; k < nframes; k++) {
		uint64_t l = v2_uv(&q);
		if (k == 0)
			fl = l;
	}
	uint8_t *t, *g;
	size_t tn, gn;
	struct pd_err err = {0};
	if (q.bad || v2_decompress(s + q.pos, (size_t)tl, 1 << 26, &t, &tn, "tables", &err) ||
	    v2_decompress(s + q.pos + tl, (size_t)fl, 1 << 26, &g, &gn, "group", &err))
		exit(1);
	struct pd_buf b;
	pd_buf_init(&b, 0);
	uint8_t mode = 2;
	pd_buf_append(&b, &mode, 1);
	v2_put_uv(&b, tn);
	pd_buf_append(&b, t, tn);
	pd_buf_append(&b, g, gn);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(b.data, 1, b.len, f) != b.len || fclose(f))
		exit(1);
	pd_buf_fini(&b);
	free(t);
	free(g);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("PD_FUZZ_WRITE_SEEDS");
	if (!dir)
		return 0;
	struct pd_err err = {0};
	struct pd_chunkenc_values *c =
	    pd_chunkenc_values_create_enc(PD_CHUNKENC_VALUES_COLUMNAR, 2, 1);
	int files = 0;
	for (int i = 1; i < *argc; i++) {
		const char *a = (*argv)[i];
		if (a[0] == '-')
			continue;
		uint8_t *buf, *raw = NULL;
		size_t n, rn;
		if (pd_file_read(a, (size_t)64 << 20, &buf, &n, &err)) {
			fprintf(stderr, "%s\n", err.msg);
			exit(1);
		}
		if (pd_gzip_is(buf, n) &&
		    pd_gunzip(buf, n, (size_t)64 << 20, &raw, &rn, &err) == 0) {
			free(buf);
			buf = raw;
			n = rn;
		}
		if (pd_chunkenc_values_append(c, buf, n, &err)) {
			fprintf(stderr, "%s: %s\n", a, err.msg);
			exit(1);
		}
		/* a chunk of the profiles so far, as a mode-0 seed */
		uint8_t *s;
		size_t sl;
		if (pd_chunkenc_values_seal(c, &s, &sl, &err))
			exit(1);
		char path[4096];
		snprintf(path, sizeof(path), "%s/chunk-%02d", dir, ++files);
		FILE *f = fopen(path, "wb");
		if (!f || fputc(0, f) == EOF || fwrite(s, 1, sl, f) != sl || fclose(f)) {
			fprintf(stderr, "%s: cannot write\n", path);
			exit(1);
		}
		snprintf(path, sizeof(path), "%s/sections-%02d", dir, files);
		write_sections(path, s, sl);
		free(s);
		free(buf);
	}
	pd_chunkenc_values_destroy(c);
	exit(0);
}
