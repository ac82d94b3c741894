// Unit tests of the watched-API table and of the decoding of CUPTI parameter structs (no GPU needed: the tests
// build the `<api>_params` structs that CUPTI would pass and decode them).
#include "cupti/api_table.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>  // also brings generated_cuda_runtime_api_meta.h and generated_cuda_meta.h
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <iostream>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace asynccheck::cupti {
namespace {

using rules::ApiKind;
using rules::CopyDirection;

// A recognizable fake handle or pointer of any handle type.
template <class T>
T fake(uintptr_t v) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

const ApiSpec& runtime_spec(CUpti_runtime_api_trace_cbid cbid) {
  const ApiSpec* spec = find_api(Domain::Runtime, static_cast<uint32_t>(cbid));
  if (spec == nullptr) throw std::runtime_error("runtime cbid not watched: " + std::to_string(cbid));
  return *spec;
}
const ApiSpec& driver_spec(CUpti_driver_api_trace_cbid cbid) {
  const ApiSpec* spec = find_api(Domain::Driver, static_cast<uint32_t>(cbid));
  if (spec == nullptr) throw std::runtime_error("driver cbid not watched: " + std::to_string(cbid));
  return *spec;
}

// Decodes entry (and exit, as CUPTI would call both with the same params struct).
template <class P>
ApiCall rt(CUpti_runtime_api_trace_cbid cbid, const P& params) {
  ApiCall call;
  const ApiSpec& spec = runtime_spec(cbid);
  decode_enter(spec, &params, call);
  decode_exit(spec, &params, call);
  return call;
}
template <class P>
ApiCall drv(CUpti_driver_api_trace_cbid cbid, const P& params) {
  ApiCall call;
  const ApiSpec& spec = driver_spec(cbid);
  decode_enter(spec, &params, call);
  decode_exit(spec, &params, call);
  return call;
}

cudaPitchedPtr pitched_ptr(void* ptr, size_t pitch, size_t xsize, size_t ysize) {
  cudaPitchedPtr p{};
  p.ptr = ptr;
  p.pitch = pitch;
  p.xsize = xsize;
  p.ysize = ysize;
  return p;
}
cudaExtent extent3(size_t width, size_t height, size_t depth) {
  cudaExtent e{};
  e.width = width;
  e.height = height;
  e.depth = depth;
  return e;
}

constexpr uintptr_t kDst = 0x7f0000001000;
constexpr uintptr_t kSrc = 0x7f0000002000;
constexpr uintptr_t kStream = 0x5a5a00;
constexpr uintptr_t kEvent = 0xe0e000;
constexpr uintptr_t kFunc = 0x401000;

// ---------------------------------------------------------------- the table

TEST(ApiTable, EveryEntryIsFoundWithTheSameSpecAndHasAName) {
  size_t runtime = 0;
  size_t driver = 0;
  for (const ApiSpec& spec : watched_apis()) {
    ASSERT_NE(spec.name, nullptr);
    EXPECT_GT(std::strlen(spec.name), 0u) << spec.cbid;
    EXPECT_EQ(find_api(spec.domain, spec.cbid), &spec) << spec.name;
    (spec.domain == Domain::Runtime ? runtime : driver) += 1;
  }
  std::cout << "watched: " << runtime << " runtime, " << driver << " driver callback ids\n";
  EXPECT_GT(runtime, 100u);
  EXPECT_GT(driver, 140u);
}

TEST(ApiTable, NoDuplicateDomainAndCbid) {
  std::set<std::pair<Domain, uint32_t>> seen;
  for (const ApiSpec& spec : watched_apis()) {
    EXPECT_TRUE(seen.insert({spec.domain, spec.cbid}).second) << spec.name << " " << spec.cbid;
  }
}

TEST(ApiTable, CbidsAreWithinCuptiRange) {
  for (const ApiSpec& spec : watched_apis()) {
    const uint32_t size = spec.domain == Domain::Runtime ? static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE)
                                                         : static_cast<uint32_t>(CUPTI_DRIVER_TRACE_CBID_SIZE);
    EXPECT_GT(spec.cbid, 0u) << spec.name;
    EXPECT_LT(spec.cbid, size) << spec.name;
  }
}

TEST(ApiTable, EveryApiKindButOtherIsWatched) {
  std::set<ApiKind> kinds;
  for (const ApiSpec& spec : watched_apis()) kinds.insert(spec.kind);
  for (int k = 0; k < static_cast<int>(ApiKind::Other); ++k) {
    EXPECT_TRUE(kinds.count(static_cast<ApiKind>(k))) << "ApiKind " << k << " has no watched function";
  }
  EXPECT_FALSE(kinds.count(ApiKind::Other));
}

TEST(ApiTable, UnwatchedCallbackIdsAreNotFound) {
  EXPECT_EQ(find_api(Domain::Runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020), nullptr);
  EXPECT_EQ(find_api(Domain::Driver, CUPTI_DRIVER_TRACE_CBID_cuDeviceGet), nullptr);
  EXPECT_EQ(find_api(Domain::Runtime, CUPTI_RUNTIME_TRACE_CBID_INVALID), nullptr);
  EXPECT_EQ(find_api(Domain::Driver, CUPTI_DRIVER_TRACE_CBID_INVALID), nullptr);
  EXPECT_EQ(find_api(Domain::Runtime, CUPTI_RUNTIME_TRACE_CBID_SIZE), nullptr);
  EXPECT_EQ(find_api(Domain::Driver, 0xffffffffu), nullptr);
  EXPECT_EQ(find_api(static_cast<Domain>(7), CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020), nullptr);
}

TEST(ApiTable, DomainsAreKeptApart) {
  // cbid 41 is cudaMemcpyAsync_v3020 in the runtime domain and something else in the driver domain.
  const ApiSpec* rt_spec = find_api(Domain::Runtime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020);
  ASSERT_NE(rt_spec, nullptr);
  EXPECT_EQ(rt_spec->domain, Domain::Runtime);
  EXPECT_STREQ(rt_spec->name, "cudaMemcpyAsync");
  const ApiSpec* drv_spec = find_api(Domain::Driver, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2);
  ASSERT_NE(drv_spec, nullptr);
  EXPECT_EQ(drv_spec->domain, Domain::Driver);
  EXPECT_STREQ(drv_spec->name, "cuMemcpyHtoD");
}

TEST(ApiTable, NamesFormsAndPerThreadVariants) {
  const ApiSpec& a = runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000);
  EXPECT_STREQ(a.name, "cudaMemcpyAsync");
  EXPECT_EQ(a.kind, ApiKind::Copy);
  EXPECT_TRUE(a.async_form);
  EXPECT_TRUE(a.per_thread);

  const ApiSpec& b = runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020);
  EXPECT_STREQ(b.name, "cudaMemcpy");
  EXPECT_FALSE(b.async_form);
  EXPECT_FALSE(b.per_thread);

  const ApiSpec& c = runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000);
  EXPECT_STREQ(c.name, "cudaMemcpy");
  EXPECT_FALSE(c.async_form);
  EXPECT_TRUE(c.per_thread);

  const ApiSpec& d = driver_spec(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz);
  EXPECT_STREQ(d.name, "cuMemcpyDtoHAsync");
  EXPECT_TRUE(d.async_form);
  EXPECT_TRUE(d.per_thread);

  const ApiSpec& e = driver_spec(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz);
  EXPECT_EQ(e.kind, ApiKind::StreamSynchronize);
  EXPECT_TRUE(e.per_thread);
  EXPECT_FALSE(driver_spec(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize).per_thread);

  EXPECT_EQ(runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020).kind, ApiKind::StreamQuery);
  EXPECT_EQ(driver_spec(CUPTI_DRIVER_TRACE_CBID_cuEventQuery).kind, ApiKind::StreamQuery);
  EXPECT_EQ(driver_spec(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize).kind, ApiKind::DeviceSynchronize);
  EXPECT_EQ(runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020).kind, ApiKind::DeviceAlloc);
  EXPECT_EQ(runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaFreeArray_v3020).kind, ApiKind::Free);
  EXPECT_EQ(runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020).kind, ApiKind::StreamOrderedAlloc);
  EXPECT_EQ(driver_spec(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync).kind, ApiKind::StreamOrderedFree);
}

