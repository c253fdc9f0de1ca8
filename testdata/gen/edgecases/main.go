// Command edgecases writes hand-encoded pprof (profile.proto) files that
// exercise corner cases of profd's pprof decoder: valid but unusual profiles
// and deliberately malformed ones. It has its own tiny protobuf encoder so
// that it can produce bytes no well-behaved encoder would (unpacked repeated
// fields, duplicate ids, bad wire types, over-long varints, ...).
//
// Usage: go run . -out ../../profiles/edge   (see ../edgecases.sh)
//
// The comment above each invalid profile quotes what `go tool pprof -raw`
// (Go 1.19, vendored github.com/google/pprof) says when it rejects it, and
// for wire-level errors also its proto decoder's own, masked, message.
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
)

// ---------------------------------------------------------------------------
// Minimal protobuf wire encoder.

const (
	wireVarint = 0
	wireBytes  = 2
)

type enc struct{ b []byte }

func (e *enc) varint(v uint64) {
	for v >= 0x80 {
		e.b = append(e.b, byte(v)|0x80)
		v >>= 7
	}
	e.b = append(e.b, byte(v))
}

func (e *enc) tag(field, wire int) { e.varint(uint64(field)<<3 | uint64(wire)) }

// uint writes a varint field; zero values are omitted as proto3 does.
func (e *enc) uint(field int, v uint64) {
	if v != 0 {
		e.tag(field, wireVarint)
		e.varint(v)
	}
}

// int writes an int64 field (negative numbers take 10 bytes, as in proto).
func (e *enc) int(field int, v int64) { e.uint(field, uint64(v)) }

// intAlways writes an int64 field even when it is zero.
func (e *enc) intAlways(field int, v int64) {
	e.tag(field, wireVarint)
	e.varint(uint64(v))
}

func (e *enc) bool(field int, v bool) {
	if v {
		e.uint(field, 1)
	}
}

func (e *enc) bytes(field int, p []byte) {
	e.tag(field, wireBytes)
	e.varint(uint64(len(p)))
	e.b = append(e.b, p...)
}

func (e *enc) msg(field int, fill func(*enc)) {
	var sub enc
	fill(&sub)
	e.bytes(field, sub.b)
}

// repeated writes a repeated varint field, packed (one length-delimited
// field) or unpacked (one tag per element, zeros included).
func (e *enc) repeated(field int, vs []uint64, packed bool) {
	if len(vs) == 0 {
		return
	}
	if !packed {
		for _, v := range vs {
			e.tag(field, wireVarint)
			e.varint(v)
		}
		return
	}
	var sub enc
	for _, v := range vs {
		sub.varint(v)
	}
	e.bytes(field, sub.b)
}

func ints(vs []int64) []uint64 {
	out := make([]uint64, len(vs))
	for i, v := range vs {
		out[i] = uint64(v)
	}
	return out
}

// ---------------------------------------------------------------------------
// A plain model of profile.proto; string fields hold string-table indexes.

type valueType struct{ typ, unit int64 }

type label struct{ key, str, num, numUnit int64 }

type sample struct {
	locs   []uint64
	values []int64
	labels []label
}

type mapping struct {
	id, start, limit, offset                uint64
	file, buildID                           int64
	hasFuncs, hasFiles, hasLines, hasInline bool
}

type line struct {
	fn   uint64
	line int64
}

type location struct {
	id, mapping, address uint64
	lines                []line
	folded               bool
}

type function struct {
	id                                uint64
	name, systemName, file, startLine int64
}

type profile struct {
	sampleTypes   []valueType
	samples       []sample
	mappings      []mapping
	locations     []location
	functions     []function
	strs          []string
	dropFrames    int64
	keepFrames    int64
	timeNanos     int64
	durationNanos int64
	periodType    *valueType
	period        int64
	comments      []int64
	defaultType   int64

	unpacked bool // write repeated scalars one tag per element
}

// str interns s in the string table and returns its index.
func (p *profile) str(s string) int64 {
	if len(p.strs) == 0 {
		p.strs = []string{""}
	}
	for i, t := range p.strs {
		if t == s {
			return int64(i)
		}
	}
	p.strs = append(p.strs, s)
	return int64(len(p.strs) - 1)
}

