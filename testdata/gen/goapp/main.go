// Command goapp is a synthetic workload used only to capture realistic pprof
// test inputs for profd (see ../capture.sh). It serves net/http/pprof on a
// loopback address and keeps every profile type busy: CPU hot spots with deep
// and mutual recursion and inlined helpers, a growing heap leak plus transient
// garbage, mutex and block contention, many goroutines and new OS threads.
//
// Standard library only; it exits by itself after -duration.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof/* on http.DefaultServeMux
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	addr     = flag.String("addr", "127.0.0.1:0", "loopback listen address; port 0 picks a free port")
	addrFile = flag.String("addr-file", "", "if set, write the actual listen address here once listening")
	mode     = flag.String("mode", "normal", "workload: normal (all profile types) or large (many distinct CPU stacks)")
	workers  = flag.Int("workers", 4, "CPU worker goroutines")
	leakMax  = flag.Int("leak-max-mb", 48, "cap on the retained (leaked) heap, MiB")
	duration = flag.Duration("duration", 10*time.Minute, "exit after this long (safety net)")
)

// sink keeps results alive so the compiler cannot drop the work.
var sink atomic.Uint64

func main() {
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("goapp: ")

	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		log.Fatalf("bad -addr: %v", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		log.Fatalf("refusing non-loopback -addr %q", *addr)
	}

	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	bound := ln.Addr().String()

	http.HandleFunc("/api/items", itemsHandler)
	srv := &http.Server{Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			log.Fatal(err)
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()

	switch *mode {
	case "normal":
		startNormal(ctx, bound)
	case "large":
		startLarge(ctx)
	default:
		log.Fatalf("unknown -mode %q", *mode)
	}

	// Announce the address only once the workload is running.
	if *addrFile != "" {
		tmp := *addrFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(bound+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
		if err := os.Rename(tmp, *addrFile); err != nil {
			log.Fatal(err)
		}
	}
	log.Printf("listening on %s, mode %s", bound, *mode)

	<-ctx.Done()
	shutdown, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel2()
	_ = srv.Shutdown(shutdown)
}

// ---------------------------------------------------------------------------
// normal mode

func startNormal(ctx context.Context, self string) {
	for i := 0; i < *workers; i++ {
		i := i
		go pprof.Do(ctx, pprof.Labels("component", "cpu", "worker", strconv.Itoa(i)), func(ctx context.Context) {
			cpuWorker(ctx, int64(i))
		})
	}
	go pprof.Do(ctx, pprof.Labels("component", "leak"), leaker)
	go pprof.Do(ctx, pprof.Labels("component", "churn"), churner)
	go pprof.Do(ctx, pprof.Labels("component", "mutex"), mutexContention)
	go pprof.Do(ctx, pprof.Labels("component", "block"), blockContention)
	go pprof.Do(ctx, pprof.Labels("component", "threads"), threadCreator)
	go pprof.Do(ctx, pprof.Labels("component", "client"), func(ctx context.Context) { selfClient(ctx, self) })
	startIdleSessions(ctx, 40)
}

// --- CPU: recursion and inlining -------------------------------------------

// rotl, mix and step are tiny: the compiler inlines step -> mix -> rotl into
// the loop of hashBytes, so CPU samples there give locations with 2-3 lines.
func rotl(x uint64, k uint) uint64 { return x<<k | x>>(64-k) }

func mix(h, v uint64) uint64 {
	h ^= v
	h *= 0x100000001b3
	return rotl(h, 31)
}

func step(h uint64, b byte) uint64 { return mix(h, uint64(b)) + 0x9e3779b97f4a7c15 }

func hashBytes(p []byte, seed uint64) uint64 {
	h := seed
	for _, b := range p {
		h = step(h, b)
	}
	return h
}

// fib is plain deep self-recursion.
func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

type node struct {
	left, right *node
	val         uint64
}

func buildTree(depth int, r *rand.Rand) *node {
	if depth == 0 {
		return nil
	}
	return &node{left: buildTree(depth-1, r), right: buildTree(depth-1, r), val: r.Uint64()}
}

// walkTree is self-recursion over a binary tree, with inlined mixing per node.
func walkTree(n *node, h uint64) uint64 {
	if n == nil {
		return h
	}
	h = mix(h, n.val)
	h = walkTree(n.left, h)
	return walkTree(n.right, h)
}

// ping and pong are mutually recursive (ping -> pong -> ping ...), with some
// inlined work at every level so samples land at many depths.
func ping(n int, buf []byte, h uint64) uint64 {
	if n <= 0 {
		return h
	}
	h = hashBytes(buf[:48], h)
	return pong(n-1, buf, h^uint64(n))
}

func pong(n int, buf []byte, h uint64) uint64 {
	if n <= 0 {
		return h
	}
	h = hashBytes(buf[:80], h)
	return ping(n-1, buf, h+uint64(n))
}

func cpuWorker(ctx context.Context, seed int64) {
	r := rand.New(rand.NewSource(seed))
	tree := buildTree(14, r)
	buf := make([]byte, 4096)
	r.Read(buf)
	for iter := 0; ctx.Err() == nil; iter++ {
		var h uint64
		h += uint64(fib(20 + r.Intn(4)))
		h = walkTree(tree, h)
		for i := 0; i < 8; i++ {
			h = ping(40+r.Intn(60), buf, h)
		}
		for i := 0; i < 8; i++ {
			h = hashBytes(buf, h)
		}
		sink.Add(h)
		// Stay below 100% of both cores so the server still answers promptly.
		if iter%4 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// --- heap: a growing leak and transient garbage ----------------------------

type record struct {
	ID      int
	Name    string
	Payload []byte
	Tags    map[string]string
}

var (
	leakMu    sync.Mutex
	leakCache []*record
	leakBytes int
)

// leaker retains a new record every few milliseconds until -leak-max-mb.
func leaker(ctx context.Context) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for id := 0; ; id++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		leakMu.Lock()
		full := leakBytes >= *leakMax<<20
		leakMu.Unlock()
		if full {
			continue
		}
		rec := newRecord(id)
		leakMu.Lock()
		leakCache = append(leakCache, rec)
		leakBytes += len(rec.Payload)
		leakMu.Unlock()
	}
}

func newRecord(id int) *record {
	return &record{
		ID:      id,
		Name:    fmt.Sprintf("record-%08d", id),
		Payload: make([]byte, 1024+(id%8)*512),
		Tags:    map[string]string{"shard": strconv.Itoa(id % 16), "kind": "leak"},
	}
}

// churner allocates and drops objects: JSON encoding, string building, maps.
func churner(ctx context.Context) {
	r := rand.New(rand.NewSource(7))
	for ctx.Err() == nil {
		items := make([]record, 32)
		for i := range items {
			items[i] = record{ID: r.Int(), Name: randomName(r), Tags: map[string]string{"a": "b"}}
		}
		b, _ := json.Marshal(items)
		var back []record
		_ = json.Unmarshal(b, &back)
		sink.Add(uint64(len(back)) + uint64(len(buildReport(back))))
		time.Sleep(2 * time.Millisecond)
	}
}

func randomName(r *rand.Rand) string {
	var sb strings.Builder
	for i := 0; i < 8+r.Intn(24); i++ {
		sb.WriteByte(byte('a' + r.Intn(26)))
	}
	return sb.String()
}

func buildReport(items []record) string {
	lines := make([]string, 0, len(items))
	for _, it := range items {
		lines = append(lines, fmt.Sprintf("%d\t%s\t%v", it.ID, it.Name, it.Tags))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// --- mutex contention -------------------------------------------------------

type store struct {
	mu    sync.Mutex
	rw    sync.RWMutex
	items map[int]string
}

var shared = &store{items: map[int]string{}}

func (s *store) put(k int, v string) {
	s.mu.Lock()
	s.items[k%1024] = v
	// Hold the lock while doing some work so others queue behind it.
	var h uint64
	for i := 0; i < 200; i++ {
		h = mix(h, uint64(i+k))
	}
	sink.Add(h)
	s.mu.Unlock()
}

func (s *store) get(k int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.items[k%1024]
}

func (s *store) readStats() int {
	s.rw.RLock()
	defer s.rw.RUnlock()
	time.Sleep(50 * time.Microsecond)
	return len(s.items)
}

func (s *store) rotate() {
	s.rw.Lock()
	time.Sleep(200 * time.Microsecond)
	s.rw.Unlock()
}

func mutexContention(ctx context.Context) {
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				shared.put(i*7+g, "v")
				_ = shared.get(i + g)
				if i%16 == 0 {
					_ = shared.readStats()
				}
				if g == 0 && i%64 == 0 {
					shared.rotate()
				}
				if i%32 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}(g)
	}
	wg.Wait()
}

// --- block contention -------------------------------------------------------

func blockContention(ctx context.Context) {
	// Unbuffered pipeline with a slow consumer: producers block on send.
	jobs := make(chan int)
	results := make(chan uint64, 4)
	var wg sync.WaitGroup
	for p := 0; p < 3; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			produce(ctx, jobs, p)
		}(p)
	}
	go consume(ctx, jobs, results)
	go drain(ctx, results)

	// sync.Cond handoff between two goroutines.
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	ready := false
	go func() {
		for ctx.Err() == nil {
			time.Sleep(3 * time.Millisecond)
			mu.Lock()
			ready = true
			cond.Broadcast()
			mu.Unlock()
		}
	}()
	go func() {
		for ctx.Err() == nil {
			waitReady(&mu, cond, &ready)
		}
	}()

	// Fan-out/fan-in with a WaitGroup.
	for ctx.Err() == nil {
		fanOut(8)
	}
	wg.Wait()
}

