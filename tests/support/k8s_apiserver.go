// k8s_apiserver is a Kubernetes API server for tests: it keeps pods, services,
// endpoints, endpointslices, nodes, ingresses and namespaces in memory and serves
// them on the real API paths, through LIST (a <Kind>List with a resourceVersion,
// limit/continue, labelSelector and fieldSelector) and WATCH (newline-delimited
// events over a chunked response, each event flushed as it happens), so that
// kubernetes_sd_configs can be tested without a cluster. Go's standard library only.
//
// Usage:
//
//	go run k8s_apiserver.go -url-file FILE [-fixtures DIR] [-token T]
//	                        [-tls-cert CRT -tls-key KEY] [-lifetime 15m]
//
// It listens on 127.0.0.1 on a free port and writes its URL (http://127.0.0.1:PORT
// or https://...) to the -url-file once it accepts connections. -fixtures loads
// every *.json file in DIR (not in its subdirectories): one object, or a List of
// objects, as `kubectl get -o json` prints them. It exits after -lifetime, so a test that dies
// leaves nothing running.
//
// API paths: /version, /api, /api/v1, /apis, /apis/GROUP/VERSION (discovery
// documents); /api/v1/{pods,services,endpoints,nodes,namespaces},
// /api/v1/namespaces/NS/{pods,services,endpoints},
// /apis/discovery.k8s.io/v1/[namespaces/NS/]endpointslices and
// /apis/networking.k8s.io/v1/[namespaces/NS/]ingresses, each with /NAME for one
// object. As in a real API server, items of a LIST carry no kind or apiVersion
// (the List does), watch events do. A watch (watch=1 or watch=true) from
// resourceVersion "" or "0" starts with an ADDED event for every current object;
// from a later version it replays what happened since; from a version older than
// the last compaction it sends an ERROR event (Status 410, reason Expired).
// BOOKMARK events go only to watches with allowWatchBookmarks=true; timeoutSeconds
// ends a watch cleanly. Selectors: label requirements key=v, key==v, key!=v,
// key in (a,b), key notin (a,b), key, !key; field selectors with =, == and != on
// the fields the real server supports for the resource. Anything else is a 400,
// never ignored.
//
// Test control, under /_control/ (never behind the token, never counted):
//
//	POST /_control/apply     body: an object or a List; creates or replaces each
//	                         (ADDED or MODIFIED to open watches)
//	POST /_control/delete    body: an object (kind, metadata.namespace, .name);
//	                         DELETED to open watches
//	                         (apply and delete with ?silent=1: a change whose event
//	                         is lost, as when the server's history was compacted:
//	                         no watch hears of it, and watches resuming from a
//	                         version before it get 410 Gone)
//	POST /_control/bookmark  a BOOKMARK to every open watch that allows them
//	POST /_control/gone?mode=http|event[&count=N]
//	                         the next N watch requests get 410 Gone: an HTTP 410
//	                         Status (mode=http) or a 200 with one ERROR event
//	                         (code 410, reason Expired) and the end (mode=event)
//	POST /_control/expire    every open watch gets that ERROR event and ends;
//	                         versions before the current one become too old
//	POST /_control/compact   versions before the current one become too old
//	POST /_control/drop      every open watch's connection is closed mid-stream
//	POST /_control/slow?delay=DURATION|off
//	                         responses written one byte at a time (each byte its
//	                         own chunk, flushed), DURATION between bytes
//	POST /_control/token?value=T
//	                         the bearer token required from now on ("" for none)
//	GET  /_control/requests  {"counts": {"LIST /api/v1/pods": 2, "WATCH ...": 3},
//	                          "requests": [{"time": UNIX_SECONDS, "verb": ...,
//	                          "path": ..., "query": ..., "authorized": ...}]}
//	POST /_control/reset     forgets the requests counted so far
//	GET  /_control/watches   {"open": N, "by_path": {"/api/v1/pods": N}}
//	GET  /_control/state     {"resourceVersion": "N", "compacted": "M"}
package main

