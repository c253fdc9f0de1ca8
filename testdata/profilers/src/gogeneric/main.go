// Command gogeneric burns CPU and allocates through generic functions, methods
// of a generic type and a C function called through cgo, and writes a CPU and a
// heap profile of itself (runtime/pprof), so that profiles hold Go's names of
// generic instantiations (main.Map[...], main.(*Stack[...]).Push) and cgo frames.
//
//	go run . OUTDIR
package main

/*
#include <stdint.h>

static uint64_t c_spin(uint64_t n)
{
	volatile uint64_t x = 0;
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005u + i;
	return x;
}
*/
import "C"

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"
)

type Number interface{ ~int | ~int64 | ~float64 }

type Stack[T any] struct{ items []T }

func (s *Stack[T]) Push(v T) { s.items = append(s.items, v) }

func (s *Stack[T]) Sum(f func(T) float64) float64 {
	t := 0.0
	for _, v := range s.items {
		t += f(v)
	}
	return t
}

func Map[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, 0, len(xs))
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

func Reduce[T Number](xs []T) T {
	var t T
	for _, x := range xs {
		t += x
	}
	return t
}

type pair struct{ a, b int64 }

var sink []any

func work(deadline time.Time) {
	for time.Now().Before(deadline) {
		xs := make([]int64, 4096)
		for i := range xs {
			xs[i] = int64(i)
		}
		fs := Map(xs, func(x int64) float64 { return float64(x) * 1.5 })
		ps := Map(xs, func(x int64) pair { return pair{x, -x} })
		_ = Reduce(fs) + float64(Reduce(xs))
		s := &Stack[pair]{}
		for _, p := range ps {
			s.Push(p)
		}
		_ = s.Sum(func(p pair) float64 { return float64(p.a - p.b) })
		_ = C.c_spin(200000)
		if len(sink) < 64 {
			sink = append(sink, s, fs)
		}
	}
}

func main() {
	dir := os.Args[1]
	runtime.MemProfileRate = 4096
	f, err := os.Create(filepath.Join(dir, "cpu.pb.gz"))
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
	work(time.Now().Add(1500 * time.Millisecond))
	pprof.StopCPUProfile()
	f.Close()
	h, err := os.Create(filepath.Join(dir, "heap.pb.gz"))
	if err != nil {
		panic(err)
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(h); err != nil {
		panic(err)
	}
	h.Close()
}
