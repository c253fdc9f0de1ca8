/* pprof.h: reading, checking, writing, reporting on, merging and diffing pprof
 * profiles (the gzip-compressed profile.proto that Go's net/http/pprof serves).
 *
 * A struct pd_pprof_profile is immutable once decoded: every report is computed
 * from it without changing it, so one profile may be read by several threads.
 * Reports follow `go tool pprof` exactly: function granularity, inlined frames
 * as separate functions, cum counted once per sample per function, the default
 * sample type rule, merge and -diff_base semantics. */
#ifndef PROFD_PPROF_H
#define PROFD_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "profd/util.h"

struct pd_pprof_profile;

/* ---- decoding ------------------------------------------------------------- */

#define PD_PPROF_DEFAULT_MAX_DECOMPRESSED ((size_t)256 << 20)

struct pd_pprof_decode_opts {
	/* Largest decompressed (raw protobuf) size accepted; 0 means the default,
	 * PD_PPROF_DEFAULT_MAX_DECOMPRESSED. */
	size_t max_decompressed;
	/* Largest memory the decoded profile may use (past it PD_ETOOBIG, "decoding
	 * needs more than the memory limit"); 0 means 16 times the decompressed size
	 * plus 1 MiB, which no well-formed profile comes near. */
	size_t max_memory;
	/* 1: unpack with protobuf-c alone, skipping the hand-written decoder that is
	 * tried first otherwise (bench/decode_bench.c compares the two); the result
	 * is the same either way. */
	int protobuf_c_only;
	/* Limits for profiles from outside (pushes and scrapes apply the
	 * PD_PPROF_STORE_* defaults below); 0: none. max_ratio: a gzip input may
	 * inflate to at most this many times its size. max_samples: samples in the
	 * profile. max_sample_labels: labels of one sample. */
	unsigned max_ratio;
	size_t max_samples;
	size_t max_sample_labels;
	/* May be NULL; on a refusal for one of the limits above (or max_decompressed
	 * or max_memory) set to which (enum pd_pprof_limit), else to 0. */
	int *limit_hit;
	/* May be NULL; set to 1 when the bytes were one of the legacy formats (and the
	 * profile their conversion), else to 0. A store keeps pd_pprof_encode's bytes
	 * of such a profile rather than the bytes read. */
	int *legacy;
	/* Limits of the legacy readers (0: the default): frames of one sample
	 * (PD_PPROF_LEGACY_MAX_DEPTH, 4096), bytes of one text line
	 * (PD_PPROF_LEGACY_MAX_LINE, 1 MiB), memory map entries kept
	 * (PD_PPROF_LEGACY_MAX_MAPS, 65536). max_samples bounds their samples too
	 * (0 there: 10 million). */
	size_t legacy_max_depth, legacy_max_line, legacy_max_maps;
};
#define PD_PPROF_LEGACY_MAX_LINE ((size_t)1 << 20)
#define PD_PPROF_LEGACY_MAX_DEPTH 4096
#define PD_PPROF_LEGACY_MAX_MAPS 65536
#define PD_PPROF_LEGACY_MAX_SAMPLES 10000000

/* The limits a decoding may be refused for; pd_pprof_limit_name gives each a
 * short name for metrics: "decompressed_size", "decompression_ratio",
 * "decoded_size", "samples", "sample_labels". */
enum pd_pprof_limit {
	PD_PPROF_LIMIT_NONE,
	PD_PPROF_LIMIT_DECOMPRESSED,
	PD_PPROF_LIMIT_RATIO,
	PD_PPROF_LIMIT_MEMORY,
	PD_PPROF_LIMIT_SAMPLES,
	PD_PPROF_LIMIT_SAMPLE_LABELS,
};
#define PD_PPROF_LIMIT_COUNT 6
const char *pd_pprof_limit_name(int limit);

/* What a pushed or scraped profile may be, by default, to be stored: Go's
 * profiles inflate 2 to 3 times, decode to a few hundred KB, and hold thousands of
 * samples with a few labels each. A stored profile is decoded again by every
 * query that reads it and by WAL replay, so these bound those too. */
#define PD_PPROF_STORE_MAX_RATIO 100
#define PD_PPROF_STORE_MAX_MEMORY ((size_t)64 << 20)
#define PD_PPROF_STORE_MAX_SAMPLES 1000000
#define PD_PPROF_STORE_MAX_SAMPLE_LABELS 1024

/* Decodes buf (gzip-compressed or raw protobuf, told apart by the gzip magic) and
 * validates it as pprof does. Bytes that are no protobuf profile are tried as the
 * legacy formats go tool pprof reads (gperftools CPU, text heap/growth/contention/
 * thread, Go count, Java; docs/pprof.md), whose /proc/self/maps sections become
 * mappings. On success *out is a new profile owned by the caller
 * (free with pd_pprof_destroy); buf is only read. On failure err says what was
 * wrong, e.g. "location 17 refers to missing function 9". opts may be NULL. */
int pd_pprof_decode(struct pd_pprof_profile **out, const uint8_t *buf, size_t len,
		    const struct pd_pprof_decode_opts *opts, struct pd_err *err);

