/* serve_profiles.c: a scrape target for integration tests that serves fixed files:
 *
 *   serve_profiles ADDR_FILE LOG_FILE /path=FILE[,FILE...] ...
 *
 * listens on 127.0.0.1 (a free port, written to ADDR_FILE as host:port), and answers
 * each GET of a configured path with its files in turn (the first request gets the
 * first file, and so on, round and round), writing "path file" to LOG_FILE for every
 * answer, so a test knows exactly which bytes each scrape got. Stops on SIGTERM. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profd/util.h"

struct route {
	char *path;
	char **files;
	uint8_t **data;
	size_t *len;
	size_t n, next;
};

static struct route routes[16];
static size_t nroutes;
static FILE *served_log;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_len, void **state)
{
	(void)cls;
	(void)method;
	(void)version;
	(void)upload;
	(void)upload_len;
	(void)state;
	for (size_t i = 0; i < nroutes; i++) {
		if (strcmp(url, routes[i].path) != 0)
			continue;
		pthread_mutex_lock(&mu);
		size_t k = routes[i].next++ % routes[i].n;
		fprintf(served_log, "%s %s\n", routes[i].path, routes[i].files[k]);
		fflush(served_log);
		pthread_mutex_unlock(&mu);
		struct MHD_Response *r = MHD_create_response_from_buffer(routes[i].len[k], routes[i].data[k],
									 MHD_RESPMEM_PERSISTENT);
		MHD_add_response_header(r, "Content-Type", "application/octet-stream");
		enum MHD_Result ret = MHD_queue_response(c, 200, r);
		MHD_destroy_response(r);
		return ret;
	}
	struct MHD_Response *r = MHD_create_response_from_buffer(10, "not found\n", MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret = MHD_queue_response(c, 404, r);
	MHD_destroy_response(r);
	return ret;
}

int main(int argc, char **argv)
{
	struct pd_err err = {0};
	if (argc < 4) {
		fprintf(stderr, "usage: serve_profiles ADDR_FILE LOG_FILE /path=FILE[,FILE...] ...\n");
		return 2;
	}
	served_log = fopen(argv[2], "w");
	if (!served_log)
		return 1;
	for (int a = 3; a < argc && nroutes < 16; a++) {
		char *eq = strchr(argv[a], '=');
		if (!eq)
			return 2;
		struct route *r = &routes[nroutes++];
		r->path = strndup(argv[a], (size_t)(eq - argv[a]));
		char *list = strdup(eq + 1), *save = NULL;
		for (char *f = strtok_r(list, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
			r->files = realloc(r->files, (r->n + 1) * sizeof(char *));
			r->data = realloc(r->data, (r->n + 1) * sizeof(uint8_t *));
			r->len = realloc(r->len, (r->n + 1) * sizeof(size_t));
			r->files[r->n] = strdup(f);
			if (pd_file_read(f, 64u << 20, &r->data[r->n], &r->len[r->n], &err)) {
				fprintf(stderr, "serve_profiles: %s\n", err.msg);
				return 1;
			}
			r->n++;
		}
		free(list);
	}
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	struct sockaddr_in addr = {0};
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION,
						0, NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, &addr,
						MHD_OPTION_END);
	if (!d)
		return 1;
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	FILE *af = fopen(tmp, "w");
	if (!af)
		return 1;
	fprintf(af, "127.0.0.1:%u\n", i->port);
	fclose(af);
	rename(tmp, argv[1]);
	int sig;
	sigwait(&sigs, &sig);
	MHD_stop_daemon(d);
	fclose(served_log);
	for (size_t k = 0; k < nroutes; k++) {
		for (size_t j = 0; j < routes[k].n; j++) {
			free(routes[k].files[j]);
			free(routes[k].data[j]);
		}
		free(routes[k].files);
		free(routes[k].data);
		free(routes[k].len);
		free(routes[k].path);
	}
	return 0;
}
