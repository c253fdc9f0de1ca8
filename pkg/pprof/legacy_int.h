/* legacy_int.h: the private builder shared by the legacy profile readers of
 * pkg/pprof (legacy_*.c). A reader parses its format into the builder: strings,
 * locations keyed by address, samples, mappings from a /proc/self/maps section,
 * functions (Java names); pd_pprof_lb_finish then places locations in mappings as
 * `go tool pprof` does and builds a validated profile through pd_pprof_parts_build. */
#ifndef PROFD_PPROF_LEGACY_INT_H
#define PROFD_PPROF_LEGACY_INT_H

#include <stddef.h>
#include <stdint.h>

#include "profd/pprof.h"

/* A reader's answer when the bytes are not of its format (not an error: the next
 * reader is tried). */
#define PD_PPROF_LEGACY_NOT_MINE 1

struct pd_pprof_lb_loc {
	uint64_t addr;
	uint32_t func;    /* function index + 1; 0: no function */
	uint32_t mapping; /* mapping index + 1; 0: none */
	int64_t line;
	int used;
};

struct pd_pprof_lb_sample {
	size_t off, n; /* frames: stk[off .. off+n), leaf first, location indices */
	int64_t v[4];
	int64_t bytes; /* the "bytes" numeric label when has_bytes */
	int has_bytes;
};

struct pd_pprof_lb_map {
	uint64_t start, limit, offset;
	int64_t file, build_id;
};

struct pd_pprof_lb {
	char **str;
	size_t *str_len;
	size_t nstr, capstr;
	struct pd_u64map str_idx; /* hash -> index + 1 of the first string with it */
	int64_t st_type[4], st_unit[4];
	size_t ntypes;
	int64_t pt_type, pt_unit;
	int has_pt;
	int64_t period, duration, drop_frames, keep_frames;
	struct pd_pprof_lb_loc *loc;
	size_t nloc, caploc;
	struct pd_u64map loc_idx; /* address + 1 -> index + 1 */
	size_t loc_max_addr;      /* index + 1 of the location at UINT64_MAX */
	struct pd_pprof_lb_sample *s;
	size_t ns, caps;
	uint32_t *stk;
	size_t nstk, capstk;
	struct pd_pprof_lb_map *map;
	size_t nmap, capmap;
	int64_t *fn_name, *fn_file;
	size_t nfn, capfn;
	/* limits */
	size_t max_samples, max_depth, max_maps, max_line;
	int *limit_hit;
};

/* The line length limit of opts (its default when opts sets none). */
size_t pd_pprof_legacy_max_line(const struct pd_pprof_decode_opts *opts);

void pd_pprof_lb_init(struct pd_pprof_lb *b, const struct pd_pprof_decode_opts *opts);
void pd_pprof_lb_fini(struct pd_pprof_lb *b);
/* Interns a string; returns its index, or -1 when out of memory. */
int64_t pd_pprof_lb_str(struct pd_pprof_lb *b, const char *s, size_t len);
int pd_pprof_lb_type(struct pd_pprof_lb *b, const char *type, const char *unit, struct pd_err *err);
int pd_pprof_lb_period_type(struct pd_pprof_lb *b, const char *type, const char *unit,
                            struct pd_err *err);
/* The location at addr (made when new); its index into *idx. */
int pd_pprof_lb_loc_at(struct pd_pprof_lb *b, uint64_t addr, uint32_t *idx, struct pd_err *err);
/* Looks up without making: index + 1, or 0. */
uint32_t pd_pprof_lb_loc_find(const struct pd_pprof_lb *b, uint64_t addr);
/* Starts a sample: frames follow with _frame, values are set on the returned one. */
struct pd_pprof_lb_sample *pd_pprof_lb_sample(struct pd_pprof_lb *b, struct pd_err *err);
int pd_pprof_lb_frame(struct pd_pprof_lb *b, uint64_t addr, struct pd_err *err);
int pd_pprof_lb_function(struct pd_pprof_lb *b, const char *name, size_t nlen, const char *file,
                         size_t flen, uint32_t *idx, struct pd_err *err);

/* A /proc/self/maps text (or pprof's brief form, "start-end file (@offset) buildid"),
 * as `go tool pprof` reads it: executable entries become mappings, other lines are
 * skipped (attr=value lines define $attr for later ones). Stops at max_maps. */
