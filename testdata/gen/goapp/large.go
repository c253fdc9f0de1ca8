// large.go: -mode large, a CPU-only workload that walks the generated
// functions in paths_gen.go along random routes of varied depth, so a long
// CPU profile collects thousands of distinct stacks (profd's large-profile
// benchmark input).

//go:generate go run gen_paths.go

package main

import (
	"context"
	"math/rand"
	"runtime"
	"runtime/pprof"
	"strconv"
)

// leafWork is the number of spin rounds done by the last function of a walk.
const leafWork = 12000

// spin is the per-level work (base rounds plus 0-31 depending on b); it is
// small enough to be inlined into every generated function, together with
// step -> mix -> rotl.
func spin(h uint64, b byte, base int) uint64 {
	n := int(b>>3)&31 + base
	for i := 0; i < n; i++ {
		h = step(h, b+byte(i))
	}
	return h
}

func startLarge(ctx context.Context) {
	n := *workers
	if n < 2*runtime.GOMAXPROCS(0) {
		n = 2 * runtime.GOMAXPROCS(0)
	}
	for w := 0; w < n; w++ {
		w := w
		go pprof.Do(ctx, pprof.Labels("component", "paths", "worker", strconv.Itoa(w)), func(ctx context.Context) {
			largeWorker(ctx, int64(w))
		})
	}
}

func largeWorker(ctx context.Context, seed int64) {
	r := rand.New(rand.NewSource(seed))
	d := make([]byte, 128)
	for ctx.Err() == nil {
		// Depth between 48 and 127 frames: some stacks fit the runtime's
		// 64-frame limit, most get truncated as in deeply recursive programs.
		depth := 48 + r.Intn(80)
		root := r.Intn(len(pathRoots))
		labels := pprof.Labels("depth", "depth-"+strconv.Itoa(depth/16*16), "root", "path"+strconv.Itoa(root))
		pprof.Do(ctx, labels, func(context.Context) {
			var h uint64
			for rep := 0; rep < 8; rep++ {
				r.Read(d[:depth])
				h += pathRoots[root](d[:depth], 0, h)
			}
			sink.Add(h)
		})
	}
}
