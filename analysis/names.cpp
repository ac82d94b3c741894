#include "analysis/names.h"

#include <array>
#include <string>
#include <utility>

namespace asynccheck {
namespace {

using rules::ApiKind;
using rules::CopyDirection;
using rules::MemoryKind;
using rules::ModuleLoading;
using rules::StreamKind;
using rules::WaitMode;

template <typename Enum, size_t N>
using Names = std::array<std::pair<Enum, std::string_view>, N>;

constexpr Names<ApiKind, 28> kApiKinds{{
    {ApiKind::Copy, "copy"},
    {ApiKind::Memset, "memset"},
    {ApiKind::KernelLaunch, "launch"},
    {ApiKind::GraphLaunch, "graph-launch"},
    {ApiKind::StreamCreate, "stream-create"},
    {ApiKind::StreamDestroy, "stream-destroy"},
    {ApiKind::DeviceAlloc, "device-alloc"},
    {ApiKind::PinnedAlloc, "pinned-alloc"},
    {ApiKind::HostRegister, "host-register"},
    {ApiKind::HostUnregister, "host-unregister"},
    {ApiKind::ManagedAlloc, "managed-alloc"},
    {ApiKind::StreamOrderedAlloc, "stream-ordered-alloc"},
    {ApiKind::StreamOrderedFree, "stream-ordered-free"},
    {ApiKind::Free, "free"},
    {ApiKind::FreeHost, "free-host"},
    {ApiKind::DeviceSynchronize, "device-sync"},
    {ApiKind::StreamSynchronize, "stream-sync"},
    {ApiKind::EventSynchronize, "event-sync"},
    {ApiKind::StreamQuery, "query"},
    {ApiKind::StreamWaitEvent, "stream-wait-event"},
    {ApiKind::EventRecord, "event-record"},
    {ApiKind::EventCreate, "event-create"},
    {ApiKind::CacheConfig, "cache-config"},
    {ApiKind::CaptureBegin, "capture-begin"},
    {ApiKind::CaptureEnd, "capture-end"},
    {ApiKind::ProfilerStart, "profiler-start"},
    {ApiKind::ProfilerStop, "profiler-stop"},
    {ApiKind::Other, "other"},
}};
constexpr Names<CopyDirection, 6> kDirections{{
    {CopyDirection::Unknown, "unknown"},
    {CopyDirection::HostToHost, "h2h"},
    {CopyDirection::HostToDevice, "h2d"},
    {CopyDirection::DeviceToHost, "d2h"},
    {CopyDirection::DeviceToDevice, "d2d"},
    {CopyDirection::Default, "default"},
}};
constexpr Names<MemoryKind, 6> kMemoryKinds{{
    {MemoryKind::Unknown, "unknown"},
    {MemoryKind::Pageable, "pageable"},
    {MemoryKind::Pinned, "pinned"},
    {MemoryKind::Device, "device"},
    {MemoryKind::Managed, "managed"},
    {MemoryKind::Array, "array"},
}};
constexpr Names<StreamKind, 5> kStreamKinds{{
    {StreamKind::Unknown, "unknown"},
    {StreamKind::LegacyDefault, "legacy"},
    {StreamKind::PerThreadDefault, "per-thread"},
    {StreamKind::Blocking, "blocking"},
    {StreamKind::NonBlocking, "non-blocking"},
}};
constexpr Names<WaitMode, 4> kWaitModes{{
    {WaitMode::Auto, "auto"},
    {WaitMode::Spin, "spin"},
    {WaitMode::Yield, "yield"},
    {WaitMode::BlockingSync, "blocking-sync"},
}};
constexpr Names<ModuleLoading, 3> kModuleLoading{{
    {ModuleLoading::Default, "default"},
    {ModuleLoading::Lazy, "lazy"},
    {ModuleLoading::Eager, "eager"},
}};
constexpr Names<Domain, 2> kDomains{{{Domain::Runtime, "runtime"}, {Domain::Driver, "driver"}}};
constexpr Names<GpuOpKind, 5> kOpKinds{{
    {GpuOpKind::Memcpy, "memcpy"},
    {GpuOpKind::Memset, "memset"},
    {GpuOpKind::Kernel, "kernel"},
    {GpuOpKind::Sync, "sync"},
    {GpuOpKind::Migration, "migration"},
}};
constexpr Names<MarkKind, 3> kMarkKinds{{
    {MarkKind::ContextCreated, "context-created"},
    {MarkKind::ModuleLoaded, "module-loaded"},
    {MarkKind::ContextDestroyed, "context-destroyed"},
}};

template <typename Enum>
constexpr const auto& table();
template <>
constexpr const auto& table<ApiKind>() {
  return kApiKinds;
}
template <>
constexpr const auto& table<CopyDirection>() {
  return kDirections;
}
template <>
constexpr const auto& table<MemoryKind>() {
  return kMemoryKinds;
}
template <>
constexpr const auto& table<StreamKind>() {
  return kStreamKinds;
}
template <>
constexpr const auto& table<WaitMode>() {
  return kWaitModes;
}
template <>
constexpr const auto& table<ModuleLoading>() {
  return kModuleLoading;
}
template <>
constexpr const auto& table<Domain>() {
  return kDomains;
}
template <>
constexpr const auto& table<GpuOpKind>() {
  return kOpKinds;
}
template <>
constexpr const auto& table<MarkKind>() {
  return kMarkKinds;
}

template <typename Enum>
std::string_view lookup(Enum v) {
  for (const auto& [e, n] : table<Enum>()) {
    if (e == v) return n;
  }
  return "unknown";
}

}  // namespace

std::string_view name_of(ApiKind v) { return lookup(v); }
std::string_view name_of(CopyDirection v) { return lookup(v); }
std::string_view name_of(MemoryKind v) { return lookup(v); }
std::string_view name_of(StreamKind v) { return lookup(v); }
std::string_view name_of(WaitMode v) { return lookup(v); }
std::string_view name_of(ModuleLoading v) { return lookup(v); }
std::string_view name_of(Domain v) { return lookup(v); }
std::string_view name_of(GpuOpKind v) { return lookup(v); }
std::string_view name_of(MarkKind v) { return lookup(v); }

template <typename Enum>
std::optional<Enum> parse_name(std::string_view text) {
  for (const auto& [e, n] : table<Enum>()) {
    if (n == text) return e;
  }
  return std::nullopt;
}

template <typename Enum>
std::string valid_names() {
  std::string out;
  for (const auto& [e, n] : table<Enum>()) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

#define AC_INSTANTIATE(Enum)                                       \
  template std::optional<Enum> parse_name<Enum>(std::string_view); \
  template std::string valid_names<Enum>();
AC_INSTANTIATE(ApiKind)
AC_INSTANTIATE(CopyDirection)
AC_INSTANTIATE(MemoryKind)
AC_INSTANTIATE(StreamKind)
AC_INSTANTIATE(WaitMode)
AC_INSTANTIATE(ModuleLoading)
AC_INSTANTIATE(Domain)
AC_INSTANTIATE(GpuOpKind)
AC_INSTANTIATE(MarkKind)
#undef AC_INSTANTIATE

}  // namespace asynccheck