import (
	"bufio"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// resource is one kind of object the server keeps.
type resource struct {
	group, version, plural, singular, kind string
	namespaced                             bool
	fields                                 []string // field selectors beyond metadata.name/namespace
}

func (r *resource) apiVersion() string {
	if r.group == "" {
		return r.version
	}
	return r.group + "/" + r.version
}

var resources = []*resource{
	{"", "v1", "pods", "pod", "Pod", true, []string{"spec.nodeName", "spec.restartPolicy",
		"spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
		"status.podIP", "status.nominatedNodeName"}},
	{"", "v1", "services", "service", "Service", true, []string{"spec.clusterIP", "spec.type"}},
	{"", "v1", "endpoints", "endpoints", "Endpoints", true, nil},
	{"", "v1", "nodes", "node", "Node", false, []string{"spec.unschedulable"}},
	{"", "v1", "namespaces", "namespace", "Namespace", false, []string{"status.phase"}},
	{"discovery.k8s.io", "v1", "endpointslices", "endpointslice", "EndpointSlice", true, nil},
	{"networking.k8s.io", "v1", "ingresses", "ingress", "Ingress", true, nil},
}

func resourceByKind(kind string) *resource {
	for _, r := range resources {
		if r.kind == kind {
			return r
		}
	}
	return nil
}

type obj = map[string]any

type object struct {
	res  *resource
	body obj
}

type event struct {
	typ      string
	rv       int64
	res      *resource
	obj, old obj // old: the object before a MODIFIED or DELETED
}

type watcher struct {
	res       *resource
	path, ns  string
	sel       *selector
	bookmarks bool
	ch        chan []byte   // encoded events, in order
	stop      chan struct{} // closed: end the watch (after what is queued)
	drop      chan struct{} // closed: close the connection at once
	stopped   bool
}

type reqEntry struct {
	Time       float64 `json:"time"`
	Verb       string  `json:"verb"`
	Path       string  `json:"path"`
	Query      string  `json:"query"`
	Authorized bool    `json:"authorized"`
}

type server struct {
	mu        sync.Mutex
	rv        int64
	compacted int64 // watches from versions below this get 410
	objects   map[string]*object
	history   []event
	watchers  map[*watcher]bool
	token     string
	goneMode  string
	goneCount int
	slow      bool
	slowDelay time.Duration
	counts    map[string]int
	log       []reqEntry
	addr      string
	silent    bool // changes made now reach no watch (see emit)
}

func key(r *resource, ns, name string) string { return r.plural + "/" + ns + "/" + name }

func str(o obj, path string) (string, bool) {
	var cur any = o
	for _, p := range strings.Split(path, ".") {
		m, ok := cur.(obj)
		if !ok {
			return "", false
		}
		cur, ok = m[p]
		if !ok {
			return "", false
		}
	}
	switch v := cur.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case json.Number:
		return v.String(), true
	}
	return "", false
}

func meta(o obj) obj {
	m, _ := o["metadata"].(obj)
	if m == nil {
		m = obj{}
		o["metadata"] = m
	}
	return m
}

// deepCopy copies a decoded JSON value.
func deepCopy(v any) any {
	switch t := v.(type) {
	case obj:
		c := make(obj, len(t))
		for k, e := range t {
			c[k] = deepCopy(e)
		}
		return c
	case []any:
		c := make([]any, len(t))
		for i, e := range t {
			c[i] = deepCopy(e)
		}
		return c
	}
	return v
}

