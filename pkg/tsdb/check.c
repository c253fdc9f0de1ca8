/* check.c: pd_tsdb_check, a read-only inspection of a storage directory for
 * `profd tsdb check`: every block is opened and every chunk of every series read
 * and checked, and the WAL is replayed without repair. Each damage found is
 * handed to the caller with its block, file and byte offset; no file changes. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_int.h"
#include "profd/chunkenc.h"
#include "tsdb_int.h"
#include "wal.h"

struct checker {
	const char *dir;
	pd_tsdb_damage_fn fn;
	void *ctx;
	uint64_t found;
};

static void report(struct checker *c, const char *block, const char *file, int64_t off,
		   const char *what)
{
	struct pd_tsdb_damage d;
	memset(&d, 0, sizeof(d));
	snprintf(d.block, sizeof(d.block), "%s", block);
	snprintf(d.file, sizeof(d.file), "%s", file);
	d.offset = off;
	snprintf(d.what, sizeof(d.what), "%s", what);
	c->found++;
	if (c->fn)
		c->fn(c->ctx, &d);
}

/* The file a block's open error names: the part of msg after "<blockdir>/" up to
 * the next ':' (meta.json, index, chunks/000001), else the block directory. */
static void file_of(const char *blockdir, const char *ulid, const char *msg, char *out, size_t cap)
{
	size_t bl = strlen(blockdir);
	snprintf(out, cap, "%s", ulid);
	if (strncmp(msg, blockdir, bl) != 0 || msg[bl] != '/')
		return;
	const char *f = msg + bl + 1, *end = strchr(f, ':');
	size_t n = end ? (size_t)(end - f) : strlen(f);
	snprintf(out, cap, "%s/%.*s", ulid, (int)n, f);
}

/* Reads one chunk entry and checks what it holds; 0 or PD_ENOMEM. */
static int check_chunk(struct checker *c, const struct pd_block *b, const char *ulid,
		       uint64_t ref, int values, uint32_t count, const char *series)
{
	const uint8_t *p;
	size_t len;
	struct pd_err err = {0};
	char file[64], what[PD_ERR_MSG_MAX + 300];
	snprintf(file, sizeof(file), "%s/chunks/%06llu", ulid, (unsigned long long)(ref >> 32));
	int rc = pd_block_chunk_bytes(b, ref, &p, &len, &err);
	if (rc == 0 && values) {
		int64_t n = pd_chunkenc_values_read_count(p, len, &err);
		if (n == PD_ENOMEM)
			return PD_ENOMEM;
		if (n >= 0 && (uint64_t)n != count)
			rc = pd_err_set(&err, PD_ECORRUPT,
					"value chunk holds %lld profiles, the index says %u",
					(long long)n, count);
		else if (n < 0)
			rc = (int)n;
	} else if (rc == 0) {
		struct pd_chunkenc_ts_iter it;
		uint32_t n = 0;
		pd_chunkenc_ts_iter_init(&it, p, len);
		while (pd_chunkenc_ts_iter_next(&it))
			n++;
		if (pd_chunkenc_ts_iter_err(&it))
			rc = pd_err_set(&err, PD_ECORRUPT, "timestamp chunk does not decode");
		else if (n != count)
			rc = pd_err_set(&err, PD_ECORRUPT,
					"timestamp chunk holds %u timestamps, the index says %u", n,
					count);
		else {
			/* the totals section, when there is one, holds a record a timestamp */
			size_t end = pd_chunkenc_ts_iter_end(&it);
			struct pd_chunkenc_totals_iter tit;
			if (pd_chunkenc_totals_iter_init(&tit, p + end, len > end ? len - end : 0, n) == 0) {
				while (pd_chunkenc_totals_iter_next(&tit))
					;
				int terr = pd_chunkenc_totals_iter_err(&tit);
				if (terr == PD_ENOMEM)
					rc = PD_ENOMEM;
				else if (terr)
					rc = pd_err_set(&err, PD_ECORRUPT,
							"the totals section after the timestamps does not "
							"decode (at byte %zu of %zu)",
							tit.pos, tit.len);
			}
			pd_chunkenc_totals_iter_fini(&tit);
		}
	}
	if (rc == PD_ENOMEM)
		return rc;
	if (rc) {
		snprintf(what, sizeof(what), "%s chunk of series %s: %s", values ? "value" : "timestamp",
			 series, err.msg);
		report(c, ulid, file, (int64_t)(ref & 0xffffffffu), what);
	}
	return 0;
}