TEST(ApiTable, PerThreadEntriesAreExactlyThePtdsAndPtszCallbackIds) {
  // Cross-check the table's flag against CUPTI's own naming by looking at a few names CUPTI uses.
  const std::pair<Domain, uint32_t> per_thread[] = {
      {Domain::Runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000},
      {Domain::Runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000},
      {Domain::Runtime, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000},
      {Domain::Runtime, CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_ptds_v7000},
      {Domain::Runtime, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020},
      {Domain::Driver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz},
      {Domain::Driver, CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2_ptds},
      {Domain::Driver, CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync_ptsz},
      {Domain::Driver, CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz},
  };
  for (const auto& [domain, cbid] : per_thread) {
    const ApiSpec* spec = find_api(domain, cbid);
    ASSERT_NE(spec, nullptr) << cbid;
    EXPECT_TRUE(spec->per_thread) << spec->name;
  }
  const std::string suffixes[] = {"_ptds", "_ptsz", "_v3020", "_v7000", "_v2"};
  for (const ApiSpec& spec : watched_apis()) {
    const std::string name = spec.name;
    for (const auto& s : suffixes) {
      if (name == "cuCtxSynchronize_v2") continue;  // a distinct public function, not a versioned alias
      EXPECT_EQ(name.find(s), std::string::npos) << name;
    }
  }
}

// ---------------------------------------------------------------- decoding: common fields

TEST(Decode, EnterFillsTheSpecFieldsAndLeavesTheRestToTheCaller) {
  cudaMemcpyAsync_ptsz_v7000_params p{fake<void*>(kDst), fake<const void*>(kSrc), 4096, cudaMemcpyHostToDevice,
                                      fake<cudaStream_t>(kStream)};
  ApiCall call;
  call.correlation_id = 77;
  call.thread = 3;
  call.start_ns = 1000;
  const ApiSpec& spec = runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000);
  decode_enter(spec, &p, call);
  EXPECT_EQ(call.cbid, static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000));
  EXPECT_EQ(call.domain, Domain::Runtime);
  EXPECT_EQ(call.call.api, ApiKind::Copy);
  EXPECT_TRUE(call.call.async_form);
  EXPECT_TRUE(call.call.per_thread_variant);
  EXPECT_EQ(call.call.direction, CopyDirection::HostToDevice);
  EXPECT_EQ(call.call.bytes, 4096u);
  EXPECT_EQ(call.stream, kStream);
  // Untouched.
  EXPECT_EQ(call.correlation_id, 77u);
  EXPECT_EQ(call.thread, 3u);
  EXPECT_EQ(call.start_ns, 1000u);
  EXPECT_EQ(call.call.src, rules::MemoryKind::Unknown);
  EXPECT_EQ(call.call.dst, rules::MemoryKind::Unknown);
  EXPECT_EQ(call.call.stream, rules::StreamKind::Unknown);
}

TEST(Decode, NullParamsFillOnlyTheSpecFields) {
  ApiCall call;
  const ApiSpec& spec = runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020);
  decode_enter(spec, nullptr, call);
  decode_exit(spec, nullptr, call);
  EXPECT_EQ(call.call.api, ApiKind::DeviceSynchronize);
  EXPECT_EQ(call.domain, Domain::Runtime);
  EXPECT_EQ(call.cbid, static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020));

  ApiCall call2;
  const ApiSpec& ctx = driver_spec(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize);
  decode_enter(ctx, nullptr, call2);
  EXPECT_EQ(call2.call.api, ApiKind::DeviceSynchronize);
  EXPECT_EQ(call2.domain, Domain::Driver);
}

TEST(Decode, ASpecCopiedOutOfTheTableStillDecodes) {
  const ApiSpec copy = runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020);
  cudaMemcpy_v3020_params p{fake<void*>(kDst), fake<const void*>(kSrc), 64, cudaMemcpyDeviceToHost};
  ApiCall call;
  decode_enter(copy, &p, call);
  EXPECT_EQ(call.call.direction, CopyDirection::DeviceToHost);
  EXPECT_EQ(call.call.bytes, 64u);
  EXPECT_EQ(call.dst_ptr, kDst);
}

// ---------------------------------------------------------------- runtime copies

TEST(DecodeRuntimeCopy, MemcpyAsync) {
  cudaMemcpyAsync_v3020_params p{fake<void*>(kDst), fake<const void*>(kSrc), 1 << 20, cudaMemcpyDeviceToHost,
                                 fake<cudaStream_t>(kStream)};
  const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, p);
  EXPECT_EQ(c.call.api, ApiKind::Copy);
  EXPECT_TRUE(c.call.async_form);
  EXPECT_FALSE(c.call.per_thread_variant);
  EXPECT_EQ(c.call.direction, CopyDirection::DeviceToHost);
  EXPECT_EQ(c.call.bytes, 1u << 20);
  EXPECT_EQ(c.dst_ptr, kDst);
  EXPECT_EQ(c.src_ptr, kSrc);
  EXPECT_EQ(c.stream, kStream);
  EXPECT_EQ(c.handle, 0u);
}

TEST(DecodeRuntimeCopy, MemcpyKinds) {
  const std::pair<cudaMemcpyKind, CopyDirection> kinds[] = {
      {cudaMemcpyHostToHost, CopyDirection::HostToHost},     {cudaMemcpyHostToDevice, CopyDirection::HostToDevice},
      {cudaMemcpyDeviceToHost, CopyDirection::DeviceToHost}, {cudaMemcpyDeviceToDevice, CopyDirection::DeviceToDevice},
      {cudaMemcpyDefault, CopyDirection::Default},           {static_cast<cudaMemcpyKind>(7), CopyDirection::Unknown},
  };
  for (const auto& [kind, dir] : kinds) {
    cudaMemcpy_ptds_v7000_params p{fake<void*>(kDst), fake<const void*>(kSrc), 8, kind};
    const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000, p);
    EXPECT_EQ(c.call.direction, dir) << static_cast<int>(kind);
    EXPECT_TRUE(c.call.per_thread_variant);
    EXPECT_FALSE(c.call.async_form);
    EXPECT_EQ(c.stream, 0u);
  }
}

TEST(DecodeRuntimeCopy, Memcpy2DCountsWidthTimesHeight) {
  cudaMemcpy2D_v3020_params p{fake<void*>(kDst), 1024, fake<const void*>(kSrc), 512, 300, 7, cudaMemcpyHostToDevice};
  const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020, p);
  EXPECT_EQ(c.call.bytes, 300u * 7u);
  EXPECT_EQ(c.call.direction, CopyDirection::HostToDevice);
  EXPECT_EQ(c.dst_ptr, kDst);
  EXPECT_EQ(c.src_ptr, kSrc);

  cudaMemcpy2DAsync_ptsz_v7000_params a{
      fake<void*>(kDst),          1024, fake<const void*>(kSrc), 512, 100, 10, cudaMemcpyDeviceToHost,
      fake<cudaStream_t>(kStream)};
  const ApiCall ca = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000, a);
  EXPECT_EQ(ca.call.bytes, 1000u);
  EXPECT_EQ(ca.call.direction, CopyDirection::DeviceToHost);
  EXPECT_EQ(ca.stream, kStream);
  EXPECT_TRUE(ca.call.async_form);
  EXPECT_TRUE(ca.call.per_thread_variant);
}

TEST(DecodeRuntimeCopy, ArraysAreRecordedByHandle) {
  const uintptr_t array = 0xa77a0;
  cudaMemcpyToArray_v3020_params to{fake<cudaArray_t>(array), 0,   0,
                                    fake<const void*>(kSrc),  256, cudaMemcpyHostToDevice};
  const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToArray_v3020, to);
  EXPECT_EQ(c.dst_ptr, array);
  EXPECT_EQ(c.src_ptr, kSrc);
  EXPECT_EQ(c.call.bytes, 256u);
  EXPECT_EQ(c.call.direction, CopyDirection::HostToDevice);

  cudaMemcpy2DFromArrayAsync_v3020_params from{
      fake<void*>(kDst),          64, fake<cudaArray_const_t>(array), 0, 0, 16, 4, cudaMemcpyDeviceToHost,
      fake<cudaStream_t>(kStream)};
  const ApiCall f = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArrayAsync_v3020, from);
  EXPECT_EQ(f.src_ptr, array);
  EXPECT_EQ(f.dst_ptr, kDst);
  EXPECT_EQ(f.call.bytes, 64u);
  EXPECT_EQ(f.call.direction, CopyDirection::DeviceToHost);
  EXPECT_EQ(f.stream, kStream);
}

