/* util.h: the small pieces every profd package shares: error codes and messages,
 * an arena allocator with a memory cap, a growable byte buffer with a maximum,
 * bounded gzip, file reading, and an integer hash map.
 *
 * Errors: functions return 0 on success or a negative PD_E... code, and put a
 * message a user can act on into a caller-provided struct pd_err (which may be
 * NULL when the caller does not want the message). */
#ifndef PROFD_UTIL_H
#define PROFD_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Error codes. Fixed: never renumbered, new ones only appended. */
enum pd_errcode {
	PD_OK = 0,
	PD_EINVAL = -1,    /* bad argument or malformed input */
	PD_ENOMEM = -2,    /* allocation failed or a memory limit was hit */
	PD_EIO = -3,       /* reading or writing a file failed */
	PD_ECORRUPT = -4,  /* input bytes are not what they claim to be */
	PD_ETOOBIG = -5,   /* input exceeds a configured size limit */
	PD_ENOTFOUND = -6, /* a named thing does not exist */
	PD_EINCOMPAT = -7, /* inputs cannot be combined */
	PD_EFULL = -8,     /* a bounded store is full: try again later */
	PD_EUNAVAIL = -9,  /* a server could not be reached (connection, timeout) */
	PD_ELIMIT = -10,   /* a configured count limit was reached (series, targets) */
};

#define PD_ERR_MSG_MAX 512

struct pd_err {
	int code;
	char msg[PD_ERR_MSG_MAX];
};

/* Returns a static, human-readable name for an error code. */
const char *pd_strerror(int code);

/* Records code and a printf-style message in err (if err is not NULL) and returns
 * code, so that callers can write `return pd_err_set(err, PD_EINVAL, "...")`. */