func decode(r io.Reader) (any, error) {
	d := json.NewDecoder(r)
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// ---- selectors ---------------------------------------------------------------------

type requirement struct {
	key, op string // op: =, !=, in, notin, exists, !exists
	values  []string
}

type selector struct {
	labels []requirement
	fields []requirement
}

var (
	labelKeyRe   = regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	labelValueRe = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`)
	setRe        = regexp.MustCompile(`^(\S+)\s+(in|notin)\s*\((.*)\)$`)
)

func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

func parseLabelSelector(s string) ([]requirement, error) {
	var reqs []requirement
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, part := range splitTop(s) {
		p := strings.TrimSpace(part)
		var r requirement
		switch {
		case setRe.MatchString(p):
			m := setRe.FindStringSubmatch(p)
			r = requirement{key: m[1], op: m[2]}
			for _, v := range strings.Split(m[3], ",") {
				v = strings.TrimSpace(v)
				if !labelValueRe.MatchString(v) {
					return nil, fmt.Errorf("invalid label value: %q in requirement %q", v, p)
				}
				r.values = append(r.values, v)
			}
		case strings.HasPrefix(p, "!"):
			r = requirement{key: strings.TrimSpace(p[1:]), op: "!exists"}
		case strings.Contains(p, "!="):
			i := strings.Index(p, "!=")
			r = requirement{key: strings.TrimSpace(p[:i]), op: "!=", values: []string{strings.TrimSpace(p[i+2:])}}
		case strings.Contains(p, "=="):
			i := strings.Index(p, "==")
			r = requirement{key: strings.TrimSpace(p[:i]), op: "=", values: []string{strings.TrimSpace(p[i+2:])}}
		case strings.Contains(p, "="):
			i := strings.Index(p, "=")
			r = requirement{key: strings.TrimSpace(p[:i]), op: "=", values: []string{strings.TrimSpace(p[i+1:])}}
		default:
			r = requirement{key: p, op: "exists"}
		}
		if !labelKeyRe.MatchString(r.key) {
			return nil, fmt.Errorf("unable to parse requirement: %q: invalid label key %q", p, r.key)
		}
		for _, v := range r.values {
			if !labelValueRe.MatchString(v) {
				return nil, fmt.Errorf("unable to parse requirement: %q: invalid label value %q", p, v)
			}
		}
		reqs = append(reqs, r)
	}
	return reqs, nil
}

func parseFieldSelector(res *resource, s string) ([]requirement, error) {
	var reqs []requirement
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		p := strings.TrimSpace(part)
		var r requirement
		switch {
		case strings.Contains(p, "!="):
			i := strings.Index(p, "!=")
			r = requirement{key: p[:i], op: "!=", values: []string{p[i+2:]}}
		case strings.Contains(p, "=="):
			i := strings.Index(p, "==")
			r = requirement{key: p[:i], op: "=", values: []string{p[i+2:]}}
		case strings.Contains(p, "="):
			i := strings.Index(p, "=")
			r = requirement{key: p[:i], op: "=", values: []string{p[i+1:]}}
		default:
			return nil, fmt.Errorf("invalid selector: '%s'; can't understand '%s'", s, p)
		}
		ok := r.key == "metadata.name" || (r.key == "metadata.namespace" && res.namespaced)
		for _, f := range res.fields {
			ok = ok || f == r.key
		}
		if !ok {
			return nil, fmt.Errorf("field label not supported: %s", r.key)
		}
		reqs = append(reqs, r)
	}
	return reqs, nil
}

func (r requirement) matches(v string, has bool) bool {
	switch r.op {
	case "exists":
		return has
	case "!exists":
		return !has
	case "=":
		return has && v == r.values[0]
	case "!=":
		return !has || v != r.values[0]
	case "in", "notin":
		in := false
		for _, x := range r.values {
			in = in || (has && v == x)
		}
		return in == (r.op == "in")
	}
	return false
}

func (s *selector) matches(o obj) bool {
	if o == nil {
		return false
	}
	if s == nil {
		return true
	}
	labels, _ := meta(o)["labels"].(obj)
	for _, r := range s.labels {
		v, has := labels[r.key].(string)
		if !r.matches(v, has) {
			return false
		}
	}
	for _, r := range s.fields {
		v, _ := str(o, r.key)
		// a field that is not set compares as the empty string, as in the real server
		if !r.matches(v, true) {
			return false
		}
	}
	return true
}

// ---- responses ---------------------------------------------------------------------

// out writes a response, one byte at a time when the server is slow.
type out struct {
	w     http.ResponseWriter
	s     *server
	fl    http.Flusher
	delay time.Duration
	slow  bool
}

func (s *server) newOut(w http.ResponseWriter) *out {
	s.mu.Lock()
	defer s.mu.Unlock()
	fl, _ := w.(http.Flusher)
	return &out{w: w, s: s, fl: fl, delay: s.slowDelay, slow: s.slow}
}

func (o *out) write(b []byte) error {
	if !o.slow {
		_, err := o.w.Write(b)
		if err == nil && o.fl != nil {
			o.fl.Flush()
		}
		return err
	}
	for i := range b {
		if _, err := o.w.Write(b[i : i+1]); err != nil {
			return err
		}
		o.fl.Flush()
		if o.delay > 0 {
			time.Sleep(o.delay)
		}
	}
	return nil
}

func status(code int, reason, msg string) obj {
	return obj{"kind": "Status", "apiVersion": "v1", "metadata": obj{}, "status": "Failure",
		"message": msg, "reason": reason, "code": code}
}

func (s *server) sendJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	o := s.newOut(w)
	w.Header().Set("Content-Type", "application/json")
	if !o.slow { // slow: chunked, one byte a chunk
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	}
	w.WriteHeader(code)
	_ = o.write(b)
}

func (s *server) sendStatus(w http.ResponseWriter, code int, reason, msg string) {
	s.sendJSON(w, code, status(code, reason, msg))
}

func encodeEvent(typ string, o obj) []byte {
	b, _ := json.Marshal(obj{"type": typ, "object": o})
	return append(b, '\n')
}

// ---- store -------------------------------------------------------------------------

// put creates or replaces an object and tells the watches; s.mu is held.
func (s *server) put(o obj) (string, error) {
	kind, _ := o["kind"].(string)
	res := resourceByKind(kind)
	if res == nil {
		return "", fmt.Errorf("kind %q is not one this server keeps", kind)
	}
	if av, _ := o["apiVersion"].(string); av != res.apiVersion() {
		return "", fmt.Errorf("%s: apiVersion %q, want %q", kind, av, res.apiVersion())
	}
	m := meta(o)
	name, _ := m["name"].(string)
	ns, _ := m["namespace"].(string)
	if name == "" {
		return "", fmt.Errorf("%s without metadata.name", kind)
	}
	if res.namespaced && ns == "" {
		return "", fmt.Errorf("%s %s without metadata.namespace", kind, name)
	}
	if !res.namespaced {
		ns = ""
	}
	k := key(res, ns, name)
	old := s.objects[k]
	s.rv++
	m["resourceVersion"] = strconv.FormatInt(s.rv, 10)
	if _, ok := m["uid"]; !ok {
		if old != nil {
			m["uid"] = meta(old.body)["uid"]
		} else {
			h := sha1.Sum([]byte(k))
			m["uid"] = fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
		}
	}
	if _, ok := m["creationTimestamp"]; !ok {
		m["creationTimestamp"] = time.Now().UTC().Format(time.RFC3339)
	}
	s.objects[k] = &object{res: res, body: o}
	ev := event{typ: "ADDED", rv: s.rv, res: res, obj: o}
	if old != nil {
		ev.typ, ev.old = "MODIFIED", old.body
	}
	s.emit(ev)
	return k, nil
}

func (s *server) del(o obj) error {
	kind, _ := o["kind"].(string)
	res := resourceByKind(kind)
	if res == nil {
		return fmt.Errorf("kind %q is not one this server keeps", kind)
	}
	m := meta(o)
	name, _ := m["name"].(string)
	ns, _ := m["namespace"].(string)
	if !res.namespaced {
		ns = ""
	}
	k := key(res, ns, name)
	old := s.objects[k]
	if old == nil {
		return fmt.Errorf("%s %q not found", res.plural, strings.TrimPrefix(ns+"/"+name, "/"))
	}
	delete(s.objects, k)
	s.rv++
	gone := deepCopy(old.body).(obj)
	meta(gone)["resourceVersion"] = strconv.FormatInt(s.rv, 10)
	s.emit(event{typ: "DELETED", rv: s.rv, res: res, obj: gone, old: old.body})
	return nil
}

// translate gives the event a watch sees: selectors turn a MODIFIED into an ADDED
// or DELETED when the object enters or leaves the selection, as in a real server.
func (w *watcher) translate(ev event) (string, bool) {
	if ev.res != w.res {
		return "", false
	}
	if w.ns != "" {
		if ns, _ := meta(ev.obj)["namespace"].(string); ns != w.ns {
			return "", false
		}
	}
	now, before := w.sel.matches(ev.obj), w.sel.matches(ev.old)
	switch ev.typ {
	case "ADDED":
		return "ADDED", now
	case "DELETED":
		return "DELETED", before
	}
	switch {
	case now && before:
		return "MODIFIED", true
	case now:
		return "ADDED", true
	case before:
		return "DELETED", true
	}
	return "", false
}

// send queues an event for a watch; a watch that falls too far behind is ended,
// as a real server does with slow consumers. s.mu is held.
func (s *server) send(w *watcher, b []byte) {
	if w.stopped {
		return
	}
	select {
	case w.ch <- b:
	default:
		w.stopped = true
		close(w.stop)
	}
}

// emit tells the open watches of a change and keeps it for watches that resume
// later. A silent change is one whose event was lost: no watch hears of it, and as
// the history no longer holds every change, versions before it become too old.
func (s *server) emit(ev event) {
	if s.silent {
		s.compacted = ev.rv
		return
	}
	s.history = append(s.history, ev)
	for w := range s.watchers {
		if typ, ok := w.translate(ev); ok {
			o := deepCopy(ev.obj).(obj)
			o["kind"], o["apiVersion"] = ev.res.kind, ev.res.apiVersion()
			s.send(w, encodeEvent(typ, o))
		}
	}
}

func (s *server) loadFixtures(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("%s: no *.json files", dir)
	}
	sort.Strings(files)
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return err
		}
		v, err := decode(fh)
		fh.Close()
		if err != nil {
			return fmt.Errorf("%s: %v", f, err)
		}
		if err := s.apply(v, false); err != nil {
			return fmt.Errorf("%s: %v", f, err)
		}
	}
	return nil
}

// apply puts one object or every item of a List; s.mu is not held.
func (s *server) apply(v any, silent bool) error {
	o, ok := v.(obj)
	if !ok {
		return errors.New("not a JSON object")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.silent = silent
	defer func() { s.silent = false }()
	if items, ok := o["items"].([]any); ok {
		for i, it := range items {
			item, ok := it.(obj)
			if !ok {
				return fmt.Errorf("items[%d] is not an object", i)
			}
			if _, err := s.put(item); err != nil {
				return fmt.Errorf("items[%d]: %v", i, err)
			}
		}
		return nil
	}
	_, err := s.put(o)
	return err
}

// ---- API paths ---------------------------------------------------------------------

type apiPath struct {
	res      *resource
	ns, name string
}

// parsePath reads /api/v1/[namespaces/NS/]PLURAL[/NAME] and the same under
// /apis/GROUP/VERSION; ok false for anything else.
func parsePath(p string) (apiPath, bool) {
	var group, version, rest string
	switch {
	case strings.HasPrefix(p, "/api/v1/"):
		version, rest = "v1", strings.TrimPrefix(p, "/api/v1/")
	case strings.HasPrefix(p, "/apis/"):
		parts := strings.SplitN(strings.TrimPrefix(p, "/apis/"), "/", 3)
		if len(parts) < 3 {
			return apiPath{}, false
		}
		group, version, rest = parts[0], parts[1], parts[2]
	default:
		return apiPath{}, false
	}
	seg := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	var ap apiPath
	if len(seg) >= 3 && seg[0] == "namespaces" {
		ap.ns = seg[1]
		seg = seg[2:]
	} else if len(seg) == 2 && seg[0] == "namespaces" {
		// /api/v1/namespaces/NAME: one namespace
		seg = []string{"namespaces", seg[1]}
	}
	if len(seg) < 1 || len(seg) > 2 {
		return apiPath{}, false
	}
	for _, r := range resources {
		if r.group == group && r.version == version && r.plural == seg[0] {
			if ap.ns != "" && !r.namespaced {
				return apiPath{}, false
			}
			ap.res = r
		}
	}
	if ap.res == nil {
		return apiPath{}, false
	}
	if len(seg) == 2 {
		ap.name = seg[1]
	}
	return ap, true
}

type contToken struct {
	RV    int64  `json:"rv"`
	Start string `json:"start"`
}

func (s *server) list(w http.ResponseWriter, r *http.Request, ap apiPath, sel *selector) {
	q := r.URL.Query()
	limit := 0
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			s.sendStatus(w, 400, "BadRequest", fmt.Sprintf("invalid limit %q", l))
			return
		}
		limit = n
	}
	s.mu.Lock()
	rv, start := s.rv, ""
	if c := q.Get("continue"); c != "" {
		var t contToken
		b, err := base64.RawURLEncoding.DecodeString(c)
		if err == nil {
			err = json.Unmarshal(b, &t)
		}
		if err != nil {
			s.mu.Unlock()
			s.sendStatus(w, 400, "BadRequest", "continue key is not valid: "+c)
			return
		}
		if t.RV < s.compacted {
			s.mu.Unlock()
			s.sendStatus(w, 410, "Expired", "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
			return
		}
		rv, start = t.RV, t.Start
	}
	var keys []string
	for k, o := range s.objects {
		if o.res != ap.res || k <= start {
			continue
		}
		if ap.ns != "" {
			if ns, _ := meta(o.body)["namespace"].(string); ns != ap.ns {
				continue
			}
		}
		if sel.matches(o.body) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	lm := obj{"resourceVersion": strconv.FormatInt(rv, 10)}
	if limit > 0 && len(keys) > limit {
		b, _ := json.Marshal(contToken{RV: rv, Start: keys[limit-1]})
		lm["continue"] = base64.RawURLEncoding.EncodeToString(b)
		lm["remainingItemCount"] = len(keys) - limit
		keys = keys[:limit]
	}
	items := make([]any, 0, len(keys))
	for _, k := range keys {
		it := deepCopy(s.objects[k].body).(obj)
		delete(it, "kind")
		delete(it, "apiVersion")
		items = append(items, it)
	}
	s.mu.Unlock()
	s.sendJSON(w, 200, obj{"kind": ap.res.kind + "List", "apiVersion": ap.res.apiVersion(),
		"metadata": lm, "items": items})
}

func (s *server) get(w http.ResponseWriter, ap apiPath) {
	s.mu.Lock()
	o := s.objects[key(ap.res, ap.ns, ap.name)]
	var body obj
	if o != nil {
		body = deepCopy(o.body).(obj)
	}
	s.mu.Unlock()
	if body == nil {
		s.sendStatus(w, 404, "NotFound", fmt.Sprintf("%s %q not found", ap.res.plural, ap.name))
		return
	}
	s.sendJSON(w, 200, body)
}

func (s *server) watch(w http.ResponseWriter, r *http.Request, ap apiPath, sel *selector) {
	q := r.URL.Query()
	var timeout <-chan time.Time
	if t := q.Get("timeoutSeconds"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 {
			s.sendStatus(w, 400, "BadRequest", fmt.Sprintf("invalid timeoutSeconds %q", t))
			return
		}
		if n > 0 {
			timeout = time.After(time.Duration(n) * time.Second)
		}
	}
	bookmarks := false
	if b := q.Get("allowWatchBookmarks"); b != "" {
		v, err := strconv.ParseBool(b)
		if err != nil {
			s.sendStatus(w, 400, "BadRequest", fmt.Sprintf("invalid allowWatchBookmarks %q", b))
			return
		}
		bookmarks = v
	}
	from := int64(-1) // "" and "0": every current object first
	if v := q.Get("resourceVersion"); v != "" && v != "0" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.sendStatus(w, 400, "BadRequest", fmt.Sprintf("invalid resourceVersion %q", v))
			return
		}
		from = n
	}
	wt := &watcher{res: ap.res, path: r.URL.Path, ns: ap.ns, sel: sel, bookmarks: bookmarks,
		ch: make(chan []byte, 4096), stop: make(chan struct{}), drop: make(chan struct{})}

	s.mu.Lock()
	if s.goneCount > 0 {
		s.goneCount--
		mode := s.goneMode
		cur := s.rv
		s.mu.Unlock()
		msg := fmt.Sprintf("too old resource version: %d (%d)", from, cur)
		if mode == "http" {
			s.sendStatus(w, 410, "Expired", msg)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		_ = s.newOut(w).write(encodeEvent("ERROR", status(410, "Expired", msg)))
		return
	}
	var first [][]byte
	if from >= 0 && from < s.compacted {
		first = append(first, encodeEvent("ERROR", status(410, "Expired",
			fmt.Sprintf("too old resource version: %d (%d)", from, s.compacted))))
		wt.stopped = true
	} else if from < 0 {
		var keys []string
		for k, o := range s.objects {
			if o.res == ap.res {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			if typ, ok := wt.translate(event{typ: "ADDED", res: ap.res, obj: s.objects[k].body}); ok {
				o := deepCopy(s.objects[k].body).(obj)
				o["kind"], o["apiVersion"] = ap.res.kind, ap.res.apiVersion()
				first = append(first, encodeEvent(typ, o))
			}
		}
	} else {
		for _, ev := range s.history {
			if ev.rv <= from {
				continue
			}
			if typ, ok := wt.translate(ev); ok {
				o := deepCopy(ev.obj).(obj)
				o["kind"], o["apiVersion"] = ev.res.kind, ev.res.apiVersion()
				first = append(first, encodeEvent(typ, o))
			}
		}
	}
	if !wt.stopped {
		s.watchers[wt] = true
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.watchers, wt)
		s.mu.Unlock()
	}()

	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(200)
	o := s.newOut(w)
	if o.fl != nil {
		o.fl.Flush()
	}
	for _, b := range first {
		if o.write(b) != nil {
			return
		}
	}
	if wt.stopped {
		return
	}
	for {
		select {
		case b := <-wt.ch:
			if o.write(b) != nil {
				return
			}
		case <-wt.stop:
			for {
				select {
				case b := <-wt.ch:
					if o.write(b) != nil {
						return
					}
				default:
					return
				}
			}
		case <-wt.drop:
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
				}
			}
			return
		case <-timeout:
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (s *server) discovery(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch p {
	case "/version":
		s.sendJSON(w, 200, obj{"major": "1", "minor": "28", "gitVersion": "v1.28.3",
			"gitCommit": "", "gitTreeState": "clean", "buildDate": "2023-10-18T11:33:18Z",
			"goVersion": "go1.20.10", "compiler": "gc", "platform": "linux/amd64"})
	case "/api":
		s.sendJSON(w, 200, obj{"kind": "APIVersions", "versions": []string{"v1"},
			"serverAddressByClientCIDRs": []obj{{"clientCIDR": "0.0.0.0/0", "serverAddress": s.addr}}})
	case "/apis":
		var groups []obj
		for _, g := range []string{"discovery.k8s.io", "networking.k8s.io"} {
			gv := obj{"groupVersion": g + "/v1", "version": "v1"}
			groups = append(groups, obj{"name": g, "versions": []obj{gv}, "preferredVersion": gv})
		}
		s.sendJSON(w, 200, obj{"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
	default:
		gv := strings.TrimPrefix(strings.TrimPrefix(p, "/apis/"), "/")
		if p == "/api/v1" {
			gv = "v1"
		} else if !strings.HasPrefix(p, "/apis/") {
			return false
		}
		var list []obj
		for _, res := range resources {
			if res.apiVersion() == gv {
				list = append(list, obj{"name": res.plural, "singularName": res.singular,
					"namespaced": res.namespaced, "kind": res.kind,
					"verbs": []string{"get", "list", "watch"}})
			}
		}
		if list == nil {
			return false
		}
		s.sendJSON(w, 200, obj{"kind": "APIResourceList", "apiVersion": "v1",
			"groupVersion": gv, "resources": list})
	}
	return true
}

func isWatch(q string) (bool, error) {
	if q == "" {
		return false, nil
	}
	if q == "1" {
		return true, nil
	}
	return strconv.ParseBool(q)
}

func (s *server) serveAPI(w http.ResponseWriter, r *http.Request) {
	watch, werr := isWatch(r.URL.Query().Get("watch"))
	ap, isObj := parsePath(r.URL.Path)
	verb := "GET"
	if isObj && ap.name == "" {
		verb = "LIST"
		if watch {
			verb = "WATCH"
		}
	}
	auth := r.Header.Get("Authorization")
	s.mu.Lock()
	authorized := s.token == "" || auth == "Bearer "+s.token
	s.counts[verb+" "+r.URL.Path]++
	s.log = append(s.log, reqEntry{Time: float64(time.Now().UnixNano()) / 1e9, Verb: verb,
		Path: r.URL.Path, Query: r.URL.RawQuery, Authorized: authorized})
	s.mu.Unlock()
	if !authorized {
		s.sendStatus(w, 401, "Unauthorized", "Unauthorized")
		return
	}
	if r.Method != http.MethodGet {
		s.sendStatus(w, 405, "MethodNotAllowed", "the server allows only GET here")
		return
	}
	if !isObj {
		if !s.discovery(w, r) {
			s.sendStatus(w, 404, "NotFound", "the server could not find the requested resource")
		}
		return
	}
	if werr != nil {
		s.sendStatus(w, 400, "BadRequest", fmt.Sprintf("invalid watch %q", r.URL.Query().Get("watch")))
		return
	}
	if ap.name != "" {
		s.get(w, ap)
		return
	}
	sel := &selector{}
	var err error
	q := r.URL.Query()
	if sel.labels, err = parseLabelSelector(q.Get("labelSelector")); err == nil {
		sel.fields, err = parseFieldSelector(ap.res, q.Get("fieldSelector"))
	}
	if err != nil {
		s.sendStatus(w, 400, "BadRequest", fmt.Sprintf("Unable to find %q that match label selector %q, field selector %q: %v",
			ap.res.apiVersion()+", Resource="+ap.res.plural, q.Get("labelSelector"), q.Get("fieldSelector"), err))
		return
	}
	if watch {
		s.watch(w, r, ap, sel)
	} else {
		s.list(w, r, ap, sel)
	}
}

// ---- test control ------------------------------------------------------------------

func (s *server) control(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	what := strings.TrimPrefix(r.URL.Path, "/_control/")
	reply := func(v any) {
		b, _ := json.Marshal(v)
		w.Header().Set("Content-Type", "application/json")
		w.Write(append(b, '\n'))
	}
	bad := func(code int, msg string) { http.Error(w, msg, code) }
	if r.Method != http.MethodPost && what != "requests" && what != "watches" && what != "state" {
		bad(405, "POST "+r.URL.Path)
		return
	}
	switch what {
	case "apply", "delete":
		v, err := decode(r.Body)
		if err != nil {
			bad(400, "body: "+err.Error())
			return
		}
		silent := q.Get("silent") == "1"
		if what == "apply" {
			err = s.apply(v, silent)
		} else if o, ok := v.(obj); !ok {
			err = errors.New("body: not a JSON object")
		} else {
			s.mu.Lock()
			s.silent = silent
			err = s.del(o)
			s.silent = false
			s.mu.Unlock()
		}
		if err != nil {
			bad(400, err.Error())
			return
		}
		s.mu.Lock()
		rv := s.rv
		s.mu.Unlock()
		reply(obj{"resourceVersion": strconv.FormatInt(rv, 10)})
	case "bookmark":
		s.mu.Lock()
		n := 0
		for wt := range s.watchers {
			if wt.bookmarks {
				s.send(wt, encodeEvent("BOOKMARK", obj{"kind": wt.res.kind, "apiVersion": wt.res.apiVersion(),
					"metadata": obj{"resourceVersion": strconv.FormatInt(s.rv, 10)}}))
				n++
			}
		}
		s.mu.Unlock()
		reply(obj{"sent": n})
	case "gone":
		mode, count := q.Get("mode"), 1
		if mode != "http" && mode != "event" {
			bad(400, "mode: http or event")
			return
		}
		if c := q.Get("count"); c != "" {
			n, err := strconv.Atoi(c)
			if err != nil || n < 1 {
				bad(400, "count: a positive number")
				return
			}
			count = n
		}
		s.mu.Lock()
		s.goneMode, s.goneCount = mode, count
		s.mu.Unlock()
		reply(obj{"mode": mode, "count": count})
	case "expire", "compact":
		s.mu.Lock()
		s.compacted = s.rv
		n := 0
		if what == "expire" {
			for wt := range s.watchers {
				s.send(wt, encodeEvent("ERROR", status(410, "Expired",
					fmt.Sprintf("too old resource version: %d (%d)", s.rv-1, s.rv))))
				if !wt.stopped {
					wt.stopped = true
					close(wt.stop)
				}
				n++
			}
		}
		s.mu.Unlock()
		reply(obj{"expired": n})
	case "drop":
		s.mu.Lock()
		n := 0
		for wt := range s.watchers {
			close(wt.drop)
			delete(s.watchers, wt)
			n++
		}
		s.mu.Unlock()
		reply(obj{"dropped": n})
	case "slow":
		s.mu.Lock()
		if d := q.Get("delay"); d == "off" {
			s.slow, s.slowDelay = false, 0
		} else {
			v, err := time.ParseDuration(d)
			if d != "" && (err != nil || v < 0) {
				s.mu.Unlock()
				bad(400, "delay: a duration (1ms) or off")
				return
			}
			s.slow, s.slowDelay = true, v
		}
		slow := s.slow
		s.mu.Unlock()
		reply(obj{"slow": slow})
	case "token":
		s.mu.Lock()
		s.token = q.Get("value")
		s.mu.Unlock()
		reply(obj{"token_required": q.Get("value") != ""})
	case "requests":
		s.mu.Lock()
		defer s.mu.Unlock()
		reply(obj{"counts": s.counts, "requests": s.log})
	case "reset":
		s.mu.Lock()
		s.counts, s.log = map[string]int{}, []reqEntry{}
		s.mu.Unlock()
		reply(obj{})
	case "watches":
		s.mu.Lock()
		by := map[string]int{}
		for wt := range s.watchers {
			by[wt.path]++
		}
		n := len(s.watchers)
		s.mu.Unlock()
		reply(obj{"open": n, "by_path": by})
	case "state":
		s.mu.Lock()
		defer s.mu.Unlock()
		reply(obj{"resourceVersion": strconv.FormatInt(s.rv, 10),
			"compacted": strconv.FormatInt(s.compacted, 10)})
	default:
		bad(404, "no control "+what)
	}
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_control/") {
		s.control(w, r)
		return
	}
	s.serveAPI(w, r)
}

func main() {
	urlFile := flag.String("url-file", "", "write the server's URL here once it listens (required)")
	fixtures := flag.String("fixtures", "", "load every *.json file in this directory")
	token := flag.String("token", "", "require this bearer token on API paths")
	cert := flag.String("tls-cert", "", "serve HTTPS with this certificate (PEM)")
	keyFile := flag.String("tls-key", "", "the certificate's private key (PEM)")
	lifetime := flag.Duration("lifetime", 15*time.Minute, "exit after this long")
	flag.Parse()
	if *urlFile == "" || (*cert == "") != (*keyFile == "") {
		fmt.Fprintln(os.Stderr, "usage: k8s_apiserver -url-file FILE [-fixtures DIR] [-token T] [-tls-cert CRT -tls-key KEY]")
		os.Exit(2)
	}
	s := &server{objects: map[string]*object{}, watchers: map[*watcher]bool{},
		counts: map[string]int{}, log: []reqEntry{}, token: *token}
	if *fixtures != "" {
		if err := s.loadFixtures(*fixtures); err != nil {
			fmt.Fprintln(os.Stderr, "k8s_apiserver: fixtures:", err)
			os.Exit(1)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8s_apiserver:", err)
		os.Exit(1)
	}
	s.addr = ln.Addr().String()
	srv := &http.Server{Handler: s, ErrorLog: nil,
		// HTTP/1.1 only: a watch is one chunked response, and drop closes its connection
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}}
	scheme := "http"
	if *cert != "" {
		pair, err := tls.LoadX509KeyPair(*cert, *keyFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "k8s_apiserver: tls:", err)
			os.Exit(1)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{pair}}
		ln = tls.NewListener(ln, srv.TLSConfig)
		scheme = "https"
	}
	url := scheme + "://" + s.addr
	tmp := *urlFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(url+"\n"), 0o644); err == nil {
		err = os.Rename(tmp, *urlFile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8s_apiserver:", err)
		os.Exit(1)
	}
	bw := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(bw, url)
	bw.Flush()
	time.AfterFunc(*lifetime, func() {
		fmt.Fprintln(os.Stderr, "k8s_apiserver: lifetime over, exiting")
		os.Exit(0)
	})
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "k8s_apiserver:", err)
		os.Exit(1)
	}
}