TEST(DecodeRuntimeCopy, SymbolIsTheDeviceSide) {
  const uintptr_t symbol = 0x601040;
  cudaMemcpyToSymbol_v3020_params to{fake<const void*>(symbol), fake<const void*>(kSrc), 128, 16,
                                     cudaMemcpyHostToDevice};
  const ApiCall t = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020, to);
  EXPECT_EQ(t.dst_ptr, symbol);
  EXPECT_EQ(t.src_ptr, kSrc);
  EXPECT_EQ(t.call.bytes, 128u);
  EXPECT_EQ(t.call.direction, CopyDirection::HostToDevice);

  cudaMemcpyFromSymbolAsync_ptsz_v7000_params from{fake<void*>(kDst),      fake<const void*>(symbol),  32, 0,
                                                   cudaMemcpyDeviceToHost, fake<cudaStream_t>(kStream)};
  const ApiCall f = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000, from);
  EXPECT_EQ(f.src_ptr, symbol);
  EXPECT_EQ(f.dst_ptr, kDst);
  EXPECT_EQ(f.call.direction, CopyDirection::DeviceToHost);
  EXPECT_EQ(f.stream, kStream);
  EXPECT_TRUE(f.call.per_thread_variant);
}

TEST(DecodeRuntimeCopy, PeerCopiesAreDeviceToDevice) {
  cudaMemcpyPeerAsync_v4000_params p{fake<void*>(kDst),          1, fake<const void*>(kSrc), 0, 999,
                                     fake<cudaStream_t>(kStream)};
  const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000, p);
  EXPECT_EQ(c.call.direction, CopyDirection::DeviceToDevice);
  EXPECT_EQ(c.call.bytes, 999u);
  EXPECT_EQ(c.stream, kStream);
  EXPECT_EQ(c.dst_ptr, kDst);
  EXPECT_EQ(c.src_ptr, kSrc);
}

TEST(DecodeRuntimeCopy, Memcpy3D) {
  cudaMemcpy3DParms parms{};
  parms.srcPtr = pitched_ptr(fake<void*>(kSrc), 512, 100, 10);
  parms.dstPtr = pitched_ptr(fake<void*>(kDst), 512, 100, 10);
  parms.extent = extent3(100, 10, 3);
  parms.kind = cudaMemcpyHostToDevice;
  cudaMemcpy3DAsync_v3020_params p{&parms, fake<cudaStream_t>(kStream)};
  const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020, p);
  EXPECT_EQ(c.call.bytes, 3000u);
  EXPECT_EQ(c.call.direction, CopyDirection::HostToDevice);
  EXPECT_EQ(c.src_ptr, kSrc);
  EXPECT_EQ(c.dst_ptr, kDst);
  EXPECT_EQ(c.stream, kStream);

  // An array side is recorded by its handle.
  parms.dstArray = fake<cudaArray_t>(0xa77a0);
  parms.kind = cudaMemcpyDefault;
  cudaMemcpy3D_ptds_v7000_params s{&parms};
  const ApiCall cs = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_ptds_v7000, s);
  EXPECT_EQ(cs.dst_ptr, 0xa77a0u);
  EXPECT_EQ(cs.call.direction, CopyDirection::Default);
  EXPECT_TRUE(cs.call.per_thread_variant);

  // A null descriptor does not crash.
  cudaMemcpy3D_v3020_params null{nullptr};
  const ApiCall cn = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020, null);
  EXPECT_EQ(cn.call.bytes, 0u);
  EXPECT_EQ(cn.call.direction, CopyDirection::Unknown);
}

TEST(DecodeRuntimeCopy, Memcpy3DPeerIsDeviceToDevice) {
  cudaMemcpy3DPeerParms parms{};
  parms.srcPtr = pitched_ptr(fake<void*>(kSrc), 256, 64, 4);
  parms.dstPtr = pitched_ptr(fake<void*>(kDst), 256, 64, 4);
  parms.srcDevice = 0;
  parms.dstDevice = 1;
  parms.extent = extent3(64, 4, 2);
  cudaMemcpy3DPeerAsync_ptsz_v7000_params p{&parms, fake<cudaStream_t>(kStream)};
  const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_ptsz_v7000, p);
  EXPECT_EQ(c.call.direction, CopyDirection::DeviceToDevice);
  EXPECT_EQ(c.call.bytes, 512u);
  EXPECT_EQ(c.stream, kStream);
}

TEST(DecodeRuntimeCopy, BatchAsync) {
  void* dsts[] = {fake<void*>(kDst), fake<void*>(kDst + 0x1000)};
  const void* srcs[] = {fake<const void*>(kSrc), fake<const void*>(kSrc + 0x1000)};
  size_t sizes[] = {100, 200};
  cudaMemcpyBatchAsync_v13000_params p{dsts, srcs, sizes, 2, nullptr, nullptr, 0, fake<cudaStream_t>(kStream)};
  const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000, p);
  EXPECT_EQ(c.call.bytes, 300u);
  EXPECT_EQ(c.call.direction, CopyDirection::Default);
  EXPECT_EQ(c.dst_ptr, kDst);
  EXPECT_EQ(c.src_ptr, kSrc);
  EXPECT_EQ(c.stream, kStream);
  EXPECT_TRUE(c.call.async_form);
}

TEST(DecodeRuntimeCopy, Batch3DAsync) {
  cudaMemcpy3DBatchOp ops[2]{};
  for (auto& op : ops) {
    op.src.type = cudaMemcpyOperandTypeArray;
    op.src.op.array.array = fake<cudaArray_t>(0xa1);
    op.dst.type = cudaMemcpyOperandTypeArray;
    op.dst.op.array.array = fake<cudaArray_t>(0xa2);
    op.extent = extent3(4, 4, 1);
  }
  cudaMemcpy3DBatchAsync_ptsz_v13000_params p{2, ops, 0, fake<cudaStream_t>(kStream)};
  const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DBatchAsync_ptsz_v13000, p);
  EXPECT_EQ(c.call.direction, CopyDirection::DeviceToDevice);
  EXPECT_EQ(c.call.bytes, 32u);
  EXPECT_EQ(c.src_ptr, 0xa1u);
  EXPECT_EQ(c.dst_ptr, 0xa2u);
  EXPECT_TRUE(c.call.per_thread_variant);

  ops[1].src.type = cudaMemcpyOperandTypePointer;
  ops[1].src.op.ptr.ptr = fake<void*>(kSrc);
  const ApiCall mixed = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DBatchAsync_ptsz_v13000, p);
  EXPECT_EQ(mixed.call.direction, CopyDirection::Default);
}

// ---------------------------------------------------------------- driver copies

TEST(DecodeDriverCopy, DirectionFromTheName) {
  cuMemcpyHtoD_v2_params h2d{fake<CUdeviceptr>(kDst), fake<const void*>(kSrc), 4096};
  const ApiCall a = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, h2d);
  EXPECT_EQ(a.domain, Domain::Driver);
  EXPECT_EQ(a.call.api, ApiKind::Copy);
  EXPECT_EQ(a.call.direction, CopyDirection::HostToDevice);
  EXPECT_EQ(a.call.bytes, 4096u);
  EXPECT_EQ(a.dst_ptr, kDst);
  EXPECT_EQ(a.src_ptr, kSrc);
  EXPECT_FALSE(a.call.async_form);

  cuMemcpyDtoHAsync_v2_ptsz_params d2h{fake<void*>(kDst), fake<CUdeviceptr>(kSrc), 77, fake<CUstream>(kStream)};
  const ApiCall b = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz, d2h);
  EXPECT_EQ(b.call.direction, CopyDirection::DeviceToHost);
  EXPECT_EQ(b.call.bytes, 77u);
  EXPECT_EQ(b.dst_ptr, kDst);
  EXPECT_EQ(b.src_ptr, kSrc);
  EXPECT_EQ(b.stream, kStream);
  EXPECT_TRUE(b.call.async_form);
  EXPECT_TRUE(b.call.per_thread_variant);

  cuMemcpyDtoD_v2_ptds_params d2d{fake<CUdeviceptr>(kDst), fake<CUdeviceptr>(kSrc), 8};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds, d2d).call.direction, CopyDirection::DeviceToDevice);
}

