/* symbolizer.c: the symbolizer object: the build ids it knows (each found and
 * opened once, by a worker thread, or retried with exponential backoff when
 * found nowhere), the cache of resolved addresses (in memory, an LRU bounded in
 * bytes, and on disk through cache_file.c), and the wait of one call for the
 * debug files it needs, bounded by the caller's deadline. rewrite.c turns what
 * this finds into a new profile. */
#include "symbolize_int.h"
#include "symbolizer_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

int64_t sym_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void pd_symbolize_opts_init(struct pd_symbolize_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->use_mapping_files = 1;
	o->max_download = PD_SYMBOLIZE_DEFAULT_MAX_DOWNLOAD;
	o->download_timeout_ms = PD_SYMBOLIZE_DEFAULT_DOWNLOAD_TIMEOUT_MS;
	o->cache_bytes = PD_SYMBOLIZE_DEFAULT_CACHE_BYTES;
	o->workers = PD_SYMBOLIZE_DEFAULT_WORKERS;
	o->retry_ms = PD_SYMBOLIZE_DEFAULT_RETRY_MS;
	o->retry_max_ms = PD_SYMBOLIZE_DEFAULT_RETRY_MAX_MS;
	o->max_open_files = PD_SYMBOLIZE_DEFAULT_MAX_OPEN_FILES;
	o->max_build_ids = PD_SYMBOLIZE_DEFAULT_MAX_BUILD_IDS;
}

/* ---- the memory cache ---- */

static size_t bucket_of(const struct pd_symbolizer *s, const struct sym_obj *o, uint64_t addr)
{
	return pd_hash_u64(pd_hash_u64(0, (uint64_t)(uintptr_t)o), addr) & (s->nbuckets - 1);
}

static void lru_unlink(struct sym_entry *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
}

static void lru_front(struct pd_symbolizer *s, struct sym_entry *e)
{
	e->next = s->lru.next;
	e->prev = &s->lru;
	s->lru.next->prev = e;
	s->lru.next = e;
}

static void entry_free(struct pd_symbolizer *s, struct sym_entry *e)
{
	struct sym_entry **pp = &s->buckets[bucket_of(s, e->obj, e->addr)];
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	if (e->eprev)
		e->eprev->enext = e->enext;
	else
		e->obj->entries = e->enext;
	if (e->enext)
		e->enext->eprev = e->eprev;
	lru_unlink(e);
	s->bytes -= e->bytes;
	s->entries--;
	sym_result_fini(&e->r);
	free(e);
}

struct sym_entry *sym_cache_get(struct pd_symbolizer *s, struct sym_obj *o, uint64_t addr)
{
	for (struct sym_entry *e = s->buckets[bucket_of(s, o, addr)]; e; e = e->hnext) {
		if (e->obj == o && e->addr == addr) {
			lru_unlink(e);
			lru_front(s, e);
			return e;
		}
	}
	return NULL;
}

/* Takes ownership of *r (left empty). Evicts the least recently used entries
 * past the byte bound. */
void sym_cache_put(struct pd_symbolizer *s, struct sym_obj *o, uint64_t addr, struct sym_result *r)
{
	struct sym_entry *old = sym_cache_get(s, o, addr);
	if (old)
		entry_free(s, old);
	struct sym_entry *e = calloc(1, sizeof(*e));
	if (!e) {
		sym_result_fini(r);
		return;
	}
	e->obj = o;
	e->addr = addr;
	e->r = *r;
	r->f = NULL;
	r->n = 0;
	e->bytes = sizeof(*e) + sym_result_bytes(&e->r);
	size_t b = bucket_of(s, o, addr);
	e->hnext = s->buckets[b];
	s->buckets[b] = e;
	e->enext = o->entries;
	if (o->entries)
		o->entries->eprev = e;
	o->entries = e;
	lru_front(s, e);
	s->bytes += e->bytes;
	s->entries++;
	while (s->bytes > s->o.cache_bytes && s->lru.prev != e)
		entry_free(s, s->lru.prev);
}

/* ---- the open debug files ---- */

static void open_unlink(struct pd_symbolizer *s, struct sym_obj *o)
{
	if (o->oprev)
		o->oprev->onext = o->onext;
	else
		s->ohead = o->onext;
	if (o->onext)
		o->onext->oprev = o->oprev;
	else
		s->otail = o->oprev;
	o->oprev = o->onext = NULL;
	o->listed = 0;
	s->nopen--;
}

