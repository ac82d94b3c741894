// The watched CUDA API table and the decoding of CUPTI's parameter structs. See api_table.h.
//
// Every row names the CUPTI callback id and the generated `<cbid>_params` struct of CUDA 13.0 explicitly, so a row
// for something the headers do not define does not compile. The decoders are templates over the params struct;
// where runtime and driver (or old and new) structs spell a member differently, they pick the member that the
// struct has at compile time.
#include "cupti/api_table.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
// <cupti.h> defines the stand-ins for the obsolete CUDA 3.1 types (CUdeviceptr_v1, ...) and then includes
// generated_cuda_runtime_api_meta.h and generated_cuda_meta.h itself. Those generated headers have no include
// guards, so they must not be included a second time here.
#include <cupti.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <functional>
#include <type_traits>

namespace asynccheck::cupti {
namespace {

using rules::ApiKind;
using rules::CopyDirection;

using EnterFn = void (*)(const void* params, ApiCall& out);
using ExitFn = void (*)(const void* params, ApiCall& out);

struct Decoders {
  EnterFn enter;
  ExitFn exit;
};

// For the functions that take no arguments (cudaDeviceSynchronize, cuCtxSynchronize): CUPTI passes no struct.
struct NoParams {};

// The CUDA 3.1 (32-bit device pointer) copy descriptors behind cuMemcpy2D/cuMemcpy3D and their Async forms (the
// driver callback ids without _v2). <cupti.h> declares CUDA_MEMCPY2D_v1/CUDA_MEMCPY3D_v1 as dummies; the real
// layout is the one in cuda.h's __CUDA_API_VERSION_INTERNAL section, mirrored member for member here.
struct LegacyMemcpy2D {
  unsigned int srcXInBytes;
  unsigned int srcY;
  CUmemorytype srcMemoryType;
  const void* srcHost;
  unsigned int srcDevice;
  CUarray srcArray;
  unsigned int srcPitch;
  unsigned int dstXInBytes;
  unsigned int dstY;
  CUmemorytype dstMemoryType;
  void* dstHost;
  unsigned int dstDevice;
  CUarray dstArray;
  unsigned int dstPitch;
  unsigned int WidthInBytes;
  unsigned int Height;
};
struct LegacyMemcpy3D {
  unsigned int srcXInBytes;
  unsigned int srcY;
  unsigned int srcZ;
  unsigned int srcLOD;
  CUmemorytype srcMemoryType;
  const void* srcHost;
  unsigned int srcDevice;
  CUarray srcArray;
  void* reserved0;
  unsigned int srcPitch;
  unsigned int srcHeight;
  unsigned int dstXInBytes;
  unsigned int dstY;
  unsigned int dstZ;
  unsigned int dstLOD;
  CUmemorytype dstMemoryType;
  void* dstHost;
  unsigned int dstDevice;
  CUarray dstArray;
  void* reserved1;
  unsigned int dstPitch;
  unsigned int dstHeight;
  unsigned int WidthInBytes;
  unsigned int Height;
  unsigned int Depth;
};

// ---- small helpers ----

// Any handle, pointer, enum or integer as the 64-bit value an ApiCall stores.
template <class T>
constexpr uint64_t u64(T v) {
  if constexpr (std::is_pointer_v<T>) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(v));
  } else if constexpr (std::is_enum_v<T>) {
    return static_cast<uint64_t>(static_cast<std::underlying_type_t<T>>(v));
  } else {
    return static_cast<uint64_t>(v);
  }
}

template <class T>
constexpr uint32_t u32(T v) {
  return static_cast<uint32_t>(u64(v));
}

CopyDirection from_kind(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToHost: return CopyDirection::HostToHost;
    case cudaMemcpyHostToDevice: return CopyDirection::HostToDevice;
    case cudaMemcpyDeviceToHost: return CopyDirection::DeviceToHost;
    case cudaMemcpyDeviceToDevice: return CopyDirection::DeviceToDevice;
    case cudaMemcpyDefault: return CopyDirection::Default;
  }
  return CopyDirection::Unknown;
}

// Where one side of a driver copy descriptor lives: CU_MEMORYTYPE_HOST -> host, DEVICE/ARRAY -> device,
// UNIFIED -> decided by the address (Default).
enum class Side : uint8_t { Unknown, Host, Device, Unified };

Side side_of(CUmemorytype t) {
  switch (t) {
    case CU_MEMORYTYPE_HOST: return Side::Host;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_ARRAY: return Side::Device;
    case CU_MEMORYTYPE_UNIFIED: return Side::Unified;
  }
  return Side::Unknown;
}

CopyDirection from_sides(Side src, Side dst) {
  if (src == Side::Unknown || dst == Side::Unknown) return CopyDirection::Unknown;
  if (src == Side::Unified || dst == Side::Unified) return CopyDirection::Default;
  if (src == Side::Host) return dst == Side::Host ? CopyDirection::HostToHost : CopyDirection::HostToDevice;
  return dst == Side::Host ? CopyDirection::DeviceToHost : CopyDirection::DeviceToDevice;
}

template <class P>
const P& as(const void* params) {
  return *static_cast<const P*>(params);
}

// The stream argument, whatever the struct calls it (runtime: stream, hStream for the stream-ordered allocator;
// driver: hStream). 0 when the function takes none.
template <class P>
uint64_t stream_of(const P& p) {
  if constexpr (requires { p.stream; }) {
    return u64(p.stream);
  } else if constexpr (requires { p.hStream; }) {
    return u64(p.hStream);
  } else {
    return 0;
  }
}

// The flags argument (flags or Flags), 0 when there is none.
template <class P>
uint32_t flags_of(const P& p) {
  if constexpr (requires { p.flags; }) {
    return u32(p.flags);
  } else if constexpr (requires { p.Flags; }) {
    return u32(p.Flags);
  } else {
    return 0;
  }
}

template <class P>
void none(const void*, ApiCall&) {}

// ---- copies ----

// Runtime 1D/2D/array/symbol copies: dst or symbol, src or symbol, count or width*height, kind, [stream].
template <class P>
void rt_copy(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  if constexpr (requires { p.dst; }) {
    o.dst_ptr = u64(p.dst);  // a cudaArray_t for the *ToArray forms
  } else {
    o.dst_ptr = u64(p.symbol);  // cudaMemcpyToSymbol*: the symbol is the device side
  }
  if constexpr (requires { p.src; }) {
    o.src_ptr = u64(p.src);  // a cudaArray_const_t for the *FromArray forms
  } else {
    o.src_ptr = u64(p.symbol);  // cudaMemcpyFromSymbol*
  }
  if constexpr (requires { p.count; }) {
    o.call.bytes = u64(p.count);
  } else {
    o.call.bytes = u64(p.width) * u64(p.height);
  }
  o.call.direction = from_kind(p.kind);
  o.stream = stream_of(p);
}

// cudaMemcpyPeer(Async): device to device between two devices, no kind argument.
template <class P>
void rt_copy_peer(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  o.dst_ptr = u64(p.dst);
  o.src_ptr = u64(p.src);
  o.call.bytes = u64(p.count);
  o.call.direction = CopyDirection::DeviceToDevice;
  o.stream = stream_of(p);
}

// cudaMemcpy3D(Async) and cudaMemcpy3DPeer(Async): the descriptor behind p.p.
template <class P>
void rt_copy3d(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  o.stream = stream_of(p);
  const auto* c = p.p;
  if constexpr (requires { c->kind; }) {
    o.call.direction = c != nullptr ? from_kind(c->kind) : CopyDirection::Unknown;
  } else {
    o.call.direction = CopyDirection::DeviceToDevice;  // cudaMemcpy3DPeerParms: between two devices
  }
  if (c == nullptr) return;
  o.src_ptr = c->srcArray != nullptr ? u64(c->srcArray) : u64(c->srcPtr.ptr);
  o.dst_ptr = c->dstArray != nullptr ? u64(c->dstArray) : u64(c->dstPtr.ptr);
  // Bytes when no array is involved; with an array the width counts elements (a lower bound on the bytes).
  o.call.bytes = u64(c->extent.width) * u64(c->extent.height) * u64(c->extent.depth);
}

// cudaMemcpyBatchAsync / cuMemcpyBatchAsync: count copies, each src/dst/size; direction by address (Default).
// src_ptr/dst_ptr are those of the first copy, bytes the sum of all, flags the count (ApiCall::flags).
template <class P>
void batch_copy(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  o.stream = stream_of(p);
  o.call.direction = CopyDirection::Default;
  if (p.count == 0) return;
  o.flags = static_cast<uint32_t>(std::min<size_t>(p.count, UINT32_MAX));  // copies: an activity record each
  if (p.dsts != nullptr) o.dst_ptr = u64(p.dsts[0]);
  if (p.srcs != nullptr) o.src_ptr = u64(p.srcs[0]);
  if (p.sizes != nullptr) {
    uint64_t total = 0;
    for (size_t i = 0; i < p.count; ++i) total += u64(p.sizes[i]);
    o.call.bytes = total;
  }
}