TEST(DecodeDriverCopy, ArraysCountAsDevice) {
  const uintptr_t array = 0xa77a0;
  cuMemcpyHtoA_v2_params h2a{fake<CUarray>(array), 0, fake<const void*>(kSrc), 64};
  const ApiCall a = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoA_v2, h2a);
  EXPECT_EQ(a.call.direction, CopyDirection::HostToDevice);
  EXPECT_EQ(a.dst_ptr, array);
  EXPECT_EQ(a.src_ptr, kSrc);

  cuMemcpyAtoHAsync_v2_params a2h{fake<void*>(kDst), fake<CUarray>(array), 0, 32, fake<CUstream>(kStream)};
  const ApiCall b = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync_v2, a2h);
  EXPECT_EQ(b.call.direction, CopyDirection::DeviceToHost);
  EXPECT_EQ(b.src_ptr, array);
  EXPECT_EQ(b.dst_ptr, kDst);
  EXPECT_EQ(b.stream, kStream);

  cuMemcpyDtoA_v2_params d2a{fake<CUarray>(array), 0, fake<CUdeviceptr>(kSrc), 16};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoA_v2, d2a).call.direction, CopyDirection::DeviceToDevice);
  cuMemcpyAtoD_v2_params a2d{fake<CUdeviceptr>(kDst), fake<CUarray>(array), 0, 16};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoD_v2, a2d).call.direction, CopyDirection::DeviceToDevice);
  cuMemcpyAtoA_v2_params a2a{fake<CUarray>(array), 0, fake<CUarray>(array + 1), 0, 16};
  const ApiCall e = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoA_v2, a2a);
  EXPECT_EQ(e.call.direction, CopyDirection::DeviceToDevice);
  EXPECT_EQ(e.src_ptr, array + 1);
  EXPECT_EQ(e.dst_ptr, array);
}

TEST(DecodeDriverCopy, LegacyEntryPointsWith32BitDevicePointers) {
  cuMemcpyHtoD_params p{0x1000u, fake<const void*>(kSrc), 512u};
  const ApiCall c = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD, p);
  EXPECT_EQ(c.call.direction, CopyDirection::HostToDevice);
  EXPECT_EQ(c.dst_ptr, 0x1000u);
  EXPECT_EQ(c.call.bytes, 512u);
  cuMemsetD32_params m{0x2000u, 7u, 10u};
  const ApiCall cm = drv(CUPTI_DRIVER_TRACE_CBID_cuMemsetD32, m);
  EXPECT_EQ(cm.call.bytes, 40u);
  EXPECT_EQ(cm.dst_ptr, 0x2000u);
}

TEST(DecodeDriverCopy, UnifiedAddressingCopiesAreDefault) {
  cuMemcpy_params p{fake<CUdeviceptr>(kDst), fake<CUdeviceptr>(kSrc), 100};
  const ApiCall c = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpy, p);
  EXPECT_EQ(c.call.direction, CopyDirection::Default);
  EXPECT_EQ(c.dst_ptr, kDst);
  EXPECT_EQ(c.src_ptr, kSrc);
  EXPECT_EQ(c.call.bytes, 100u);

  cuMemcpyAsync_ptsz_params a{fake<CUdeviceptr>(kDst), fake<CUdeviceptr>(kSrc), 100, fake<CUstream>(kStream)};
  const ApiCall ca = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz, a);
  EXPECT_EQ(ca.call.direction, CopyDirection::Default);
  EXPECT_EQ(ca.stream, kStream);
  EXPECT_TRUE(ca.call.per_thread_variant);

  cuMemcpyPeerAsync_params peer{
      fake<CUdeviceptr>(kDst), fake<CUcontext>(0xc1), fake<CUdeviceptr>(kSrc), fake<CUcontext>(0xc2), 10,
      fake<CUstream>(kStream)};
  const ApiCall cp = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync, peer);
  EXPECT_EQ(cp.call.direction, CopyDirection::DeviceToDevice);
  EXPECT_EQ(cp.dst_ptr, kDst);
  EXPECT_EQ(cp.src_ptr, kSrc);
  EXPECT_EQ(cp.stream, kStream);
}

TEST(DecodeDriverCopy, Memcpy3DMemoryTypes) {
  CUDA_MEMCPY3D d{};
  d.srcMemoryType = CU_MEMORYTYPE_HOST;
  d.srcHost = fake<const void*>(kSrc);
  d.srcDevice = 0xbad;  // ignored for a host source
  d.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  d.dstDevice = kDst;
  d.WidthInBytes = 100;
  d.Height = 20;
  d.Depth = 3;
  cuMemcpy3D_v2_params p{&d};
  const ApiCall c = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2, p);
  EXPECT_EQ(c.call.direction, CopyDirection::HostToDevice);
  EXPECT_EQ(c.call.bytes, 6000u);
  EXPECT_EQ(c.src_ptr, kSrc);
  EXPECT_EQ(c.dst_ptr, kDst);

  d.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  d.srcArray = fake<CUarray>(0xa77a0);
  d.dstMemoryType = CU_MEMORYTYPE_HOST;
  d.dstHost = fake<void*>(kDst);
  cuMemcpy3DAsync_v2_ptsz_params a{&d, fake<CUstream>(kStream)};
  const ApiCall ca = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2_ptsz, a);
  EXPECT_EQ(ca.call.direction, CopyDirection::DeviceToHost);
  EXPECT_EQ(ca.src_ptr, 0xa77a0u);
  EXPECT_EQ(ca.dst_ptr, kDst);
  EXPECT_EQ(ca.stream, kStream);
  EXPECT_TRUE(ca.call.async_form);
  EXPECT_TRUE(ca.call.per_thread_variant);

  d.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  d.srcDevice = kSrc;
  const ApiCall cu = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2, p);
  EXPECT_EQ(cu.call.direction, CopyDirection::Default);
  EXPECT_EQ(cu.src_ptr, kSrc);

  d.srcMemoryType = CU_MEMORYTYPE_HOST;
  d.dstMemoryType = CU_MEMORYTYPE_HOST;
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2, p).call.direction, CopyDirection::HostToHost);

  d.dstMemoryType = static_cast<CUmemorytype>(0);
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2, p).call.direction, CopyDirection::Unknown);

  cuMemcpy3D_v2_params null{nullptr};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2, null).call.bytes, 0u);
}

TEST(DecodeDriverCopy, Memcpy2DAndPeer3D) {
  CUDA_MEMCPY2D d{};
  d.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  d.srcDevice = kSrc;
  d.dstMemoryType = CU_MEMORYTYPE_HOST;
  d.dstHost = fake<void*>(kDst);
  d.WidthInBytes = 33;
  d.Height = 3;
  cuMemcpy2DAsync_v2_params p{&d, fake<CUstream>(kStream)};
  const ApiCall c = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2, p);
  EXPECT_EQ(c.call.direction, CopyDirection::DeviceToHost);
  EXPECT_EQ(c.call.bytes, 99u);
  EXPECT_EQ(c.stream, kStream);
  cuMemcpy2DUnaligned_v2_ptds_params u{&d};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2_ptds, u).call.bytes, 99u);

  CUDA_MEMCPY3D_PEER q{};
  q.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  q.srcDevice = kSrc;
  q.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  q.dstDevice = kDst;
  q.WidthInBytes = 10;
  q.Height = 10;
  q.Depth = 10;
  cuMemcpy3DPeer_params pp{&q};
  const ApiCall cp = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeer, pp);
  EXPECT_EQ(cp.call.direction, CopyDirection::DeviceToDevice);
  EXPECT_EQ(cp.call.bytes, 1000u);
}

// The CUDA 3.1 descriptor as cuda.h lays it out (its __CUDA_API_VERSION_INTERNAL section).
struct Legacy2D {
  unsigned int srcXInBytes, srcY;
  CUmemorytype srcMemoryType;
  const void* srcHost;
  unsigned int srcDevice;
  CUarray srcArray;
  unsigned int srcPitch;
  unsigned int dstXInBytes, dstY;
  CUmemorytype dstMemoryType;
  void* dstHost;
  unsigned int dstDevice;
  CUarray dstArray;
  unsigned int dstPitch;
  unsigned int WidthInBytes, Height;
};