func (p *profile) vt(typ, unit string) valueType { return valueType{p.str(typ), p.str(unit)} }

func (p *profile) encode() []byte {
	var e enc
	packed := !p.unpacked
	for _, st := range p.sampleTypes {
		st := st
		e.msg(1, func(m *enc) { m.int(1, st.typ); m.int(2, st.unit) })
	}
	for _, s := range p.samples {
		s := s
		e.msg(2, func(m *enc) {
			m.repeated(1, s.locs, packed)
			m.repeated(2, ints(s.values), packed)
			for _, l := range s.labels {
				l := l
				m.msg(3, func(lm *enc) {
					lm.int(1, l.key)
					lm.int(2, l.str)
					lm.int(3, l.num)
					lm.int(4, l.numUnit)
				})
			}
		})
	}
	for _, mp := range p.mappings {
		mp := mp
		e.msg(3, func(m *enc) {
			m.uint(1, mp.id)
			m.uint(2, mp.start)
			m.uint(3, mp.limit)
			m.uint(4, mp.offset)
			m.int(5, mp.file)
			m.int(6, mp.buildID)
			m.bool(7, mp.hasFuncs)
			m.bool(8, mp.hasFiles)
			m.bool(9, mp.hasLines)
			m.bool(10, mp.hasInline)
		})
	}
	for _, l := range p.locations {
		l := l
		e.msg(4, func(m *enc) {
			m.uint(1, l.id)
			m.uint(2, l.mapping)
			m.uint(3, l.address)
			for _, ln := range l.lines {
				ln := ln
				m.msg(4, func(lm *enc) { lm.uint(1, ln.fn); lm.int(2, ln.line) })
			}
			m.bool(5, l.folded)
		})
	}
	for _, f := range p.functions {
		f := f
		e.msg(5, func(m *enc) {
			m.uint(1, f.id)
			m.int(2, f.name)
			m.int(3, f.systemName)
			m.int(4, f.file)
			m.int(5, f.startLine)
		})
	}
	for _, s := range p.strs {
		e.bytes(6, []byte(s))
	}
	e.int(7, p.dropFrames)
	e.int(8, p.keepFrames)
	e.int(9, p.timeNanos)
	e.int(10, p.durationNanos)
	if p.periodType != nil {
		pt := *p.periodType
		e.msg(11, func(m *enc) { m.int(1, pt.typ); m.int(2, pt.unit) })
	}
	e.int(12, p.period)
	e.repeated(13, ints(p.comments), packed)
	e.int(14, p.defaultType)
	return e.b
}

// ---------------------------------------------------------------------------
// Building blocks.

const (
	t0     = 1700000000000000000 // 2023-11-14T22:13:20Z, fixed for reproducible files
	second = 1000000000
)

// cpuBase returns a small, valid CPU profile: one mapping, five functions,
// main -> handle -> parse/encode, with an inlined helper, and a few samples.
// Ids are 1..N; the string table starts with "".
func cpuBase() *profile {
	p := &profile{}
	p.sampleTypes = []valueType{p.vt("samples", "count"), p.vt("cpu", "nanoseconds")}
	pt := p.vt("cpu", "nanoseconds")
	p.periodType = &pt
	p.period = 10000000
	p.timeNanos = t0
	p.durationNanos = 10 * second
	p.mappings = []mapping{{id: 1, start: 0x400000, limit: 0x800000, file: p.str("/usr/local/bin/demo"),
		buildID: p.str("b2f0c0ffee"), hasFuncs: true, hasFiles: true, hasLines: true, hasInline: true}}
	file := p.str("demo/main.go")
	names := []string{"main.main", "main.handle", "main.parse", "main.encode", "main.hash"}
	for i, n := range names {
		p.functions = append(p.functions, function{id: uint64(i + 1), name: p.str(n), systemName: p.str(n),
			file: file, startLine: int64(10 * (i + 1))})
	}
	p.locations = []location{
		{id: 1, mapping: 1, address: 0x401000, lines: []line{{1, 12}}},          // main.main
		{id: 2, mapping: 1, address: 0x402000, lines: []line{{2, 25}}},          // main.handle
		{id: 3, mapping: 1, address: 0x403000, lines: []line{{3, 33}}},          // main.parse
		{id: 4, mapping: 1, address: 0x404000, lines: []line{{5, 52}, {4, 44}}}, // main.hash inlined into main.encode
	}
	p.samples = []sample{
		{locs: []uint64{3, 2, 1}, values: []int64{5, 50000000}},
		{locs: []uint64{4, 2, 1}, values: []int64{3, 30000000}},
		{locs: []uint64{2, 1}, values: []int64{1, 10000000}},
	}
	p.comments = []int64{p.str("generated by testdata/gen/edgecases")}
	return p
}

