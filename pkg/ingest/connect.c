/* connect.c: push.v1.PusherService/Push (placeholder until the converter lands). */
#include "ingest_int.h"

int pd_ingest_connect_push(const uint8_t *body, size_t len, int json,
			   const struct pd_ingest_limits *lim, int64_t now_ms,
			   struct pd_ingest_batch *b, struct pd_err *err)
{
	return pd_err_set(err, PD_EINCOMPAT, "push.v1 is not built yet");
}
