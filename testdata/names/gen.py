#!/usr/bin/env python3
"""gen.py: writes the profiles of testdata/names (profile.proto, gzipped with a
zero mtime, so a run gives the same bytes):

  names.pb.gz        one sample per function, each with its own value: C++ (Itanium)
                     and Rust (legacy and v0) names taken from real g++ and rustc
                     builds, as mangled system names with no name, as mangled names,
                     as names a tool demangled already, and Go names (methods,
                     closures, generics), for report-name simplification
  drop_frames.pb.gz  stacks through allocator and runtime frames, with drop_frames
                     and keep_frames regexes, inlined frames among them
  bad_regex.pb.gz    a drop_frames regex that does not compile

Run from anywhere: python3 testdata/names/gen.py (writes beside itself).
"""
import gzip
import os
import struct


def varint(v):
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def fint(field, v):
    return key(field, 0) + varint(v) if v else b""


def fbytes(field, b):
    return key(field, 2) + varint(len(b)) + b


def packed(field, vals):
    if not vals:
        return b""
    return fbytes(field, b"".join(varint(v) for v in vals))


class Profile:
    def __init__(self, sample_type, unit):
        self.strings = [b""]
        self.index = {b"": 0}
        self.funcs = {}  # (name, system_name) -> id
        self.func_msgs = []
        self.locs = {}  # tuple of function ids -> id
        self.loc_msgs = []
        self.samples = []
        self.drop = self.keep = None
        self.sample_type = (self.s(sample_type), self.s(unit))
        self.period_type = (self.s("cpu"), self.s("nanoseconds"))

    def s(self, text):
        b = text.encode() if isinstance(text, str) else text
        if b not in self.index:
            self.index[b] = len(self.strings)
            self.strings.append(b)
        return self.index[b]

    def func(self, name, system_name):
        k = (name, system_name)
        if k not in self.funcs:
            fid = len(self.funcs) + 1
            self.funcs[k] = fid
            self.func_msgs.append(fint(1, fid) + fint(2, self.s(name)) + fint(3, self.s(system_name)))
        return self.funcs[k]

    def loc(self, frames):
        """frames: (name, system_name) pairs, innermost (inlined callee) first."""
        ids = tuple(self.func(n, s) for n, s in frames)
        if ids not in self.locs:
            lid = len(self.locs) + 1
            self.locs[ids] = lid
            lines = b"".join(fbytes(4, fint(1, f) + fint(2, 10)) for f in ids)
            self.loc_msgs.append(fint(1, lid) + fint(3, 0x1000 + 16 * lid) + lines)
        return self.locs[ids]

    def sample(self, stack, value):
        """stack: locations leaf first, each a list of (name, system_name) frames."""
        self.samples.append(([self.loc(l) for l in stack], value))

    def encode(self):
        out = fbytes(1, fint(1, self.sample_type[0]) + fint(2, self.sample_type[1]))
        for ids, v in self.samples:
            out += fbytes(2, packed(1, ids) + packed(2, [v]))
        for m in self.loc_msgs:
            out += fbytes(4, m)
        for m in self.func_msgs:
            out += fbytes(5, m)
        drop = self.s(self.drop) if self.drop else 0
        keep = self.s(self.keep) if self.keep else 0
        for b in self.strings:
            out += fbytes(6, b)
        out += fint(7, drop) + fint(8, keep)
        out += fint(9, 1700000000 * 10**9) + fint(10, 10**10)
        out += fbytes(11, fint(1, self.period_type[0]) + fint(2, self.period_type[1]))
        out += fint(12, 10000000)
        return out

    def write(self, path):
        with open(path, "wb") as f:
            with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as g:
                g.write(self.encode())