size_t sym_open_touch(struct pd_symbolizer *s, struct sym_obj *o, struct sym_dbg **out, size_t max)
{
	if (o->listed)
		open_unlink(s, o);
	o->onext = s->ohead;
	o->oprev = NULL;
	if (s->ohead)
		s->ohead->oprev = o;
	else
		s->otail = o;
	s->ohead = o;
	o->listed = 1;
	s->nopen++;
	size_t n = 0;
	for (struct sym_obj *v = s->otail, *prev; v && s->nopen > s->o.max_open_files && n < max;
	     v = prev) {
		prev = v->oprev;
		/* one in use is skipped; taking its lock here could deadlock with
		 * a lookup that holds it and waits for mu */
		if (v == o || pthread_mutex_trylock(&v->dbg_mu) != 0)
			continue;
		out[n++] = v->dbg;
		v->dbg = NULL;
		pthread_mutex_unlock(&v->dbg_mu);
		open_unlink(s, v);
		s->st.evictions++;
	}
	return n;
}

static void close_all(struct sym_dbg **d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sym_dbg_close(d[i]);
}

/* ---- build ids ---- */

struct load_ctx {
	struct pd_symbolizer *s;
	struct sym_obj *o;
};

static int load_record(void *ctx, uint64_t addr, const struct pd_symbolize_frame *fr, size_t n)
{
	struct load_ctx *x = ctx;
	struct sym_result r = {0};
	for (size_t i = 0; i < n; i++) {
		char *a = strndup(fr[i].name, fr[i].name_len);
		char *b = strndup(fr[i].system_name, fr[i].system_name_len);
		char *c = strndup(fr[i].file, fr[i].file_len);
		int rc = a && b && c ? sym_result_add(&r, a, b, c, fr[i].line, fr[i].start_line)
		                     : PD_ENOMEM;
		free(a);
		free(b);
		free(c);
		if (rc) {
			sym_result_fini(&r);
			return 0;
		}
	}
	sym_cache_put(x->s, x->o, addr, &r);
	return 0;
}

/* Reads the disk cache of o's build id into memory (once). Under s->mu. */
static void obj_load_disk(struct pd_symbolizer *s, struct sym_obj *o)
{
	if (o->disk_loaded || !s->cache_dir || !o->build_id[0])
		return;
	o->disk_loaded = 1;
	struct pd_err err = {0};
	struct load_ctx x = {s, o};
	int rc = sym_cache_load(s->cache_dir, o->build_id, s->o.cache_bytes, load_record, &x, &err);
	if (rc && rc != PD_ENOTFOUND)
		pd_log_warn("symbolizer", "the disk cache was not read", "build_id=%s err=%s",
		            o->build_id, err.msg);
}

/* ---- the table of build ids ---- */

static size_t obj_bucket(const struct pd_symbolizer *s, const char *key)
{
	return pd_hash_bytes(key, strlen(key), s->oseed) & (s->nobuckets - 1);
}

static void obj_list_unlink(struct pd_symbolizer *s, struct sym_obj *o)
{
	if (o->lprev)
		o->lprev->lnext = o->lnext;
	else
		s->lhead = o->lnext;
	if (o->lnext)
		o->lnext->lprev = o->lprev;
	else
		s->ltail = o->lprev;
	o->lprev = o->lnext = NULL;
}

static void obj_list_front(struct pd_symbolizer *s, struct sym_obj *o)
{
	o->lprev = NULL;
	o->lnext = s->lhead;
	if (s->lhead)
		s->lhead->lprev = o;
	else
		s->ltail = o;
	s->lhead = o;
}

static void obj_free(struct sym_obj *o)
{
	sym_dbg_close(o->dbg);
	free(o->path);
	pthread_mutex_destroy(&o->dbg_mu);
	free(o->key);
	free(o->build_id);
	free(o->file);
	free(o);
}

/* Drops o from the table with its cached addresses and its debug file. o is
 * not pinned, queued or being looked for, and its dbg_mu is free. Under mu. */
static void obj_evict(struct pd_symbolizer *s, struct sym_obj *o)
{
	struct sym_obj **pp = &s->obuckets[obj_bucket(s, o->key)];
	while (*pp != o)
		pp = &(*pp)->hnext;
	*pp = o->hnext;
	obj_list_unlink(s, o);
	if (o->listed)
		open_unlink(s, o);
	while (o->entries)
		entry_free(s, o->entries);
	s->nobjs--;
	s->st.build_id_evictions++;
	obj_free(o);
}

