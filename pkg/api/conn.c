/* conn.c: the server's connections, from accept to close. profd accepts
 * connections itself (one thread, the acceptor) and hands each to one of two
 * libmicrohttpd daemons: the main one, while the connection fits
 * max_connections and max_connections_per_client, else a reserve of
 * PD_API_RESERVE_CONNECTIONS that answers only /-/healthy, /-/ready and
 * /metrics, so probes and monitoring get through while idle or slow clients
 * hold the main pool. The acceptor also cuts off connections that do not
 * deliver their headers within read_header_timeout, or their body within
 * read_timeout. */
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "server_int.h"

/* ---- connections ----------------------------------------------------------------------- */

static int same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		              &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
	return 1;
}

void api_count_close(struct pd_api_server *s, enum api_close_reason why)
{
	pthread_mutex_lock(&s->m.mu);
	s->m.c.conn_closed[why]++;
	pthread_mutex_unlock(&s->m.mu);
}

/* Moves a connection to phase ph and sets the deadline that phase has. */
void api_conn_set_phase(struct pd_api_server *s, struct api_conn *cn, enum api_conn_phase ph)
{
	if (!cn)
		return;
	int64_t now = api_mono_ns();
	pthread_mutex_lock(&s->cmu);
	cn->phase = ph;
	if (ph == PHASE_HEADERS) {
		cn->phase_start_ns = now;
		cn->deadline_ns = now + s->o.read_header_timeout_ms * 1000000;
	} else if (ph == PHASE_BODY) {
		cn->deadline_ns = cn->phase_start_ns + s->o.read_timeout_ms * 1000000;
	} else {
		cn->deadline_ns = 0;
	}
	pthread_mutex_unlock(&s->cmu);
}

/* Cuts off a connection: MHD's next read sees the end of the stream and closes it.
 * Counted first, so that a client who sees its connection end finds it counted. */
static void conn_kill(struct pd_api_server *s, struct api_conn *cn, enum api_close_reason why)
{
	api_count_close(s, why);
	cn->killed = 1;
	shutdown(cn->dupfd, SHUT_RDWR);
}

/* Closes connections past their deadline; returns the milliseconds until the next
 * deadline (at most 1000). Called by the acceptor. */
static int reap(struct pd_api_server *s)
{
	int64_t now = api_mono_ns(), next = now + 1000000000LL;
	pthread_mutex_lock(&s->cmu);
	for (size_t i = 0; i < s->nconns; i++) {
		struct api_conn *cn = &s->conns[i];
		if (!cn->in_use || cn->killed || !cn->deadline_ns)
			continue;
		if (now >= cn->deadline_ns) {
			enum api_close_reason why =
			    cn->phase == PHASE_HEADERS ? CLOSE_HEADER_TIMEOUT : CLOSE_READ_TIMEOUT;
			conn_kill(s, cn, why);
			pd_log_debug(
			    "api", "closed a connection", "reason=%s",
			    why == CLOSE_HEADER_TIMEOUT
			        ? "no complete request headers within --web.read-header-timeout"
			        : "no complete request body within --web.read-timeout");
		} else if (cn->deadline_ns < next) {
			next = cn->deadline_ns;
		}
	}
	pthread_mutex_unlock(&s->cmu);
	return (int)((next - now + 999999) / 1000000);
}