// ---------------------------------------------------------------------------
// Valid profiles.

// nulBytes: cpuBase plus strings holding NUL bytes, which must keep all their
// bytes: a function whose name is the 256 byte values 0..255 in order, two
// functions whose names differ only after a NUL ("dup\x00a", "dup\x00b"), a
// second mapping whose file and build id hold NULs, a label whose key and value
// hold NULs, and a comment with a NUL.
func nulBytes() []byte {
	p := cpuBase()
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	file := p.str("nul/\x00.go")
	for i, n := range []string{string(all), "dup\x00a", "dup\x00b"} {
		p.functions = append(p.functions, function{id: uint64(6 + i), name: p.str(n), systemName: p.str(n),
			file: file, startLine: int64(100 + i)})
	}
	p.mappings = append(p.mappings, mapping{id: 2, start: 0x900000, limit: 0xa00000,
		file: p.str("/lib/\x00nul.so"), buildID: p.str("\x00b\x00id"), hasFuncs: true})
	p.locations = append(p.locations,
		location{id: 5, mapping: 2, address: 0x901000, lines: []line{{6, 101}}},
		location{id: 6, mapping: 2, address: 0x902000, lines: []line{{7, 102}}},
		location{id: 7, mapping: 2, address: 0x903000, lines: []line{{8, 103}}},
	)
	lab := []label{{key: p.str("k\x00ey"), str: p.str("v\x00al")}}
	p.samples = append(p.samples,
		sample{locs: []uint64{5, 2, 1}, values: []int64{7, 70000000}, labels: lab},
		sample{locs: []uint64{6, 1}, values: []int64{2, 20000000}},
		sample{locs: []uint64{7, 1}, values: []int64{4, 40000000}},
	)
	p.comments = append(p.comments, p.str("comment\x00after a NUL"))
	return p.encode()
}

// cpuMillis: cpuBase with CPU time in milliseconds, so that merging it with a
// nanosecond profile must convert units to the finer one.
func cpuMillis() []byte {
	p := cpuBase()
	p.sampleTypes[1] = p.vt("cpu", "milliseconds")
	pt := p.vt("cpu", "milliseconds")
	p.periodType = &pt
	p.period = 10
	for i := range p.samples {
		p.samples[i].values[1] /= 1000000
	}
	return p.encode()
}

// cpuExtraType: cpuBase with a third sample type, wall/nanoseconds, that other
// CPU profiles lack, so that a merge keeps only the common two.
func cpuExtraType() []byte {
	p := cpuBase()
	p.sampleTypes = append(p.sampleTypes, p.vt("wall", "nanoseconds"))
	for i := range p.samples {
		p.samples[i].values = append(p.samples[i].values, 7*p.samples[i].values[1])
	}
	p.samples = append(p.samples, sample{locs: []uint64{1}, values: []int64{0, 0, 90000000}})
	return p.encode()
}

// emptySamples: sample and period types and a string table, but no samples
// (and so no locations, functions or mappings either).
func emptySamples() []byte {
	p := &profile{}
	p.sampleTypes = []valueType{p.vt("samples", "count"), p.vt("cpu", "nanoseconds")}
	pt := p.vt("cpu", "nanoseconds")
	p.periodType = &pt
	p.period = 10000000
	p.timeNanos = t0
	p.durationNanos = 3 * second
	return p.encode()
}

