// pprof_totals prints, for each pprof file named on its command line and each of
// its sample types, the sum of that type's values over all samples, the sum over
// the samples that have a stack (at least one location: what `go tool pprof -raw`
// lists, since pprof leaves stackless samples out), and the profile's
// duration_nanos. It reads the protobuf with Go's standard library only, so tests
// get totals and exact durations without profd's decoder (`go tool pprof -raw`
// prints the duration rounded: "Duration: 3.18"). Files may be gzip-compressed.
// One line per sample type:
//
//	FILE<TAB>TYPE<TAB>UNIT<TAB>SUM<TAB>SUM_WITH_STACK<TAB>DURATION_NANOS
//
// Usage: go run pprof_totals.go FILE...
package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
)

var errTruncated = errors.New("truncated protobuf")

func varint(b []byte, i int) (uint64, int, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if i >= len(b) {
			return 0, i, errTruncated
		}
		c := b[i]
		i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i, nil
		}
	}
	return 0, i, errors.New("varint too long")
}

// field calls fn for every field of message b: its number, wire type, varint
// value (wire type 0) or bytes (wire type 2).
func fields(b []byte, fn func(num, wire uint64, v uint64, data []byte) error) error {
	for i := 0; i < len(b); {
		key, n, err := varint(b, i)
		if err != nil {
			return err
		}
		i = n
		var v uint64
		var data []byte
		switch wire := key & 7; wire {
		case 0:
			if v, i, err = varint(b, i); err != nil {
				return err
			}
		case 1:
			i += 8
		case 2:
			l, n, err := varint(b, i)
			if err != nil {
				return err
			}
			if n+int(l) > len(b) || int(l) < 0 {
				return errTruncated
			}
			data, i = b[n:n+int(l)], n+int(l)
		case 5:
			i += 4
		default:
			return fmt.Errorf("wire type %d", wire)
		}
		if i > len(b) {
			return errTruncated
		}
		if err := fn(key>>3, key&7, v, data); err != nil {
			return err
		}
	}
	return nil
}

// ints reads a repeated integer field, packed (wire type 2) or not.
func ints(wire, v uint64, data []byte) ([]uint64, error) {
	if wire == 0 {
		return []uint64{v}, nil
	}
	var out []uint64
	for i := 0; i < len(data); {
		x, n, err := varint(data, i)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
		i = n
	}
	return out, nil
}

type valueType struct{ typ, unit uint64 }

func totals(name string, b []byte) error {
	var strs []string
	var types []valueType
	var sums, stacked []int64
	var duration int64
	err := fields(b, func(num, wire, v uint64, data []byte) error {
		switch num {
		case 1: // sample_type
			var t valueType
			err := fields(data, func(n, w, x uint64, _ []byte) error {
				if n == 1 {
					t.typ = x
				} else if n == 2 {
					t.unit = x
				}
				return nil
			})
			types = append(types, t)
			return err
		case 2: // sample
			var vals []int64
			locs := 0
			err := fields(data, func(n, w, x uint64, d []byte) error {
				if n != 1 && n != 2 {
					return nil
				}
				xs, err := ints(w, x, d)
				if n == 1 {
					locs += len(xs)
				} else {
					for _, y := range xs {
						vals = append(vals, int64(y))
					}
				}
				return err
			})
			if err != nil {
				return err
			}
			for len(sums) < len(vals) {
				sums = append(sums, 0)
				stacked = append(stacked, 0)
			}
			for k, y := range vals {
				sums[k] += y
				if locs > 0 {
					stacked[k] += y
				}
			}
		case 6: // string_table
			strs = append(strs, string(data))
		case 10: // duration_nanos
			duration = int64(v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for k, t := range types {
		if t.typ >= uint64(len(strs)) || t.unit >= uint64(len(strs)) {
			return errors.New("sample type refers to a missing string")
		}
		var s, st int64
		if k < len(sums) {
			s, st = sums[k], stacked[k]
		}
		fmt.Printf("%s\t%s\t%s\t%d\t%d\t%d\n", name, strs[t.typ], strs[t.unit], s, st, duration)
	}
	return nil
}

func main() {
	for _, name := range os.Args[1:] {
		raw, err := os.ReadFile(name)
		if err == nil && len(raw) > 1 && raw[0] == 0x1f && raw[1] == 0x8b {
			var z *gzip.Reader
			if z, err = gzip.NewReader(bytes.NewReader(raw)); err == nil {
				raw, err = io.ReadAll(z)
			}
		}
		if err == nil {
			err = totals(name, raw)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "pprof_totals: %s: %v\n", name, err)
			os.Exit(1)
		}
	}
}