# name, system_name; "" for an unset string
NAMES = [
    # C++ from g++ -O2 (nm): system name only, as a symbolizer that left the name empty
    ("", "_ZL6clonedii.constprop.0"),
    ("", "_ZN12_GLOBAL__N_16hiddenEi"),
    ("", "_ZN2ns5twiceIdEET_S1_"),
    ("", "_ZN2nslsERSoRKNS_3StrE"),
    ("", "_ZNK2ns3BoxIiE4convIlEET_v.isra.0"),
    ("", "_ZNSt17_Function_handlerIFiiEZ4mainEUliE_E9_M_invokeERKSt9_Any_dataOi"),
    ("", "_ZNSt6vectorIiSaIiEE17_M_realloc_insertIJiEEEvN9__gnu_cxx17__normal_iteratorIPiS1_EEDpOT_"),
    ("", "_ZSt16__introsort_loopIN9__gnu_cxx17__normal_iteratorIPN2ns3BoxIiEESt6vectorIS4_SaIS4_EEEElNS0_5__ops15_Iter_less_iterEEvT_SC_T0_T1_.isra.0"),
    # lambdas and operators: name and system name the same mangled string
    ("_ZZ4mainENKUliE_clEi", "_ZZ4mainENKUliE_clEi"),
    ("_ZZN2ns3runEvENKUlRKSt6vectorIiSaIiEEE0_clES4_", "_ZZN2ns3runEvENKUlRKSt6vectorIiSaIiEEE0_clES4_"),
    ("_ZNK2ns3BoxIiEltERKS1_", "_ZNK2ns3BoxIiEltERKS1_"),
    ("_ZN2ns3BoxIiEaSERKS1_", "_ZN2ns3BoxIiEaSERKS1_"),
    ("_ZNK2ns3BoxIiEclEv", "_ZNK2ns3BoxIiEclEv"),
    ("_ZN2ns7shiftedIiEEvRSt6vectorIT_SaIS2_EE", "_ZN2ns7shiftedIiEEvRSt6vectorIT_SaIS2_EE"),
    ("_ZNSt8functionIFiiEEC2IZ4mainEUliE_vEEOT_", "_ZNSt8functionIFiiEEC2IZ4mainEUliE_vEEOT_"),
    # C++ a tool demangled already (perf, addr2line -C): name and system name alike
    ("std::vector<int, std::allocator<int> >::push_back(int const&)",
     "std::vector<int, std::allocator<int> >::push_back(int const&)"),
    ("(anonymous namespace)::hidden(int)", "(anonymous namespace)::hidden(int)"),
    ("ns::Box<int>::operator<(ns::Box<int> const&) const", "ns::Box<int>::operator<(ns::Box<int> const&) const"),
    ("main::{lambda(int)#1}::operator()(int) const", "main::{lambda(int)#1}::operator()(int) const"),
    # a demangled name beside its mangled system name is kept as it is
    ("ns::twice<int>(int)", "_ZN2ns5twiceIiEET_S1_"),
    # a name and no system name
    ("only_a_name(int)", ""),
    # Rust from rustc 1.8x: legacy and v0 manglings
    ("", "_ZN1r7generic17h4c870fae4cae811fE"),
    ("", "_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17ha86af84d9cc65291E"),
    ("", "_ZN65_$LT$alloc..vec..Vec$LT$T$C$A$GT$$u20$as$u20$core..fmt..Debug$GT$3fmt17h122cd70bc99410b1E"),
    ("_ZN4core3ops8function6FnOnce40call_once$u7b$$u7b$vtable.shim$u7d$$u7d$17h42e08618e5619cfaE",
     "_ZN4core3ops8function6FnOnce40call_once$u7b$$u7b$vtable.shim$u7d$$u7d$17h42e08618e5619cfaE"),
    ("", "_RINvCs6GmmlP4bgsG_1r7genericINtNtCslNYArtu3iFV_5alloc3vec3VechEEB2_"),
    ("", "_RINvMs4_NtCsgY6Mt91CT9J_14rustc_demangle2v0NtB6_7Printer13print_backrefNCNvB2_10print_paths_0EB8_"),
    ("", "_RINvMs0_NtNtNtCsjrHSEGnQ3l9_3std12backtrace_rs9symbolize5gimliNtB6_5Cache11with_globalNCNvB6_7resolves_0EBc_"),
    # Rust a tool demangled already
    ("<alloc::vec::Vec<T,A> as core::fmt::Debug>::fmt", "<alloc::vec::Vec<T,A> as core::fmt::Debug>::fmt"),
    # Go: written by its runtime with name and system name alike
    ("main.(*Server).handle", "main.(*Server).handle"),
    ("main.Map[...]", "main.Map[...]"),
    ("main.(*List[...]).Push", "main.(*List[...]).Push"),
    ("main.Map[...].func1", "main.Map[...].func1"),
    ("main.main.func2.1", "main.main.func2.1"),
    ("example.com/m/v2/pkg.(*T).M", "example.com/m/v2/pkg.(*T).M"),
    ("runtime.mallocgc", "runtime.mallocgc"),
    # Java (JFR, async-profiler) and others
    ("java.util.HashMap.<init>", "java.util.HashMap.<init>"),
    ("com.example.Foo.bar(Ljava/lang/String;)V", "com.example.Foo.bar(Ljava/lang/String;)V"),
    ("Array.prototype.map (native)", "Array.prototype.map (native)"),
    # brackets that do not pair up: pprof stops removing at an unmatched close
    ("a::b(int))c<d>", "a::b(int))c<d>"),
    ("x::y<int", "x::y<int"),
    ("p::q>(r)", "p::q>(r)"),
    # not mangled after all
    ("", "_Znot_really"),
    ("", "_ZN3fooE"),
    ("", "plain_c"),
]


def names_profile(here):
    p = Profile("samples", "count")
    root = ("main", "main")
    for i, (n, s) in enumerate(NAMES):
        p.sample([[(n, s)], [root]], 1000 + 7 * i)
    p.write(os.path.join(here, "names.pb.gz"))


def go(n):
    return (n, n)


def drop_profile(here, drop, keep, path):
    p = Profile("alloc_space", "bytes")
    main, work, leaf = go("main.main"), go("main.work"), go("main.leaf")
    new, malloc, alloc = go("operator new(unsigned long)"), go("malloc"), go("tc_malloc_internal")
    wrap = go("std::vector<int>::reserve(unsigned long)")
    # leaf-first stacks
    p.sample([[leaf], [work], [main]], 100)
    p.sample([[alloc], [malloc], [new], [work], [main]], 200)
    p.sample([[alloc], [malloc], [work], [main]], 300)
    # malloc with the allocator inlined in its location, called by an inlined wrapper
    p.sample([[alloc, malloc, wrap], [work], [main]], 400)
    # malloc at the root: nothing above it is a user frame, nothing is cut
    p.sample([[alloc], [malloc]], 500)
    # a frame keep_frames saves from drop_frames
    p.sample([[alloc], [go("malloc_keep")], [work], [main]], 600)
    # dropped frames below a user frame below a dropped frame
    p.sample([[leaf], [malloc], [work], [main]], 700)
    p.sample([[leaf], [new], [main]], 800)
    p.drop, p.keep = drop, keep
    p.write(os.path.join(here, path))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    names_profile(here)
    drop_profile(here, "malloc.*|operator new", "malloc_keep", "drop_frames.pb.gz")
    drop_profile(here, "malloc(", "", "bad_regex.pb.gz")


if __name__ == "__main__":
    main()