/* Makes room for one more build id: evicts the least recently used one that
 * nothing uses. 0, or -1 when all are in use. Under mu. */
static int obj_make_room(struct pd_symbolizer *s)
{
	for (struct sym_obj *v = s->ltail; v; v = v->lprev) {
		if (v->pins || v->state == OBJ_QUEUED || v->state == OBJ_BUSY)
			continue;
		/* a lookup holding it would also hold a pin; be safe anyway */
		if (pthread_mutex_trylock(&v->dbg_mu) != 0)
			continue;
		pthread_mutex_unlock(&v->dbg_mu);
		obj_evict(s, v);
		return 0;
	}
	return -1;
}

struct sym_obj *sym_obj_get(struct pd_symbolizer *s, const char *build_id, const char *file,
                            int *full)
{
	const char *key = build_id && *build_id ? build_id : file;
	if (!key || !*key)
		return NULL;
	size_t b = obj_bucket(s, key);
	for (struct sym_obj *o = s->obuckets[b]; o; o = o->hnext) {
		if (strcmp(o->key, key) == 0) {
			obj_list_unlink(s, o);
			obj_list_front(s, o);
			return o;
		}
	}
	if (*full)
		return NULL;
	if (s->nobjs >= s->o.max_build_ids && obj_make_room(s) != 0) {
		*full = 1;
		return NULL;
	}
	struct sym_obj *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->key = strdup(key);
	o->build_id = strdup(build_id ? build_id : "");
	o->file = strdup(file ? file : "");
	if (!o->key || !o->build_id || !o->file) {
		free(o->key);
		free(o->build_id);
		free(o->file);
		free(o);
		return NULL;
	}
	pthread_mutex_init(&o->dbg_mu, NULL);
	o->hnext = s->obuckets[b];
	s->obuckets[b] = o;
	obj_list_front(s, o);
	s->nobjs++;
	obj_load_disk(s, o);
	return o;
}

void sym_obj_unpin(struct pd_symbolizer *s, struct sym_obj *o)
{
	(void)s;
	if (o && o->pins)
		o->pins--;
}

/* Queues o for a worker unless it is queued, being looked for, ready, or
 * failed and not yet due again. Under s->mu. */
void sym_obj_want(struct pd_symbolizer *s, struct sym_obj *o, int64_t now_us)
{
	if (o->state == OBJ_QUEUED || o->state == OBJ_BUSY || o->state == OBJ_READY)
		return;
	if (o->state == OBJ_FAILED && now_us < o->retry_at_us)
		return;
	o->state = OBJ_QUEUED;
	o->qnext = NULL;
	if (s->qtail)
		s->qtail->qnext = o;
	else
		s->qhead = o;
	s->qtail = o;
	pthread_cond_signal(&s->work_cv);
}

int sym_resolve(struct pd_symbolizer *s, struct sym_obj *o, uint64_t start, uint64_t limit,
                uint64_t offset, uint64_t addr, struct sym_result *out)
{
	struct sym_result r = {0};
	int rc = 0, reopened = 0;
	pthread_mutex_lock(&o->dbg_mu);
	if (!o->dbg) {
		/* closed to stay within max_open_files: open it again */
		struct pd_err err = {0};
		rc = o->path ? sym_dbg_open(&o->dbg, o->path, &err)
		             : pd_err_set(&err, PD_ENOTFOUND, "no debug file");
		if (rc) {
			pthread_mutex_unlock(&o->dbg_mu);
			pthread_mutex_lock(&s->mu);
			if (o->state == OBJ_READY) {
				/* gone since it was found: looked for again, after the
				 * first backoff */
				o->state = OBJ_FAILED;
				o->backoff_ms = s->o.retry_ms;
				o->retry_at_us = sym_now_us() + o->backoff_ms * 1000;
				snprintf(o->err, sizeof(o->err), "%.255s", err.msg);
				o->err_code = err.code;
				s->st.failures++;
			}
			pthread_mutex_unlock(&s->mu);
			pd_log_warn("symbolizer", "a debug file found before cannot be opened",
			            "key=%s err=%s", o->key, err.msg);
			return rc;
		}
		reopened = 1;
	}
	rc = sym_dbg_lookup(o->dbg, start, limit, offset, addr, &r);
	/* o first among the open ones, with dbg_mu still held: no other thread
	 * closes it meanwhile (they only try the lock) */
	struct sym_dbg *victims[4];
	pthread_mutex_lock(&s->mu);
	if (reopened)
		s->st.reopens++;
	size_t nv = sym_open_touch(s, o, victims, 4);
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_unlock(&o->dbg_mu);
	close_all(victims, nv);
	if (rc)
		return rc;
	if (s->cache_dir && o->build_id[0]) {
		struct pd_err err = {0};
		if (sym_cache_append(s->cache_dir, o->build_id, addr, &r, &err))
			pd_log_warn("symbolizer", "the disk cache was not written", "err=%s",
			            err.msg);
	}
	struct sym_result copy = {0};
	if (out) {
		for (size_t i = 0; i < r.n && rc == 0; i++)
			rc = sym_result_add(&copy, r.f[i].name, r.f[i].system_name, r.f[i].file,
			                    r.f[i].line, r.f[i].start_line);
		if (rc)
			sym_result_fini(&copy);
	}
	pthread_mutex_lock(&s->mu);
	s->st.misses++;
	sym_cache_put(s, o, addr, &r);
	pthread_mutex_unlock(&s->mu);
	if (out)
		*out = copy;
	return rc;
}