/* Reads and decodes a file ("-": stdin). Ownership as pd_pprof_decode. Error
 * messages start with the path. */
int pd_pprof_read_file(struct pd_pprof_profile **out, const char *path,
		       const struct pd_pprof_decode_opts *opts, struct pd_err *err);

/* Frees a profile; NULL does nothing. */
void pd_pprof_destroy(struct pd_pprof_profile *p);

/* ---- encoding ------------------------------------------------------------- */

/* Serialises p as profile.proto, gzip-compressed when gzip is non-zero. *out is
 * malloc'd and owned by the caller. decode(encode(p)) equals p field for field. */
int pd_pprof_encode(const struct pd_pprof_profile *p, int gzip, uint8_t **out, size_t *out_len,
		    struct pd_err *err);

/* ---- what a profile holds ------------------------------------------------- */

/* Strings returned below are borrowed from p and live as long as p. They end at
 * their first NUL: a profile's strings may hold NUL bytes, which the reports below
 * keep (see name_len) and pd_pprof_parts_get gives with their lengths. */
size_t pd_pprof_sample_type_count(const struct pd_pprof_profile *p);
const char *pd_pprof_sample_type(const struct pd_pprof_profile *p, size_t i);
const char *pd_pprof_sample_unit(const struct pd_pprof_profile *p, size_t i);
/* The same with their lengths into *len, NULs included. */
const char *pd_pprof_sample_type_n(const struct pd_pprof_profile *p, size_t i, size_t *len);
const char *pd_pprof_sample_unit_n(const struct pd_pprof_profile *p, size_t i, size_t *len);
/* The default sample type's index: default_sample_type when set and present,
 * otherwise the last sample type (pprof's rule). -1 when there are no types. */
int pd_pprof_default_sample_index(const struct pd_pprof_profile *p);
/* Resolves a --sample_index argument as pprof does: NULL or "" gives the default;
 * a number is an index; otherwise a type name, where "inuse_X" also matches "X". */
int pd_pprof_sample_index(const struct pd_pprof_profile *p, const char *spec, int *index,
			  struct pd_err *err);
size_t pd_pprof_sample_count(const struct pd_pprof_profile *p);
size_t pd_pprof_location_count(const struct pd_pprof_profile *p);
size_t pd_pprof_function_count(const struct pd_pprof_profile *p);
size_t pd_pprof_mapping_count(const struct pd_pprof_profile *p);
int64_t pd_pprof_time_nanos(const struct pd_pprof_profile *p);
int64_t pd_pprof_duration_nanos(const struct pd_pprof_profile *p);
int64_t pd_pprof_period(const struct pd_pprof_profile *p);
/* Period type and unit; "" when the profile has none. */
const char *pd_pprof_period_type(const struct pd_pprof_profile *p);
const char *pd_pprof_period_unit(const struct pd_pprof_profile *p);
/* File name of the main (first) mapping, or "" when there are no mappings. */
const char *pd_pprof_main_binary(const struct pd_pprof_profile *p);
/* Sum of |value| of all samples for a sample type: the denominator of pprof's
 * percentages (for a diff, the sum over the base samples only). */
int64_t pd_pprof_total(const struct pd_pprof_profile *p, int sample_index);
/* Sum of the values of all samples for a sample type, wrapping around as Go's
 * int64 does: the total `go tool pprof -top` reports. Samples without a stack
 * count too (`go tool pprof -raw` does not list those). 0 for an index out of
 * range. */
int64_t pd_pprof_sum(const struct pd_pprof_profile *p, int sample_index);

/* ---- report names and pruned frames --------------------------------------- */

/* How the reports below (top, flame graph, call graph, folded and speedscope
 * exports) name a function, as go tool pprof names it under its -symbolize
 * option. A profile holds one mode (pd_pprof_set_names; the default when not
 * set); the profile's functions themselves are never changed. */
enum pd_pprof_names {
	/* demangled C++ without parameters nor template arguments, Rust whole; a
	 * name a tool demangled already (name equal to system_name) simplified the
	 * same way when it looks like C++; system_name where name is empty */
	PD_PPROF_NAMES_DEFAULT = 0,
	PD_PPROF_NAMES_TEMPLATES = 1,     /* demangle=templates: template arguments kept */
	PD_PPROF_NAMES_FULL = 2,          /* demangle=full: parameters too, no clone suffixes */
	PD_PPROF_NAMES_DEMANGLE_NONE = 3, /* demangle=none: pprof's own, demangled whole */
	PD_PPROF_NAMES_RAW = 4,           /* none: name as stored, nothing demangled */
};

/* Parses pprof's -symbolize words: a colon-separated list of none, false
 * (raw names, wherever in the list, as in pprof), true,
 * demangle=default|templates|full|none (the last one counts); NULL or "" is the
 * default. PD_EINVAL naming the word not understood. */
int pd_pprof_names_parse(const char *spec, enum pd_pprof_names *out, struct pd_err *err);
/* The mode's -symbolize word ("demangle=default", ..., "none"). */
const char *pd_pprof_names_string(enum pd_pprof_names mode);
/* Sets the mode the reports of p use. */
void pd_pprof_set_names(struct pd_pprof_profile *p, enum pd_pprof_names mode);
enum pd_pprof_names pd_pprof_get_names(const struct pd_pprof_profile *p);