TEST(DecodeDriverCopy, LegacyMemcpy2DDescriptor) {
  Legacy2D d{};
  d.srcMemoryType = CU_MEMORYTYPE_HOST;
  d.srcHost = fake<const void*>(kSrc);
  d.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  d.dstDevice = 0x4000u;
  d.WidthInBytes = 16;
  d.Height = 4;
  cuMemcpy2D_params p{reinterpret_cast<const CUDA_MEMCPY2D_v1*>(&d)};
  const ApiCall c = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D, p);
  EXPECT_EQ(c.call.direction, CopyDirection::HostToDevice);
  EXPECT_EQ(c.call.bytes, 64u);
  EXPECT_EQ(c.src_ptr, kSrc);
  EXPECT_EQ(c.dst_ptr, 0x4000u);
}

TEST(DecodeDriverCopy, BatchAsync) {
  CUdeviceptr dsts[] = {kDst, kDst + 64};
  CUdeviceptr srcs[] = {kSrc, kSrc + 64};
  size_t sizes[] = {64, 64};
  cuMemcpyBatchAsync_v2_params p{dsts, srcs, sizes, 2, nullptr, nullptr, 0, fake<CUstream>(kStream)};
  const ApiCall c = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2, p);
  EXPECT_EQ(c.call.bytes, 128u);
  EXPECT_EQ(c.call.direction, CopyDirection::Default);
  EXPECT_EQ(c.dst_ptr, kDst);
  EXPECT_EQ(c.src_ptr, kSrc);
  EXPECT_EQ(c.stream, kStream);

  cuMemcpyBatchAsync_params old{dsts, srcs, sizes, 1, nullptr, nullptr, 0, nullptr, fake<CUstream>(kStream)};
  const ApiCall co = drv(CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync, old);
  EXPECT_EQ(co.call.bytes, 64u);
  EXPECT_EQ(co.stream, kStream);
}

// ---------------------------------------------------------------- memsets

TEST(DecodeMemset, Runtime) {
  cudaMemset_v3020_params p{fake<void*>(kDst), 0, 1000};
  const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, p);
  EXPECT_EQ(c.call.api, ApiKind::Memset);
  EXPECT_EQ(c.dst_ptr, kDst);
  EXPECT_EQ(c.src_ptr, 0u);
  EXPECT_EQ(c.call.bytes, 1000u);
  EXPECT_EQ(c.call.direction, CopyDirection::Unknown);
  EXPECT_FALSE(c.call.async_form);

  cudaMemset2DAsync_ptsz_v7000_params p2{fake<void*>(kDst), 512, 0, 100, 5, fake<cudaStream_t>(kStream)};
  const ApiCall c2 = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_ptsz_v7000, p2);
  EXPECT_EQ(c2.call.bytes, 500u);
  EXPECT_EQ(c2.stream, kStream);
  EXPECT_TRUE(c2.call.async_form);
  EXPECT_TRUE(c2.call.per_thread_variant);

  cudaMemset3D_v3020_params p3{pitched_ptr(fake<void*>(kDst), 256, 200, 2), 0, extent3(200, 2, 4)};
  const ApiCall c3 = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_v3020, p3);
  EXPECT_EQ(c3.dst_ptr, kDst);
  EXPECT_EQ(c3.call.bytes, 1600u);
}

TEST(DecodeMemset, DriverElementSizes) {
  cuMemsetD8_v2_params p8{fake<CUdeviceptr>(kDst), 0, 100};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, p8).call.bytes, 100u);

  cuMemsetD16_v2_params p16{fake<CUdeviceptr>(kDst), 0, 100};
  const ApiCall c16 = drv(CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2, p16);
  EXPECT_EQ(c16.call.bytes, 200u);
  EXPECT_EQ(c16.dst_ptr, kDst);
  EXPECT_EQ(c16.call.api, ApiKind::Memset);

  cuMemsetD32Async_params p32{fake<CUdeviceptr>(kDst), 0, 100, fake<CUstream>(kStream)};
  const ApiCall c32 = drv(CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, p32);
  EXPECT_EQ(c32.call.bytes, 400u);
  EXPECT_EQ(c32.stream, kStream);
  EXPECT_TRUE(c32.call.async_form);

  cuMemsetD2D16Async_ptsz_params q16{fake<CUdeviceptr>(kDst), 1024, 0, 10, 3, fake<CUstream>(kStream)};
  const ApiCall d16 = drv(CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async_ptsz, q16);
  EXPECT_EQ(d16.call.bytes, 60u);
  EXPECT_TRUE(d16.call.per_thread_variant);

  cuMemsetD2D32_v2_ptds_params q32{fake<CUdeviceptr>(kDst), 1024, 0, 10, 3};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2_ptds, q32).call.bytes, 120u);
}

// ---------------------------------------------------------------- launches

TEST(DecodeLaunch, RuntimeLaunchKernel) {
  cudaLaunchKernel_v7000_params p{fake<const void*>(kFunc),   dim3(8), dim3(256), nullptr, 0,
                                  fake<cudaStream_t>(kStream)};
  const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, p);
  EXPECT_EQ(c.call.api, ApiKind::KernelLaunch);
  EXPECT_EQ(c.function, kFunc);
  EXPECT_EQ(c.stream, kStream);

  cudaLaunchCooperativeKernel_ptsz_v9000_params q{fake<const void*>(kFunc), dim3(1), dim3(32), nullptr, 0, nullptr};
  const ApiCall cq = rt(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000, q);
  EXPECT_EQ(cq.function, kFunc);
  EXPECT_EQ(cq.stream, 0u);
  EXPECT_TRUE(cq.call.per_thread_variant);
}

TEST(DecodeLaunch, RuntimeLaunchKernelExTakesTheStreamFromTheConfig) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(4);
  config.blockDim = dim3(128);
  config.stream = fake<cudaStream_t>(kStream);
  cudaLaunchKernelExC_v11060_params p{&config, fake<const void*>(kFunc), nullptr};
  const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, p);
  EXPECT_EQ(c.function, kFunc);
  EXPECT_EQ(c.stream, kStream);

  cudaLaunchKernelExC_ptsz_v11060_params null{nullptr, fake<const void*>(kFunc), nullptr};
  const ApiCall cn = rt(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060, null);
  EXPECT_EQ(cn.function, kFunc);
  EXPECT_EQ(cn.stream, 0u);
  EXPECT_TRUE(cn.call.per_thread_variant);
}

TEST(DecodeLaunch, DriverLaunches) {
  cuLaunchKernel_params p{fake<CUfunction>(kFunc), 1, 1, 1, 32, 1, 1, 0, fake<CUstream>(kStream), nullptr, nullptr};
  const ApiCall c = drv(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, p);
  EXPECT_EQ(c.call.api, ApiKind::KernelLaunch);
  EXPECT_EQ(c.function, kFunc);
  EXPECT_EQ(c.stream, kStream);

  CUlaunchConfig config{};
  config.hStream = fake<CUstream>(kStream + 1);
  cuLaunchKernelEx_ptsz_params e{&config, fake<CUfunction>(kFunc), nullptr, nullptr};
  const ApiCall ce = drv(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, e);
  EXPECT_EQ(ce.function, kFunc);
  EXPECT_EQ(ce.stream, kStream + 1);
  EXPECT_TRUE(ce.call.per_thread_variant);

  cuLaunchCooperativeKernel_params q{fake<CUfunction>(kFunc), 1, 1, 1, 32, 1, 1, 0, fake<CUstream>(kStream), nullptr};
  const ApiCall cq = drv(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, q);
  EXPECT_EQ(cq.function, kFunc);
  EXPECT_EQ(cq.stream, kStream);
}

TEST(DecodeLaunch, GraphLaunch) {
  cudaGraphLaunch_v10000_params p{fake<cudaGraphExec_t>(0x6e0), fake<cudaStream_t>(kStream)};
  const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, p);
  EXPECT_EQ(c.call.api, ApiKind::GraphLaunch);
  EXPECT_EQ(c.stream, kStream);
  EXPECT_EQ(c.handle, 0x6e0u);

  cuGraphLaunch_ptsz_params q{fake<CUgraphExec>(0x6e1), fake<CUstream>(kStream)};
  const ApiCall cq = drv(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, q);
  EXPECT_EQ(cq.stream, kStream);
  EXPECT_EQ(cq.handle, 0x6e1u);
  EXPECT_TRUE(cq.call.per_thread_variant);

  cuGraphLaunch_params r{fake<CUgraphExec>(0x6e2), fake<CUstream>(kStream)};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, r).handle, 0x6e2u);
}