static void series_text(const struct pd_lpair *l, size_t n, char *out, size_t cap)
{
	size_t off = (size_t)snprintf(out, cap, "{");
	for (size_t i = 0; i < n && off < cap; i++)
		off += (size_t)snprintf(out + off, cap - off, "%s%s=\"%s\"", i ? ", " : "", l[i].name,
					l[i].value);
	if (off < cap)
		snprintf(out + off, cap - off, "}");
}

static int check_block(struct checker *c, const char *ulid, struct pd_err *err)
{
	char *bdir = pd_path_join(c->dir, ulid);
	struct pd_block *b = NULL;
	struct pd_err berr = {0};
	uint64_t *all = NULL;
	size_t nall = 0;
	int rc = 0;
	if (!bdir)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if ((rc = pd_block_open(&b, bdir, &berr))) {
		char file[128];
		if (rc == PD_ENOMEM)
			goto out;
		file_of(bdir, ulid, berr.msg, file, sizeof(file));
		report(c, ulid, file, -1, berr.msg);
		rc = 0;
		goto out;
	}
	if ((rc = pd_block_all_series(b, &all, &nall, &berr))) {
		if (rc != PD_ENOMEM) {
			char file[64];
			snprintf(file, sizeof(file), "%s/index", ulid);
			report(c, ulid, file, -1, berr.msg);
			rc = 0;
		}
		goto out;
	}
	for (size_t i = 0; i < nall && !rc; i++) {
		struct pd_lpair *l;
		struct pd_block_chunk_meta *m;
		size_t nl, nc;
		char name[512];
		if ((rc = pd_block_series(b, all[i], &l, &nl, &m, &nc, &berr))) {
			if (rc == PD_ENOMEM)
				break;
			char file[64];
			snprintf(file, sizeof(file), "%s/index", ulid);
			report(c, ulid, file, (int64_t)all[i], berr.msg);
			rc = 0;
			continue;
		}
		series_text(l, nl, name, sizeof(name));
		for (size_t k = 0; k < nc && !rc; k++) {
			rc = check_chunk(c, b, ulid, m[k].ts_ref, 0, m[k].count, name);
			if (!rc)
				rc = check_chunk(c, b, ulid, m[k].vals_ref, 1, m[k].count, name);
		}
		free(l);
		free(m);
	}
out:
	if (rc == PD_ENOMEM)
		pd_err_set(err, PD_ENOMEM, "out of memory");
	free(all);
	pd_block_close(b);
	free(bdir);
	return rc;
}

static int check_wal(struct checker *c, struct pd_err *err)
{
	struct pd_wal_replay_stats st;
	char *wdir = pd_path_join(c->dir, "wal");
	if (!wdir)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	int rc = pd_wal_replay_readonly(wdir, NULL, &st, err);
	free(wdir);
	if (rc == PD_ENOMEM || rc == PD_EIO)
		return rc;
	if (rc) {
		report(c, "", "wal", -1, err->msg);
		return 0;
	}
	if (st.damaged_regions) {
		char file[64], what[600];
		snprintf(file, sizeof(file), "wal/%08u", st.damage_segment);
		if (strncmp(st.damage_reason, "checkpoint.", 11) == 0)
			snprintf(file, sizeof(file), "wal/%.19s/%08u", st.damage_reason,
				 st.damage_segment);
		snprintf(what, sizeof(what),
			 "%llu damaged records (%llu bytes) in %llu places%s; the first: %s",
			 (unsigned long long)st.damaged_records, (unsigned long long)st.damaged_bytes,
			 (unsigned long long)st.damaged_regions,
			 st.truncated ? ", the last a torn tail (a writer cuts it off)" : "",
			 st.damage_reason);
		report(c, "", file, (int64_t)st.damage_offset, what);
	}
	return 0;
}

int pd_tsdb_check(const char *dir, pd_tsdb_damage_fn fn, void *ctx, uint64_t *found,
		  struct pd_err *err)
{
	struct checker c = {dir, fn, ctx, 0};
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	*found = 0;
	if (!d)
		return pd_err_set(err, PD_ENOTFOUND, "%s: no such storage directory", dir);
	while ((e = readdir(d)) && !rc) {
		const char *s = e->d_name;
		if (strlen(s) != 26 || strspn(s, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") != 26)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			char **q = realloc(names, cap * sizeof(*q));
			if (!q) {
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
				break;
			}
			names = q;
		}
		if (!(names[n] = strdup(s)))
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		else
			n++;
	}
	closedir(d);
	for (size_t i = 0; i < n && !rc; i++)
		rc = check_block(&c, names[i], err);
	if (!rc)
		rc = check_wal(&c, err);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	*found = c.found;
	return rc;
}