uint64_t operand_addr(const cudaMemcpy3DOperand& op) {
  return op.type == cudaMemcpyOperandTypeArray ? u64(op.op.array.array) : u64(op.op.ptr.ptr);
}
bool operand_is_array(const cudaMemcpy3DOperand& op) { return op.type == cudaMemcpyOperandTypeArray; }
uint64_t operand_addr(const CUmemcpy3DOperand& op) {
  return op.type == CU_MEMCPY_OPERAND_TYPE_ARRAY ? u64(op.op.array.array) : u64(op.op.ptr.ptr);
}
bool operand_is_array(const CUmemcpy3DOperand& op) { return op.type == CU_MEMCPY_OPERAND_TYPE_ARRAY; }

// cudaMemcpy3DBatchAsync / cuMemcpy3DBatchAsync: numOps operations. Direction DeviceToDevice when every operand is
// an array, Default otherwise (pointers are resolved by address). bytes: the sum of the extents (these count
// elements, so a lower bound on the bytes). src_ptr/dst_ptr: the first operation's operands.
template <class P>
void batch_copy3d(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  o.stream = stream_of(p);
  o.call.direction = CopyDirection::Default;
  if (p.numOps == 0 || p.opList == nullptr) return;
  o.flags = static_cast<uint32_t>(std::min<size_t>(p.numOps, UINT32_MAX));  // operations: an activity record each
  o.src_ptr = operand_addr(p.opList[0].src);
  o.dst_ptr = operand_addr(p.opList[0].dst);
  uint64_t total = 0;
  bool all_arrays = true;
  for (size_t i = 0; i < p.numOps; ++i) {
    const auto& op = p.opList[i];
    total += u64(op.extent.width) * u64(op.extent.height) * u64(op.extent.depth);
    all_arrays = all_arrays && operand_is_array(op.src) && operand_is_array(op.dst);
  }
  o.call.bytes = total;
  if (all_arrays) o.call.direction = CopyDirection::DeviceToDevice;
}

// Driver copies whose name says the direction (cuMemcpyHtoD, ...AtoA, arrays count as device) or whose addresses
// do (cuMemcpy, cuMemcpyAsync: Default; cuMemcpyPeer: device to device).
template <class P>
void drv_copy(const P& p, ApiCall& o, CopyDirection dir) {
  if constexpr (requires { p.dstDevice; }) {
    o.dst_ptr = u64(p.dstDevice);
  } else if constexpr (requires { p.dstHost; }) {
    o.dst_ptr = u64(p.dstHost);
  } else if constexpr (requires { p.dstArray; }) {
    o.dst_ptr = u64(p.dstArray);
  } else {
    o.dst_ptr = u64(p.dst);
  }
  if constexpr (requires { p.srcDevice; }) {
    o.src_ptr = u64(p.srcDevice);
  } else if constexpr (requires { p.srcHost; }) {
    o.src_ptr = u64(p.srcHost);
  } else if constexpr (requires { p.srcArray; }) {
    o.src_ptr = u64(p.srcArray);
  } else {
    o.src_ptr = u64(p.src);
  }
  o.call.bytes = u64(p.ByteCount);
  o.call.direction = dir;
  o.stream = stream_of(p);
}

template <class P>
void drv_HtoD(const void* v, ApiCall& o) {
  drv_copy(as<P>(v), o, CopyDirection::HostToDevice);
}
template <class P>
void drv_DtoH(const void* v, ApiCall& o) {
  drv_copy(as<P>(v), o, CopyDirection::DeviceToHost);
}
template <class P>
void drv_DtoD(const void* v, ApiCall& o) {
  drv_copy(as<P>(v), o, CopyDirection::DeviceToDevice);
}
template <class P>
void drv_Default(const void* v, ApiCall& o) {
  drv_copy(as<P>(v), o, CopyDirection::Default);
}

// cuMemcpy2D/2DUnaligned/3D/3DPeer and their Async forms: the descriptor says where each side lives.
template <class Desc>
void drv_desc(const Desc& c, ApiCall& o) {
  const Side src = side_of(c.srcMemoryType);
  const Side dst = side_of(c.dstMemoryType);
  o.call.direction = from_sides(src, dst);
  switch (c.srcMemoryType) {
    case CU_MEMORYTYPE_HOST: o.src_ptr = u64(c.srcHost); break;
    case CU_MEMORYTYPE_ARRAY: o.src_ptr = u64(c.srcArray); break;
    default: o.src_ptr = u64(c.srcDevice); break;  // DEVICE, UNIFIED (the address is in srcDevice)
  }
  switch (c.dstMemoryType) {
    case CU_MEMORYTYPE_HOST: o.dst_ptr = u64(c.dstHost); break;
    case CU_MEMORYTYPE_ARRAY: o.dst_ptr = u64(c.dstArray); break;
    default: o.dst_ptr = u64(c.dstDevice); break;
  }
  uint64_t bytes = u64(c.WidthInBytes) * u64(c.Height);
  if constexpr (requires { c.Depth; }) bytes *= u64(c.Depth);
  o.call.bytes = bytes;
}

template <class P>
void drv_copy_desc(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  o.stream = stream_of(p);
  if (p.pCopy == nullptr) return;
  drv_desc(*p.pCopy, o);
}

// The CUDA 3.1 descriptors (see LegacyMemcpy2D): copied out of the caller's struct into the mirrored layout.
template <class P, class Legacy>
void drv_copy_legacy(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  o.stream = stream_of(p);
  if (p.pCopy == nullptr) return;
  Legacy c;
  std::memcpy(&c, static_cast<const void*>(p.pCopy), sizeof c);
  drv_desc(c, o);
}
template <class P>
void drv_copy2d_v1(const void* v, ApiCall& o) {
  drv_copy_legacy<P, LegacyMemcpy2D>(v, o);
}
template <class P>
void drv_copy3d_v1(const void* v, ApiCall& o) {
  drv_copy_legacy<P, LegacyMemcpy3D>(v, o);
}

// ---- memsets ----

// cudaMemset, cudaMemset2D, cudaMemset3D and Async forms: bytes are count, width*height, or the extent (whose
// width is in bytes for cudaMemset3D).
template <class P>
void rt_memset(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  if constexpr (requires { p.devPtr; }) {
    o.dst_ptr = u64(p.devPtr);
  } else {
    o.dst_ptr = u64(p.pitchedDevPtr.ptr);
  }
  if constexpr (requires { p.count; }) {
    o.call.bytes = u64(p.count);
  } else if constexpr (requires { p.extent; }) {
    o.call.bytes = u64(p.extent.width) * u64(p.extent.height) * u64(p.extent.depth);
  } else {
    o.call.bytes = u64(p.width) * u64(p.height);
  }
  o.stream = stream_of(p);
}

// cuMemsetD8/D16/D32 and D2D8/16/32 (N or Width count elements of the given size).
template <class P, uint64_t kElementBytes>
void drv_memset(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  o.dst_ptr = u64(p.dstDevice);
  if constexpr (requires { p.N; }) {
    o.call.bytes = u64(p.N) * kElementBytes;
  } else {
    o.call.bytes = u64(p.Width) * u64(p.Height) * kElementBytes;
  }
  o.stream = stream_of(p);
}
template <class P>
void drv_memset8(const void* v, ApiCall& o) {
  drv_memset<P, 1>(v, o);
}
template <class P>
void drv_memset16(const void* v, ApiCall& o) {
  drv_memset<P, 2>(v, o);
}
template <class P>
void drv_memset32(const void* v, ApiCall& o) {
  drv_memset<P, 4>(v, o);
}

// ---- launches ----

// cudaLaunchKernel/cudaLaunchCooperativeKernel (func, stream), cudaLaunchKernelExC (config->stream),
// cuLaunchKernel/cuLaunchCooperativeKernel (f, hStream), cuLaunchKernelEx (config->hStream).
template <class P>
void launch(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  if constexpr (requires { p.func; }) {
    o.function = u64(p.func);
  } else {
    o.function = u64(p.f);
  }
  if constexpr (requires { p.config; }) {
    if (p.config != nullptr) o.stream = stream_of(*p.config);
  } else {
    o.stream = stream_of(p);
  }
}

// cudaGraphLaunch (graphExec), cuGraphLaunch (hGraph, hGraphExec in the _ptsz struct).
template <class P>
void graph_launch(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  if constexpr (requires { p.graphExec; }) {
    o.handle = u64(p.graphExec);
  } else if constexpr (requires { p.hGraphExec; }) {
    o.handle = u64(p.hGraphExec);
  } else {
    o.handle = u64(p.hGraph);
  }
  o.stream = stream_of(p);
}

// ---- streams and events ----

template <class P>
void stream_create(const void* v, ApiCall& o) {
  o.flags = flags_of(as<P>(v));
}
template <class P>
void stream_create_exit(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  if constexpr (requires { p.pStream; }) {
    if (p.pStream != nullptr) o.handle = u64(*p.pStream);
  } else {
    if (p.phStream != nullptr) o.handle = u64(*p.phStream);
  }
}

// Destroy, synchronize, query: the stream is both the stream argument and the handle consumed.
template <class P>
void stream_use(const void* v, ApiCall& o) {
  o.stream = stream_of(as<P>(v));
  o.handle = o.stream;
}