func produce(ctx context.Context, jobs chan<- int, p int) {
	for i := 0; ; i++ {
		select {
		case jobs <- i*10 + p:
		case <-ctx.Done():
			return
		}
	}
}

func consume(ctx context.Context, jobs <-chan int, results chan<- uint64) {
	for {
		select {
		case j := <-jobs:
			time.Sleep(200 * time.Microsecond)
			select {
			case results <- uint64(j):
			case <-ctx.Done():
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

func drain(ctx context.Context, results <-chan uint64) {
	for {
		select {
		case v := <-results:
			sink.Add(v)
		case <-ctx.Done():
			return
		}
	}
}

func waitReady(mu *sync.Mutex, cond *sync.Cond, ready *bool) {
	mu.Lock()
	for !*ready {
		cond.Wait()
	}
	*ready = false
	mu.Unlock()
}

func fanOut(n int) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			time.Sleep(time.Duration(100+i*50) * time.Microsecond)
		}(i)
	}
	wg.Wait()
}

// --- goroutines and threads -------------------------------------------------

// startIdleSessions parks n goroutines in a few different waits so the
// goroutine profile has several distinct stacks with large counts.
func startIdleSessions(ctx context.Context, n int) {
	tick := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				select {
				case tick <- struct{}{}:
				default:
				}
			}
		}
	}()
	for i := 0; i < n; i++ {
		switch i % 3 {
		case 0:
			go sessionWaitCtx(ctx)
		case 1:
			go sessionWaitTick(ctx, tick)
		default:
			go sessionTimer(ctx, time.Duration(i)*10*time.Millisecond+time.Second)
		}
	}
}