void sym_job_queue(struct pd_symbolizer *s, struct sym_job *j)
{
	j->o->pins++;
	j->next = NULL;
	if (s->jtail)
		s->jtail->next = j;
	else
		s->jhead = j;
	s->jtail = j;
	pthread_cond_signal(&s->work_cv);
}

/* A job's addresses not cached yet, resolved one by one. Called under mu;
 * returns with it held. */
static void run_job(struct pd_symbolizer *s, struct sym_job *j)
{
	s->st.in_flight++;
	for (size_t i = 0; i < j->n && !s->stop; i++) {
		if (sym_cache_get(s, j->o, j->addrs[i]))
			continue;
		pthread_mutex_unlock(&s->mu);
		sym_resolve(s, j->o, j->start, j->limit, j->offset, j->addrs[i], NULL);
		pthread_mutex_lock(&s->mu);
	}
	s->st.in_flight--;
	sym_obj_unpin(s, j->o);
	free(j->addrs);
	free(j);
}

static void *worker(void *arg)
{
	struct pd_symbolizer *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->stop && !s->qhead && !s->jhead)
			pthread_cond_wait(&s->work_cv, &s->mu);
		if (s->stop)
			break;
		if (!s->qhead) {
			struct sym_job *j = s->jhead;
			s->jhead = j->next;
			if (!s->jhead)
				s->jtail = NULL;
			run_job(s, j);
			pthread_cond_broadcast(&s->done_cv);
			continue;
		}
		struct sym_obj *o = s->qhead;
		s->qhead = o->qnext;
		if (!s->qhead)
			s->qtail = NULL;
		o->state = OBJ_BUSY;
		s->st.in_flight++;
		pthread_mutex_unlock(&s->mu);

		struct pd_err err = {0};
		char *path = NULL;
		const char *source = NULL;
		struct sym_dbg *d = NULL;
		char hex[2 * 64 + 1] = "";
		int rc = sym_find(&s->fo, o->build_id, o->file, &path, &source, &err);
		if (rc == 0)
			rc = sym_dbg_open(&d, path, &err);
		if (rc == 0 && !o->build_id[0])
			sym_elf_build_id(path, hex, sizeof(hex));

		struct sym_dbg *victims[4];
		size_t nv = 0;
		pthread_mutex_lock(&o->dbg_mu);
		pthread_mutex_lock(&s->mu);
		s->st.in_flight--;
		if (rc == 0) {
			if (o->dbg) /* opened again by a lookup meanwhile */
				victims[nv++] = o->dbg;
			o->dbg = d;
			free(o->path);
			o->path = path;
			path = NULL;
			nv += sym_open_touch(s, o, victims + nv, 3);
			o->state = OBJ_READY;
			o->source = source;
			o->backoff_ms = 0;
			if (hex[0] && !o->build_id[0]) {
				char *b = strdup(hex);
				if (b) {
					free(o->build_id);
					o->build_id = b;
				}
			}
			s->st.fetches++;
			if (strcmp(source, "debuginfod") == 0)
				s->st.downloads++;
			pd_log_info("symbolizer", "debug information found",
			            "key=%s source=%s path=%s", o->key, source, o->path);
		} else {
			o->state = OBJ_FAILED;
			o->backoff_ms = o->backoff_ms ? o->backoff_ms * 2 : s->o.retry_ms;
			if (o->backoff_ms > s->o.retry_max_ms)
				o->backoff_ms = s->o.retry_max_ms;
			o->retry_at_us = sym_now_us() + o->backoff_ms * 1000;
			snprintf(o->err, sizeof(o->err), "%.255s", err.msg);
			o->err_code = err.code;
			s->st.failures++;
			pd_log_info("symbolizer", "no debug information",
			            "key=%s retry_in_ms=%lld err=%s", o->key,
			            (long long)o->backoff_ms, err.msg);
		}
		pthread_mutex_unlock(&o->dbg_mu);
		free(path);
		pthread_cond_broadcast(&s->done_cv);
		if (nv) {
			pthread_mutex_unlock(&s->mu);
			close_all(victims, nv);
			pthread_mutex_lock(&s->mu);
		}
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static int copy_dirs(struct pd_symbolizer *s, const struct pd_symbolize_opts *o)
{
	s->fo.dirs = calloc(o->ndebug_dirs ? o->ndebug_dirs : 1, sizeof(char *));
	if (!s->fo.dirs)
		return PD_ENOMEM;
	for (size_t i = 0; i < o->ndebug_dirs; i++) {
		if (!o->debug_dirs[i] || !*o->debug_dirs[i])
			continue;
		if (!(s->fo.dirs[s->fo.ndirs] = strdup(o->debug_dirs[i])))
			return PD_ENOMEM;
		s->fo.ndirs++;
	}
	return 0;
}

