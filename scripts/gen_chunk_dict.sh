#!/bin/sh
# gen_chunk_dict.sh: how pkg/tsdb/chunkenc/dict/go-1.txt was made: the zstd
# dictionary that value chunks' tables are compressed against
# (docs/format/chunks.md, "Tables dictionary"). The file in the tree is the
# format: a chunk written with dictionary 1 reads only with those exact bytes, so
# this script documents it and is not run by the build. Running it again on
# another Go gives another file, which would be a new dictionary number.
#
# The entries, one a line: for each package of Go's standard library (Debian's
# golang-go 1.19), its source files as paths under GOROOT/src, then the
# functions a program linking much of the library holds (`go tool nm`); the
# packages that nearly every Go profile shows (runtime, sync, net, os, ...) come
# last, as zstd finds near matches cheapest; then the mapping paths and the
# sample types that Go programs on Debian write.
#
# usage: scripts/gen_chunk_dict.sh OUT
set -eu
out=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/main.go" <<'GO'
package main

import (
	_ "bufio"
	_ "bytes"
	_ "compress/gzip"
	_ "context"
	_ "crypto/sha256"
	_ "crypto/tls"
	_ "database/sql"
	_ "encoding/base64"
	_ "encoding/binary"
	_ "encoding/json"
	_ "fmt"
	_ "hash/crc32"
	_ "html/template"
	_ "io/ioutil"
	_ "log"
	_ "math/big"
	_ "mime/multipart"
	_ "net/http"
	_ "net/http/pprof"
	_ "net/rpc"
	_ "net/url"
	_ "os/exec"
	_ "os/signal"
	_ "path/filepath"
	_ "reflect"
	_ "regexp"
	_ "runtime/pprof"
	_ "sort"
	_ "strconv"
	_ "strings"
	_ "sync/atomic"
	_ "syscall"
	_ "text/template"
	_ "time"
	_ "unicode/utf8"
)

func main() {}
GO
(cd "$tmp" && go mod init dict >/dev/null 2>&1 && go build -o prog .)
go tool nm "$tmp/prog" | awk '$2 ~ /^[TtRr]$/ {print $3}' |
	grep '[a-z]\.' | sed 's/\.abi0$//' |
	grep -v -e '^go[:.]' -e '^type[:.]' -e '^\$' -e 'stkobj' -e 'arginfo' -e 'args_stackmap' \
		-e 'inittask' -e 'gclocals' -e '^_' | sort -u > "$tmp/names"
(cd "$(go env GOROOT)/src" && find . -name '*.go' ! -name '*_test.go' ! -path '*/testdata/*' \
	! -path './cmd/*' ! -path '*/vendor/*' | sed 's|^\./||' | sort) > "$tmp/files"
python3 - "$tmp/names" "$tmp/files" "$out" <<'PY'
import collections, sys
names = [l.strip() for l in open(sys.argv[1]) if l.strip()]
files = [l.strip() for l in open(sys.argv[2]) if l.strip()]
def pkg_of_name(n):
    i = n.rfind('/')
    j = n.find('.', i + 1)
    return n[:j] if j > 0 else n
by_name = collections.defaultdict(list)
for n in names:
    by_name[pkg_of_name(n)].append(n)
by_file = collections.defaultdict(list)
for f in files:
    by_file[f.rsplit('/', 1)[0]].append(f)
last = ['fmt', 'strconv', 'reflect', 'bufio', 'io', 'context', 'time', 'syscall',
        'internal/poll', 'os', 'net', 'net/http', 'sync', 'sync/atomic', 'runtime/pprof',
        'runtime/internal/atomic', 'runtime']
pkgs = sorted((set(by_name) | set(by_file)) - set(last)) + [p for p in last]
lines = []
for p in pkgs:
    lines += by_file.get(p, []) + by_name.get(p, [])
lines += ['/usr/lib/x86_64-linux-gnu/libc.so.6', '/usr/lib/x86_64-linux-gnu/libpthread.so.0',
          '/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2', '[vdso]', '[vsyscall]',
          '[heap]', '[stack]', 'goroutine', 'threadcreate', 'contentions', 'delay',
          'alloc_objects', 'alloc_space', 'inuse_objects', 'inuse_space', 'bytes',
          'samples', 'cpu', 'nanoseconds', 'count']
open(sys.argv[3], 'w').write('\n'.join(lines) + '\n')
PY