int pd_pprof_lb_maps(struct pd_pprof_lb *b, const char *text, size_t len, struct pd_err *err);
/* Merges adjacent mappings, puts the main binary first, places every location. */
void pd_pprof_lb_place(struct pd_pprof_lb *b);
/* Builds the profile (places locations first unless placed). */
int pd_pprof_lb_finish(struct pd_pprof_lb *b, struct pd_pprof_profile **out, struct pd_err *err);

/* Text helpers shared by the text readers. */
struct pd_pprof_lines {
	const char *buf;
	size_t len, pos;
	size_t lineno;   /* 1-based number of the current line */
	const char *cur; /* the current line, without its \n (and \r) */
	size_t cur_len;
	int have;   /* 1 after a successful next */
	size_t max; /* longest line */
};
void pd_pprof_lines_init(struct pd_pprof_lines *l, const char *buf, size_t len, size_t max);
/* Moves to the next line: 1, or 0 at the end (cur then ""). PD_ETOOBIG for a line
 * past l->max. */
int pd_pprof_lines_next(struct pd_pprof_lines *l, struct pd_err *err);
/* Trimmed view of s. */
void pd_pprof_trim(const char **s, size_t *n);
int pd_pprof_space_or_comment(const char *s, size_t n);
int pd_pprof_has_prefix(const char *s, size_t n, const char *p);
int pd_pprof_contains(const char *s, size_t n, const char *p);
int pd_pprof_is_maps_sentinel(const char *s, size_t n);
/* The hexadecimal numbers "0x..." of s in order, each passed to the builder as a
 * frame (minus adjust for frames after the first when adjust_from_first is 0, or
 * for every frame when it is 1). PD_EINVAL for one past 64 bits. */
int pd_pprof_hex_frames(struct pd_pprof_lb *b, const char *s, size_t n, int adjust, int adjust_leaf,
                        size_t lineno, struct pd_err *err);
/* strconv.ParseInt(s, base 0 or 10): returns 0 on success. */
int pd_pprof_parse_int(const char *s, size_t n, int base0, int64_t *v);
/* Scales a sampled heap (count, size) as pprof does for a Poisson sampling rate. */
void pd_pprof_scale_heap(int64_t *count, int64_t *size, int64_t rate);
/* float64 -> int64 as Go's conversion does on amd64 for values in range. */
int64_t pd_pprof_f2i(double d);

/* The readers. Each returns 0 (and *out), PD_PPROF_LEGACY_NOT_MINE, or an error. */
int pd_pprof_legacy_cpu(struct pd_pprof_profile **out, const uint8_t *buf, size_t len,
                        const struct pd_pprof_decode_opts *opts, struct pd_err *err);
int pd_pprof_legacy_heap(struct pd_pprof_profile **out, const char *buf, size_t len,
                         const struct pd_pprof_decode_opts *opts, struct pd_err *err);
int pd_pprof_legacy_count(struct pd_pprof_profile **out, const char *buf, size_t len,
                          const struct pd_pprof_decode_opts *opts, struct pd_err *err);
int pd_pprof_legacy_thread(struct pd_pprof_profile **out, const char *buf, size_t len,
                           const struct pd_pprof_decode_opts *opts, struct pd_err *err);
int pd_pprof_legacy_contention(struct pd_pprof_profile **out, const char *buf, size_t len,
                               const struct pd_pprof_decode_opts *opts, struct pd_err *err);
int pd_pprof_legacy_java(struct pd_pprof_profile **out, const char *buf, size_t len,
                         const struct pd_pprof_decode_opts *opts, struct pd_err *err);
/* Java's symbol lines ("0xADDR name (File.java:12)") after the samples: names the
 * locations, then drops every address as pprof does. */
int pd_pprof_legacy_java_symbols(struct pd_pprof_lb *b, const char *text, size_t len,
                                 struct pd_err *err);

/* Tries each reader in pprof's order on bytes that are not a protobuf profile. */
int pd_pprof_legacy_decode(struct pd_pprof_profile **out, const uint8_t *buf, size_t len,
                           const struct pd_pprof_decode_opts *opts, struct pd_err *err);
#define PD_PPROF_LEGACY_FORMATS                                                                    \
	"gperftools CPU, heap/growth/fragmentation text, Go count (goroutine, threadcreate), "     \
	"threadz, contention, Java heap/contention"

#endif
