// Command demo-go is a small Go program with problems worth profiling, for
// trying profd. It serves Go's net/http/pprof endpoints and a few Prometheus
// metrics on -addr (127.0.0.1:6060 by default) and keeps every profile type
// busy, each with functions named after what they do:
//
//   - CPU (profile): burnCPU runs the hot spot checksumBlocks (about three
//     quarters of the work) and the lighter renderReport, duty-cycled to about
//     40% of one core (-cpu).
//   - heap: leakSessions keeps every session it creates, a leak of 512 KiB a
//     second (-leak-kb-per-sec). The leak is capped at 64 MiB (-leak-max-mb):
//     when it reaches the cap it lets everything go and starts over, so the
//     program never holds much more than the cap.
//   - allocs: makeGarbage allocates short-lived buffers.
//   - mutex: four transferFunds goroutines fight over one lock, each holding it
//     for a millisecond.
//   - block: produceJobs goroutines block sending to slowConsumer, which takes
//     one job every 5 ms.
//   - goroutine: 50 idle goroutines wait in waitForWork.
//
// Standard library only. Ctrl-C (SIGINT) or SIGTERM stops it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof/* on http.DefaultServeMux
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	addr      = flag.String("addr", "127.0.0.1:6060", "listen address of /debug/pprof and /metrics (port 0 picks a free port)")
	addrFile  = flag.String("addr-file", "", "if set, write the address actually listened on to this file")
	leakMaxMB = flag.Int("leak-max-mb", 64, "cap of the memory leak, MiB: at the cap the leak is released and starts over")
	leakRate  = flag.Int("leak-kb-per-sec", 512, "growth of the memory leak, KiB per second")
	cpuShare  = flag.Float64("cpu", 0.4, "share of one core the CPU hot spot uses, 0 to 1")
)

// sink keeps results alive so that the compiler cannot drop the work.
var sink atomic.Uint64

// counters for /metrics
var (
	checksums   atomic.Uint64
	reports     atomic.Uint64
	transfers   atomic.Uint64
	jobsDone    atomic.Uint64
	leakedBytes atomic.Int64
	leakResets  atomic.Uint64
)

func main() {
	flag.Parse()
	log.SetFlags(log.LstdFlags)
	log.SetPrefix("demo-go: ")
	if *cpuShare < 0 || *cpuShare > 1 {
		log.Fatalf("-cpu must be between 0 and 1, not %v", *cpuShare)
	}
	if *leakMaxMB < 1 || *leakRate < 1 {
		log.Fatalf("-leak-max-mb and -leak-kb-per-sec must be at least 1")
	}

	// Mutex and block profiles are empty unless the program asks for them.
	runtime.SetMutexProfileFraction(5)   // one contention event in 5 on average
	runtime.SetBlockProfileRate(100_000) // one sample per 100 µs spent blocked, on average

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	bound := ln.Addr().String()
	if host, _, _ := net.SplitHostPort(bound); !net.ParseIP(host).IsLoopback() {
		log.Printf("warning: %s is not a loopback address: anyone who can reach it can read this program's profiles", bound)
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(bound), 0o644); err != nil {
			log.Fatal(err)
		}
	}

	http.HandleFunc("/metrics", metricsHandler)
	http.HandleFunc("/", indexHandler)
	srv := &http.Server{Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	go burnCPU(ctx)
	go leakSessions(ctx)
	go makeGarbage(ctx)
	for i := 0; i < 4; i++ {
		go transferFunds(ctx, i)
	}
	jobs := make(chan int) // unbuffered: every send waits for slowConsumer
	for i := 0; i < 4; i++ {
		go produceJobs(ctx, jobs, i)
	}
	go slowConsumer(ctx, jobs)
	idle := make(chan struct{})
	for i := 0; i < 50; i++ {
		go waitForWork(ctx, idle)
	}

	log.Printf("serving http://%s/debug/pprof/ and http://%s/metrics; the leak grows %d KiB/s up to %d MiB, then starts over",
		bound, bound, *leakRate, *leakMaxMB)
	<-ctx.Done()
	log.Printf("stopping")
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
}

// ---- CPU ----------------------------------------------------------------

// burnCPU is the CPU hot spot: in every 100 ms it works for -cpu of the time,
// mostly in checksumBlocks, and sleeps for the rest.
func burnCPU(ctx context.Context) {
	const period = 100 * time.Millisecond
	busy := time.Duration(float64(period) * *cpuShare)
	buf := make([]byte, 16<<10)
	rand.New(rand.NewSource(1)).Read(buf)
	for n := 0; ctx.Err() == nil; {
		start := time.Now()
		for time.Since(start) < busy {
			for i := 0; i < 3; i++ {
				sink.Add(checksumBlocks(buf))
				checksums.Add(1)
			}
			sink.Add(uint64(len(renderReport(n))))
			reports.Add(1)
			n++
		}
		time.Sleep(period - busy)
	}
}

// checksumBlocks is the hottest function: a byte-at-a-time hash of buf, in
// 64-byte blocks.
func checksumBlocks(buf []byte) uint64 {
	h := uint64(14695981039346656037)
	for off := 0; off+64 <= len(buf); off += 64 {
		h = mixBlock(h, buf[off:off+64])
	}
	return h
}

func mixBlock(h uint64, block []byte) uint64 {
	for _, b := range block {
		h ^= uint64(b)
		h *= 1099511628211
		h = h<<13 | h>>51
	}
	return h
}

