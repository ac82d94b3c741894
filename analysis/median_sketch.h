// The median of a site's times without keeping every time: a histogram of log-spaced buckets (8 to an octave, so a
// bucket is ~9% wide). The analysis of the whole log and the streaming one (streaming.h) fill the same buckets, so a
// site's median is the same whichever made the report; exact medians need every sample, which compaction drops.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <map>

namespace asynccheck {

// Sites of at most this many calls report the exact median of their samples (compaction keeps that many of each
// key: CompactOptions::samples_per_site); larger ones the sketch's.
inline constexpr uint64_t kExactMedianCalls = 64;

using MedianSketch = std::map<uint16_t, uint64_t>;  // bucket -> calls

inline uint16_t sketch_bucket(uint64_t ns) {
  if (ns < 2) return 0;
  return static_cast<uint16_t>(std::floor(std::log2(static_cast<double>(ns)) * 8.0));
}

// The middle of a bucket (its geometric centre), in ns.
inline uint64_t sketch_value(uint16_t bucket) { return static_cast<uint64_t>(std::exp2((bucket + 0.5) / 8.0)); }

// The upper median (as aggregate() takes it of samples): the bucket holding the call at index count / 2.
inline uint64_t sketch_median(const MedianSketch& sketch) {
  uint64_t count = 0;
  for (const auto& [bucket, n] : sketch) count += n;
  uint64_t seen = 0;
  for (const auto& [bucket, n] : sketch) {
    seen += n;
    if (seen > count / 2) return sketch_value(bucket);
  }
  return 0;
}

}  // namespace asynccheck
