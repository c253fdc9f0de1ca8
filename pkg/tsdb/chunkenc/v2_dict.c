/* v2_dict.c: the zstd dictionaries that a value chunk's tables frame may be
 * compressed against (docs/format/chunks.md, "Tables dictionary"). Dictionary 1
 * is the names and source paths of Go's standard library and the mapping paths
 * and sample types of Go programs: most profiles a store sees come from Go, and
 * their chunks then need not spell those out again. The dictionary's bytes are
 * pkg/tsdb/chunkenc/dict/go-1.txt with each newline made a zero byte (strings
 * in the tables end with one), built into the binary; they are part of the
 * format and never change (a new one takes a new number). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "v2_int.h"

#ifndef PD_CHUNK_DICT_1
#error "PD_CHUNK_DICT_1 (the path of dictionary 1) must be defined by the build"
#endif

/* the file's bytes, as the assembler includes them */
__asm__(".section .rodata\n"
        ".balign 16\n"
        "pd_v2_dict1_start:\n"
        ".incbin \"" PD_CHUNK_DICT_1 "\"\n"
        "pd_v2_dict1_end:\n"
        ".previous\n");
extern const char pd_v2_dict1_start[] __asm__("pd_v2_dict1_start");
extern const char pd_v2_dict1_end[] __asm__("pd_v2_dict1_end");

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t cmu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *dict1;
static size_t dict1_len;
static ZSTD_DDict *ddict1;
#define MAX_LEVEL 22                      /* zstd's highest, ZSTD_maxCLevel() */
static ZSTD_CDict *cdict1[MAX_LEVEL + 1]; /* by level, made on first use */

static void init(void)
{
	size_t n = (size_t)(pd_v2_dict1_end - pd_v2_dict1_start);
	uint8_t *d = malloc(n ? n : 1);
	if (!d)
		return;
	for (size_t i = 0; i < n; i++)
		d[i] = pd_v2_dict1_start[i] == '\n' ? 0 : (uint8_t)pd_v2_dict1_start[i];
	if (!(ddict1 = ZSTD_createDDict(d, n))) {
		free(d);
		return;
	}
	dict1 = d;
	dict1_len = n;
}

const uint8_t *v2_dict_bytes(unsigned id, size_t *len)
{
	pthread_once(&once, init);
	*len = id == V2_DICT_GO ? dict1_len : 0;
	return id == V2_DICT_GO ? dict1 : NULL;
}

const ZSTD_DDict *v2_dict_ddict(unsigned id)
{
	pthread_once(&once, init);
	return id == V2_DICT_GO ? ddict1 : NULL;
}

const ZSTD_CDict *v2_dict_cdict(unsigned id, int level)
{
	pthread_once(&once, init);
	if (id != V2_DICT_GO || !dict1 || level < 1 || level > ZSTD_maxCLevel() ||
	    level > MAX_LEVEL)
		return NULL;
	pthread_mutex_lock(&cmu);
	if (!cdict1[level])
		cdict1[level] = ZSTD_createCDict(dict1, dict1_len, level);
	ZSTD_CDict *c = cdict1[level];
	pthread_mutex_unlock(&cmu);
	return c;
}