// ---------------------------------------------------------------- streams and events

TEST(DecodeStream, CreateFlagsAtEntryAndTheStreamAtExit) {
  cudaStream_t created = fake<cudaStream_t>(0);
  cudaStreamCreateWithFlags_v5000_params p{&created, cudaStreamNonBlocking};
  ApiCall call;
  const ApiSpec& spec = runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithFlags_v5000);
  decode_enter(spec, &p, call);
  EXPECT_EQ(call.call.api, ApiKind::StreamCreate);
  EXPECT_EQ(call.flags, static_cast<uint32_t>(cudaStreamNonBlocking));
  EXPECT_EQ(call.handle, 0u);
  created = fake<cudaStream_t>(kStream);  // what the runtime writes before returning
  decode_exit(spec, &p, call);
  EXPECT_EQ(call.handle, kStream);
  EXPECT_EQ(call.flags, static_cast<uint32_t>(cudaStreamNonBlocking));

  cudaStream_t s2 = fake<cudaStream_t>(kStream + 2);
  cudaStreamCreate_v3020_params plain{&s2};
  const ApiCall c2 = rt(CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020, plain);
  EXPECT_EQ(c2.flags, 0u);
  EXPECT_EQ(c2.handle, kStream + 2);

  cudaStreamCreateWithPriority_v5050_params prio{&s2, cudaStreamNonBlocking, -1};
  EXPECT_EQ(rt(CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithPriority_v5050, prio).flags, 1u);

  CUstream hs = fake<CUstream>(kStream + 3);
  cuStreamCreate_params d{&hs, CU_STREAM_NON_BLOCKING};
  const ApiCall cd = drv(CUPTI_DRIVER_TRACE_CBID_cuStreamCreate, d);
  EXPECT_EQ(cd.flags, static_cast<uint32_t>(CU_STREAM_NON_BLOCKING));
  EXPECT_EQ(cd.handle, kStream + 3);

  cuStreamCreateWithPriority_params dp{&hs, 0, 0};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuStreamCreateWithPriority, dp).handle, kStream + 3);

  // A null out-parameter (a failing call) is skipped.
  cudaStreamCreate_v3020_params null{nullptr};
  EXPECT_EQ(rt(CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020, null).handle, 0u);
}

TEST(DecodeStream, DestroySynchronizeQuery) {
  cudaStreamDestroy_v5050_params p{fake<cudaStream_t>(kStream)};
  const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050, p);
  EXPECT_EQ(c.call.api, ApiKind::StreamDestroy);
  EXPECT_EQ(c.handle, kStream);
  EXPECT_EQ(c.stream, kStream);

  cuStreamDestroy_v2_params d{fake<CUstream>(kStream)};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2, d).handle, kStream);

  cudaStreamSynchronize_ptsz_v7000_params s{fake<cudaStream_t>(0)};
  const ApiCall cs = rt(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000, s);
  EXPECT_EQ(cs.call.api, ApiKind::StreamSynchronize);
  EXPECT_EQ(cs.stream, 0u);
  EXPECT_TRUE(cs.call.per_thread_variant);

  cuStreamSynchronize_params ds{fake<CUstream>(kStream)};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, ds).handle, kStream);

  cudaStreamQuery_v3020_params q{fake<cudaStream_t>(kStream)};
  const ApiCall cq = rt(CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020, q);
  EXPECT_EQ(cq.call.api, ApiKind::StreamQuery);
  EXPECT_EQ(cq.stream, kStream);
  EXPECT_EQ(cq.handle, kStream);

  cuStreamQuery_ptsz_params dq{fake<CUstream>(kStream)};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz, dq).stream, kStream);
}

TEST(DecodeCapture, BeginRecordsTheStreamAndTheMode) {
  cudaStreamBeginCapture_v10000_params p{fake<cudaStream_t>(kStream), cudaStreamCaptureModeRelaxed};
  const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000, p);
  EXPECT_EQ(c.call.api, ApiKind::CaptureBegin);
  EXPECT_STREQ(runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000).name, "cudaStreamBeginCapture");
  EXPECT_EQ(c.stream, kStream);
  EXPECT_EQ(c.flags, 2u);
  EXPECT_EQ(c.handle, 0u);

  cudaStreamBeginCapture_ptsz_v10000_params pt{fake<cudaStream_t>(0), cudaStreamCaptureModeThreadLocal};
  const ApiCall cpt = rt(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000, pt);
  EXPECT_TRUE(cpt.call.per_thread_variant);
  EXPECT_EQ(cpt.flags, 1u);

  cudaStreamBeginCaptureToGraph_v12030_params tg{
      fake<cudaStream_t>(kStream), fake<cudaGraph_t>(0x9a1), nullptr, nullptr, 0, cudaStreamCaptureModeGlobal};
  const ApiCall ctg = rt(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_v12030, tg);
  EXPECT_EQ(ctg.call.api, ApiKind::CaptureBegin);
  EXPECT_EQ(ctg.stream, kStream);
  EXPECT_EQ(ctg.handle, 0x9a1u);
  EXPECT_EQ(ctg.flags, 0u);

  cuStreamBeginCapture_v2_params d{fake<CUstream>(kStream + 1), CU_STREAM_CAPTURE_MODE_RELAXED};
  const ApiCall cd = drv(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, d);
  EXPECT_EQ(cd.call.api, ApiKind::CaptureBegin);
  EXPECT_EQ(cd.stream, kStream + 1);
  EXPECT_EQ(cd.flags, static_cast<uint32_t>(CU_STREAM_CAPTURE_MODE_RELAXED));

  cuStreamBeginCapture_params old{fake<CUstream>(kStream + 2)};  // CUDA 10.0: no mode argument
  const ApiCall co = drv(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture, old);
  EXPECT_EQ(co.stream, kStream + 2);
  EXPECT_EQ(co.flags, 0u);

  cuStreamBeginCaptureToGraph_ptsz_params dtg{
      fake<CUstream>(kStream), fake<CUgraph>(0x9a2), nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL};
  const ApiCall cdtg = drv(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz, dtg);
  EXPECT_EQ(cdtg.handle, 0x9a2u);
  EXPECT_EQ(cdtg.flags, 1u);
  EXPECT_TRUE(cdtg.call.per_thread_variant);
}

TEST(DecodeCapture, EndRecordsTheStreamAndTheGraphMadeAtExit) {
  cudaGraph_t graph = fake<cudaGraph_t>(0);
  cudaStreamEndCapture_v10000_params p{fake<cudaStream_t>(kStream), &graph};
  ApiCall call;
  const ApiSpec& spec = runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000);
  decode_enter(spec, &p, call);
  EXPECT_EQ(call.call.api, ApiKind::CaptureEnd);
  EXPECT_EQ(call.stream, kStream);
  EXPECT_EQ(call.handle, 0u);
  graph = fake<cudaGraph_t>(0x9a3);  // what the runtime writes before returning
  decode_exit(spec, &p, call);
  EXPECT_EQ(call.handle, 0x9a3u);

  CUgraph hg = fake<CUgraph>(0x9a4);
  cuStreamEndCapture_ptsz_params d{fake<CUstream>(kStream), &hg};
  const ApiCall cd = drv(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz, d);
  EXPECT_EQ(cd.call.api, ApiKind::CaptureEnd);
  EXPECT_EQ(cd.handle, 0x9a4u);
  EXPECT_TRUE(cd.call.per_thread_variant);

  cuStreamEndCapture_params null{fake<CUstream>(kStream), nullptr};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture, null).handle, 0u);
}