int pd_err_set(struct pd_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to the message already in err (no-op when err is NULL). */
void pd_err_prefix(struct pd_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- arena ---------------------------------------------------------------- */

/* An arena hands out memory that is released all at once by pd_arena_destroy.
 * Allocations fail (return NULL) once `limit` bytes are in use (0: no limit). */
struct pd_arena;

/* Returns a new arena, or NULL when out of memory. The caller owns it. */
struct pd_arena *pd_arena_create(size_t limit);
/* Frees the arena and everything allocated from it; NULL does nothing. */
void pd_arena_destroy(struct pd_arena *a);
/* Returns size bytes aligned to 16, owned by the arena; NULL when the limit is hit. */
void *pd_arena_alloc(struct pd_arena *a, size_t size);
/* As pd_arena_alloc, zero-filled; checks n * size for overflow. */
void *pd_arena_calloc(struct pd_arena *a, size_t n, size_t size);
/* Copies s (len bytes, plus a terminating NUL) into the arena. */
char *pd_arena_strndup(struct pd_arena *a, const char *s, size_t len);
/* Bytes handed out so far. */
size_t pd_arena_used(const struct pd_arena *a);
/* True once an allocation has been refused because of the limit. */
int pd_arena_exhausted(const struct pd_arena *a);
/* 0 when size more bytes fit under the limit (each allocation counts rounded up to
 * 16); otherwise -1, and the arena counts as exhausted. Allocates nothing: for a
 * caller that knows its whole need before it allocates. */
int pd_arena_fits(struct pd_arena *a, size_t size);

/* ---- growable buffer ------------------------------------------------------ */

/* A byte buffer that grows up to max bytes (0: SIZE_MAX). Embedded: pd_buf_init /
 * pd_buf_fini. data is owned by the buffer until pd_buf_steal. */
struct pd_buf_budget;

struct pd_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	size_t max;
	struct pd_buf_budget *budget; /* NULL: none (pd_buf_init); see below */
};

/* A limit shared by many buffers on the bytes they hold together (the API's
 * responses held for clients). A buffer with b->budget set charges the growth
 * of its capacity above `free_each` bytes to it, and an append that would take
 * `used` past `max` fails with PD_EFULL; pd_buf_fini gives the charge back;
 * pd_buf_steal leaves it with the caller (pd_buf_charge says how much, before
 * the steal), who gives it back with pd_buf_budget_release. Thread-safe. */
struct pd_buf_budget {
	size_t max;       /* 0: no limit */
	size_t free_each; /* bytes of each buffer not charged */
	size_t used;      /* charged now (atomic) */
};
/* Charges n bytes; PD_EFULL (nothing charged) when used + n would pass max. */
int pd_buf_budget_take(struct pd_buf_budget *bb, size_t n);
void pd_buf_budget_release(struct pd_buf_budget *bb, size_t n);
/* The bytes b's capacity has charged to its budget (0 without one). */
size_t pd_buf_charge(const struct pd_buf *b);

void pd_buf_init(struct pd_buf *b, size_t max);
void pd_buf_fini(struct pd_buf *b);
/* Makes room for n more bytes; PD_ETOOBIG past max, PD_ENOMEM when malloc fails. */
int pd_buf_reserve(struct pd_buf *b, size_t n);
int pd_buf_append(struct pd_buf *b, const void *p, size_t n);
int pd_buf_printf(struct pd_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal, quotes included, escaping as RFC 8259 asks;
 * each byte of s that starts no valid UTF-8 sequence becomes U+FFFD. */
int pd_buf_json_string(struct pd_buf *b, const char *s);
/* The same for the len bytes at s, which may hold NULs (written as \u0000); s
 * NULL is "". */
int pd_buf_json_stringn(struct pd_buf *b, const char *s, size_t len);
/* Hands the bytes to the caller (free() them) and leaves the buffer empty. */
uint8_t *pd_buf_steal(struct pd_buf *b, size_t *len);

/* ---- base64 --------------------------------------------------------------- */

/* Padding required, no white space, and the bits padding drops must be zero, as
 * Go's base64.StdEncoding.Strict() decodes (HTTP Basic credentials). */
#define PD_BASE64_STRICT 1u
/* Decodes standard base64 s[0..n) into out (cap bytes; n / 4 * 3 + 3 always
 * suffice) and sets *outlen. flags: PD_BASE64_STRICT, or 0 for white space
 * skipped and padding optional (kubeconfig's *-data fields). Returns 0,
 * PD_EINVAL when s is not base64 in that form, PD_ETOOBIG when the bytes pass
 * cap. */
int pd_base64_decode(const char *s, size_t n, unsigned flags, uint8_t *out, size_t cap,
		     size_t *outlen);

/* ---- gzip ----------------------------------------------------------------- */

/* True when buf starts with the gzip magic bytes 1f 8b. */
int pd_gzip_is(const uint8_t *buf, size_t len);

/* Decompresses the gzip stream in buf into *out (malloc'd, caller frees). Fails with
 * PD_ETOOBIG when the output would exceed max bytes, PD_ECORRUPT on a bad stream. */
int pd_gunzip(const uint8_t *buf, size_t len, size_t max, uint8_t **out, size_t *out_len,
	      struct pd_err *err);

/* How pd_inflate reads its input. */
enum pd_inflate_format {
	PD_INFLATE_GZIP = 0,    /* gzip members, concatenated ones read as one stream */
	PD_INFLATE_DEFLATE = 1, /* HTTP's "deflate": zlib-wrapped, or raw deflate as some
				   servers send it (told apart by the zlib header check) */
};

/* Limits of one pd_inflate call. */
struct pd_inflate_opts {
	int format;          /* enum pd_inflate_format */
	size_t max;          /* largest output in bytes; past it PD_ETOOBIG */
	int64_t deadline_us; /* CLOCK_MONOTONIC microseconds; 0: none. Past it PD_EIO
				with "gave up at the deadline" */
	const int *cancel;   /* may be NULL; once *cancel is non-zero: PD_EIO */
	int zlib_only;       /* 1: never libdeflate's fast path, always zlib's streaming
				inflater (benchmarks and tests compare the two) */
	unsigned max_ratio;  /* the output may be at most this many times len, the
				input's size (a tighter max when that is less); past it
				PD_ETOOBIG naming the ratio. 0: no ratio limit */
};

/* Decompresses buf into *out (malloc'd, caller frees). Its output buffer never
 * exceeds max + 1 bytes. A gzip body that is one member saying (in its trailer) it
 * inflates to at most max and 16 MiB is inflated by libdeflate in one call; any
 * other body, or one whose trailer proves wrong, by zlib in slices of at most 1 MiB
 * of output, checking the limits after each. So a call stops within a slice, or
 * one such whole body, of its deadline or a cancel. Results, errors and messages
 * are zlib's either way, but for a stream using codes RFC 1951 reserves, which
 * libdeflate reads (pkg/util/gzip.c). Errors as pd_gunzip, plus PD_EIO for the
 * deadline and the cancel. */
int pd_inflate(const uint8_t *buf, size_t len, const struct pd_inflate_opts *o, uint8_t **out,
	       size_t *out_len, struct pd_err *err);

/* How many pd_inflate calls of this process libdeflate answered (tests check that
 * the fast path is taken). */
uint64_t pd_inflate_fast_total(void);

/* Compresses buf as a gzip stream at the given zlib level into *out (caller frees). */
int pd_gzip(const uint8_t *buf, size_t len, int level, uint8_t **out, size_t *out_len,
	    struct pd_err *err);

/* ---- files ---------------------------------------------------------------- */

/* Reads a whole file ("-" is stdin) into *out (caller frees), at most max bytes. */
int pd_file_read(const char *path, size_t max, uint8_t **out, size_t *out_len,
		 struct pd_err *err);
/* Writes len bytes to path ("-" is stdout) via a temporary file and rename, so that
 * readers never see a partial file. Does not fsync: not for data that must survive
 * a crash. */
int pd_file_write(const char *path, const void *buf, size_t len, struct pd_err *err);

/* ---- logging --------------------------------------------------------------- */

enum pd_log_level { PD_LOG_ERROR = 0, PD_LOG_WARN = 1, PD_LOG_INFO = 2, PD_LOG_DEBUG = 3 };

/* Sets the level ("debug", "info", "warn", "error") and format ("logfmt", "json"). */
int pd_log_setup(const char *level, const char *format, struct pd_err *err);
int pd_log_enabled(int level);

/* Writes one line: msg is a fixed message (no values in it, so that lines of one
 * event grep alike), fields a printf format of space-separated key=value pairs,
 * e.g. "job=%s target=%s err=%s", each value formatted on its own and quoted as
 * logfmt or JSON needs it:
 *   ts=… level=error component=scrape msg="scrape failed" job=api target=… err="…"
 *   {"ts":"…","level":"error","component":"scrape","msg":"scrape failed","job":"api",…}
 * A value's format holds printf conversions without spaces (%s, %llu, %.3f,
 * %.*s, %#x, …); a key is letters, digits, '_' and '.'. */
void pd_log_write(int level, const char *component, const char *msg, const char *fields, ...)
    __attribute__((format(printf, 4, 5)));

/* Log macros: the level is checked before any formatting. The fields, if any,
 * follow the message: pd_log_info("tsdb", "block written", "ulid=%s", id). */
#define pd_log_at(lvl, comp, msg, ...)                                                             \
	do {                                                                                       \
		if (pd_log_enabled(lvl))                                                           \
			pd_log_write(lvl, comp, msg, " " __VA_ARGS__);                             \
	} while (0)
#define pd_log_error(comp, msg, ...) pd_log_at(PD_LOG_ERROR, comp, msg, __VA_ARGS__)
#define pd_log_warn(comp, msg, ...) pd_log_at(PD_LOG_WARN, comp, msg, __VA_ARGS__)
#define pd_log_info(comp, msg, ...) pd_log_at(PD_LOG_INFO, comp, msg, __VA_ARGS__)
#define pd_log_debug(comp, msg, ...) pd_log_at(PD_LOG_DEBUG, comp, msg, __VA_ARGS__)

/* ---- secrets in URLs (redact.c) -------------------------------------------- */

/* 1 when s holds a URL with a password (scheme://user:password@host). */
int pd_url_has_password(const char *s);
/* Copies s into out (cap bytes, always NUL-terminated, cut short when it does
 * not fit) with the password of every URL in it replaced by xxxxx, as Go's
 * URL.Redacted shows it ("http://u:xxxxx@host/"); returns the length written. A
 * URL's authority ends at '/', '?', '#', a quote, '\\' or white space. */
size_t pd_redact_urls(char *out, size_t cap, const char *s);
/* The same, malloc'd (the caller frees); NULL when out of memory. */
char *pd_redact_urls_dup(const char *s);
/* Overwrites in place each byte of every URL password in s with 'x' (the
 * length stays: for the process's own arguments, which cannot grow). */
void pd_url_passwords_blank(char *s);

/* ---- time ----------------------------------------------------------------- */

/* Parses a time as Prometheus's API does: Unix seconds ("1700000000.5") or RFC 3339
 * ("2026-11-22T18:48:03.123Z", "...+01:00") into Unix milliseconds. The error names
 * the input. */
int pd_time_parse(const char *s, int64_t *ms, struct pd_err *err);
/* Formats Unix milliseconds as RFC 3339 in UTC, with milliseconds when non-zero. */
void pd_time_format(int64_t ms, char *out, size_t size);

/* ---- hashing -------------------------------------------------------------- */

/* 64-bit hash of len bytes (FNV-1a mixed with a finalizer), seedable. */
uint64_t pd_hash_bytes(const void *p, size_t len, uint64_t seed);
/* Mixes a 64-bit value into a hash. */
uint64_t pd_hash_u64(uint64_t h, uint64_t v);

/* An open-addressing map from non-zero uint64 keys to uint32 values. Embedded. */
struct pd_u64map {
	uint64_t *keys;
	uint32_t *vals;
	size_t cap; /* power of two, or 0 */
	size_t len;
};

void pd_u64map_init(struct pd_u64map *m);
void pd_u64map_fini(struct pd_u64map *m);
/* Inserts or replaces key (must be non-zero). PD_ENOMEM on allocation failure. */
int pd_u64map_put(struct pd_u64map *m, uint64_t key, uint32_t val);
/* Returns 1 and sets *val when key is present, else 0. */
int pd_u64map_get(const struct pd_u64map *m, uint64_t key, uint32_t *val);

#endif
