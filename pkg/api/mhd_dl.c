/* mhd_dl.c: libmicrohttpd, loaded when the HTTP server starts. profd links none of
 * its functions directly: the ones the API calls are defined here and forward to
 * libmicrohttpd.so.12, opened with dlopen on first use, so that commands that never
 * serve HTTP do not load it and the TLS libraries it depends on. MHD_start_daemon
 * takes its options only as one MHD_OPTION_ARRAY (the form server.c uses). */
#include <dlfcn.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;

static struct {
	struct MHD_Daemon *(*start_daemon)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
					   MHD_AccessHandlerCallback, void *, ...);
	void (*stop_daemon)(struct MHD_Daemon *);
	struct MHD_Response *(*create_response_from_buffer)(size_t, void *, enum MHD_ResponseMemoryMode);
	struct MHD_Response *(*create_response_from_buffer_with_free_callback_cls)(
	    size_t, void *, MHD_ContentReaderFreeCallback, void *);
	enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
	enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
	void (*destroy_response)(struct MHD_Response *);
	const char *(*lookup_connection_value)(struct MHD_Connection *, enum MHD_ValueKind, const char *);
	int (*get_connection_values)(struct MHD_Connection *, enum MHD_ValueKind, MHD_KeyValueIterator,
				     void *);
	enum MHD_Result (*add_connection)(struct MHD_Daemon *, MHD_socket, const struct sockaddr *,
					  socklen_t);
	const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *,
							       enum MHD_ConnectionInfoType, ...);
} fn;

static void load(void)
{
	void *h = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "profd: cannot load libmicrohttpd: %s\n", dlerror());
		return;
	}
#define SYM(field, name) *(void **)(&fn.field) = dlsym(h, name)
	SYM(start_daemon, "MHD_start_daemon");
	SYM(stop_daemon, "MHD_stop_daemon");
	SYM(create_response_from_buffer, "MHD_create_response_from_buffer");
	SYM(create_response_from_buffer_with_free_callback_cls,
	    "MHD_create_response_from_buffer_with_free_callback_cls");
	SYM(add_response_header, "MHD_add_response_header");
	SYM(queue_response, "MHD_queue_response");
	SYM(destroy_response, "MHD_destroy_response");
	SYM(lookup_connection_value, "MHD_lookup_connection_value");
	SYM(get_connection_values, "MHD_get_connection_values");
	SYM(add_connection, "MHD_add_connection");
	SYM(get_connection_info, "MHD_get_connection_info");
#undef SYM
}

#define LOADED(f) (pthread_once(&once, load), fn.f != NULL)

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
				    void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
	va_list ap;
	const struct MHD_OptionItem *ops = NULL;
	if (!LOADED(start_daemon))
		return NULL;
	va_start(ap, dh_cls);
	int opt = va_arg(ap, int);
	if (opt == MHD_OPTION_ARRAY)
		ops = va_arg(ap, const struct MHD_OptionItem *);
	else if (opt != MHD_OPTION_END) {
		va_end(ap);
		fprintf(stderr, "profd: MHD_start_daemon options must come as one MHD_OPTION_ARRAY\n");
		return NULL;
	}
	va_end(ap);
	if (ops)
		return fn.start_daemon(flags, port, apc, apc_cls, dh, dh_cls, MHD_OPTION_ARRAY, ops,
				       MHD_OPTION_END);
	return fn.start_daemon(flags, port, apc, apc_cls, dh, dh_cls, MHD_OPTION_END);
}

void MHD_stop_daemon(struct MHD_Daemon *d)
{
	if (LOADED(stop_daemon))
		fn.stop_daemon(d);
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
						     enum MHD_ResponseMemoryMode mode)
{
	return LOADED(create_response_from_buffer) ? fn.create_response_from_buffer(size, buffer, mode)
						   : NULL;
}

struct MHD_Response *MHD_create_response_from_buffer_with_free_callback_cls(
    size_t size, void *buffer, MHD_ContentReaderFreeCallback crfc, void *crfc_cls)
{
	return LOADED(create_response_from_buffer_with_free_callback_cls)
	           ? fn.create_response_from_buffer_with_free_callback_cls(size, buffer, crfc,
	                                                                   crfc_cls)
	           : NULL;
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *r, const char *h, const char *v)
{
	return LOADED(add_response_header) ? fn.add_response_header(r, h, v) : MHD_NO;
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *c, unsigned int status, struct MHD_Response *r)
{
	return LOADED(queue_response) ? fn.queue_response(c, status, r) : MHD_NO;
}

void MHD_destroy_response(struct MHD_Response *r)
{
	if (LOADED(destroy_response))
		fn.destroy_response(r);
}

const char *MHD_lookup_connection_value(struct MHD_Connection *c, enum MHD_ValueKind kind,
					const char *key)
{
	return LOADED(lookup_connection_value) ? fn.lookup_connection_value(c, kind, key) : NULL;
}

int MHD_get_connection_values(struct MHD_Connection *c, enum MHD_ValueKind kind,
			      MHD_KeyValueIterator it, void *cls)
{
	return LOADED(get_connection_values) ? fn.get_connection_values(c, kind, it, cls) : 0;
}

enum MHD_Result MHD_add_connection(struct MHD_Daemon *d, MHD_socket fd, const struct sockaddr *addr,
				   socklen_t addrlen)
{
	return LOADED(add_connection) ? fn.add_connection(d, fd, addr, addrlen) : MHD_NO;
}

/* Only the kinds that take no further argument (all profd asks for). */
const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *c,
							enum MHD_ConnectionInfoType kind, ...)
{
	return LOADED(get_connection_info) ? fn.get_connection_info(c, kind) : NULL;
}