/* The longest symbol handed to the demangler (libiberty's, which also bounds its
 * own recursion); a longer one is shown as it is. */
#define PD_PPROF_MAX_DEMANGLE 65536

/* A C++ or Rust symbol demangled and simplified for mode, as a C string the
 * caller frees; NULL when it is no mangled name (or mode is raw, or it is longer
 * than PD_PPROF_MAX_DEMANGLE, or memory ran out). */
char *pd_pprof_demangle(const char *symbol, enum pd_pprof_names mode);

/* The name a report shows for a function with name (nlen bytes) and system_name
 * (slen bytes), either may hold NULs: malloc'd, NUL-terminated, its length into
 * *out_len; "" when both are empty. NULL when memory ran out. */
char *pd_pprof_report_name(const char *name, size_t nlen, const char *system_name, size_t slen,
                           enum pd_pprof_names mode, size_t *out_len);

/* Every report also prunes frames as pprof does with a profile's drop_frames
 * and keep_frames (its RemoveUninteresting): a location whose function name
 * (as named above, argument list cut) fully matches drop_frames and not
 * keep_frames loses that frame and the ones inlined into it, and a sample's stack
 * loses everything from the first such location below a frame that is kept, to
 * the leaf. A regex that does not compile prunes nothing, as in pprof. */

/* ---- granularity (granularity.c) -------------------------------------------- */

/* What one node of the reports below (top, flame graph, call graph) stands
 * for, as go tool pprof's -functions (the default), -lines, -files and
 * -addresses: a function; a function's line ("name file:line"); a source file
 * ("file"); an address with its function and line ("%016x name file:line").
 * Inlined frames stay frames of their own at every granularity. File names are
 * shown as pprof shows them: /proc/self/cwd/ cut, then cleaned as Go's
 * filepath.Clean does. Frames without a name are keyed by their binary and
 * start line, as pprof keys them. */
enum pd_pprof_granularity {
	PD_PPROF_GRAN_FUNCTIONS = 0,
	PD_PPROF_GRAN_LINES = 1,
	PD_PPROF_GRAN_FILES = 2,
	PD_PPROF_GRAN_ADDRESSES = 3,
};
/* "functions", "lines", "files" or "addresses" (NULL or "": functions) into
 * *out; PD_EINVAL naming the word otherwise. */
int pd_pprof_granularity_parse(const char *spec, enum pd_pprof_granularity *out,
                               struct pd_err *err);
const char *pd_pprof_granularity_string(enum pd_pprof_granularity g);
/* Sets the granularity the reports of p use (profiles derived from p by the
 * filters, merges and diffs here keep it). NULL does nothing. */
void pd_pprof_set_granularity(struct pd_pprof_profile *p, enum pd_pprof_granularity g);
enum pd_pprof_granularity pd_pprof_get_granularity(const struct pd_pprof_profile *p);

/* ---- top ------------------------------------------------------------------ */

enum pd_pprof_inline {
	PD_PPROF_NOT_INLINED = 0,
	PD_PPROF_INLINED = 1,        /* only ever called inlined: pprof's "(inline)" */
	PD_PPROF_PARTIAL_INLINE = 2, /* both: "(partial-inline)" */
};

struct pd_pprof_top_row {
	const char *name; /* function name as pprof prints it, borrowed from the top */
	int64_t flat;     /* value where the function is the leaf */
	int64_t cum;      /* value of samples with the function anywhere on the stack */
	int inline_kind;  /* enum pd_pprof_inline */
	size_t name_len;  /* name's length: it may hold NUL bytes (and ends with one) */
	size_t node;      /* private: the function node the row is of */
	/* of a diff (pd_pprof_diff): the parts of flat and cum from the base's samples
	 * (pprof::base=true, negated, so -base_flat is the base's own flat); the new
	 * profile's are flat - base_flat and cum - base_cum. 0 for other profiles. */
	int64_t base_flat, base_cum;
};

struct pd_pprof_top {
	struct pd_pprof_top_row *rows; /* in pprof's order: |flat| desc, name, |cum| desc */
	size_t nrows;
	int64_t total;  /* pd_pprof_total for the chosen sample type */
	int sample_index;
	const char *sample_type; /* borrowed from the profile */
	const char *unit;        /* borrowed from the profile */
	/* private */
	void *priv;
};

/* The signed sums of sample type idx over a diff's base samples (pprof::base=true,
 * negated) and over its other samples: *base is minus the base's total, *cur the
 * new profile's. For a profile that is no diff, *base is 0 and *cur its sum. */
void pd_pprof_diff_sums(const struct pd_pprof_profile *p, int idx, int64_t *base, int64_t *cur);

/* Computes the top table of every function with a non-zero flat or cum for one
 * sample type. *out is owned by the caller (pd_pprof_top_destroy); names in it are
 * copies, so it outlives p. */
int pd_pprof_top(const struct pd_pprof_profile *p, int sample_index, struct pd_pprof_top **out,
		 struct pd_err *err);
void pd_pprof_top_destroy(struct pd_pprof_top *t);