template <class P>
uint64_t event_of(const P& p) {
  if constexpr (requires { p.event; }) {
    return u64(p.event);
  } else {
    return u64(p.hEvent);
  }
}

template <class P>
void event_create(const void* v, ApiCall& o) {
  o.flags = flags_of(as<P>(v));
}
template <class P>
void event_create_exit(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  if constexpr (requires { p.event; }) {
    if (p.event != nullptr) o.handle = u64(*p.event);
  } else {
    if (p.phEvent != nullptr) o.handle = u64(*p.phEvent);
  }
}

// Event synchronize / query: the event; record: event, stream, flags; stream wait: stream, event, flags.
template <class P>
void event_use(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  o.handle = event_of(p);
  o.stream = stream_of(p);
  o.flags = flags_of(p);
}

// ---- allocation and free ----

template <class P>
void alloc(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  if constexpr (requires { p.size; }) {
    o.call.bytes = u64(p.size);
  } else if constexpr (requires { p.bytesize; }) {
    o.call.bytes = u64(p.bytesize);
  } else if constexpr (requires { p.WidthInBytes; }) {
    o.call.bytes = u64(p.WidthInBytes) * u64(p.Height);  // cuMemAllocPitch; exit: pitch * Height
  } else if constexpr (requires { p.width; }) {
    o.call.bytes = u64(p.width) * u64(p.height);  // cudaMallocPitch; exit: pitch * height
  } else {
    o.call.bytes = u64(p.extent.width) * u64(p.extent.height) * u64(p.extent.depth);  // cudaMalloc3D
  }
  o.flags = flags_of(p);
  o.stream = stream_of(p);
}

// *where (a pointer or a device address) when the out-parameter pointer is there.
template <class T>
void read_out(const T* where, uint64_t& into) {
  if (where != nullptr) into = u64(*where);
}

template <class P>
void alloc_exit(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  if constexpr (requires { p.devPtr; }) {
    read_out(p.devPtr, o.handle);
  } else if constexpr (requires { p.pHost; }) {
    read_out(p.pHost, o.handle);
  } else if constexpr (requires { p.dptr; }) {
    read_out(p.dptr, o.handle);
  } else if constexpr (requires { p.pp; }) {
    read_out(p.pp, o.handle);
  } else if constexpr (requires { p.ptr; }) {
    read_out(p.ptr, o.handle);  // cudaMallocHost, cudaMallocFromPoolAsync
  } else {
    // cudaMalloc3D: the pitched pointer.
    if (p.pitchedDevPtr != nullptr) {
      o.handle = u64(p.pitchedDevPtr->ptr);
      if (p.pitchedDevPtr->pitch != 0) {
        o.call.bytes = u64(p.pitchedDevPtr->pitch) * u64(p.extent.height) * u64(p.extent.depth);
      }
    }
  }
  // Pitched allocations: what was really allocated is pitch * height.
  if constexpr (requires { p.pitch; }) {
    if (p.pitch != nullptr && *p.pitch != 0) o.call.bytes = u64(*p.pitch) * u64(p.height);
  } else if constexpr (requires { p.pPitch; }) {
    if (p.pPitch != nullptr && *p.pPitch != 0) o.call.bytes = u64(*p.pPitch) * u64(p.Height);
  }
}

// cudaMallocArray / cudaMalloc3DArray: bytes from the channel format (bits per element) and the size in elements
// (height 0: a 1D array; depth 0: a 2D array); handle = the array at exit.
uint64_t element_bytes(const cudaChannelFormatDesc* desc) {
  if (desc == nullptr) return 0;
  const int bits = desc->x + desc->y + desc->z + desc->w;
  return bits > 0 ? static_cast<uint64_t>(bits) / 8 : 0;
}
uint64_t at_least_one(size_t n) { return n == 0 ? 1 : u64(n); }

template <class P>
void alloc_array(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  uint64_t elements = 0;
  if constexpr (requires { p.extent; }) {
    elements = u64(p.extent.width) * at_least_one(p.extent.height) * at_least_one(p.extent.depth);
  } else {
    elements = u64(p.width) * at_least_one(p.height);
  }
  o.call.bytes = elements * element_bytes(p.desc);
  o.flags = flags_of(p);
}
template <class P>
void alloc_array_exit(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  if (p.array != nullptr) o.handle = u64(*p.array);
}

// Free, free host, unregister, free array, stream-ordered free: the pointer (or array) given back.
template <class P>
void release(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  if constexpr (requires { p.devPtr; }) {
    o.handle = u64(p.devPtr);
  } else if constexpr (requires { p.dptr; }) {
    o.handle = u64(p.dptr);
  } else if constexpr (requires { p.ptr; }) {
    o.handle = u64(p.ptr);
  } else if constexpr (requires { p.array; }) {
    o.handle = u64(p.array);
  } else {
    o.handle = u64(p.p);
  }
  o.stream = stream_of(p);
}

// cudaHostRegister / cuMemHostRegister: the range pinned, with its flags.
template <class P>
void host_register(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  if constexpr (requires { p.ptr; }) {
    o.handle = u64(p.ptr);
    o.call.bytes = u64(p.size);
  } else {
    o.handle = u64(p.p);
    o.call.bytes = u64(p.bytesize);
  }
  o.flags = flags_of(p);
}

// ---- stream capture ----

// cudaStreamBeginCapture(ToGraph) / cuStreamBeginCapture(_v2, ToGraph): the stream, flags = the capture mode
// (cudaStreamCaptureMode == CUstreamCaptureMode: 0 global, 1 thread-local, 2 relaxed); ToGraph: handle = the graph
// captured into. The CUDA 10.0 entry point cuStreamBeginCapture takes no mode: flags stays 0.
template <class P>
void capture_begin(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  o.stream = stream_of(p);
  if constexpr (requires { p.mode; }) o.flags = u32(p.mode);
  if constexpr (requires { p.graph; }) {
    o.handle = u64(p.graph);
  } else if constexpr (requires { p.hGraph; }) {
    o.handle = u64(p.hGraph);
  }
}

// cudaStreamEndCapture / cuStreamEndCapture: the stream at entry, the graph made (*pGraph) at exit.
template <class P>
void capture_end(const void* v, ApiCall& o) {
  o.stream = stream_of(as<P>(v));
}
template <class P>
void capture_end_exit(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  if constexpr (requires { p.pGraph; }) {
    read_out(p.pGraph, o.handle);
  } else {
    read_out(p.phGraph, o.handle);
  }
}

// ---- synchronization and configuration ----

// cuCtxSynchronize_v2(ctx): the context waited for.
template <class P>
void ctx_sync(const void* v, ApiCall& o) {
  o.handle = u64(as<P>(v).ctx);
}

// cudaDeviceSetCacheConfig / cudaFuncSetCacheConfig / cuCtxSetCacheConfig / cuFuncSetCacheConfig.
template <class P>
void cache_config(const void* v, ApiCall& o) {
  const P& p = as<P>(v);
  if constexpr (requires { p.func; }) {
    o.function = u64(p.func);
  } else if constexpr (requires { p.hfunc; }) {
    o.function = u64(p.hfunc);
  }
  if constexpr (requires { p.cacheConfig; }) {
    o.flags = u32(p.cacheConfig);
  } else {
    o.flags = u32(p.config);
  }
}

// ---- the table ----

enum class Form : uint8_t { Sync, Async, SyncPt, AsyncPt };
constexpr bool is_async(Form f) { return f == Form::Async || f == Form::AsyncPt; }
constexpr bool is_pt(Form f) { return f == Form::SyncPt || f == Form::AsyncPt; }