// noMappings: functions and locations but no mapping at all (mapping_id 0).
func noMappings() []byte {
	p := cpuBase()
	p.mappings = nil
	for i := range p.locations {
		p.locations[i].mapping = 0
		p.locations[i].address = 0
	}
	p.samples = append(p.samples, sample{locs: []uint64{1}, values: []int64{2, 20000000}})
	return p.encode()
}

// sparseIDs: mapping, function and location ids far from 1..N, listed out
// of order, with references between them.
func sparseIDs() []byte {
	p := &profile{}
	p.sampleTypes = []valueType{p.vt("samples", "count"), p.vt("cpu", "nanoseconds")}
	pt := p.vt("cpu", "nanoseconds")
	p.periodType = &pt
	p.period = 10000000
	p.timeNanos = t0
	p.durationNanos = 5 * second
	file := p.str("sparse/s.go")
	p.mappings = []mapping{
		{id: 1 << 40, start: 0x7f0000000000, limit: 0x7f0000100000, file: p.str("/lib/libsparse.so"), hasFuncs: true},
		{id: 3, start: 0x400000, limit: 0x500000, file: p.str("/bin/sparse"), hasFuncs: true},
	}
	p.functions = []function{
		{id: 99999999999, name: p.str("sparse.leaf"), file: file, startLine: 90},
		{id: 7, name: p.str("sparse.root"), file: file, startLine: 1},
		{id: 1000, name: p.str("sparse.middle"), file: file, startLine: 40},
		{id: 42, name: p.str("sparse.lib"), file: p.str("lib/l.c"), startLine: 7},
	}
	p.locations = []location{
		{id: 1000, mapping: 3, address: 0x401234, lines: []line{{1000, 44}}},
		{id: 99999999999, mapping: 3, address: 0x409abc, lines: []line{{99999999999, 91}}},
		{id: 7, mapping: 3, address: 0x400100, lines: []line{{7, 3}}},
		{id: 42, mapping: 1 << 40, address: 0x7f0000000420, lines: []line{{42, 9}}},
		{id: 18446744073709551615, mapping: 3, address: 0x400200, lines: []line{{7, 5}}}, // max uint64 id
	}
	p.samples = []sample{
		{locs: []uint64{99999999999, 1000, 7}, values: []int64{4, 40000000}},
		{locs: []uint64{42, 1000, 7}, values: []int64{2, 20000000}},
		{locs: []uint64{18446744073709551615}, values: []int64{1, 10000000}},
	}
	return p.encode()
}

// unpacked: a normal profile whose repeated scalars (sample.location_id,
// sample.value, comment) are written one tag per element, not packed.
func unpacked() []byte {
	p := cpuBase()
	p.comments = append(p.comments, p.str("repeated scalars are unpacked"))
	p.unpacked = true
	return p.encode()
}

