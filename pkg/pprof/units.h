/* units.h: unit families shared by merge (unit conversion) and reports. Private
 * to pkg/pprof. */
#ifndef PROFD_PPROF_UNITS_H
#define PROFD_PPROF_UNITS_H

enum { PD_UNIT_OTHER = 0, PD_UNIT_BYTES = 1, PD_UNIT_TIME = 2 };

/* Family of a unit name as pprof recognises it ("bytes", "kB", "nanoseconds", "ms",
 * ...); *factor is its size in bytes or nanoseconds (1 for other units). */
int pd_pprof_unit_kind(const char *unit, double *factor);

/* How many `to` units one `from` unit is; 1 when they are not of one family. */
double pd_pprof_unit_ratio(const char *from, const char *to);

#endif