/* pprof's node cut: rows whose |cum| is below |fraction| times the signed sum of
 * every row's flat value are dropped (`-nodefraction`, default 0.005), as pprof's
 * graph cuts them. Returns how many rows were kept at the front, in order;
 * *cutoff receives |fraction * t->total|, the figure pprof's "Dropped N nodes
 * (cum <= X)" line prints. Inline marks are not changed: pd_pprof_top_keep does
 * that. Does not free. */
size_t pd_pprof_top_apply_nodefraction(struct pd_pprof_top *t, double fraction, int64_t *cutoff);

/* Keeps the first nodecount rows of t (0: all) and marks each row "(inline)" or
 * "(partial-inline)" as pprof does on the graph left after its cuts: from the
 * call edges into the function between the functions kept (all of them when no
 * row was cut), less the edges whose |weight| is below edgefraction
 * (`-edgefraction`, PD_PPROF_DEFAULT_EDGEFRACTION) of the signed flat sum, an
 * edge being inline when every call it stands for is inlined. p is the profile t
 * was made from. Returns the rows kept. Out of memory leaves the marks as they
 * were. pd_pprof_top marks the uncut table so. */
size_t pd_pprof_top_keep(struct pd_pprof_top *t, const struct pd_pprof_profile *p,
			 size_t nodecount, double edgefraction);

/* Appends to b the lines pprof prints above a text report of sample type idx:
 * "File:" (the main binary's base name), "Build ID:", the comments that do not
 * start with '#', "Type:", "Time:" (in the local time zone, pprof's layout) and
 * "Duration: D, Total samples = T (P%)" with total formatted in out_unit (see
 * pd_pprof_pick_unit), each ending with a newline. 0, or PD_ENOMEM/PD_ETOOBIG
 * from b. */
int pd_pprof_header(const struct pd_pprof_profile *p, int idx, int64_t total, const char *out_unit,
		    struct pd_buf *b);

/* ---- flame graph ---------------------------------------------------------- */

struct pd_pprof_flame_node {
	const char *name; /* function name; the root is "root" */
	int64_t self;     /* value of samples whose stack ends here */
	int64_t total;    /* value of samples whose stack passes through here */
	struct pd_pprof_flame_node *children; /* callees, by descending |total| then name */
	size_t nchildren;
	size_t name_len; /* name's length: it may hold NUL bytes (and ends with one) */
};

struct pd_pprof_flame {
	struct pd_pprof_flame_node root;
	int sample_index;
	const char *sample_type; /* borrowed from the profile */
	const char *unit;        /* borrowed from the profile */
	size_t node_count;
	void *priv;
	size_t sample_type_len, unit_len; /* their lengths (they may hold NUL bytes) */
};

/* Builds the call tree of a sample type: root -> outermost callers -> callees, each
 * inlined frame its own node. *out is owned by the caller (pd_pprof_flame_destroy)
 * and does not borrow from p except for sample_type and unit. */
int pd_pprof_flame(const struct pd_pprof_profile *p, int sample_index, struct pd_pprof_flame **out,
		   struct pd_err *err);
void pd_pprof_flame_destroy(struct pd_pprof_flame *f);
/* Appends the flame graph as JSON to b: {"sampleType","unit","total","root":{"name",
 * "self","total","children":[...]}}. Nodes whose |total| is below min_total are
 * left out (their parent's total still counts them); 0 keeps every node. */
int pd_pprof_flame_json(const struct pd_pprof_flame *f, int64_t min_total, struct pd_buf *b);

/* ---- exports: folded stacks and speedscope -------------------------------- */

/* Appends the folded stacks of one sample type to b, as Brendan Gregg's
 * flamegraph.pl reads them: one line per distinct stack, "outer;caller;leaf VALUE\n",
 * frames named and inlined frames expanded as in pd_pprof_flame, identical stacks
 * summed, stacks whose values sum to zero and samples without locations left out.
 * In names, ';' becomes ':' and control bytes (line breaks included) a space.
 * Values are raw, in the sample type's unit, and may be negative for a diff. b's
 * max bounds the output: PD_ETOOBIG when it is reached. p is only read. */
int pd_pprof_folded(const struct pd_pprof_profile *p, int sample_index, struct pd_buf *b,
		    struct pd_err *err);

/* Appends p as a speedscope file (https://www.speedscope.app/file-format-schema.json)
 * to b: the frames in shared.frames and a "sampled" profile (named after its
 * sample type) for sample_index, or, when all_types is non-zero, one for every
 * sample type in order with activeProfileIndex sample_index. A profile's samples
 * are its distinct stacks (outermost frame first, named as in pd_pprof_folded
 * but unaltered) with their summed values as weights; endValue is their sum.
 * name is the file's name (NULL: "profile"). PD_EINVAL when a written sample
 * type has a negative value (speedscope weights are amounts, so a diff cannot
 * be shown); PD_ETOOBIG when b's max is reached. p is only read. */
int pd_pprof_speedscope(const struct pd_pprof_profile *p, int sample_index, int all_types,
			const char *name, struct pd_buf *b, struct pd_err *err);

/* speedscope's unit for a pprof unit: "bytes", "nanoseconds", "microseconds",
 * "milliseconds" or "seconds" for those units and their short names (values are
 * not scaled), "none" for every other unit. The result is a static string. */