TEST(DecodeEvent, CreateRecordWaitSynchronizeQuery) {
  cudaEvent_t ev = fake<cudaEvent_t>(kEvent);
  cudaEventCreateWithFlags_v3020_params cf{&ev, cudaEventBlockingSync | cudaEventDisableTiming};
  const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020, cf);
  EXPECT_EQ(c.call.api, ApiKind::EventCreate);
  EXPECT_EQ(c.flags, 3u);
  EXPECT_EQ(c.handle, kEvent);

  cudaEventCreate_v3020_params cp{&ev};
  const ApiCall cc = rt(CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020, cp);
  EXPECT_EQ(cc.flags, 0u);
  EXPECT_EQ(cc.handle, kEvent);

  CUevent hev = fake<CUevent>(kEvent + 1);
  cuEventCreate_params dc{&hev, CU_EVENT_BLOCKING_SYNC};
  const ApiCall cdc = drv(CUPTI_DRIVER_TRACE_CBID_cuEventCreate, dc);
  EXPECT_EQ(cdc.flags, static_cast<uint32_t>(CU_EVENT_BLOCKING_SYNC));
  EXPECT_EQ(cdc.handle, kEvent + 1);

  cudaEventRecordWithFlags_ptsz_v11010_params r{fake<cudaEvent_t>(kEvent), fake<cudaStream_t>(kStream),
                                                cudaEventRecordExternal};
  const ApiCall cr = rt(CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010, r);
  EXPECT_EQ(cr.call.api, ApiKind::EventRecord);
  EXPECT_EQ(cr.handle, kEvent);
  EXPECT_EQ(cr.stream, kStream);
  EXPECT_EQ(cr.flags, 1u);
  EXPECT_TRUE(cr.call.per_thread_variant);

  cuEventRecord_ptsz_params dr{fake<CUevent>(kEvent), fake<CUstream>(kStream)};
  const ApiCall cdr = drv(CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz, dr);
  EXPECT_EQ(cdr.handle, kEvent);
  EXPECT_EQ(cdr.stream, kStream);

  cudaStreamWaitEvent_v3020_params w{fake<cudaStream_t>(kStream), fake<cudaEvent_t>(kEvent), 0};
  const ApiCall cw = rt(CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020, w);
  EXPECT_EQ(cw.call.api, ApiKind::StreamWaitEvent);
  EXPECT_EQ(cw.stream, kStream);
  EXPECT_EQ(cw.handle, kEvent);

  cuStreamWaitEvent_ptsz_params dw{fake<CUstream>(kStream), fake<CUevent>(kEvent), 0};
  const ApiCall cdw = drv(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz, dw);
  EXPECT_EQ(cdw.stream, kStream);
  EXPECT_EQ(cdw.handle, kEvent);
  EXPECT_TRUE(cdw.call.per_thread_variant);

  cudaEventSynchronize_v3020_params s{fake<cudaEvent_t>(kEvent)};
  const ApiCall cs = rt(CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, s);
  EXPECT_EQ(cs.call.api, ApiKind::EventSynchronize);
  EXPECT_EQ(cs.handle, kEvent);
  EXPECT_EQ(cs.stream, 0u);

  cuEventSynchronize_params ds{fake<CUevent>(kEvent)};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, ds).handle, kEvent);

  cudaEventQuery_v3020_params q{fake<cudaEvent_t>(kEvent)};
  const ApiCall cq = rt(CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, q);
  EXPECT_EQ(cq.call.api, ApiKind::StreamQuery);
  EXPECT_EQ(cq.handle, kEvent);
}

TEST(DecodeSync, ContextSynchronize) {
  cuCtxSynchronize_v2_params p{fake<CUcontext>(0xc7)};
  const ApiCall c = drv(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2, p);
  EXPECT_EQ(c.call.api, ApiKind::DeviceSynchronize);
  EXPECT_EQ(c.handle, 0xc7u);
  EXPECT_STREQ(driver_spec(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2).name, "cuCtxSynchronize_v2");
}

// ---------------------------------------------------------------- allocation and free

TEST(DecodeAlloc, MallocPointerAtExit) {
  void* ptr = nullptr;
  cudaMalloc_v3020_params p{&ptr, 1 << 20};
  ApiCall call;
  const ApiSpec& spec = runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020);
  decode_enter(spec, &p, call);
  EXPECT_EQ(call.call.api, ApiKind::DeviceAlloc);
  EXPECT_EQ(call.call.bytes, 1u << 20);
  EXPECT_EQ(call.handle, 0u);
  ptr = fake<void*>(kDst);
  decode_exit(spec, &p, call);
  EXPECT_EQ(call.handle, kDst);
  EXPECT_EQ(call.call.bytes, 1u << 20);
}

TEST(DecodeAlloc, PitchedAllocationsRecordPitchTimesHeight) {
  void* ptr = fake<void*>(kDst);
  size_t pitch = 512;
  cudaMallocPitch_v3020_params p{&ptr, &pitch, 500, 10};
  ApiCall call;
  const ApiSpec& spec = runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020);
  decode_enter(spec, &p, call);
  EXPECT_EQ(call.call.bytes, 5000u);
  decode_exit(spec, &p, call);
  EXPECT_EQ(call.call.bytes, 5120u);
  EXPECT_EQ(call.handle, kDst);

  CUdeviceptr dptr = kDst + 1;
  size_t dpitch = 1024;
  cuMemAllocPitch_v2_params d{&dptr, &dpitch, 1000, 4, 4};
  const ApiCall cd = drv(CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, d);
  EXPECT_EQ(cd.handle, kDst + 1);
  EXPECT_EQ(cd.call.bytes, 4096u);

  cudaPitchedPtr pitched = pitched_ptr(fake<void*>(kDst + 2), 256, 200, 3);
  cudaMalloc3D_v3020_params m3{&pitched, extent3(200, 3, 2)};
  ApiCall c3;
  const ApiSpec& spec3 = runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020);
  decode_enter(spec3, &m3, c3);
  EXPECT_EQ(c3.call.bytes, 1200u);
  decode_exit(spec3, &m3, c3);
  EXPECT_EQ(c3.handle, kDst + 2);
  EXPECT_EQ(c3.call.bytes, 1536u);
}

TEST(DecodeAlloc, ArraysFromTheChannelFormat) {
  cudaArray_t array = fake<cudaArray_t>(0xa77a0);
  const cudaChannelFormatDesc desc{32, 32, 32, 32, cudaChannelFormatKindFloat};  // float4: 16 bytes
  cudaMallocArray_v3020_params p{&array, &desc, 64, 0, 0};
  const ApiCall c = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020, p);
  EXPECT_EQ(c.call.api, ApiKind::DeviceAlloc);
  EXPECT_EQ(c.call.bytes, 64u * 16u);
  EXPECT_EQ(c.handle, 0xa77a0u);

  cudaMalloc3DArray_v3020_params p3{&array, &desc, extent3(8, 8, 2), 0};
  EXPECT_EQ(rt(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3DArray_v3020, p3).call.bytes, 8u * 8u * 2u * 16u);

  cudaFreeArray_v3020_params f{array};
  const ApiCall cf = rt(CUPTI_RUNTIME_TRACE_CBID_cudaFreeArray_v3020, f);
  EXPECT_EQ(cf.call.api, ApiKind::Free);
  EXPECT_EQ(cf.handle, 0xa77a0u);
}