// multiTypes: a heap-like profile with 4 sample types and no
// default_sample_type, recursion (main.walk twice in one stack, and a
// mutual a -> b -> a cycle), a location with 3 inlined lines, and string and
// numeric labels (numeric with num_unit).
func multiTypes() []byte {
	p := &profile{}
	p.sampleTypes = []valueType{
		p.vt("alloc_objects", "count"), p.vt("alloc_space", "bytes"),
		p.vt("inuse_objects", "count"), p.vt("inuse_space", "bytes"),
	}
	pt := p.vt("space", "bytes")
	p.periodType = &pt
	p.period = 524288
	p.timeNanos = t0
	p.mappings = []mapping{{id: 1, start: 0x400000, limit: 0x900000, file: p.str("/usr/local/bin/multi"),
		hasFuncs: true, hasFiles: true, hasLines: true, hasInline: true}}
	file := p.str("multi/walk.go")
	for i, n := range []string{"main.main", "main.walk", "main.a", "main.b", "main.alloc", "main.grow", "main.newNode"} {
		p.functions = append(p.functions, function{id: uint64(i + 1), name: p.str(n), file: file, startLine: int64(100 * (i + 1))})
	}
	p.locations = []location{
		{id: 1, mapping: 1, address: 0x401010, lines: []line{{1, 105}}},
		{id: 2, mapping: 1, address: 0x402020, lines: []line{{2, 210}}}, // walk calling walk
		{id: 3, mapping: 1, address: 0x402030, lines: []line{{2, 215}}}, // walk calling alloc
		{id: 4, mapping: 1, address: 0x403000, lines: []line{{3, 302}}}, // a calling b
		{id: 5, mapping: 1, address: 0x404000, lines: []line{{4, 401}}}, // b calling a
		// newNode inlined into grow inlined into alloc: 3 lines, leaf first.
		{id: 6, mapping: 1, address: 0x405000, lines: []line{{7, 702}, {6, 610}, {5, 505}}},
		{id: 7, mapping: 1, address: 0x403010, lines: []line{{3, 305}}}, // a calling alloc
	}
	kind, region, size, bytesU := p.str("kind"), p.str("region"), p.str("object_size"), p.str("bytes")
	tree, list, eu := p.str("tree"), p.str("list"), p.str("eu-west")
	p.samples = []sample{
		// main -> walk -> walk -> walk -> alloc(inlined grow, newNode)
		{locs: []uint64{6, 3, 2, 2, 1}, values: []int64{10, 5120, 4, 2048},
			labels: []label{{key: kind, str: tree}, {key: size, num: 512, numUnit: bytesU}}},
		// main -> walk -> alloc
		{locs: []uint64{6, 3, 1}, values: []int64{3, 1536, 0, 0},
			labels: []label{{key: kind, str: tree}, {key: size, num: 512, numUnit: bytesU}}},
		// main -> a -> b -> a -> b -> a -> alloc: mutual recursion
		{locs: []uint64{6, 7, 5, 4, 5, 4, 1}, values: []int64{7, 28672, 7, 28672},
			labels: []label{{key: kind, str: list}, {key: region, str: eu}, {key: size, num: 4096, numUnit: bytesU}}},
		// numeric label without unit
		{locs: []uint64{6, 7, 1}, values: []int64{1, 64, 1, 64},
			labels: []label{{key: p.str("goroutine"), num: 17}}},
	}
	return p.encode()
}

// defaultType: 3 sample types, default_sample_type names the middle one.
func defaultType() []byte {
	p := cpuBase()
	p.sampleTypes = []valueType{p.vt("contentions", "count"), p.vt("delay", "nanoseconds"), p.vt("waiters", "count")}
	p.periodType = nil
	p.period = 1
	p.defaultType = p.str("delay")
	p.samples = []sample{
		{locs: []uint64{3, 2, 1}, values: []int64{4, 1200000, 2}},
		{locs: []uint64{4, 2, 1}, values: []int64{1, 90000000, 1}},
	}
	return p.encode()
}

// noFunctions: address-only locations (no lines, no functions) in a mapping
// that has a filename and build id but no symbol information, plus one
// location with no mapping at all.
func noFunctions() []byte {
	p := &profile{}
	p.sampleTypes = []valueType{p.vt("samples", "count"), p.vt("cpu", "nanoseconds")}
	pt := p.vt("cpu", "nanoseconds")
	p.periodType = &pt
	p.period = 10000000
	p.timeNanos = t0
	p.durationNanos = 2 * second
	p.mappings = []mapping{{id: 1, start: 0x7f1200000000, limit: 0x7f1200200000, offset: 0x1000,
		file: p.str("/opt/profd-edge/libnosym.so"), buildID: p.str("0123456789abcdef0123456789abcdef01234567")}}
	p.locations = []location{
		{id: 1, mapping: 1, address: 0x7f1200001234},
		{id: 2, mapping: 1, address: 0x7f1200005678},
		{id: 3, mapping: 1, address: 0x7f12000abcde},
		{id: 4, address: 0xffffffff81000000}, // no mapping (e.g. a kernel address)
	}
	p.samples = []sample{
		{locs: []uint64{1, 2, 3}, values: []int64{6, 60000000}},
		{locs: []uint64{2, 3}, values: []int64{2, 20000000}},
		{locs: []uint64{4, 3}, values: []int64{1, 10000000}},
	}
	return p.encode()
}