const char *pd_pprof_speedscope_unit(const char *unit);
/* ---- call graph ----------------------------------------------------------- */

/* The cuts of `go tool pprof -dot`, with its defaults. */
#define PD_PPROF_DEFAULT_NODECOUNT 80
#define PD_PPROF_DEFAULT_NODEFRACTION 0.005
#define PD_PPROF_DEFAULT_EDGEFRACTION 0.001
/* Most nodes a graph may keep (nodecount); beyond it a layout is too slow to use. */
#define PD_PPROF_MAX_NODECOUNT 1000
/* Bytes of one string (a name, a legend line) the DOT writer keeps; longer ones
 * are cut and end in "...". */
#define PD_PPROF_DOT_MAX_STRING 1024

struct pd_pprof_graph_opts {
	/* Keep at most this many nodes, chosen as pprof -dot chooses them (entry, leaf
	 * and branching nodes first); 0 keeps every node. */
	int nodecount;
	/* Drop nodes whose |cum| is below nodefraction times the graph's total flat,
	 * and edges whose |weight| is below edgefraction times it. 0 drops none. */
	double nodefraction, edgefraction;
	/* Denominator of the percentages; 0 means pd_pprof_total of the profile. A
	 * caller that filtered samples passes the total from before the filter. */
	int64_t total;
};

struct pd_pprof_graph_node {
	const char *name; /* function name as pprof prints it, owned by the graph */
	int64_t flat;     /* value of samples whose (kept) leaf frame is the function */
	int64_t cum;      /* value of samples with the function anywhere on the stack */
	size_t name_len;  /* name's length: it may hold NUL bytes (and ends with one) */
};

struct pd_pprof_graph_edge {
	uint32_t from, to; /* caller and callee, indices into nodes */
	int64_t weight;    /* value of samples with this call, counted once per sample */
	uint8_t residual;  /* some samples pass through dropped nodes between the two */
	uint8_t inlined;   /* every such call was inlined into the caller */
};

struct pd_pprof_graph {
	struct pd_pprof_graph_node *nodes; /* in pprof's order: node i is "N<i+1>" */
	size_t nnodes;
	struct pd_pprof_graph_edge *edges; /* by |weight| desc, then caller and callee name */
	size_t nedges;
	int64_t total;       /* denominator of the percentages */
	int64_t shown;       /* sum of the kept nodes' flat */
	int64_t node_cutoff; /* absolute cuts derived from the fractions */
	int64_t edge_cutoff;
	size_t node_count;    /* nodes before nodecount (after the nodefraction cut) */
	size_t dropped_nodes; /* nodes dropped by the nodefraction cut */
	size_t dropped_edges; /* edges dropped by the edgefraction cut */
	struct pd_pprof_graph_opts opts; /* the cuts it was built with */
	int sample_index;
	const char *sample_type; /* borrowed from the profile */
	const char *unit;        /* borrowed from the profile */
	void *priv;
};

/* Builds the call graph of one sample type at function granularity, exactly as
 * `go tool pprof -dot` selects it: the nodefraction cut, nodecount nodes by
 * pprof's entropy order (counting each node's label tags, up to 4, as pprof
 * counts its nodelets), edges below the edgefraction cut dropped, and residual
 * edges that another path already connects removed. opts may be NULL (pprof's
 * defaults). *out is owned by the caller (pd_pprof_graph_destroy) and borrows
 * only sample_type and unit from p. */
int pd_pprof_graph(const struct pd_pprof_profile *p, int sample_index,
                   const struct pd_pprof_graph_opts *opts, struct pd_pprof_graph **out,
                   struct pd_err *err);
void pd_pprof_graph_destroy(struct pd_pprof_graph *g);

/* Appends g in Graphviz's DOT language to b, as `go tool pprof -dot` writes it:
 * one box per node labelled with its name split at package and type separators,
 * flat (flat%) and "of" cum (cum%), font size by flat and colour by cum; one edge
 * per call labelled with its weight, " (inline)" for inlined calls, dotted when
 * residual. legend lines (may be NULL, n 0) go into the legend box; pprof's
 * per-node label tags (nodelets) are not drawn. Every string from the profile or
 * the caller (names, title, legend, sample type, unit) is written as plain text
 * inside a quoted DOT string: `"` and `\` escaped, newlines as \l, control bytes
 * and bytes that are not UTF-8 as U+FFFD, cut after PD_PPROF_DOT_MAX_STRING bytes
 * ("..."); no attribute, URL or HTML-like label is ever made from one. */
int pd_pprof_graph_dot(const struct pd_pprof_graph *g, const char *title,
                       const char *const *legend, size_t nlegend, struct pd_buf *b);

/* ---- merge and diff ------------------------------------------------------- */

/* Merges n >= 1 profiles as pprof does: keeps the sample types that all share,
 * converts compatible units (e.g. ms and ns) to the finer one, and adds up samples
 * with the same stack and labels, dropping those that sum to zero. The inputs are
 * only read; *out is new and owned by the caller. PD_EINCOMPAT when the profiles
 * cannot be merged (no common sample type, different period types). */
