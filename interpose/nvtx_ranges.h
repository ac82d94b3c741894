// NVTX push/pop ranges, so that a finding names the range it happened in (`in NVTX range "step > forward"`).
// CUPTI delivers the program's NVTX calls (cupti/subscriber.h, enable_nvtx) to on_callback on the calling thread;
// each thread keeps its own stack of open ranges, and a watched CUDA call reads the top of it (current()): two
// thread-local loads and an atomic one, nothing else on the path of ordinary CUDA calls.
//
// What a call records is a node: the innermost range and, through its parent, every range it is nested in, so that
// `capture_range=nvtx:NAME` and a test's region are found however deep the program's own ranges go. Names and nodes
// are interned once (a push seen before only looks them up), at most kMaxNames and kMaxRanges of them; what a push or
// pop costs is the program's own NVTX cost.
//
// Regions (region_push, the library's asynccheck_region_push: include/asynccheck.h) are ranges of the whole
// process, in domain "asynccheck": every thread's stack is nested in the regions open when its call is made, so that
// a region names the work of every thread (PyTorch's backward runs on threads of its own).
//
// Push/pop ranges only (nvtxRangePushA/W/Ex, nvtxDomainRangePushEx, nvtxRangePop, nvtxDomainRangePop), per thread
// and per domain as NVTX defines them. Start/end ranges (nvtxRangeStartA/W/Ex, nvtxDomainRangeStartEx) are left
// out on purpose: they may overlap without nesting and end on another thread than the one that started them, so a
// call has no "innermost" one, only a set of ranges some other thread may close at any time.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "analysis/events.h"

namespace asynccheck::nvtx_ranges {

// Distinct (domain, name) pairs interned; later new names all become kTooMany (programs that put a counter in the
// name, "step 1234", would otherwise grow the table without bound). Each name is cut at kMaxNameBytes.
inline constexpr size_t kMaxNames = 4096;
// Distinct nestings (a name inside a given node) of the program's ranges; past them a nesting is recorded as its
// nearest enclosing node (an outermost range: one node named kTooMany), and counted (unkept()).
inline constexpr size_t kMaxRanges = 16384;
// Regions' names and nodes, a budget of their own: a test suite's regions stay named whatever the program's ranges.
inline constexpr size_t kMaxRegionNames = 65536;
inline constexpr size_t kMaxRegionNodes = 65536;
inline constexpr std::string_view kRegionDomain = "asynccheck";
inline constexpr size_t kMaxNameBytes = 512;
inline constexpr std::string_view kTooMany = "(more distinct NVTX range names than asynccheck keeps)";
// Open ranges kept per thread; deeper pushes (a push without its pop, in a loop) are counted, not kept, and the
// deepest kept range stays the one named.
inline constexpr size_t kMaxDepth = 1024;

// CUPTI's NVTX callback (CUPTI_CB_DOMAIN_NVTX): `cbid` a CUpti_nvtx_api_trace_cbid, `params` and `result` the
// CUpti_NvtxData's functionParams and functionReturnValue. Ids it does not handle are ignored.
void on_callback(uint32_t cbid, const void* params, const void* result);

// The node of the innermost range open on the calling thread (its own, or else a region): 0 for none, else N for
// names()[N - 1].
uint32_t current();

// The nodes interned so far from index `first` on, in id order (id N is element N - 1 - first): for
// EventLog::nvtx_ranges (all of them), and a recording written as the run goes (those not written yet). Empty if
// the table's lock could not be taken in time (lock_within.h).
std::vector<NvtxRange> names(size_t first = 0);

// Nestings recorded as their enclosing node because the table was full.
uint64_t unkept();

// Node `id` (names()[id - 1]), or an empty range for an id not given yet: for the live analysis' capture range.
NvtxRange range(uint32_t id);

// Opens a region named `name` for every thread of the process / ends the innermost one. The depth after the call,
// or -1: a null name, more than kMaxDepth open, or none to end.
int region_push(const char* name);
int region_pop();

}  // namespace asynccheck::nvtx_ranges
