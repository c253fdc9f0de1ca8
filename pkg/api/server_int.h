/* server_int.h: what the files of the HTTP server share (server.c, conn.c,
 * request.c, response.c, lifecycle.c): the methods a route allows, building and
 * sending a response, the lifecycle endpoints and the pages outside the API, a
 * connection's phases, and the libmicrohttpd callbacks that server.c starts the
 * daemons with. */
#ifndef PROFD_API_SERVER_INT_H
#define PROFD_API_SERVER_INT_H

#include <microhttpd.h>

#include "api_int.h"

/* The methods a route allows, as bits (api_method_bit). */
enum { M_GET = 1, M_HEAD = 2, M_POST = 4, M_PUT = 8, M_DELETE = 16 };

/* CLOCK_MONOTONIC now, in nanoseconds (server.c). */
int64_t api_mono_ns(void);

/* ---- routes and requests (request.c) ---------------------------------------- */

/* The M_ bit of an HTTP method; 0 for the others. */
unsigned api_method_bit(const char *m);
/* 1 for the paths whose errors are JSON: /api/... and /prometheus/api/... */
int api_json_api_path(const char *p);
/* libmicrohttpd's callbacks for one request: its raw target (which makes the
 * request's state), its headers and body, its end. */
void *api_on_uri(void *cls, const char *uri, struct MHD_Connection *c);
enum MHD_Result api_on_request(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_len, void **state);
void api_on_completed(void *cls, struct MHD_Connection *c, void **state,
                      enum MHD_RequestTerminationCode why);

/* ---- responses (response.c) --------------------------------------------------- */

/* A response refused because the responses held for clients have filled
 * --web.max-response-memory: 503 with Retry-After, as for any overload. */
#define PD_API_RETRY_AFTER_S 5
#define BUDGET_FULL                                                                                \
	"the server holds as many bytes of responses for clients as "                              \
	"--web.max-response-memory allows; try again later"

/* A plain-text answer: status and the text s. */
void api_text(struct api_resp *w, unsigned status, const char *s);
/* An empty response of status 200 whose body holds at most max bytes. */
void api_resp_init(struct api_resp *w, size_t max);
void api_resp_fini(struct api_resp *w);
/* Turns a JSON handler's output into the final envelope in w->body. */
void api_finish_json(struct pd_api_server *s, struct api_resp *w);
/* Queues w as r's answer (compressed when the client accepts gzip), its body
 * charged to the response budget. */
enum MHD_Result api_send_response(struct api_req *r, struct api_resp *w);

/* ---- the server's own endpoints and the pages outside the API (lifecycle.c) --- */

void api_healthy(struct api_req *r, struct api_resp *w);
void api_ready(struct api_req *r, struct api_resp *w);
void api_reload(struct api_req *r, struct api_resp *w);
void api_quit(struct api_req *r, struct api_resp *w);
/* Everything outside the API: the UI hook, else the index page or 404. */
void api_serve_other(struct api_req *r, struct api_resp *w);

/* ---- connections (conn.c) ------------------------------------------------------ */

/* Counts a connection the server closed itself (profd_http_connections_closed_total). */
void api_count_close(struct pd_api_server *s, enum api_close_reason why);
/* Moves a connection (NULL: none) to phase ph and sets the deadline that phase has. */
void api_conn_set_phase(struct pd_api_server *s, struct api_conn *cn, enum api_conn_phase ph);
/* The slot of an MHD connection, or NULL. */
struct api_conn *api_conn_of(struct MHD_Connection *c);
/* The acceptor thread (arg: the server): accepts, picks the pool, enforces the
 * timeouts until pd_api_stop wakes it. */
void *api_acceptor_main(void *arg);
/* MHD's connection start and close: binds a connection to its slot, frees it. */
void api_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                       enum MHD_ConnectionNotificationCode code);

#endif
