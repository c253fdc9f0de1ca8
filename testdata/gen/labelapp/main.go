// Command labelapp is a small workload used only to capture pprof test inputs
// with labels on samples for profd (see ../capture-labels.sh). It serves
// net/http/pprof on a loopback address and runs its work under pprof.Do labels:
// "endpoint" (/api, /health, /admin), "shard" (a number written as a string) and
// "tenant" on some of it, plus work with no labels at all. CPU samples and
// goroutines carry those labels; heap and allocs samples carry Go's numeric
// "bytes" label (the object size).
//
// Standard library only; it exits by itself after -duration.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof/* on http.DefaultServeMux
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

var (
	addr     = flag.String("addr", "127.0.0.1:0", "loopback listen address; port 0 picks a free port")
	addrFile = flag.String("addr-file", "", "if set, write the actual listen address here once listening")
	duration = flag.Duration("duration", 5*time.Minute, "exit after this long (safety net)")
)

// sink keeps results alive so the compiler cannot drop the work.
var sink atomic.Uint64

// kept holds allocations so that the heap profile has live objects of many sizes.
var (
	keptMu sync.Mutex
	kept   [][]byte
)

//go:noinline
func spin(n int) uint64 {
	var h uint64 = 1469598103934665603
	for i := 0; i < n; i++ {
		h ^= uint64(i)
		h *= 1099511628211
	}
	return h
}

//go:noinline
func handleAPI(shard int) {
	sink.Add(spin(400000 * shard))
	keep(1024 * shard)
}

//go:noinline
func handleHealth() {
	sink.Add(spin(150000))
	keep(96)
}

//go:noinline
func handleAdmin() {
	sink.Add(spin(60000))
	keep(70000)
}

//go:noinline
func background() {
	sink.Add(spin(200000))
	keep(4096)
}

// keep allocates n bytes and keeps up to 2000 such buffers alive.
func keep(n int) {
	b := make([]byte, n)
	b[0] = byte(n)
	keptMu.Lock()
	if len(kept) < 2000 {
		kept = append(kept, b)
	} else {
		kept[int(sink.Load()%2000)] = b
	}
	keptMu.Unlock()
}

// parked goroutines sit under labels until the program ends.
func park(ctx context.Context, stop <-chan struct{}, labels ...string) {
	go pprof.Do(ctx, pprof.Labels(labels...), func(context.Context) { <-stop })
}

func main() {
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("labelapp: ")
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		log.Fatalf("bad -addr: %v", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		log.Fatalf("refusing non-loopback -addr %q", *addr)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	stop := make(chan struct{})
	for i := 0; i < 3; i++ {
		park(ctx, stop, "endpoint", "/api", "shard", strconv.Itoa(i+1))
	}
	park(ctx, stop, "endpoint", "/health")
	park(ctx, stop, "endpoint", "/admin", "tenant", "acme")
	park(ctx, stop)
	for w := 0; w < 2; w++ {
		go func(w int) {
			for i := 0; ; i++ {
				shard := 1 + (i+w)%3
				pprof.Do(ctx, pprof.Labels("endpoint", "/api", "shard", strconv.Itoa(shard)),
					func(context.Context) { handleAPI(shard) })
				pprof.Do(ctx, pprof.Labels("endpoint", "/health"),
					func(context.Context) { handleHealth() })
				if i%4 == 0 {
					pprof.Do(ctx, pprof.Labels("endpoint", "/admin", "tenant", fmt.Sprint("t", i%3)),
						func(context.Context) { handleAdmin() })
				}
				background()
			}
		}(w)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			log.Fatal(err)
		}
	}()
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	time.Sleep(*duration)
	close(stop)
}
