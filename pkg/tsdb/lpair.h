/* lpair.h: a label as a plain pair of strings, the form in which the WAL and the
 * block format take and hand out label sets. Private to pkg/tsdb. Label sets are
 * always sorted by name, names unique. */
#ifndef PROFD_TSDB_LPAIR_H
#define PROFD_TSDB_LPAIR_H

#include <stddef.h>

struct pd_lpair {
	const char *name;
	const char *value;
};

#endif