int pd_pprof_merge(const struct pd_pprof_profile *const *ps, size_t n,
		   struct pd_pprof_profile **out, struct pd_err *err);

/* Merging one profile at a time, so that inputs can be freed as they are added
 * (pd_pprof_merge with n profiles is create, n adds and finish). The result is the
 * same as pd_pprof_merge's. A merger is owned by its creator until finish, which
 * frees it whatever the outcome; pd_pprof_merger_destroy drops an unfinished one. */
struct pd_pprof_merger;

int pd_pprof_merger_create(struct pd_pprof_merger **out, struct pd_err *err);
/* Adds p's samples; p is only read and may be destroyed right after. */
int pd_pprof_merger_add(struct pd_pprof_merger *m, const struct pd_pprof_profile *p,
			struct pd_err *err);
/* Adds p as a diff's base: values negated, samples labelled pprof::base=true. */
int pd_pprof_merger_add_base(struct pd_pprof_merger *m, const struct pd_pprof_profile *p,
			     struct pd_err *err);
/* The merged profile into *out (new, owned by the caller); frees m. */
int pd_pprof_merger_finish(struct pd_pprof_merger *m, struct pd_pprof_profile **out,
			   struct pd_err *err);
void pd_pprof_merger_destroy(struct pd_pprof_merger *m);

/* The difference p - base as `go tool pprof -diff_base=base p` builds it: base's
 * samples are negated, labelled pprof::base=true, and merged with p's, so that
 * reports show p minus base and percentages relative to base. *out is new and owned
 * by the caller. */
int pd_pprof_diff(const struct pd_pprof_profile *base, const struct pd_pprof_profile *p,
		  struct pd_pprof_profile **out, struct pd_err *err);

/* ---- units ---------------------------------------------------------------- */

/* Formats value in unit as pprof's reports do ("1.50MB", "10ms", "12345"),
 * scaling to a readable unit. Writes at most size bytes including the NUL. */
void pd_pprof_format_value(int64_t value, const char *unit, char *out, size_t size);
/* The unit pprof's text reports print a whole table in: the readable unit of the
 * smallest value, or of 100 times it when the largest needs a bigger unit. */
const char *pd_pprof_pick_unit(int64_t min, int64_t max, const char *unit);
/* Formats value in the given output unit (from pd_pprof_pick_unit). */
void pd_pprof_format_value_in(int64_t value, const char *unit, const char *out_unit, char *out,
			      size_t size);
/* Formats value*100/total as pprof does ("12.34%", "0.5%", "100%"). */
void pd_pprof_format_percent(int64_t value, int64_t total, char *out, size_t size);

/* ---- labels on samples (pprof's tags) ------------------------------------ */

/* Longest -tagfocus/-tagignore value pd_pprof_tagfilter_parse accepts, in bytes. */
#define PD_PPROF_DEFAULT_MAX_TAGFILTER_LEN 4096
/* Most comma-separated regexes in one filter value. */
#define PD_PPROF_DEFAULT_MAX_TAGFILTER_REGEXES 32

/* One `go tool pprof -tagfocus/-tagignore` value, compiled. Immutable once parsed:
 * any number of threads may match with it at once. */
struct pd_pprof_tagfilter;

/* Parses spec (len bytes) exactly as pprof's driver does: an optional `key=`
 * (up to the first '='; an empty key means none), then either a numeric range
 * (`32kb`, `:64kb`, `4mb:`, `12kb:64mb`, units as pprof's measurement package
 * knows them; matched against numeric labels, of that key or of any key) or
 * comma-separated regexes in Go's syntax (unanchored; with a key, any value of
 * that key matching any regex; without, every regex must match some
 * `key:value` of the sample's string labels). Ranges whose numbers overflow
 * int64 (which make pprof panic) and specs over the limits above are refused.
 * *out is owned by the caller (pd_pprof_tagfilter_destroy). On failure err says
 * what was wrong, e.g. `error parsing regexp "(a" at offset 2: missing closing )`. */
int pd_pprof_tagfilter_parse(struct pd_pprof_tagfilter **out, const char *spec, size_t len,
                             struct pd_err *err);
void pd_pprof_tagfilter_destroy(struct pd_pprof_tagfilter *f);

/* Keeps the samples of p that every focus filter matches and no ignore filter
 * matches (one focus and one ignore is pprof's -tagfocus/-tagignore; more are
 * applied one after the other, as pprof run again on its own output). Numeric
 * labels are compared in the unit pprof infers for their key from p. *out is new
 * and owned by the caller; p is only read. *kept (may be NULL) receives how many
 * samples were kept. */
int pd_pprof_filter_tags(const struct pd_pprof_profile *p,
                         const struct pd_pprof_tagfilter *const *focus, size_t nfocus,
                         const struct pd_pprof_tagfilter *const *ignore, size_t nignore,
                         struct pd_pprof_profile **out, size_t *kept, struct pd_err *err);

struct pd_pprof_tag_value {
	const char *name; /* a string label's value, or a numeric one as pprof prints it */
	int64_t total;    /* sum of the sample type over samples carrying it */
	size_t name_len;  /* name's length: it may hold NUL bytes (and ends with one) */
};

