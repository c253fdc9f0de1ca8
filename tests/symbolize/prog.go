// A small Go program for test_symbolize: a function that is not inlined, with a
// helper the compiler inlines into it.
package main

import (
	"fmt"
	"os"
)

func mix(x int) int { return x*2654435761 ^ (x >> 7) }

//go:noinline
func work(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += mix(i + s)
	}
	return s
}

func main() { fmt.Println(work(len(os.Args) * 1000)) }