/* Accepts one connection and gives it to the main daemon or the reserve. */
static void accept_one(struct pd_api_server *s)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = accept(s->listen_fd, (struct sockaddr *)&ss, &sl);
	if (fd < 0)
		return;
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (s->web && api_web_tls(s->web)) {
		/* a thread of its own makes the handshake and carries the bytes; MHD
		 * serves the plain end (tls.c) */
		int pfd;
		int64_t deadline = api_mono_ns() + s->o.read_header_timeout_ms * 1000000;
		if (api_tls_start(&s->tls, s->web, fd, &ss, deadline, &pfd)) {
			api_count_close(s, CLOSE_REFUSED);
			close(fd);
			return;
		}
		fd = pfd;
	}
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0) {
		api_count_close(s, CLOSE_REFUSED);
		close(fd);
		return;
	}
	int64_t now = api_mono_ns();
	pthread_mutex_lock(&s->cmu);
	unsigned nmain = 0, nres = 0, nip = 0;
	struct api_conn *slot = NULL, *oldest = NULL;
	for (size_t i = 0; i < s->nconns; i++) {
		struct api_conn *cn = &s->conns[i];
		if (!cn->in_use) {
			if (!slot)
				slot = cn;
			continue;
		}
		if (cn->killed)
			continue;
		if (cn->reserve) {
			nres++;
			if (cn->phase == PHASE_HEADERS && (!oldest || cn->seq < oldest->seq))
				oldest = cn;
		} else {
			nmain++;
			if (same_ip(&cn->addr, &ss))
				nip++;
		}
	}
	int reserve = nmain >= s->o.max_connections || nip >= s->o.max_connections_per_client;
	if (reserve && nres >= PD_API_RESERVE_CONNECTIONS) {
		/* the reserve is full: the oldest still waiting for its request makes room */
		if (oldest)
			conn_kill(s, oldest, CLOSE_EVICTED);
		else
			slot = NULL;
	}
	uint64_t seq = 0;
	if (slot) {
		memset(slot, 0, sizeof(*slot));
		slot->in_use = 1;
		slot->reserve = reserve;
		slot->fd = fd;
		slot->dupfd = dfd;
		slot->phase = PHASE_HEADERS;
		slot->phase_start_ns = now;
		slot->deadline_ns = now + s->o.read_header_timeout_ms * 1000000;
		slot->seq = seq = ++s->conn_seq;
		memcpy(&slot->addr, &ss, sizeof(ss));
		slot->addrlen = sl;
	}
	pthread_mutex_unlock(&s->cmu);
	if (!slot) {
		api_count_close(s, CLOSE_REFUSED); /* before the client can see the close */
		close(dfd);
		close(fd);
		return;
	}
	if (reserve) {
		pthread_mutex_lock(&s->m.mu);
		s->m.c.conn_reserve++;
		pthread_mutex_unlock(&s->m.mu);
	}
	/* MHD closes fd itself when it cannot take the connection. A TLS connection's
	 * plain end is a UNIX socket: MHD is told so (it then leaves TCP options
	 * alone); the client's address stays in the slot. */
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	struct sockaddr *ma = (struct sockaddr *)&ss;
	socklen_t ml = sl;
	if (s->web && api_web_tls(s->web)) {
		ma = (struct sockaddr *)&un;
		ml = sizeof(sa_family_t);
	}
	if (MHD_add_connection(reserve ? s->mhd_reserve : s->mhd, fd, ma, ml) !=
	    MHD_YES) {
		pthread_mutex_lock(&s->cmu);
		if (slot->in_use && slot->seq == seq) {
			close(slot->dupfd);
			slot->in_use = 0;
		}
		pthread_mutex_unlock(&s->cmu);
		api_count_close(s, CLOSE_REFUSED);
	}
}

void *api_acceptor_main(void *arg)
{
	struct pd_api_server *s = arg;
	struct pollfd pf[2] = {{s->listen_fd, POLLIN, 0}, {s->wake_fd, POLLIN, 0}};
	int backoff = 0;
	while (!__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE)) {
		int timeout = reap(s);
		/* out of descriptors: wait before the next accept rather than spin */
		int n = poll(backoff ? pf + 1 : pf, backoff ? 1 : 2, backoff ? 100 : timeout);
		backoff = 0;
		if (n < 0 && errno != EINTR)
			break;
		if (n <= 0)
			continue;
		if (pf[1].revents)
			break;
		if (pf[0].revents & POLLIN) {
			errno = 0;
			accept_one(s);
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				backoff = 1;
		}
	}
	return NULL;
}

/* MHD's connection start and close: binds a connection to its slot, frees it. */
void api_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                       enum MHD_ConnectionNotificationCode code)
{
	struct pd_api_server *s = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
		    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!ci)
			return;
		pthread_mutex_lock(&s->cmu);
		for (size_t i = 0; i < s->nconns; i++) {
			struct api_conn *cn = &s->conns[i];
			if (cn->in_use && !cn->bound && cn->fd == ci->connect_fd) {
				cn->bound = 1;
				*socket_context = cn;
				break;
			}
		}
		pthread_mutex_unlock(&s->cmu);
		return;
	}
	struct api_conn *cn = *socket_context;
	if (!cn)
		return;
	pthread_mutex_lock(&s->cmu);
	close(cn->dupfd);
	cn->in_use = 0;
	pthread_mutex_unlock(&s->cmu);
	*socket_context = NULL;
}

struct api_conn *api_conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}
