// Fabricated event logs for the analysis tests, shaped like GPU runs (timestamps in ns).
#pragma once

#include <cstdint>

#include "analysis/events.h"

namespace asynccheck::test_logs {

inline constexpr uint64_t kMs = 1'000'000;
inline constexpr uint64_t kUs = 1'000;

struct Builder {
  EventLog log;
  uint64_t next_corr = 1;
  Builder() { log.api_names = {"api"}; }

  rules::CallDescription& last() { return log.calls.back().call; }
  ApiCall& call(rules::ApiKind api, uint64_t start, uint64_t end, uint64_t stream = 0) {
    ApiCall c;
    c.correlation_id = next_corr++;
    c.start_ns = start;
    c.end_ns = end;
    c.call.api = api;
    c.stream = stream;
    log.calls.push_back(c);
    return log.calls.back();
  }
  ApiCall& copy(bool async, rules::CopyDirection dir, rules::MemoryKind src, rules::MemoryKind dst, uint64_t bytes,
                uint64_t start, uint64_t end, uint64_t stream = 0) {
    ApiCall& c = call(rules::ApiKind::Copy, start, end, stream);
    c.call.async_form = async;
    c.call.direction = dir;
    c.call.src = src;
    c.call.dst = dst;
    c.call.bytes = bytes;
    return c;
  }
  // GPU work `c` enqueued, on CUPTI stream `stream`; returns its index in log.ops.
  size_t op(GpuOpKind kind, const ApiCall& c, uint64_t start, uint64_t end, uint32_t stream, uint8_t src_kind = 0,
            uint8_t dst_kind = 0) {
    GpuOp o;
    o.kind = kind;
    o.correlation_id = c.correlation_id;
    o.start_ns = start;
    o.end_ns = end;
    o.stream_id = stream;
    o.src_kind = src_kind;
    o.dst_kind = dst_kind;
    log.ops.push_back(o);
    return log.ops.size() - 1;
  }
  ApiCall& stream_create(uint64_t handle, uint32_t flags, uint64_t t) {
    ApiCall& c = call(rules::ApiKind::StreamCreate, t, t + 10);
    c.handle = handle;
    c.flags = flags;
    return c;
  }
  // A launch at `t` on stream `handle` of a kernel that runs [start, end) on CUPTI stream `stream_id`.
  size_t kernel(uint64_t handle, uint32_t stream_id, uint64_t t, uint64_t start, uint64_t end, uint64_t function) {
    ApiCall& k = call(rules::ApiKind::KernelLaunch, t, t + 5 * kUs, handle);
    k.function = function;
    return op(GpuOpKind::Kernel, k, start, end, stream_id);
  }
};

}  // namespace asynccheck::test_logs