struct pd_pprof_tag_key {
	const char *key;
	size_t key_len; /* key's length: it may hold NUL bytes (and ends with one) */
	int64_t total;                     /* sum of the values' totals */
	struct pd_pprof_tag_value *values; /* by descending |total|, then name */
	size_t nvalues;
};

struct pd_pprof_tags {
	struct pd_pprof_tag_key *keys; /* by key */
	size_t nkeys;
	int sample_index;
	void *priv;
};

/* The report of `go tool pprof -tags`: for every label key of p's samples, each
 * value with the sum of sample_index's values of the samples carrying it. Numeric
 * values are named as pprof does, scaled to unit (pprof's -unit; NULL or "" means
 * "minimum": a readable unit), e.g. "72kB". *out is owned by the caller
 * (pd_pprof_tags_destroy) and does not borrow from p. */
int pd_pprof_tags(const struct pd_pprof_profile *p, int sample_index, const char *unit,
                  struct pd_pprof_tags **out, struct pd_err *err);
void pd_pprof_tags_destroy(struct pd_pprof_tags *t);

/* A profile split by the values of one label key, as `-tagfocus=key=^value$`
 * selects them: a sample is in the group of each value it carries (string
 * labels, and numeric ones named as pd_pprof_tags names them with unit
 * "minimum"), or in the group without the label (value NULL). */
struct pd_pprof_tag_group {
	const char *value; /* NULL for the group of samples without the key */
	struct pd_pprof_profile *profile;
	size_t samples;
	size_t value_len; /* value's length: it may hold NUL bytes (and ends with one) */
};

/* Splits p by key into *groups (n of them, malloc'd; free with
 * pd_pprof_tag_groups_free), ordered by value with the group without the key
 * last; groups with no sample are left out. At most max_values values are kept:
 * those whose samples' |sample_index| sum is largest (0 means no limit);
 * *dropped receives how many were left out. p is only read. */
int pd_pprof_split_by_tag(const struct pd_pprof_profile *p, const char *key, int sample_index,
                          size_t max_values, struct pd_pprof_tag_group **groups, size_t *n,
                          size_t *dropped, struct pd_err *err);
void pd_pprof_tag_groups_free(struct pd_pprof_tag_group *groups, size_t n);

/* ---- comparing ------------------------------------------------------------ */

/* 0 when a and b are the same profile: every field of profile.proto equal, ids
 * included, strings compared by content (the string tables may differ in order
 * and in unused entries). Otherwise 1, with the first difference described in
 * why (size bytes; may be NULL). */
int pd_pprof_compare(const struct pd_pprof_profile *a, const struct pd_pprof_profile *b, char *why,
		     size_t size);

/* ---- stack filters (filter.c) ------------------------------------------- */

/* go tool pprof's -focus, -ignore, -hide, -show, -show_from and -prune_from, each
 * a regex in Go's syntax (NULL or "" for none), at most
 * PD_PPROF_DEFAULT_MAX_TAGFILTER_LEN bytes. */
struct pd_pprof_namefilter_spec {
	const char *focus, *ignore, *hide, *show, *show_from, *prune_from;
};

/* The filters compiled; immutable, any number of threads may use one at once. */
struct pd_pprof_namefilter;

/* Compiles spec into *out, owned by the caller (pd_pprof_namefilter_destroy);
 * *out is NULL when spec sets no filter. On failure err names the option and the
 * problem, e.g. `parsing focus regexp: error parsing regexp ...`. */
int pd_pprof_namefilter_create(struct pd_pprof_namefilter **out,
                               const struct pd_pprof_namefilter_spec *spec, struct pd_err *err);
void pd_pprof_namefilter_destroy(struct pd_pprof_namefilter *f);

/* The lines of pprof's "Active filters:" legend for f ("focus=REGEX", each cut
 * at 80 bytes with "…"), at most max of them into lines; returns how many. */
size_t pd_pprof_namefilter_legend(const struct pd_pprof_namefilter *f, char lines[][96],
                                  size_t max);

/* The option of bit i of pd_pprof_filter_names' *unmatched ("focus", "ignore",
 * "hide", "show", "show_from"). */
const char *pd_pprof_namefilter_option(int bit);

/* Applies f to p as pprof does before a report: samples without a location
 * matching focus, or with one matching ignore, are left out (a location matches
 * when a function's report name under p's names mode, or its file name, or the
 * mapping's file matches); hide drops matching frames and show keeps only
 * matching ones (a location left with none leaves the stacks, a sample left with
 * none leaves the profile); show_from cuts each stack above its outermost
 * matching frame (a sample without one is left out); prune_from cuts each stack
 * below its first (leaf-most) frame whose simplified name matches. *out is new
 * and owned by the caller; p is only read. *unmatched (may be NULL) gets bit i
 * set for each option i (pd_pprof_namefilter_option) that matched nothing, for
 * pprof's "… expression matched no samples" warnings. Percentages stay of p's
 * total: callers pass it to the reports. */
int pd_pprof_filter_names(const struct pd_pprof_profile *p, const struct pd_pprof_namefilter *f,
                          struct pd_pprof_profile **out, unsigned *unmatched, struct pd_err *err);

/* ---- normalized diffs (normalize.c) ---------------------------------------- */

