/* k8s_watch_int.h: what the kubernetes_sd provider's own files share (k8s.c runs
 * the lists and watches, k8s_client.c reads kubeconfig files and the in-cluster
 * service account, splits watch streams into events and builds request URLs,
 * k8s_config.c checks configurations). The builders' contract is k8s_int.h. */
#ifndef PROFD_K8S_WATCH_INT_H
#define PROFD_K8S_WATCH_INT_H

#include "k8s_int.h"

/* ---- limits and defaults ------------------------------------------------------ */

/* One watch event (one line of a watch stream) may be at most this long; a longer
 * one fails the watch, which then relists. Kubernetes objects are at most about
 * 1.5 MiB in etcd, so 16 MiB leaves room for any object with its envelope. */
#define PD_K8S_MAX_EVENT_SIZE (16u << 20)
/* A list page's body may be at most this long (limit=PD_K8S_LIST_PAGE objects). */
#define PD_K8S_MAX_LIST_BODY (256u << 20)
#define PD_K8S_LIST_PAGE 500
/* The server ends a watch after timeoutSeconds, chosen between 5 and 10 minutes as
 * client-go's reflector chooses it; the client then watches again at once. */
#define PD_K8S_WATCH_TIMEOUT_MIN_S 300
/* Backoff after a failed request or a dropped stream: 1s, doubled each time, at most
 * 30s; reset by a list that succeeds or a stream that delivers an event. */
#define PD_K8S_BACKOFF_MIN_MS 1000
#define PD_K8S_BACKOFF_MAX_MS 30000
/* The in-cluster service account directory. */
#define PD_K8S_SERVICEACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* ---- configuration ------------------------------------------------------------ */

const char *pd_k8s_role_name(enum pd_discovery_k8s_role r);
/* 1 when h differs from the default HTTP client settings. */
int pd_k8s_custom_client(const struct pd_http_client_config *h);
/* Syntax checks of selectors, with the selector in the message. */
int pd_k8s_label_selector_check(const char *sel, struct pd_err *err);
int pd_k8s_field_selector_check(const char *sel, struct pd_err *err);

#endif
