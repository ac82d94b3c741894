// NVTX push/pop ranges, so that a finding names the innermost range it happened in (`in NVTX range "forward"`).
// CUPTI delivers the program's NVTX calls (cupti/subscriber.h, enable_nvtx) to on_callback on the calling thread;
// each thread keeps its own stack of open ranges, and a watched CUDA call reads the top of it (current()): one
// thread-local load, nothing else on the path of ordinary CUDA calls. Names are interned once (a push of a name
// seen before only looks it up), at most kMaxNames of them; what a push or pop costs is the program's own NVTX cost.
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
inline constexpr size_t kMaxNameBytes = 512;
inline constexpr std::string_view kTooMany = "(more distinct NVTX range names than asynccheck keeps)";
// Open ranges kept per thread; deeper pushes (a push without its pop, in a loop) are counted, not kept, and the
// deepest kept range stays the one named.
inline constexpr size_t kMaxDepth = 1024;

// CUPTI's NVTX callback (CUPTI_CB_DOMAIN_NVTX): `cbid` a CUpti_nvtx_api_trace_cbid, `params` and `result` the
// CUpti_NvtxData's functionParams and functionReturnValue. Ids it does not handle are ignored.
void on_callback(uint32_t cbid, const void* params, const void* result);

// The innermost push/pop range open on the calling thread: 0 for none, else N for names()[N - 1].
uint32_t current();

// Every range name interned so far, in id order (id N is element N - 1): for EventLog::nvtx_ranges.
std::vector<NvtxRange> names();

}  // namespace asynccheck::nvtx_ranges