// zeroAndNegative: samples whose values are all zero, and samples with
// negative values (as in a diff, or a delta profile after a reset).
func zeroAndNegative() []byte {
	p := cpuBase()
	p.samples = []sample{
		{locs: []uint64{3, 2, 1}, values: []int64{0, 0}},
		{locs: []uint64{4, 2, 1}, values: []int64{-3, -30000000}},
		{locs: []uint64{2, 1}, values: []int64{2, -5}},
		{locs: []uint64{1}, values: []int64{0, 0}},
		{locs: []uint64{3, 1}, values: []int64{7, 70000000}},
	}
	return p.encode()
}

// ---------------------------------------------------------------------------
// Invalid profiles. Each comment quotes go tool pprof (Go 1.19).

// badString0: string_table[0] is "x" instead of "".
// go tool pprof -raw says:
//
//	parsing profile: unrecognized profile format
//
// That hides the proto decoder's own error, because pprof falls back to
// its legacy text formats when proto decoding fails; the decoder said:
//
//	string_table[0] must be ''
func badString0() []byte {
	p := cpuBase()
	p.strs[0] = "x"
	return p.encode()
}

// badStringIndex: a function name refers to string index 1000, past the end
// of the string table.
// go tool pprof -raw says:
//
//	parsing profile: unrecognized profile format
//
// That hides the proto decoder's own error, because pprof falls back to
// its legacy text formats when proto decoding fails; the decoder said:
//
//	malformed profile format
func badStringIndex() []byte {
	p := cpuBase()
	p.functions[2].name = 1000
	return p.encode()
}

// badLocationRef: a sample refers to location id 77, which does not exist.
// go tool pprof -raw says:
//
//	malformed profile: sample has nil location
func badLocationRef() []byte {
	p := cpuBase()
	p.samples[1].locs = []uint64{77, 2, 1}
	return p.encode()
}

// badFunctionRef: a line refers to function id 55, which does not exist.
// go tool pprof -raw says:
//
//	malformed profile: location id: 3 has a line with nil function
func badFunctionRef() []byte {
	p := cpuBase()
	p.locations[2].lines = []line{{55, 33}}
	return p.encode()
}

// badDupLocation: two locations share id 2.
// go tool pprof -raw says:
//
//	malformed profile: multiple locations with same id: 2
func badDupLocation() []byte {
	p := cpuBase()
	p.locations = append(p.locations, location{id: 2, mapping: 1, address: 0x402222, lines: []line{{3, 30}}})
	return p.encode()
}

// badZeroID: a function with id 0 (reserved); no line refers to it.
// go tool pprof -raw says:
//
//	malformed profile: found function with reserved ID=0
func badZeroID() []byte {
	p := cpuBase()
	p.functions = append(p.functions, function{id: 0, name: p.str("main.zero"), file: p.functions[0].file})
	return p.encode()
}

// badValueCount: a sample has 1 value while there are 2 sample types.
// go tool pprof -raw says:
//
//	malformed profile: mismatch: sample has 1 values vs. 2 types
func badValueCount() []byte {
	p := cpuBase()
	p.samples[0].values = []int64{5}
	return p.encode()
}

// truncated: a valid profile cut in the middle of a location message.
// go tool pprof -raw says:
//
//	parsing profile: unrecognized profile format
//
// That hides the proto decoder's own error, because pprof falls back to
// its legacy text formats when proto decoding fails; the decoder said:
//
//	too much data
func truncated() []byte {
	b := cpuBase().encode()
	// Walk the top-level fields and cut halfway through the second location
	// (field 4).
	seen := 0
	for i := 0; i < len(b); {
		key, n := uvarint(b[i:])
		start := i
		i += n
		switch key & 7 {
		case wireVarint:
			_, n = uvarint(b[i:])
			i += n
		case wireBytes:
			ln, n := uvarint(b[i:])
			i += n + int(ln)
			if key>>3 == 4 {
				if seen++; seen == 2 {
					return b[:start+(i-start)/2]
				}
			}
		default:
			log.Fatalf("truncated: unexpected wire type %d", key&7)
		}
	}
	log.Fatal("truncated: location not found")
	return nil
}