// R(symbol, "name", ApiKind, Form, enter decoder, exit decoder) for a runtime function whose params struct is
// <symbol>_params and whose callback id is CUPTI_RUNTIME_TRACE_CBID_<symbol>; D(...) likewise for the driver.
// R0/D0: functions without arguments (no params struct).
// clang-format off
#define AC_WATCHED_APIS(R, R0, D, D0)                                                                              \
  /* ---- runtime: copies ---- */                                                                                \
  R(cudaMemcpy_v3020,                      "cudaMemcpy",                Copy, Sync,    rt_copy, none)              \
  R(cudaMemcpy_ptds_v7000,                 "cudaMemcpy",                Copy, SyncPt,  rt_copy, none)              \
  R(cudaMemcpy2D_v3020,                    "cudaMemcpy2D",              Copy, Sync,    rt_copy, none)              \
  R(cudaMemcpy2D_ptds_v7000,               "cudaMemcpy2D",              Copy, SyncPt,  rt_copy, none)              \
  R(cudaMemcpyToArray_v3020,               "cudaMemcpyToArray",         Copy, Sync,    rt_copy, none)              \
  R(cudaMemcpyToArray_ptds_v7000,          "cudaMemcpyToArray",         Copy, SyncPt,  rt_copy, none)              \
  R(cudaMemcpy2DToArray_v3020,             "cudaMemcpy2DToArray",       Copy, Sync,    rt_copy, none)              \
  R(cudaMemcpy2DToArray_ptds_v7000,        "cudaMemcpy2DToArray",       Copy, SyncPt,  rt_copy, none)              \
  R(cudaMemcpyFromArray_v3020,             "cudaMemcpyFromArray",       Copy, Sync,    rt_copy, none)              \
  R(cudaMemcpyFromArray_ptds_v7000,        "cudaMemcpyFromArray",       Copy, SyncPt,  rt_copy, none)              \
  R(cudaMemcpy2DFromArray_v3020,           "cudaMemcpy2DFromArray",     Copy, Sync,    rt_copy, none)              \
  R(cudaMemcpy2DFromArray_ptds_v7000,      "cudaMemcpy2DFromArray",     Copy, SyncPt,  rt_copy, none)              \
  R(cudaMemcpyArrayToArray_v3020,          "cudaMemcpyArrayToArray",    Copy, Sync,    rt_copy, none)              \
  R(cudaMemcpyArrayToArray_ptds_v7000,     "cudaMemcpyArrayToArray",    Copy, SyncPt,  rt_copy, none)              \
  R(cudaMemcpy2DArrayToArray_v3020,        "cudaMemcpy2DArrayToArray",  Copy, Sync,    rt_copy, none)              \
  R(cudaMemcpy2DArrayToArray_ptds_v7000,   "cudaMemcpy2DArrayToArray",  Copy, SyncPt,  rt_copy, none)              \
  R(cudaMemcpyToSymbol_v3020,              "cudaMemcpyToSymbol",        Copy, Sync,    rt_copy, none)              \
  R(cudaMemcpyToSymbol_ptds_v7000,         "cudaMemcpyToSymbol",        Copy, SyncPt,  rt_copy, none)              \
  R(cudaMemcpyFromSymbol_v3020,            "cudaMemcpyFromSymbol",      Copy, Sync,    rt_copy, none)              \
  R(cudaMemcpyFromSymbol_ptds_v7000,       "cudaMemcpyFromSymbol",      Copy, SyncPt,  rt_copy, none)              \
  R(cudaMemcpyAsync_v3020,                 "cudaMemcpyAsync",           Copy, Async,   rt_copy, none)              \
  R(cudaMemcpyAsync_ptsz_v7000,            "cudaMemcpyAsync",           Copy, AsyncPt, rt_copy, none)              \
  R(cudaMemcpyToArrayAsync_v3020,          "cudaMemcpyToArrayAsync",    Copy, Async,   rt_copy, none)              \
  R(cudaMemcpyToArrayAsync_ptsz_v7000,     "cudaMemcpyToArrayAsync",    Copy, AsyncPt, rt_copy, none)              \
  R(cudaMemcpyFromArrayAsync_v3020,        "cudaMemcpyFromArrayAsync",  Copy, Async,   rt_copy, none)              \
  R(cudaMemcpyFromArrayAsync_ptsz_v7000,   "cudaMemcpyFromArrayAsync",  Copy, AsyncPt, rt_copy, none)              \
  R(cudaMemcpy2DAsync_v3020,               "cudaMemcpy2DAsync",         Copy, Async,   rt_copy, none)              \
  R(cudaMemcpy2DAsync_ptsz_v7000,          "cudaMemcpy2DAsync",         Copy, AsyncPt, rt_copy, none)              \
  R(cudaMemcpy2DToArrayAsync_v3020,        "cudaMemcpy2DToArrayAsync",  Copy, Async,   rt_copy, none)              \
  R(cudaMemcpy2DToArrayAsync_ptsz_v7000,   "cudaMemcpy2DToArrayAsync",  Copy, AsyncPt, rt_copy, none)              \
  R(cudaMemcpy2DFromArrayAsync_v3020,      "cudaMemcpy2DFromArrayAsync", Copy, Async,  rt_copy, none)              \
  R(cudaMemcpy2DFromArrayAsync_ptsz_v7000, "cudaMemcpy2DFromArrayAsync", Copy, AsyncPt, rt_copy, none)             \
  R(cudaMemcpyToSymbolAsync_v3020,         "cudaMemcpyToSymbolAsync",   Copy, Async,   rt_copy, none)              \
  R(cudaMemcpyToSymbolAsync_ptsz_v7000,    "cudaMemcpyToSymbolAsync",   Copy, AsyncPt, rt_copy, none)              \
  R(cudaMemcpyFromSymbolAsync_v3020,       "cudaMemcpyFromSymbolAsync", Copy, Async,   rt_copy, none)              \
  R(cudaMemcpyFromSymbolAsync_ptsz_v7000,  "cudaMemcpyFromSymbolAsync", Copy, AsyncPt, rt_copy, none)              \
  R(cudaMemcpy3D_v3020,                    "cudaMemcpy3D",              Copy, Sync,    rt_copy3d, none)            \
  R(cudaMemcpy3D_ptds_v7000,               "cudaMemcpy3D",              Copy, SyncPt,  rt_copy3d, none)            \
  R(cudaMemcpy3DAsync_v3020,               "cudaMemcpy3DAsync",         Copy, Async,   rt_copy3d, none)            \
  R(cudaMemcpy3DAsync_ptsz_v7000,          "cudaMemcpy3DAsync",         Copy, AsyncPt, rt_copy3d, none)            \
  R(cudaMemcpyPeer_v4000,                  "cudaMemcpyPeer",            Copy, Sync,    rt_copy_peer, none)         \
  R(cudaMemcpyPeerAsync_v4000,             "cudaMemcpyPeerAsync",       Copy, Async,   rt_copy_peer, none)         \
  R(cudaMemcpy3DPeer_v4000,                "cudaMemcpy3DPeer",          Copy, Sync,    rt_copy3d, none)            \
  R(cudaMemcpy3DPeer_ptds_v7000,           "cudaMemcpy3DPeer",          Copy, SyncPt,  rt_copy3d, none)            \
  R(cudaMemcpy3DPeerAsync_v4000,           "cudaMemcpy3DPeerAsync",     Copy, Async,   rt_copy3d, none)            \
  R(cudaMemcpy3DPeerAsync_ptsz_v7000,      "cudaMemcpy3DPeerAsync",     Copy, AsyncPt, rt_copy3d, none)            \
  R(cudaMemcpyBatchAsync_v13000,           "cudaMemcpyBatchAsync",      Copy, Async,   batch_copy, none)           \
  R(cudaMemcpyBatchAsync_ptsz_v13000,      "cudaMemcpyBatchAsync",      Copy, AsyncPt, batch_copy, none)           \
  R(cudaMemcpy3DBatchAsync_v13000,         "cudaMemcpy3DBatchAsync",    Copy, Async,   batch_copy3d, none)         \
  R(cudaMemcpy3DBatchAsync_ptsz_v13000,    "cudaMemcpy3DBatchAsync",    Copy, AsyncPt, batch_copy3d, none)         \
  /* ---- runtime: memsets ---- */                                                                               \
  R(cudaMemset_v3020,                      "cudaMemset",                Memset, Sync,    rt_memset, none)          \
  R(cudaMemset_ptds_v7000,                 "cudaMemset",                Memset, SyncPt,  rt_memset, none)          \
  R(cudaMemset2D_v3020,                    "cudaMemset2D",              Memset, Sync,    rt_memset, none)          \
  R(cudaMemset2D_ptds_v7000,               "cudaMemset2D",              Memset, SyncPt,  rt_memset, none)          \
  R(cudaMemset3D_v3020,                    "cudaMemset3D",              Memset, Sync,    rt_memset, none)          \
  R(cudaMemset3D_ptds_v7000,               "cudaMemset3D",              Memset, SyncPt,  rt_memset, none)          \
  R(cudaMemsetAsync_v3020,                 "cudaMemsetAsync",           Memset, Async,   rt_memset, none)          \
  R(cudaMemsetAsync_ptsz_v7000,            "cudaMemsetAsync",           Memset, AsyncPt, rt_memset, none)          \
  R(cudaMemset2DAsync_v3020,               "cudaMemset2DAsync",         Memset, Async,   rt_memset, none)          \
  R(cudaMemset2DAsync_ptsz_v7000,          "cudaMemset2DAsync",         Memset, AsyncPt, rt_memset, none)          \
  R(cudaMemset3DAsync_v3020,               "cudaMemset3DAsync",         Memset, Async,   rt_memset, none)          \
  R(cudaMemset3DAsync_ptsz_v7000,          "cudaMemset3DAsync",         Memset, AsyncPt, rt_memset, none)          \
  /* ---- runtime: launches ---- */                                                                              \
  R(cudaLaunchKernel_v7000,                "cudaLaunchKernel",          KernelLaunch, Sync,   launch, none)        \
  R(cudaLaunchKernel_ptsz_v7000,           "cudaLaunchKernel",          KernelLaunch, SyncPt, launch, none)        \
  R(cudaLaunchKernelExC_v11060,            "cudaLaunchKernelExC",       KernelLaunch, Sync,   launch, none)        \
  R(cudaLaunchKernelExC_ptsz_v11060,       "cudaLaunchKernelExC",       KernelLaunch, SyncPt, launch, none)        \
  R(cudaLaunchCooperativeKernel_v9000,     "cudaLaunchCooperativeKernel", KernelLaunch, Sync,   launch, none)      \
  R(cudaLaunchCooperativeKernel_ptsz_v9000, "cudaLaunchCooperativeKernel", KernelLaunch, SyncPt, launch, none)     \
  R(cudaGraphLaunch_v10000,                "cudaGraphLaunch",           GraphLaunch, Sync,   graph_launch, none)   \
  R(cudaGraphLaunch_ptsz_v10000,           "cudaGraphLaunch",           GraphLaunch, SyncPt, graph_launch, none)   \
  /* ---- runtime: streams ---- */                                                                               \
  R(cudaStreamCreate_v3020,                "cudaStreamCreate",          StreamCreate, Sync, stream_create, stream_create_exit) \
  R(cudaStreamCreateWithFlags_v5000,       "cudaStreamCreateWithFlags", StreamCreate, Sync, stream_create, stream_create_exit) \
  R(cudaStreamCreateWithPriority_v5050,    "cudaStreamCreateWithPriority", StreamCreate, Sync, stream_create, stream_create_exit) \
  R(cudaStreamDestroy_v5050,               "cudaStreamDestroy",         StreamDestroy, Sync, stream_use, none)     \
  R(cudaStreamBeginCapture_v10000,         "cudaStreamBeginCapture",    CaptureBegin, Sync,   capture_begin, none) \
  R(cudaStreamBeginCapture_ptsz_v10000,    "cudaStreamBeginCapture",    CaptureBegin, SyncPt, capture_begin, none) \
  R(cudaStreamBeginCaptureToGraph_v12030,  "cudaStreamBeginCaptureToGraph", CaptureBegin, Sync,   capture_begin, none) \
  R(cudaStreamBeginCaptureToGraph_ptsz_v12030, "cudaStreamBeginCaptureToGraph", CaptureBegin, SyncPt, capture_begin, none) \
  R(cudaStreamEndCapture_v10000,           "cudaStreamEndCapture",      CaptureEnd, Sync,   capture_end, capture_end_exit) \
  R(cudaStreamEndCapture_ptsz_v10000,      "cudaStreamEndCapture",      CaptureEnd, SyncPt, capture_end, capture_end_exit) \
  /* ---- runtime: allocation and free ---- */                                                                   \
  R(cudaMalloc_v3020,                      "cudaMalloc",                DeviceAlloc, Sync,   alloc, alloc_exit)    \
  R(cudaMallocPitch_v3020,                 "cudaMallocPitch",           DeviceAlloc, Sync,   alloc, alloc_exit)    \
  R(cudaMalloc3D_v3020,                    "cudaMalloc3D",              DeviceAlloc, Sync,   alloc, alloc_exit)    \
  R(cudaMallocArray_v3020,                 "cudaMallocArray",           DeviceAlloc, Sync,   alloc_array, alloc_array_exit) \
  R(cudaMalloc3DArray_v3020,               "cudaMalloc3DArray",         DeviceAlloc, Sync,   alloc_array, alloc_array_exit) \
  R(cudaMallocHost_v3020,                  "cudaMallocHost",            PinnedAlloc, Sync,   alloc, alloc_exit)    \
  R(cudaHostAlloc_v3020,                   "cudaHostAlloc",             PinnedAlloc, Sync,   alloc, alloc_exit)    \
  R(cudaHostRegister_v4000,                "cudaHostRegister",          HostRegister, Sync,  host_register, none)  \
  R(cudaHostUnregister_v4000,              "cudaHostUnregister",        HostUnregister, Sync, release, none)       \
  R(cudaMallocManaged_v6000,               "cudaMallocManaged",         ManagedAlloc, Sync,  alloc, alloc_exit)    \
  R(cudaMallocAsync_v11020,                "cudaMallocAsync",           StreamOrderedAlloc, Async,   alloc, alloc_exit) \
  R(cudaMallocAsync_ptsz_v11020,           "cudaMallocAsync",           StreamOrderedAlloc, AsyncPt, alloc, alloc_exit) \
  R(cudaMallocFromPoolAsync_v11020,        "cudaMallocFromPoolAsync",   StreamOrderedAlloc, Async,   alloc, alloc_exit) \
  R(cudaMallocFromPoolAsync_ptsz_v11020,   "cudaMallocFromPoolAsync",   StreamOrderedAlloc, AsyncPt, alloc, alloc_exit) \
  R(cudaFreeAsync_v11020,                  "cudaFreeAsync",             StreamOrderedFree, Async,   release, none) \
  R(cudaFreeAsync_ptsz_v11020,             "cudaFreeAsync",             StreamOrderedFree, AsyncPt, release, none) \
  R(cudaFree_v3020,                        "cudaFree",                  Free, Sync,          release, none)        \
  R(cudaFreeArray_v3020,                   "cudaFreeArray",             Free, Sync,          release, none)        \
  R(cudaFreeHost_v3020,                    "cudaFreeHost",              FreeHost, Sync,      release, none)        \
  /* ---- runtime: synchronization and events ---- */                                                            \
  R0(cudaDeviceSynchronize_v3020,          "cudaDeviceSynchronize",     DeviceSynchronize)                         \
  R0(cudaProfilerStart_v4000,              "cudaProfilerStart",         ProfilerStart)                             \
  R0(cudaProfilerStop_v4000,               "cudaProfilerStop",          ProfilerStop)                              \
  R(cudaStreamSynchronize_v3020,           "cudaStreamSynchronize",     StreamSynchronize, Sync,   stream_use, none) \
  R(cudaStreamSynchronize_ptsz_v7000,      "cudaStreamSynchronize",     StreamSynchronize, SyncPt, stream_use, none) \
  R(cudaEventSynchronize_v3020,            "cudaEventSynchronize",      EventSynchronize, Sync,    event_use, none) \
  R(cudaStreamQuery_v3020,                 "cudaStreamQuery",           StreamQuery, Sync,         stream_use, none) \
  R(cudaStreamQuery_ptsz_v7000,            "cudaStreamQuery",           StreamQuery, SyncPt,       stream_use, none) \
  R(cudaEventQuery_v3020,                  "cudaEventQuery",            StreamQuery, Sync,         event_use, none) \
  R(cudaStreamWaitEvent_v3020,             "cudaStreamWaitEvent",       StreamWaitEvent, Sync,     event_use, none) \
  R(cudaStreamWaitEvent_ptsz_v7000,        "cudaStreamWaitEvent",       StreamWaitEvent, SyncPt,   event_use, none) \
  R(cudaEventRecord_v3020,                 "cudaEventRecord",           EventRecord, Sync,         event_use, none) \
  R(cudaEventRecord_ptsz_v7000,            "cudaEventRecord",           EventRecord, SyncPt,       event_use, none) \
  R(cudaEventRecordWithFlags_v11010,       "cudaEventRecordWithFlags",  EventRecord, Sync,         event_use, none) \
  R(cudaEventRecordWithFlags_ptsz_v11010,  "cudaEventRecordWithFlags",  EventRecord, SyncPt,       event_use, none) \
  R(cudaEventCreate_v3020,                 "cudaEventCreate",           EventCreate, Sync, event_create, event_create_exit) \
  R(cudaEventCreateWithFlags_v3020,        "cudaEventCreateWithFlags",  EventCreate, Sync, event_create, event_create_exit) \
  /* ---- runtime: cache configuration ---- */                                                                   \
  R(cudaDeviceSetCacheConfig_v3020,        "cudaDeviceSetCacheConfig",  CacheConfig, Sync, cache_config, none)     \
  R(cudaFuncSetCacheConfig_v3020,          "cudaFuncSetCacheConfig",    CacheConfig, Sync, cache_config, none)     \
                                                                                                                   \
  /* ---- driver: copies with the direction in the name (CUDA 3.1 entry points, _v2, per-thread _v2) ---- */     \
  D(cuMemcpyHtoD,                 "cuMemcpyHtoD",        Copy, Sync,    drv_HtoD, none)                            \
  D(cuMemcpyHtoD_v2,              "cuMemcpyHtoD",        Copy, Sync,    drv_HtoD, none)                            \
  D(cuMemcpyHtoD_v2_ptds,         "cuMemcpyHtoD",        Copy, SyncPt,  drv_HtoD, none)                            \
  D(cuMemcpyDtoH,                 "cuMemcpyDtoH",        Copy, Sync,    drv_DtoH, none)                            \
  D(cuMemcpyDtoH_v2,              "cuMemcpyDtoH",        Copy, Sync,    drv_DtoH, none)                            \
  D(cuMemcpyDtoH_v2_ptds,         "cuMemcpyDtoH",        Copy, SyncPt,  drv_DtoH, none)                            \
  D(cuMemcpyDtoD,                 "cuMemcpyDtoD",        Copy, Sync,    drv_DtoD, none)                            \
  D(cuMemcpyDtoD_v2,              "cuMemcpyDtoD",        Copy, Sync,    drv_DtoD, none)                            \
  D(cuMemcpyDtoD_v2_ptds,         "cuMemcpyDtoD",        Copy, SyncPt,  drv_DtoD, none)                            \
  D(cuMemcpyDtoA,                 "cuMemcpyDtoA",        Copy, Sync,    drv_DtoD, none)                            \
  D(cuMemcpyDtoA_v2,              "cuMemcpyDtoA",        Copy, Sync,    drv_DtoD, none)                            \
  D(cuMemcpyDtoA_v2_ptds,         "cuMemcpyDtoA",        Copy, SyncPt,  drv_DtoD, none)                            \
  D(cuMemcpyAtoD,                 "cuMemcpyAtoD",        Copy, Sync,    drv_DtoD, none)                            \
  D(cuMemcpyAtoD_v2,              "cuMemcpyAtoD",        Copy, Sync,    drv_DtoD, none)                            \
  D(cuMemcpyAtoD_v2_ptds,         "cuMemcpyAtoD",        Copy, SyncPt,  drv_DtoD, none)                            \
  D(cuMemcpyHtoA,                 "cuMemcpyHtoA",        Copy, Sync,    drv_HtoD, none)                            \
  D(cuMemcpyHtoA_v2,              "cuMemcpyHtoA",        Copy, Sync,    drv_HtoD, none)                            \
  D(cuMemcpyHtoA_v2_ptds,         "cuMemcpyHtoA",        Copy, SyncPt,  drv_HtoD, none)                            \
  D(cuMemcpyAtoH,                 "cuMemcpyAtoH",        Copy, Sync,    drv_DtoH, none)                            \
  D(cuMemcpyAtoH_v2,              "cuMemcpyAtoH",        Copy, Sync,    drv_DtoH, none)                            \
  D(cuMemcpyAtoH_v2_ptds,         "cuMemcpyAtoH",        Copy, SyncPt,  drv_DtoH, none)                            \
  D(cuMemcpyAtoA,                 "cuMemcpyAtoA",        Copy, Sync,    drv_DtoD, none)                            \
  D(cuMemcpyAtoA_v2,              "cuMemcpyAtoA",        Copy, Sync,    drv_DtoD, none)                            \
  D(cuMemcpyAtoA_v2_ptds,         "cuMemcpyAtoA",        Copy, SyncPt,  drv_DtoD, none)                            \
  D(cuMemcpyHtoDAsync,            "cuMemcpyHtoDAsync",   Copy, Async,   drv_HtoD, none)                            \
  D(cuMemcpyHtoDAsync_v2,         "cuMemcpyHtoDAsync",   Copy, Async,   drv_HtoD, none)                            \
  D(cuMemcpyHtoDAsync_v2_ptsz,    "cuMemcpyHtoDAsync",   Copy, AsyncPt, drv_HtoD, none)                            \
  D(cuMemcpyDtoHAsync,            "cuMemcpyDtoHAsync",   Copy, Async,   drv_DtoH, none)                            \
  D(cuMemcpyDtoHAsync_v2,         "cuMemcpyDtoHAsync",   Copy, Async,   drv_DtoH, none)                            \
  D(cuMemcpyDtoHAsync_v2_ptsz,    "cuMemcpyDtoHAsync",   Copy, AsyncPt, drv_DtoH, none)                            \
  D(cuMemcpyDtoDAsync,            "cuMemcpyDtoDAsync",   Copy, Async,   drv_DtoD, none)                            \
  D(cuMemcpyDtoDAsync_v2,         "cuMemcpyDtoDAsync",   Copy, Async,   drv_DtoD, none)                            \
  D(cuMemcpyDtoDAsync_v2_ptsz,    "cuMemcpyDtoDAsync",   Copy, AsyncPt, drv_DtoD, none)                            \
  D(cuMemcpyHtoAAsync,            "cuMemcpyHtoAAsync",   Copy, Async,   drv_HtoD, none)                            \
  D(cuMemcpyHtoAAsync_v2,         "cuMemcpyHtoAAsync",   Copy, Async,   drv_HtoD, none)                            \
  D(cuMemcpyHtoAAsync_v2_ptsz,    "cuMemcpyHtoAAsync",   Copy, AsyncPt, drv_HtoD, none)                            \
  D(cuMemcpyAtoHAsync,            "cuMemcpyAtoHAsync",   Copy, Async,   drv_DtoH, none)                            \
  D(cuMemcpyAtoHAsync_v2,         "cuMemcpyAtoHAsync",   Copy, Async,   drv_DtoH, none)                            \
  D(cuMemcpyAtoHAsync_v2_ptsz,    "cuMemcpyAtoHAsync",   Copy, AsyncPt, drv_DtoH, none)                            \
  /* ---- driver: copies by address (unified addressing) and peer copies ---- */                                 \
  D(cuMemcpy,                     "cuMemcpy",            Copy, Sync,    drv_Default, none)                         \
  D(cuMemcpy_ptds,                "cuMemcpy",            Copy, SyncPt,  drv_Default, none)                         \
  D(cuMemcpyAsync,                "cuMemcpyAsync",       Copy, Async,   drv_Default, none)                         \
  D(cuMemcpyAsync_ptsz,           "cuMemcpyAsync",       Copy, AsyncPt, drv_Default, none)                         \
  D(cuMemcpyPeer,                 "cuMemcpyPeer",        Copy, Sync,    drv_DtoD, none)                            \
  D(cuMemcpyPeer_ptds,            "cuMemcpyPeer",        Copy, SyncPt,  drv_DtoD, none)                            \
  D(cuMemcpyPeerAsync,            "cuMemcpyPeerAsync",   Copy, Async,   drv_DtoD, none)                            \
  D(cuMemcpyPeerAsync_ptsz,       "cuMemcpyPeerAsync",   Copy, AsyncPt, drv_DtoD, none)                            \
  /* ---- driver: copies described by CUDA_MEMCPY2D / CUDA_MEMCPY3D / CUDA_MEMCPY3D_PEER ---- */                 \
  D(cuMemcpy2D,                   "cuMemcpy2D",          Copy, Sync,    drv_copy2d_v1, none)                       \
  D(cuMemcpy2D_v2,                "cuMemcpy2D",          Copy, Sync,    drv_copy_desc, none)                       \
  D(cuMemcpy2D_v2_ptds,           "cuMemcpy2D",          Copy, SyncPt,  drv_copy_desc, none)                       \
  D(cuMemcpy2DUnaligned,          "cuMemcpy2DUnaligned", Copy, Sync,    drv_copy2d_v1, none)                       \
  D(cuMemcpy2DUnaligned_v2,       "cuMemcpy2DUnaligned", Copy, Sync,    drv_copy_desc, none)                       \
  D(cuMemcpy2DUnaligned_v2_ptds,  "cuMemcpy2DUnaligned", Copy, SyncPt,  drv_copy_desc, none)                       \
  D(cuMemcpy2DAsync,              "cuMemcpy2DAsync",     Copy, Async,   drv_copy2d_v1, none)                       \
  D(cuMemcpy2DAsync_v2,           "cuMemcpy2DAsync",     Copy, Async,   drv_copy_desc, none)                       \
  D(cuMemcpy2DAsync_v2_ptsz,      "cuMemcpy2DAsync",     Copy, AsyncPt, drv_copy_desc, none)                       \
  D(cuMemcpy3D,                   "cuMemcpy3D",          Copy, Sync,    drv_copy3d_v1, none)                       \
  D(cuMemcpy3D_v2,                "cuMemcpy3D",          Copy, Sync,    drv_copy_desc, none)                       \
  D(cuMemcpy3D_v2_ptds,           "cuMemcpy3D",          Copy, SyncPt,  drv_copy_desc, none)                       \
  D(cuMemcpy3DAsync,              "cuMemcpy3DAsync",     Copy, Async,   drv_copy3d_v1, none)                       \
  D(cuMemcpy3DAsync_v2,           "cuMemcpy3DAsync",     Copy, Async,   drv_copy_desc, none)                       \
  D(cuMemcpy3DAsync_v2_ptsz,      "cuMemcpy3DAsync",     Copy, AsyncPt, drv_copy_desc, none)                       \
  D(cuMemcpy3DPeer,               "cuMemcpy3DPeer",      Copy, Sync,    drv_copy_desc, none)                       \
  D(cuMemcpy3DPeer_ptds,          "cuMemcpy3DPeer",      Copy, SyncPt,  drv_copy_desc, none)                       \
  D(cuMemcpy3DPeerAsync,          "cuMemcpy3DPeerAsync", Copy, Async,   drv_copy_desc, none)                       \
  D(cuMemcpy3DPeerAsync_ptsz,     "cuMemcpy3DPeerAsync", Copy, AsyncPt, drv_copy_desc, none)                       \
  /* ---- driver: batch copies (12.8 and 13.0 signatures) ---- */                                                \
  D(cuMemcpyBatchAsync,           "cuMemcpyBatchAsync",  Copy, Async,   batch_copy, none)                          \
  D(cuMemcpyBatchAsync_ptsz,      "cuMemcpyBatchAsync",  Copy, AsyncPt, batch_copy, none)                          \
  D(cuMemcpyBatchAsync_v2,        "cuMemcpyBatchAsync",  Copy, Async,   batch_copy, none)                          \
  D(cuMemcpyBatchAsync_v2_ptsz,   "cuMemcpyBatchAsync",  Copy, AsyncPt, batch_copy, none)                          \
  D(cuMemcpy3DBatchAsync,         "cuMemcpy3DBatchAsync", Copy, Async,   batch_copy3d, none)                       \
  D(cuMemcpy3DBatchAsync_ptsz,    "cuMemcpy3DBatchAsync", Copy, AsyncPt, batch_copy3d, none)                       \
  D(cuMemcpy3DBatchAsync_v2,      "cuMemcpy3DBatchAsync", Copy, Async,   batch_copy3d, none)                       \
  D(cuMemcpy3DBatchAsync_v2_ptsz, "cuMemcpy3DBatchAsync", Copy, AsyncPt, batch_copy3d, none)                       \
  /* ---- driver: memsets ---- */                                                                                \
  D(cuMemsetD8,                   "cuMemsetD8",          Memset, Sync,    drv_memset8, none)                       \
  D(cuMemsetD8_v2,                "cuMemsetD8",          Memset, Sync,    drv_memset8, none)                       \
  D(cuMemsetD8_v2_ptds,           "cuMemsetD8",          Memset, SyncPt,  drv_memset8, none)                       \
  D(cuMemsetD16,                  "cuMemsetD16",         Memset, Sync,    drv_memset16, none)                      \
  D(cuMemsetD16_v2,               "cuMemsetD16",         Memset, Sync,    drv_memset16, none)                      \
  D(cuMemsetD16_v2_ptds,          "cuMemsetD16",         Memset, SyncPt,  drv_memset16, none)                      \
  D(cuMemsetD32,                  "cuMemsetD32",         Memset, Sync,    drv_memset32, none)                      \
  D(cuMemsetD32_v2,               "cuMemsetD32",         Memset, Sync,    drv_memset32, none)                      \
  D(cuMemsetD32_v2_ptds,          "cuMemsetD32",         Memset, SyncPt,  drv_memset32, none)                      \
  D(cuMemsetD2D8,                 "cuMemsetD2D8",        Memset, Sync,    drv_memset8, none)                       \
  D(cuMemsetD2D8_v2,              "cuMemsetD2D8",        Memset, Sync,    drv_memset8, none)                       \
  D(cuMemsetD2D8_v2_ptds,         "cuMemsetD2D8",        Memset, SyncPt,  drv_memset8, none)                       \
  D(cuMemsetD2D16,                "cuMemsetD2D16",       Memset, Sync,    drv_memset16, none)                      \
  D(cuMemsetD2D16_v2,             "cuMemsetD2D16",       Memset, Sync,    drv_memset16, none)                      \
  D(cuMemsetD2D16_v2_ptds,        "cuMemsetD2D16",       Memset, SyncPt,  drv_memset16, none)                      \
  D(cuMemsetD2D32,                "cuMemsetD2D32",       Memset, Sync,    drv_memset32, none)                      \
  D(cuMemsetD2D32_v2,             "cuMemsetD2D32",       Memset, Sync,    drv_memset32, none)                      \
  D(cuMemsetD2D32_v2_ptds,        "cuMemsetD2D32",       Memset, SyncPt,  drv_memset32, none)                      \
  D(cuMemsetD8Async,              "cuMemsetD8Async",     Memset, Async,   drv_memset8, none)                       \
  D(cuMemsetD8Async_ptsz,         "cuMemsetD8Async",     Memset, AsyncPt, drv_memset8, none)                       \
  D(cuMemsetD16Async,             "cuMemsetD16Async",    Memset, Async,   drv_memset16, none)                      \
  D(cuMemsetD16Async_ptsz,        "cuMemsetD16Async",    Memset, AsyncPt, drv_memset16, none)                      \
  D(cuMemsetD32Async,             "cuMemsetD32Async",    Memset, Async,   drv_memset32, none)                      \
  D(cuMemsetD32Async_ptsz,        "cuMemsetD32Async",    Memset, AsyncPt, drv_memset32, none)                      \
  D(cuMemsetD2D8Async,            "cuMemsetD2D8Async",   Memset, Async,   drv_memset8, none)                       \
  D(cuMemsetD2D8Async_ptsz,       "cuMemsetD2D8Async",   Memset, AsyncPt, drv_memset8, none)                       \
  D(cuMemsetD2D16Async,           "cuMemsetD2D16Async",  Memset, Async,   drv_memset16, none)                      \
  D(cuMemsetD2D16Async_ptsz,      "cuMemsetD2D16Async",  Memset, AsyncPt, drv_memset16, none)                      \
  D(cuMemsetD2D32Async,           "cuMemsetD2D32Async",  Memset, Async,   drv_memset32, none)                      \
  D(cuMemsetD2D32Async_ptsz,      "cuMemsetD2D32Async",  Memset, AsyncPt, drv_memset32, none)                      \
  /* ---- driver: launches ---- */                                                                               \
  D(cuLaunchKernel,               "cuLaunchKernel",      KernelLaunch, Sync,   launch, none)                       \
  D(cuLaunchKernel_ptsz,          "cuLaunchKernel",      KernelLaunch, SyncPt, launch, none)                       \
  D(cuLaunchKernelEx,             "cuLaunchKernelEx",    KernelLaunch, Sync,   launch, none)                       \
  D(cuLaunchKernelEx_ptsz,        "cuLaunchKernelEx",    KernelLaunch, SyncPt, launch, none)                       \
  D(cuLaunchCooperativeKernel,    "cuLaunchCooperativeKernel", KernelLaunch, Sync,   launch, none)                 \
  D(cuLaunchCooperativeKernel_ptsz, "cuLaunchCooperativeKernel", KernelLaunch, SyncPt, launch, none)               \
  D(cuGraphLaunch,                "cuGraphLaunch",       GraphLaunch, Sync,   graph_launch, none)                  \
  D(cuGraphLaunch_ptsz,           "cuGraphLaunch",       GraphLaunch, SyncPt, graph_launch, none)                  \
  /* ---- driver: streams ---- */                                                                                \
  D(cuStreamCreate,               "cuStreamCreate",      StreamCreate, Sync, stream_create, stream_create_exit)    \
  D(cuStreamCreateWithPriority,   "cuStreamCreateWithPriority", StreamCreate, Sync, stream_create, stream_create_exit) \
  D(cuStreamDestroy,              "cuStreamDestroy",     StreamDestroy, Sync, stream_use, none)                    \
  D(cuStreamDestroy_v2,           "cuStreamDestroy",     StreamDestroy, Sync, stream_use, none)                    \
  D(cuStreamBeginCapture,         "cuStreamBeginCapture", CaptureBegin, Sync,   capture_begin, none)             \
  D(cuStreamBeginCapture_ptsz,    "cuStreamBeginCapture", CaptureBegin, SyncPt, capture_begin, none)             \
  D(cuStreamBeginCapture_v2,      "cuStreamBeginCapture", CaptureBegin, Sync,   capture_begin, none)             \
  D(cuStreamBeginCapture_v2_ptsz, "cuStreamBeginCapture", CaptureBegin, SyncPt, capture_begin, none)             \
  D(cuStreamBeginCaptureToGraph,  "cuStreamBeginCaptureToGraph", CaptureBegin, Sync,   capture_begin, none)      \
  D(cuStreamBeginCaptureToGraph_ptsz, "cuStreamBeginCaptureToGraph", CaptureBegin, SyncPt, capture_begin, none)  \
  D(cuStreamEndCapture,           "cuStreamEndCapture",   CaptureEnd, Sync,   capture_end, capture_end_exit)     \
  D(cuStreamEndCapture_ptsz,      "cuStreamEndCapture",   CaptureEnd, SyncPt, capture_end, capture_end_exit)     \
  /* ---- driver: allocation and free ---- */                                                                    \
  D(cuMemAlloc,                   "cuMemAlloc",          DeviceAlloc, Sync, alloc, alloc_exit)                     \
  D(cuMemAlloc_v2,                "cuMemAlloc",          DeviceAlloc, Sync, alloc, alloc_exit)                     \
  D(cuMemAllocPitch,              "cuMemAllocPitch",     DeviceAlloc, Sync, alloc, alloc_exit)                     \
  D(cuMemAllocPitch_v2,           "cuMemAllocPitch",     DeviceAlloc, Sync, alloc, alloc_exit)                     \
  D(cuMemAllocHost,               "cuMemAllocHost",      PinnedAlloc, Sync, alloc, alloc_exit)                     \
  D(cuMemAllocHost_v2,            "cuMemAllocHost",      PinnedAlloc, Sync, alloc, alloc_exit)                     \
  D(cuMemHostAlloc,               "cuMemHostAlloc",      PinnedAlloc, Sync, alloc, alloc_exit)                     \
  D(cuMemHostRegister,            "cuMemHostRegister",   HostRegister, Sync, host_register, none)                  \
  D(cuMemHostRegister_v2,         "cuMemHostRegister",   HostRegister, Sync, host_register, none)                  \
  D(cuMemHostUnregister,          "cuMemHostUnregister", HostUnregister, Sync, release, none)                      \
  D(cuMemAllocManaged,            "cuMemAllocManaged",   ManagedAlloc, Sync, alloc, alloc_exit)                    \
  D(cuMemAllocAsync,              "cuMemAllocAsync",     StreamOrderedAlloc, Async,   alloc, alloc_exit)           \
  D(cuMemAllocAsync_ptsz,         "cuMemAllocAsync",     StreamOrderedAlloc, AsyncPt, alloc, alloc_exit)           \
  D(cuMemAllocFromPoolAsync,      "cuMemAllocFromPoolAsync", StreamOrderedAlloc, Async,   alloc, alloc_exit)       \
  D(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", StreamOrderedAlloc, AsyncPt, alloc, alloc_exit)       \
  D(cuMemFreeAsync,               "cuMemFreeAsync",      StreamOrderedFree, Async,   release, none)                 \
  D(cuMemFreeAsync_ptsz,          "cuMemFreeAsync",      StreamOrderedFree, AsyncPt, release, none)                 \
  D(cuMemFree,                    "cuMemFree",           Free, Sync, release, none)                                \
  D(cuMemFree_v2,                 "cuMemFree",           Free, Sync, release, none)                                \
  D(cuMemFreeHost,                "cuMemFreeHost",       FreeHost, Sync, release, none)                            \
  /* ---- driver: synchronization and events ---- */                                                             \
  D0(cuCtxSynchronize,            "cuCtxSynchronize",    DeviceSynchronize)                                        \
  D0(cuProfilerStart,             "cuProfilerStart",     ProfilerStart)                                            \
  D0(cuProfilerStop,              "cuProfilerStop",      ProfilerStop)                                             \
  D(cuCtxSynchronize_v2,          "cuCtxSynchronize_v2", DeviceSynchronize, Sync, ctx_sync, none)                  \
  D(cuStreamSynchronize,          "cuStreamSynchronize", StreamSynchronize, Sync,   stream_use, none)              \
  D(cuStreamSynchronize_ptsz,     "cuStreamSynchronize", StreamSynchronize, SyncPt, stream_use, none)              \
  D(cuEventSynchronize,           "cuEventSynchronize",  EventSynchronize, Sync,    event_use, none)               \
  D(cuStreamQuery,                "cuStreamQuery",       StreamQuery, Sync,         stream_use, none)              \
  D(cuStreamQuery_ptsz,           "cuStreamQuery",       StreamQuery, SyncPt,       stream_use, none)              \
  D(cuEventQuery,                 "cuEventQuery",        StreamQuery, Sync,         event_use, none)               \
  D(cuStreamWaitEvent,            "cuStreamWaitEvent",   StreamWaitEvent, Sync,     event_use, none)               \
  D(cuStreamWaitEvent_ptsz,       "cuStreamWaitEvent",   StreamWaitEvent, SyncPt,   event_use, none)               \
  D(cuEventRecord,                "cuEventRecord",       EventRecord, Sync,         event_use, none)               \
  D(cuEventRecord_ptsz,           "cuEventRecord",       EventRecord, SyncPt,       event_use, none)               \
  D(cuEventRecordWithFlags,       "cuEventRecordWithFlags", EventRecord, Sync,      event_use, none)               \
  D(cuEventRecordWithFlags_ptsz,  "cuEventRecordWithFlags", EventRecord, SyncPt,    event_use, none)               \
  D(cuEventCreate,                "cuEventCreate",       EventCreate, Sync, event_create, event_create_exit)       \
  /* ---- driver: cache configuration ---- */                                                                    \
  D(cuCtxSetCacheConfig,          "cuCtxSetCacheConfig", CacheConfig, Sync, cache_config, none)                    \
  D(cuFuncSetCacheConfig,         "cuFuncSetCacheConfig", CacheConfig, Sync, cache_config, none)
// clang-format on

#define AC_SPEC_R(sym, name, kind, form, enter, exit)            \
  ApiSpec{Domain::Runtime,                                       \
          static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_##sym), \
          name,                                                  \
          ApiKind::kind,                                         \
          is_async(Form::form),                                  \
          is_pt(Form::form)},
#define AC_SPEC_R0(sym, name, kind) \
  ApiSpec{Domain::Runtime, static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_##sym), name, ApiKind::kind, false, false},
#define AC_SPEC_D(sym, name, kind, form, enter, exit)           \
  ApiSpec{Domain::Driver,                                       \
          static_cast<uint32_t>(CUPTI_DRIVER_TRACE_CBID_##sym), \
          name,                                                 \
          ApiKind::kind,                                        \
          is_async(Form::form),                                 \
          is_pt(Form::form)},
#define AC_SPEC_D0(sym, name, kind) \
  ApiSpec{Domain::Driver, static_cast<uint32_t>(CUPTI_DRIVER_TRACE_CBID_##sym), name, ApiKind::kind, false, false},

#define AC_DEC(sym, name, kind, form, enter, exit) Decoders{&enter<sym##_params>, &exit<sym##_params>},
#define AC_DEC0(sym, name, kind) Decoders{&none<NoParams>, &none<NoParams>},

constexpr ApiSpec kApis[] = {AC_WATCHED_APIS(AC_SPEC_R, AC_SPEC_R0, AC_SPEC_D, AC_SPEC_D0)};
constexpr Decoders kDecoders[] = {AC_WATCHED_APIS(AC_DEC, AC_DEC0, AC_DEC, AC_DEC0)};

#undef AC_SPEC_R
#undef AC_SPEC_R0
#undef AC_SPEC_D
#undef AC_SPEC_D0
#undef AC_DEC
#undef AC_DEC0
#undef AC_WATCHED_APIS

constexpr size_t kCount = std::size(kApis);
static_assert(std::size(kDecoders) == kCount);

constexpr uint32_t kRuntimeSize = static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE);
constexpr uint32_t kDriverSize = static_cast<uint32_t>(CUPTI_DRIVER_TRACE_CBID_SIZE);
constexpr uint16_t kNotWatched = 0xffff;
static_assert(kCount < kNotWatched);

// Runtime rows first, then driver rows (watched_apis() promises that order).
constexpr bool domains_in_order() {
  for (size_t i = 1; i < kCount; ++i) {
    if (kApis[i - 1].domain == Domain::Driver && kApis[i].domain == Domain::Runtime) return false;
  }
  return true;
}
static_assert(domains_in_order(), "runtime rows must come before driver rows");

// cbid -> row, one direct-index table per domain, built at compile time. A duplicate (domain, cbid) or a cbid
// outside CUPTI's range fails the build.
template <Domain kDomain, uint32_t kSize>
constexpr std::array<uint16_t, kSize> build_index() {
  std::array<uint16_t, kSize> index{};
  for (auto& slot : index) slot = kNotWatched;
  for (size_t i = 0; i < kCount; ++i) {
    if (kApis[i].domain != kDomain) continue;
    if (kApis[i].cbid >= kSize) throw "cbid out of range";            // not a constant expression: build error
    if (index[kApis[i].cbid] != kNotWatched) throw "duplicate cbid";  // likewise
    index[kApis[i].cbid] = static_cast<uint16_t>(i);
  }
  return index;
}
constexpr auto kRuntimeIndex = build_index<Domain::Runtime, kRuntimeSize>();
constexpr auto kDriverIndex = build_index<Domain::Driver, kDriverSize>();

// The row of a spec: by address when it is one of ours, else by (domain, cbid). kCount when not watched.
size_t row_of(const ApiSpec& spec) {
  const ApiSpec* p = &spec;
  if (!std::less<const ApiSpec*>{}(p, kApis) && std::less<const ApiSpec*>{}(p, kApis + kCount)) {
    return static_cast<size_t>(p - kApis);
  }
  const ApiSpec* found = find_api(spec.domain, spec.cbid);
  return found != nullptr ? static_cast<size_t>(found - kApis) : kCount;
}

}  // namespace

const ApiSpec* find_api(Domain domain, uint32_t cbid) {
  uint16_t row = kNotWatched;
  if (domain == Domain::Runtime) {
    if (cbid < kRuntimeSize) row = kRuntimeIndex[cbid];
  } else if (domain == Domain::Driver) {
    if (cbid < kDriverSize) row = kDriverIndex[cbid];
  }
  return row == kNotWatched ? nullptr : &kApis[row];
}

std::span<const ApiSpec> watched_apis() { return {kApis, kCount}; }

void decode_enter(const ApiSpec& spec, const void* params, ApiCall& out) {
  out.cbid = spec.cbid;
  out.domain = spec.domain;
  out.call.api = spec.kind;
  out.call.async_form = spec.async_form;
  out.call.per_thread_variant = spec.per_thread;
  if (params == nullptr) return;
  const size_t row = row_of(spec);
  if (row < kCount) kDecoders[row].enter(params, out);
}

void decode_exit(const ApiSpec& spec, const void* params, ApiCall& out) {
  if (params == nullptr) return;
  const size_t row = row_of(spec);
  if (row < kCount) kDecoders[row].exit(params, out);
}

}  // namespace asynccheck::cupti