func sessionWaitCtx(ctx context.Context) { <-ctx.Done() }

func sessionWaitTick(ctx context.Context, tick <-chan struct{}) {
	for {
		select {
		case <-tick:
		case <-ctx.Done():
			return
		}
	}
}

func sessionTimer(ctx context.Context, d time.Duration) {
	for ctx.Err() == nil {
		time.Sleep(d)
	}
}

// threadCreator makes the runtime start new OS threads: a goroutine that
// exits while locked to its thread takes that thread down with it.
func threadCreator(ctx context.Context) {
	for i := 0; i < 300 && ctx.Err() == nil; i++ {
		done := make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread()
			// Deliberately no UnlockOSThread: the thread exits with us.
			sink.Add(uint64(fib(15)))
		}()
		<-done
		time.Sleep(50 * time.Millisecond)
	}
}

// --- HTTP: a small API and a client calling it over loopback --------------

func itemsHandler(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.Atoi(r.URL.Query().Get("id"))
	shared.put(id, r.URL.Query().Get("name"))
	resp := map[string]any{
		"id":    id,
		"value": shared.get(id),
		"stats": shared.readStats(),
		"hash":  hashBytes([]byte(r.URL.RawQuery), uint64(id)),
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func selfClient(ctx context.Context, self string) {
	client := &http.Client{Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				url := fmt.Sprintf("http://%s/api/items?id=%d&name=n%d", self, i, c)
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				if err != nil {
					return
				}
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				time.Sleep(5 * time.Millisecond)
			}
		}(c)
	}
	wg.Wait()
}