// uvarint decodes a varint from the start of b and returns it and its length.
func uvarint(b []byte) (uint64, int) {
	var v uint64
	for i, c := range b {
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	log.Fatal("uvarint: truncated input")
	return 0, 0
}

// hugeVarint: a sample value written as an 11-byte varint (at most 10 are
// allowed for 64 bits).
// go tool pprof -raw says:
//
//	parsing profile: unrecognized profile format
//
// That hides the proto decoder's own error, because pprof falls back to
// its legacy text formats when proto decoding fails; the decoder said:
//
//	bad varint
func hugeVarint() []byte {
	p := cpuBase()
	p.samples = nil
	b := p.encode()
	var s enc
	s.repeated(1, []uint64{1}, true)
	s.tag(2, wireVarint) // value, unpacked so the varint stands alone
	s.b = append(s.b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)
	var e enc
	e.bytes(2, s.b)
	return append(e.b, b...)
}

// wrongWiretype: field 2 (sample, a message) written with wire type 0.
// go tool pprof -raw says:
//
//	parsing profile: unrecognized profile format
//
// That hides the proto decoder's own error, because pprof falls back to
// its legacy text formats when proto decoding fails; the decoder said:
//
//	type mismatch
func wrongWiretype() []byte {
	p := cpuBase()
	b := p.encode()
	var e enc
	e.tag(2, wireVarint)
	e.varint(5)
	return append(e.b, b...)
}

// badMappingRef: a location refers to mapping id 9, which does not exist.
// pprof ACCEPTS this: the location silently gets no mapping (postDecode
// leaves Location.Mapping nil and CheckValid only checks non-nil mappings).
func badMappingRef() []byte {
	p := cpuBase()
	p.locations[1].mapping = 9
	return p.encode()
}

// gzipBomb: a gzip stream of 320 MiB of zeros (about 320 KB compressed),
// for testing bounded decompression. The payload is not a profile.
// go tool pprof inflates all of it (about 1.3 GB peak RSS) and then says:
//
//	parsing profile: bufio.Scanner: token too long
func gzipBomb() []byte {
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		log.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for i := 0; i < 320; i++ {
		if _, err := zw.Write(zeros); err != nil {
			log.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	return out.Bytes()
}

func main() {
	out := flag.String("out", "../../profiles/edge", "output folder")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	files := []struct {
		name string
		gen  func() []byte
	}{
		{"empty-samples.pb", emptySamples},
		{"no-mappings.pb", noMappings},
		{"sparse-ids.pb", sparseIDs},
		{"unpacked.pb", unpacked},
		{"multi-types.pb", multiTypes},
		{"default-type.pb", defaultType},
		{"no-functions.pb", noFunctions},
		{"zero-and-negative.pb", zeroAndNegative},
		{"cpu-millis.pb", cpuMillis},
		{"cpu-extra-type.pb", cpuExtraType},
		{"nul-bytes.pb", nulBytes},
		{"bad-string0.pb", badString0},
		{"bad-string-index.pb", badStringIndex},
		{"bad-location-ref.pb", badLocationRef},
		{"bad-function-ref.pb", badFunctionRef},
		{"bad-dup-location.pb", badDupLocation},
		{"bad-zero-id.pb", badZeroID},
		{"bad-value-count.pb", badValueCount},
		{"truncated.pb", truncated},
		{"huge-varint.pb", hugeVarint},
		{"wrong-wiretype.pb", wrongWiretype},
		{"bad-mapping-ref.pb", badMappingRef},
		{"gzip-bomb.pb.gz", gzipBomb},
	}
	for _, f := range files {
		b := f.gen()
		if err := os.WriteFile(filepath.Join(*out, f.name), b, 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-24s %8d bytes\n", f.name, len(b))
	}
}