TEST(DecodeAlloc, PinnedManagedAndStreamOrdered) {
  void* host = fake<void*>(kSrc);
  cudaHostAlloc_v3020_params h{&host, 4096, cudaHostAllocPortable};
  const ApiCall ch = rt(CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, h);
  EXPECT_EQ(ch.call.api, ApiKind::PinnedAlloc);
  EXPECT_EQ(ch.call.bytes, 4096u);
  EXPECT_EQ(ch.flags, static_cast<uint32_t>(cudaHostAllocPortable));
  EXPECT_EQ(ch.handle, kSrc);

  cudaMallocHost_v3020_params mh{&host, 100};
  const ApiCall cmh = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020, mh);
  EXPECT_EQ(cmh.call.api, ApiKind::PinnedAlloc);
  EXPECT_EQ(cmh.handle, kSrc);
  EXPECT_EQ(cmh.call.bytes, 100u);

  void* managed = fake<void*>(kDst);
  cudaMallocManaged_v6000_params m{&managed, 256, cudaMemAttachGlobal};
  const ApiCall cm = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000, m);
  EXPECT_EQ(cm.call.api, ApiKind::ManagedAlloc);
  EXPECT_EQ(cm.flags, static_cast<uint32_t>(cudaMemAttachGlobal));
  EXPECT_EQ(cm.handle, kDst);

  void* so = fake<void*>(kDst + 8);
  cudaMallocAsync_ptsz_v11020_params a{&so, 64, fake<cudaStream_t>(kStream)};
  const ApiCall ca = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020, a);
  EXPECT_EQ(ca.call.api, ApiKind::StreamOrderedAlloc);
  EXPECT_EQ(ca.stream, kStream);
  EXPECT_EQ(ca.handle, kDst + 8);
  EXPECT_EQ(ca.call.bytes, 64u);
  EXPECT_TRUE(ca.call.per_thread_variant);

  cudaMallocFromPoolAsync_v11020_params fp{&so, 32, fake<cudaMemPool_t>(0x9001), fake<cudaStream_t>(kStream)};
  const ApiCall cfp = rt(CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020, fp);
  EXPECT_EQ(cfp.handle, kDst + 8);
  EXPECT_EQ(cfp.stream, kStream);
  EXPECT_EQ(cfp.call.bytes, 32u);

  CUdeviceptr d = kDst + 16;
  cuMemAlloc_v2_params da{&d, 128};
  const ApiCall cda = drv(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, da);
  EXPECT_EQ(cda.call.api, ApiKind::DeviceAlloc);
  EXPECT_EQ(cda.handle, kDst + 16);
  EXPECT_EQ(cda.call.bytes, 128u);

  void* dh = fake<void*>(kSrc + 16);
  cuMemHostAlloc_params dha{&dh, 512, CU_MEMHOSTALLOC_DEVICEMAP};
  const ApiCall cdha = drv(CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc, dha);
  EXPECT_EQ(cdha.call.api, ApiKind::PinnedAlloc);
  EXPECT_EQ(cdha.flags, static_cast<uint32_t>(CU_MEMHOSTALLOC_DEVICEMAP));
  EXPECT_EQ(cdha.handle, kSrc + 16);

  cuMemAllocHost_v2_params dah{&dh, 8};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, dah).handle, kSrc + 16);

  cuMemAllocManaged_params dm{&d, 64, CU_MEM_ATTACH_GLOBAL};
  const ApiCall cdm = drv(CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, dm);
  EXPECT_EQ(cdm.call.api, ApiKind::ManagedAlloc);
  EXPECT_EQ(cdm.flags, static_cast<uint32_t>(CU_MEM_ATTACH_GLOBAL));

  cuMemAllocAsync_params das{&d, 99, fake<CUstream>(kStream)};
  const ApiCall cdas = drv(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, das);
  EXPECT_EQ(cdas.call.api, ApiKind::StreamOrderedAlloc);
  EXPECT_EQ(cdas.stream, kStream);
  EXPECT_EQ(cdas.handle, kDst + 16);
  EXPECT_EQ(cdas.call.bytes, 99u);
}

TEST(DecodeAlloc, FreesAndRegistrations) {
  cudaFree_v3020_params f{fake<void*>(kDst)};
  const ApiCall cf = rt(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, f);
  EXPECT_EQ(cf.call.api, ApiKind::Free);
  EXPECT_EQ(cf.handle, kDst);

  cudaFreeHost_v3020_params fh{fake<void*>(kSrc)};
  const ApiCall cfh = rt(CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, fh);
  EXPECT_EQ(cfh.call.api, ApiKind::FreeHost);
  EXPECT_EQ(cfh.handle, kSrc);

  cudaFreeAsync_v11020_params fa{fake<void*>(kDst), fake<cudaStream_t>(kStream)};
  const ApiCall cfa = rt(CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020, fa);
  EXPECT_EQ(cfa.call.api, ApiKind::StreamOrderedFree);
  EXPECT_EQ(cfa.handle, kDst);
  EXPECT_EQ(cfa.stream, kStream);
  EXPECT_TRUE(cfa.call.async_form);

  cudaHostRegister_v4000_params r{fake<void*>(kSrc), 8192, cudaHostRegisterMapped};
  const ApiCall cr = rt(CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000, r);
  EXPECT_EQ(cr.call.api, ApiKind::HostRegister);
  EXPECT_EQ(cr.handle, kSrc);
  EXPECT_EQ(cr.call.bytes, 8192u);
  EXPECT_EQ(cr.flags, static_cast<uint32_t>(cudaHostRegisterMapped));

  cudaHostUnregister_v4000_params u{fake<void*>(kSrc)};
  const ApiCall cu = rt(CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000, u);
  EXPECT_EQ(cu.call.api, ApiKind::HostUnregister);
  EXPECT_EQ(cu.handle, kSrc);

  cuMemFree_v2_params df{fake<CUdeviceptr>(kDst)};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, df).handle, kDst);
  cuMemFreeHost_params dfh{fake<void*>(kSrc)};
  const ApiCall cdfh = drv(CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, dfh);
  EXPECT_EQ(cdfh.call.api, ApiKind::FreeHost);
  EXPECT_EQ(cdfh.handle, kSrc);
  cuMemFreeAsync_ptsz_params dfa{fake<CUdeviceptr>(kDst), fake<CUstream>(kStream)};
  const ApiCall cdfa = drv(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, dfa);
  EXPECT_EQ(cdfa.handle, kDst);
  EXPECT_EQ(cdfa.stream, kStream);
  EXPECT_TRUE(cdfa.call.per_thread_variant);

  cuMemHostRegister_v2_params dr{fake<void*>(kSrc), 4096, CU_MEMHOSTREGISTER_PORTABLE};
  const ApiCall cdr = drv(CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2, dr);
  EXPECT_EQ(cdr.call.api, ApiKind::HostRegister);
  EXPECT_EQ(cdr.handle, kSrc);
  EXPECT_EQ(cdr.call.bytes, 4096u);
  EXPECT_EQ(cdr.flags, static_cast<uint32_t>(CU_MEMHOSTREGISTER_PORTABLE));

  cuMemHostUnregister_params du{fake<void*>(kSrc)};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister, du).handle, kSrc);
}

// ---------------------------------------------------------------- cache configuration

TEST(DecodeCacheConfig, RuntimeAndDriver) {
  cudaFuncSetCacheConfig_v3020_params f{fake<const void*>(kFunc), cudaFuncCachePreferL1};
  const ApiCall cf = rt(CUPTI_RUNTIME_TRACE_CBID_cudaFuncSetCacheConfig_v3020, f);
  EXPECT_EQ(cf.call.api, ApiKind::CacheConfig);
  EXPECT_EQ(cf.function, kFunc);
  EXPECT_EQ(cf.flags, static_cast<uint32_t>(cudaFuncCachePreferL1));

  cudaDeviceSetCacheConfig_v3020_params d{cudaFuncCachePreferShared};
  const ApiCall cd = rt(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSetCacheConfig_v3020, d);
  EXPECT_EQ(cd.call.api, ApiKind::CacheConfig);
  EXPECT_EQ(cd.flags, static_cast<uint32_t>(cudaFuncCachePreferShared));
  EXPECT_EQ(cd.function, 0u);

  cuFuncSetCacheConfig_params df{fake<CUfunction>(kFunc), CU_FUNC_CACHE_PREFER_EQUAL};
  const ApiCall cdf = drv(CUPTI_DRIVER_TRACE_CBID_cuFuncSetCacheConfig, df);
  EXPECT_EQ(cdf.function, kFunc);
  EXPECT_EQ(cdf.flags, static_cast<uint32_t>(CU_FUNC_CACHE_PREFER_EQUAL));

  cuCtxSetCacheConfig_params dc{CU_FUNC_CACHE_PREFER_L1};
  EXPECT_EQ(drv(CUPTI_DRIVER_TRACE_CBID_cuCtxSetCacheConfig, dc).flags, static_cast<uint32_t>(CU_FUNC_CACHE_PREFER_L1));
}

// ---------------------------------------------------------------- exit decoding leaves entry results alone

TEST(Decode, ExitOfACallWithoutOutParametersChangesNothing) {
  cudaMemcpyAsync_v3020_params p{fake<void*>(kDst), fake<const void*>(kSrc), 10, cudaMemcpyHostToDevice,
                                 fake<cudaStream_t>(kStream)};
  ApiCall call;
  const ApiSpec& spec = runtime_spec(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020);
  decode_enter(spec, &p, call);
  const ApiCall before = call;
  decode_exit(spec, &p, call);
  EXPECT_EQ(call.dst_ptr, before.dst_ptr);
  EXPECT_EQ(call.src_ptr, before.src_ptr);
  EXPECT_EQ(call.stream, before.stream);
  EXPECT_EQ(call.handle, before.handle);
  EXPECT_EQ(call.flags, before.flags);
  EXPECT_EQ(call.function, before.function);
  EXPECT_EQ(call.call.bytes, before.call.bytes);
  EXPECT_EQ(call.call.direction, before.call.direction);
}

}  // namespace
}  // namespace asynccheck::cupti