int pd_symbolizer_create(struct pd_symbolizer **out, const struct pd_symbolize_opts *o,
                         struct pd_err *err)
{
	*out = NULL;
	struct pd_symbolizer *s = calloc(1, sizeof(*s));
	if (!s)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	s->o = *o;
	if (!s->o.cache_bytes)
		s->o.cache_bytes = PD_SYMBOLIZE_DEFAULT_CACHE_BYTES;
	if (!s->o.workers)
		s->o.workers = PD_SYMBOLIZE_DEFAULT_WORKERS;
	if (!s->o.max_open_files)
		s->o.max_open_files = PD_SYMBOLIZE_DEFAULT_MAX_OPEN_FILES;
	if (!s->o.max_build_ids)
		s->o.max_build_ids = PD_SYMBOLIZE_DEFAULT_MAX_BUILD_IDS;
	if (s->o.retry_ms <= 0)
		s->o.retry_ms = PD_SYMBOLIZE_DEFAULT_RETRY_MS;
	if (s->o.retry_max_ms < s->o.retry_ms)
		s->o.retry_max_ms = s->o.retry_ms;
	if (!s->o.max_download)
		s->o.max_download = PD_SYMBOLIZE_DEFAULT_MAX_DOWNLOAD;
	if (s->o.download_timeout_ms <= 0)
		s->o.download_timeout_ms = PD_SYMBOLIZE_DEFAULT_DOWNLOAD_TIMEOUT_MS;
	s->o.debug_dirs = NULL;
	s->o.debuginfod_urls = NULL;
	s->o.cache_dir = NULL;
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->done_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&s->work_cv, NULL);
	s->lru.next = s->lru.prev = &s->lru;
	s->nbuckets = 1u << 14;
	s->buckets = calloc(s->nbuckets, sizeof(*s->buckets));
	/* about one build id a chain when full; the seed keeps chosen keys from
	 * piling into one chain */
	s->nobuckets = 16;
	while (s->nobuckets < s->o.max_build_ids && s->nobuckets < (1u << 20))
		s->nobuckets <<= 1;
	s->obuckets = calloc(s->nobuckets, sizeof(*s->obuckets));
	if (getrandom(&s->oseed, sizeof(s->oseed), GRND_NONBLOCK) != sizeof(s->oseed))
		s->oseed = (uint64_t)sym_now_us() ^ (uint64_t)(uintptr_t)s;
	int rc = 0;
	if (!s->buckets || !s->obuckets || copy_dirs(s, o) != 0) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}
	s->fo.use_mapping_files = o->use_mapping_files;
	s->fo.max_download = s->o.max_download;
	s->fo.timeout_ms = s->o.download_timeout_ms;
	s->fo.cancel = &s->stop;
	if (o->debuginfod_urls && *o->debuginfod_urls) {
		if (!(s->urls = strdup(o->debuginfod_urls))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto fail;
		}
		s->fo.debuginfod_urls = s->urls;
	}
	if (o->cache_dir && *o->cache_dir) {
		if (mkdir(o->cache_dir, 0755) != 0 && errno != EEXIST) {
			rc = pd_err_set(err, PD_EIO, "creating the symbolizer cache %s: %s",
			                o->cache_dir, strerror(errno));
			goto fail;
		}
		if (!(s->cache_dir = strdup(o->cache_dir))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto fail;
		}
	}
	/* libdebuginfod takes its servers and its download cache from the
	 * environment; set once, before any worker runs */
	if (s->urls) {
		setenv(DEBUGINFOD_URLS_ENV, s->urls, 1);
		if (s->cache_dir) {
			size_t n = strlen(s->cache_dir) + 16;
			char *p = malloc(n);
			if (p) {
				snprintf(p, n, "%s/debuginfod", s->cache_dir);
				setenv("DEBUGINFOD_CACHE_PATH", p, 1);
				free(p);
			}
		}
	} else {
		unsetenv(DEBUGINFOD_URLS_ENV);
	}
	s->threads = calloc(s->o.workers, sizeof(pthread_t));
	if (!s->threads) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}
	for (unsigned i = 0; i < s->o.workers; i++) {
		if (pthread_create(&s->threads[i], NULL, worker, s) != 0) {
			rc = pd_err_set(err, PD_ENOMEM, "starting symbolizer worker %u failed", i);
			goto fail;
		}
		s->nthreads++;
	}
	*out = s;
	return 0;