// renderReport formats a small text report: the lighter CPU consumer, and a
// source of short-lived allocations.
func renderReport(n int) string {
	var sb strings.Builder
	for row := 0; row < 40; row++ {
		sb.WriteString("row ")
		sb.WriteString(strconv.Itoa(n + row))
		sb.WriteString(": ")
		sb.WriteString(strconv.FormatFloat(float64(n*row)/7, 'f', 3, 64))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// ---- heap -----------------------------------------------------------------

type session struct {
	id      int
	created time.Time
	payload []byte
}

var leak struct {
	sync.Mutex
	sessions []*session
	bytes    int
}

// leakSessions is the memory leak: ten times a second it creates a session
// and keeps it forever, until the leak reaches -leak-max-mb; then it lets
// every session go and starts over.
func leakSessions(ctx context.Context) {
	capBytes := *leakMaxMB << 20
	size := *leakRate << 10 / 10
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for id := 0; ; id++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s := newSession(id, size)
		leak.Lock()
		if leak.bytes+size > capBytes {
			leak.sessions, leak.bytes = nil, 0
			leakResets.Add(1)
			log.Printf("the leak reached its cap of %d MiB: released, starting over", *leakMaxMB)
		}
		leak.sessions = append(leak.sessions, s)
		leak.bytes += size
		leakedBytes.Store(int64(leak.bytes))
		leak.Unlock()
	}
}

// newSession allocates the leaked memory, and touches it so that it is really
// resident.
func newSession(id, size int) *session {
	s := &session{id: id, created: time.Now(), payload: make([]byte, size)}
	for i := range s.payload {
		s.payload[i] = byte(id + i)
	}
	return s
}

// makeGarbage allocates buffers that die at once (the allocs profile).
func makeGarbage(ctx context.Context) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		buf := make([]byte, 32<<10)
		buf[len(buf)-1] = 1
		sink.Add(uint64(buf[len(buf)-1]))
	}
}

// ---- mutex ------------------------------------------------------------------

var accounts struct {
	sync.Mutex
	balance [16]int64
}

// transferFunds contends for one lock with the other transferFunds goroutines,
// holding it for a millisecond each time.
func transferFunds(ctx context.Context, worker int) {
	r := rand.New(rand.NewSource(int64(worker)))
	for ctx.Err() == nil {
		accounts.Lock()
		from, to := r.Intn(16), r.Intn(16)
		accounts.balance[from] -= 10
		time.Sleep(time.Millisecond) // slow work under the lock
		accounts.balance[to] += 10
		accounts.Unlock()
		transfers.Add(1)
	}
}

// ---- block ------------------------------------------------------------------

// produceJobs sends jobs that slowConsumer takes one at a time: the sends block.
func produceJobs(ctx context.Context, jobs chan<- int, worker int) {
	for n := worker; ; n += 4 {
		select {
		case <-ctx.Done():
			return
		case jobs <- n:
		}
	}
}

// slowConsumer takes one job every 5 ms.
func slowConsumer(ctx context.Context, jobs <-chan int) {
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-jobs:
			sink.Add(uint64(n))
			jobsDone.Add(1)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ---- goroutine ----------------------------------------------------------------

// waitForWork is an idle worker: it waits for work that never comes.
func waitForWork(ctx context.Context, work <-chan struct{}) {
	select {
	case <-ctx.Done():
	case <-work:
	}
}

// ---- HTTP ---------------------------------------------------------------------

// metricsHandler serves a few metrics in Prometheus's text format, named as
// the Prometheus Go client names them, so that Prometheus can scrape the demo
// beside profd (examples/prometheus/).
func metricsHandler(w http.ResponseWriter, r *http.Request) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	metric := func(name, kind, help string, v float64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", name, help, name, kind, name,
			strconv.FormatFloat(v, 'g', -1, 64))
	}
	metric("go_goroutines", "gauge", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	metric("go_memstats_heap_alloc_bytes", "gauge", "Number of heap bytes allocated and still in use.", float64(ms.HeapAlloc))
	metric("go_memstats_heap_inuse_bytes", "gauge", "Number of heap bytes that are in use.", float64(ms.HeapInuse))
	metric("go_memstats_alloc_bytes_total", "counter", "Total number of bytes allocated, even if freed.", float64(ms.TotalAlloc))
	metric("go_gc_duration_seconds_count", "counter", "Number of completed GC cycles.", float64(ms.NumGC))
	metric("demo_leaked_bytes", "gauge", "Bytes held by the memory leak now.", float64(leakedBytes.Load()))
	metric("demo_leak_resets_total", "counter", "Times the leak reached its cap and was released.", float64(leakResets.Load()))
	metric("demo_checksums_total", "counter", "checksumBlocks calls.", float64(checksums.Load()))
	metric("demo_reports_total", "counter", "renderReport calls.", float64(reports.Load()))
	metric("demo_transfers_total", "counter", "transferFunds iterations.", float64(transfers.Load()))
	metric("demo_jobs_total", "counter", "Jobs taken by slowConsumer.", float64(jobsDone.Load()))
}

func indexHandler(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, `<!doctype html><title>demo-go</title>
<h1>demo-go</h1>
<p>A Go program with a CPU hot spot, a capped memory leak, and mutex and block contention, for trying profd.</p>
<ul><li><a href="/debug/pprof/">/debug/pprof/</a>: its profiles</li>
<li><a href="/metrics">/metrics</a>: a few Prometheus metrics</li></ul>
`)
}