/* pprof's -normalize: p scaled, per sample type, by base's sum over p's sum (0
 * when p's is 0), each value rounded half away from zero, samples left all zero
 * dropped; merging the result with base as a diff base (pd_pprof_merger_add_base)
 * is `go tool pprof -normalize -diff_base`. *out is new and owned by the caller;
 * p and base are only read. PD_EINVAL when their numbers of sample types differ. */
int pd_pprof_normalize(const struct pd_pprof_profile *p, const struct pd_pprof_profile *base,
                       struct pd_pprof_profile **out, struct pd_err *err);

/* ---- averaged merges (scale.c) ------------------------------------------- */

/* p with the values of each sample type j for which which[j] is set (which NULL:
 * every type) divided by count, rounded half away from zero: a merge of count
 * profiles as their average. Samples whose values are then all zero are dropped.
 * *out is new and owned by the caller; p is only read. PD_EINVAL when count is 0. */
int pd_pprof_average(const struct pd_pprof_profile *p, const unsigned char *which, uint64_t count,
                     struct pd_pprof_profile **out, struct pd_err *err);

/* 1 when sample type i of p is a snapshot of a moment (heap in use, goroutines,
 * threads), whose merge over time is better read as an average; also for every
 * type of a profile whose comments say "aggregation=average" (a Pyroscope push
 * with aggregationType=average). 0 for counts over a period or since the start. */
int pd_pprof_snapshot_type(const struct pd_pprof_profile *p, size_t i);

/* ---- decomposition -------------------------------------------------------- */

/* A profile as plain tables, the form in which stores keep it: each field of
 * profile.proto, with strings as indices into `strings` and references by the
 * profile's own ids. pd_pprof_parts_get fills one from a profile; a store that
 * rebuilds a profile fills one and calls pd_pprof_parts_encode or _build. */
struct pd_pprof_pvt {
	int64_t type, unit;
};

struct pd_pprof_plabel {
	int64_t key, str, num, num_unit;
};

struct pd_pprof_psample {
	uint64_t *location_id; /* leaf first */
	size_t nlocation;
	int64_t *value; /* one per sample type */
	size_t nvalue;
	struct pd_pprof_plabel *label;
	size_t nlabel;
};

struct pd_pprof_pmapping {
	uint64_t id, memory_start, memory_limit, file_offset;
	int64_t filename, build_id;
	uint8_t has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

struct pd_pprof_pline {
	uint64_t function_id;
	int64_t line, column;
};

struct pd_pprof_plocation {
	uint64_t id, mapping_id, address;
	struct pd_pprof_pline *line; /* innermost first */
	size_t nline;
	uint8_t is_folded;
};

struct pd_pprof_pfunction {
	uint64_t id;
	int64_t name, system_name, filename, start_line;
};

struct pd_pprof_parts {
	const char *const *strings; /* strings[0] is "" */
	const size_t *string_len;   /* each string's length, which is what counts: strings
				     * may hold NUL bytes (pd_pprof_parts_get's also end
				     * with one; a store's need not) */
	size_t nstrings;
	struct pd_pprof_pvt *sample_type;
	size_t nsample_type;
	struct pd_pprof_psample *sample;
	size_t nsample;
	struct pd_pprof_pmapping *mapping;
	size_t nmapping;
	struct pd_pprof_plocation *location;
	size_t nlocation;
	struct pd_pprof_pfunction *function;
	size_t nfunction;
	int has_period_type;
	struct pd_pprof_pvt period_type;
	int64_t period, time_nanos, duration_nanos;
	int64_t drop_frames, keep_frames, default_sample_type, doc_url; /* string indices */
	int64_t *comment; /* string indices */
	size_t ncomment;
	struct pd_arena *arena; /* what pd_pprof_parts_get allocated; NULL otherwise */
};

/* Fills *out with p's fields. The arrays are allocated in out->arena (free with
 * pd_pprof_parts_fini); strings are borrowed from p, which must outlive *out. */
int pd_pprof_parts_get(const struct pd_pprof_profile *p, struct pd_pprof_parts *out,
		       struct pd_err *err);
/* Frees what pd_pprof_parts_get allocated; leaves *parts zeroed. */
void pd_pprof_parts_fini(struct pd_pprof_parts *parts);
/* Serialises parts as profile.proto (raw, not gzip) into *out, malloc'd and owned
 * by the caller. Nothing is validated: the caller checks its own indices. */
int pd_pprof_parts_encode(const struct pd_pprof_parts *parts, uint8_t **out, size_t *out_len,
			  struct pd_err *err);
/* Builds and validates a profile from parts; *out is owned by the caller. parts
 * is only read and may be freed afterwards. */
int pd_pprof_parts_build(const struct pd_pprof_parts *parts, struct pd_pprof_profile **out,
			 struct pd_err *err);
/* The profile pd_pprof_parts_build makes, validated the same way, built by copying
 * parts' arrays and strings instead of encoding and decoding them (cheaper).
 * Unlike decoding it applies no size limit: the caller bounds parts. */
int pd_pprof_parts_copy(const struct pd_pprof_parts *parts, struct pd_pprof_profile **out,
			struct pd_err *err);

#endif
