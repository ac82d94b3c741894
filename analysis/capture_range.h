// The capture ranges (capture_range option, RunInfo::capture_range): which calls the analysis judges. One place for
// the option, recordings, reports and the analysis.
//
//   ""                  every call
//   cudaProfilerApi     the calls between cudaProfilerStart and cudaProfilerStop (as nsys's --capture-range)
//   nvtx:NAME           the calls made inside an NVTX push/pop range NAME, in any domain: on the call's own thread, or a
//                       region of the whole process (asynccheck_region_push, include/asynccheck.h)
//   nvtx:NAME@DOMAIN    the same, in DOMAIN only (the last '@' separates it; a NAME holding '@' ends with "@*", any
//                       domain)
//
// An NVTX range is read from what each call recorded (ApiCall::nvtx_range names its innermost range and, through the
// parents, every range it is nested in), so a recording can be analyzed again with another range.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace asynccheck {

struct NvtxRange;

struct CaptureRange {
  enum class Kind { Every, ProfilerApi, Nvtx };
  Kind kind = Kind::Every;
  std::string name;    // Nvtx: the range's name
  std::string domain;  // Nvtx: its domain ("" = NVTX's default one), when not any_domain
  bool any_domain = true;
};

// The range `text` names, or nothing when it is not one (capture_range_error says what is valid). Inline: the
// options library checks the option without the analysis.
inline std::optional<CaptureRange> parse_capture_range(std::string_view text) {
  CaptureRange r;
  if (text.empty()) return r;
  if (text == "cudaProfilerApi") {
    r.kind = CaptureRange::Kind::ProfilerApi;
    return r;
  }
  constexpr std::string_view kNvtx = "nvtx:";
  if (text.substr(0, kNvtx.size()) != kNvtx) return std::nullopt;
  r.kind = CaptureRange::Kind::Nvtx;
  std::string_view rest = text.substr(kNvtx.size());
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view domain = rest.substr(at + 1);
    rest = rest.substr(0, at);
    if (domain.empty()) return std::nullopt;
    r.any_domain = domain == "*";
    if (!r.any_domain) r.domain = std::string(domain);
  }
  if (rest.empty()) return std::nullopt;
  r.name = std::string(rest);
  return r;
}

inline std::string capture_range_error(std::string_view where, std::string_view text) {
  return (where.empty() ? std::string() : std::string(where) + ": ") + "'" + std::string(text) +
         "' is not a capture range (valid: cudaProfilerApi, the calls between cudaProfilerStart and cudaProfilerStop; "
         "nvtx:NAME or nvtx:NAME@DOMAIN, the calls inside NVTX range NAME; empty: every call)" +
         // ASYNCCHECK_OPTIONS=capture_range=nvtx:step reads as "nvtx" then an item "step": ':' separates items.
         (text == "nvtx" ? "; in ASYNCCHECK_OPTIONS quote it: capture_range=\"nvtx:NAME\"" : "");
}

inline bool known_capture_range(std::string_view text) { return parse_capture_range(text).has_value(); }

// Whether NVTX node `id` (ApiCall::nvtx_range) is the capture range or nested in it. `lookup(id)` gives a node (the
// log's table offline, the capture's live); each node is looked up once, its answer kept.
class NvtxRangeMatch {
 public:
  NvtxRangeMatch(CaptureRange range, std::function<NvtxRange(uint32_t)> lookup);
  bool inside(uint32_t id);

 private:
  CaptureRange range_;
  std::function<NvtxRange(uint32_t)> lookup_;
  // Copies of AnalysisOptions share one match: the analysis thread's, and the exiting thread's analysis when that
  // thread did not stop in time (capture.cpp finish). Uncontended otherwise.
  std::mutex mu_;
  std::vector<int8_t> known_;  // per id: -1 not looked up yet, 0 outside, 1 inside
};

// AnalysisOptions::in_nvtx_range for `range`: empty unless it is an NVTX range.
std::function<bool(uint32_t)> nvtx_range_test(const CaptureRange& range, std::function<NvtxRange(uint32_t)> lookup);

}  // namespace asynccheck