fail:
	pd_symbolizer_destroy(s);
	return rc;
}

void pd_symbolizer_destroy(struct pd_symbolizer *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_broadcast(&s->work_cv);
	pthread_mutex_unlock(&s->mu);
	for (unsigned i = 0; i < s->nthreads; i++)
		pthread_join(s->threads[i], NULL);
	free(s->threads);
	for (struct sym_job *j = s->jhead, *n; j; j = n) {
		n = j->next;
		free(j->addrs);
		free(j);
	}
	while (s->lru.next != &s->lru)
		entry_free(s, s->lru.next);
	free(s->buckets);
	for (struct sym_obj *o = s->lhead, *n; o; o = n) {
		n = o->lnext;
		obj_free(o);
	}
	free(s->obuckets);
	for (size_t i = 0; i < s->fo.ndirs; i++)
		free(s->fo.dirs[i]);
	free(s->fo.dirs);
	free(s->urls);
	free(s->cache_dir);
	pthread_cond_destroy(&s->done_cv);
	pthread_cond_destroy(&s->work_cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void pd_symbolizer_get_stats(struct pd_symbolizer *s, struct pd_symbolizer_stats *st)
{
	pthread_mutex_lock(&s->mu);
	*st = s->st;
	st->cache_bytes = s->bytes;
	st->cache_entries = s->entries;
	st->build_ids = s->nobjs;
	st->open_files = s->nopen;
	pthread_mutex_unlock(&s->mu);
}

int pd_symbolizer_sources_json(struct pd_symbolizer *s, struct pd_buf *b)
{
	int rc = 0, first = 1;
	for (size_t i = 0; rc == 0 && i < s->fo.ndirs; i++) {
		rc = pd_buf_printf(b, "%s{\"type\":\"dir\",\"path\":", first ? "" : ",");
		if (rc == 0)
			rc = pd_buf_json_string(b, s->fo.dirs[i]);
		if (rc == 0)
			rc = pd_buf_append(b, "}", 1);
		first = 0;
	}
	if (rc == 0 && s->fo.use_mapping_files) {
		rc = pd_buf_printf(b, "%s{\"type\":\"mapping-file\"}", first ? "" : ",");
		first = 0;
	}
	if (rc == 0 && s->urls) {
		rc = pd_buf_printf(b, "%s{\"type\":\"debuginfod\",\"urls\":", first ? "" : ",");
		if (rc == 0)
			rc = pd_buf_json_string(b, s->urls);
		if (rc == 0)
			rc = pd_buf_printf(b, ",\"timeoutMs\":%lld,\"maxDownloadBytes\":%zu}",
			                   (long long)s->o.download_timeout_ms, s->o.max_download);
	}
	return rc;
}
