// Unit tests of the pure rule engine (rules/predict.h) and of the rule catalog (rules/catalog.h).
//
// Every rule of rules.def has at least one positive case (a call for which predict() returns it, with the expected
// host behaviour and GPU-side effect) and at least one negative case (the nearest call that must not get it); the
// CoverageTest below fails when a rule is added to the catalog without both.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <ostream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "rules/call.h"
#include "rules/catalog.h"
#include "rules/predict.h"

namespace {

using namespace asynccheck::rules;
using D = CopyDirection;
using M = MemoryKind;
using S = StreamKind;
using H = HostBehavior;
using G = GpuEffect;
using R = RuleId;

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t k64K = 65536;

// ---- building call descriptions ----

class Call {
 public:
  explicit Call(ApiKind api) { d_.api = api; }
  Call async() const {
    return with([](CallDescription& c) { c.async_form = true; });
  }
  Call ptds() const {
    return with([](CallDescription& c) { c.per_thread_variant = true; });
  }
  Call on(S s) const {
    return with([s](CallDescription& c) { c.stream = s; });
  }
  Call pending() const {
    return with([](CallDescription& c) { c.blocking_streams_pending = true; });
  }
  Call first() const {
    return with([](CallDescription& c) { c.first_launch = true; });
  }
  Call stream_ordered() const {
    return with([](CallDescription& c) { c.stream_ordered_pointer = true; });
  }
  Call wait(WaitMode m) const {
    return with([m](CallDescription& c) { c.wait_mode = m; });
  }
  Call loading(ModuleLoading l) const {
    return with([l](CallDescription& c) { c.env.module_loading = l; });
  }
  Call launch_blocking() const {
    return with([](CallDescription& c) { c.env.launch_blocking = true; });
  }
  Call pageable_node() const {
    return with([](CallDescription& c) { c.pageable_copy_node = true; });
  }
  const CallDescription& desc() const { return d_; }

  friend Call copy(D dir, M src, M dst, uint64_t n);
  friend Call memset_of(M dst);

 private:
  template <class F>
  Call with(F f) const {
    Call c = *this;
    f(c.d_);
    return c;
  }
  CallDescription d_;
};

Call copy(D dir, M src, M dst, uint64_t n) {
  Call c(ApiKind::Copy);
  c.d_.direction = dir;
  c.d_.src = src;
  c.d_.dst = dst;
  c.d_.bytes = n;
  return c;
}

Call memset_of(M dst) {
  Call c(ApiKind::Memset);
  c.d_.dst = dst;
  c.d_.bytes = kMiB;
  return c;
}

Call api(ApiKind k) { return Call(k); }
Call launch() { return Call(ApiKind::KernelLaunch); }

std::string rule_id(R r) { return std::string(rule(r).id); }
std::string rule_id(const std::optional<R>& r) { return r ? rule_id(*r) : std::string("(none)"); }

// ---- positive cases: the exact prediction ----

struct Positive {
  std::string name;
  CallDescription call;
  R rule;
  H host;
  G gpu;
  std::optional<R> gpu_rule;
  bool spins;
};

void PrintTo(const Positive& p, std::ostream* os) { *os << p.name; }

Positive P(std::string name, const Call& c, R r, H h, G g = G::None, std::optional<R> gr = std::nullopt,
           bool spins = false) {
  return Positive{std::move(name), c.desc(), r, h, g, gr, spins};
}
// An explicit wait: host_spins says whether it busy-waits.
Positive W(std::string name, const Call& c, R r, H h, bool spins) {
  return P(std::move(name), c, r, h, G::None, std::nullopt, spins);
}
Positive Implicit(std::string name, const Call& c, R r, H h, R gpu_rule) {
  return P(std::move(name), c, r, h, G::ImplicitSynchronizationPoint, gpu_rule);
}
Positive Legacy(std::string name, const Call& c, R r, H h) {
  return P(std::move(name), c, r, h, G::SerializesWithBlockingStreams, R::LegacyStreamSerialization);
}

const std::vector<Positive>& positive_cases() {
  static const std::vector<Positive> cases = {
      // ---- copies: device to pageable host ----
      P("AsyncD2HPageable", copy(D::DeviceToHost, M::Device, M::Pageable, kMiB).async().on(S::Blocking),
        R::CopyAsyncPageableD2H, H::ReturnsWhenCopyCompletes),
      P("AsyncD2HPageableSmall", copy(D::DeviceToHost, M::Device, M::Pageable, 100).async().on(S::Blocking),
        R::CopyAsyncPageableD2H, H::ReturnsWhenCopyCompletes),
      P("AsyncD2HPageableDefaultDirection", copy(D::Default, M::Device, M::Pageable, kMiB).async().on(S::Blocking),
        R::CopyAsyncPageableD2H, H::ReturnsWhenCopyCompletes),
      // ---- copies: pageable host to device, and the 64 KB boundary ----
      P("AsyncH2DPageable65537", copy(D::HostToDevice, M::Pageable, M::Device, k64K + 1).async().on(S::Blocking),
        R::CopyAsyncPageableH2D, H::ReturnsAfterStaging),
      P("AsyncH2DPageable1MiBDefaultDirection", copy(D::Default, M::Pageable, M::Device, kMiB).async().on(S::Blocking),
        R::CopyAsyncPageableH2D, H::ReturnsAfterStaging),
      P("AsyncH2DPageable65536", copy(D::HostToDevice, M::Pageable, M::Device, k64K).async().on(S::Blocking),
        R::CopySmallH2D, H::Asynchronous),
      P("AsyncH2DPageable1Byte", copy(D::HostToDevice, M::Pageable, M::Device, 1).async().on(S::Blocking),
        R::CopySmallH2D, H::Asynchronous),
      P("SyncH2DPageable4K", copy(D::HostToDevice, M::Pageable, M::Device, 4096), R::CopySmallH2D, H::Asynchronous),
      P("SyncH2DPinned65536", copy(D::HostToDevice, M::Pinned, M::Device, k64K), R::CopySmallH2D, H::Asynchronous),
      // ---- copies: pinned ----
      P("AsyncH2DPinned", copy(D::HostToDevice, M::Pinned, M::Device, kMiB).async().on(S::Blocking), R::CopyAsyncPinned,
        H::Asynchronous),
      P("AsyncD2HPinned", copy(D::DeviceToHost, M::Device, M::Pinned, kMiB).async().on(S::NonBlocking),
        R::CopyAsyncPinned, H::Asynchronous),
      P("AsyncD2HPinnedDefaultDirection", copy(D::Default, M::Device, M::Pinned, kMiB).async().on(S::Blocking),
        R::CopyAsyncPinned, H::Asynchronous),
      // ---- copies: host to host ----
      P("H2HBothPageableAsync", copy(D::HostToHost, M::Pageable, M::Pageable, kMiB).async().on(S::Blocking),
        R::CopyHostToHost, H::FullySynchronous),
      P("H2HBothPageableSync", copy(D::HostToHost, M::Pageable, M::Pageable, kMiB), R::CopyHostToHost,
        H::FullySynchronous),
      P("H2HPinnedToPageableAsync", copy(D::HostToHost, M::Pinned, M::Pageable, kMiB).async().on(S::Blocking),
        R::CopyHostToHost, H::FullySynchronous),
      P("H2HPageableToPinnedSync", copy(D::HostToHost, M::Pageable, M::Pinned, 16), R::CopyHostToHost,
        H::FullySynchronous),
      P("H2HDefaultTwoHostPointersAsync", copy(D::Default, M::Pageable, M::Pinned, kMiB).async().on(S::Blocking),
        R::CopyHostToHost, H::FullySynchronous),
      P("H2HDefaultTwoPageableAsync", copy(D::Default, M::Pageable, M::Pageable, 16).async().on(S::Blocking),
        R::CopyHostToHost, H::FullySynchronous),
      // ---- copies: device to device ----
      Implicit("D2DSync", copy(D::DeviceToDevice, M::Device, M::Device, kMiB), R::CopyDeviceToDevice, H::Asynchronous,
               R::CopyDeviceToDevice),
      Implicit("D2DSyncDefaultDirectionArray", copy(D::Default, M::Array, M::Device, kMiB), R::CopyDeviceToDevice,
               H::Asynchronous, R::CopyDeviceToDevice),
      Implicit("D2DSyncPerThreadVariantPending", copy(D::DeviceToDevice, M::Device, M::Device, kMiB).ptds().pending(),
               R::CopyDeviceToDevice, H::Asynchronous, R::CopyDeviceToDevice),
      P("D2DAsync", copy(D::DeviceToDevice, M::Device, M::Device, kMiB).async().on(S::Blocking), R::CopyDeviceToDevice,
        H::Asynchronous),
      // ---- copies: synchronous forms ----
      P("SyncH2DPageable1MiB", copy(D::HostToDevice, M::Pageable, M::Device, kMiB), R::CopySyncPageableH2D,
        H::ReturnsAfterStaging),
      P("SyncH2DPageable65537", copy(D::HostToDevice, M::Pageable, M::Device, k64K + 1), R::CopySyncPageableH2D,
        H::ReturnsAfterStaging),
      P("SyncH2DPinned1MiB", copy(D::HostToDevice, M::Pinned, M::Device, kMiB), R::CopySyncPinnedH2D,
        H::FullySynchronous),
      P("SyncD2HPinned", copy(D::DeviceToHost, M::Device, M::Pinned, kMiB), R::CopySyncD2H,
        H::ReturnsWhenCopyCompletes),
      P("SyncD2HPageable", copy(D::DeviceToHost, M::Device, M::Pageable, kMiB), R::CopySyncD2H,
        H::ReturnsWhenCopyCompletes),
      P("SyncD2HPageable4Bytes", copy(D::DeviceToHost, M::Device, M::Pageable, 4), R::CopySyncD2H,
        H::ReturnsWhenCopyCompletes),
      P("SyncD2HPerThreadVariant", copy(D::DeviceToHost, M::Device, M::Pinned, kMiB).ptds(), R::CopySyncD2H,
        H::ReturnsWhenCopyCompletes),
      // ---- copies: managed memory ----
      P("AsyncH2DToManaged", copy(D::HostToDevice, M::Pinned, M::Managed, kMiB).async().on(S::Blocking), R::CopyManaged,
        H::MayBlock),
      P("AsyncSmallH2DToManaged", copy(D::HostToDevice, M::Pageable, M::Managed, 1024).async().on(S::Blocking),
        R::CopyManaged, H::MayBlock),
      P("AsyncD2HFromManaged", copy(D::DeviceToHost, M::Managed, M::Pinned, kMiB).async().on(S::Blocking),
        R::CopyManaged, H::MayBlock),
      P("SyncDefaultManagedToDevice", copy(D::Default, M::Managed, M::Device, kMiB), R::CopyManaged, H::MayBlock),
      // ---- copies: memory we could not classify ----
      P("AsyncH2DUnknownSource", copy(D::HostToDevice, M::Unknown, M::Device, kMiB).async().on(S::Blocking),
        R::CopyUnknownMemory, H::MayBlock),
      P("SyncH2DUnknownSource", copy(D::HostToDevice, M::Unknown, M::Device, kMiB), R::CopyUnknownMemory, H::MayBlock),
      P("AsyncD2HUnknownDestination", copy(D::DeviceToHost, M::Device, M::Unknown, kMiB).async().on(S::Blocking),
        R::CopyUnknownMemory, H::MayBlock),
      P("AsyncDefaultUnknownSource", copy(D::Default, M::Unknown, M::Device, kMiB).async().on(S::Blocking),
        R::CopyUnknownMemory, H::MayBlock),
      P("AsyncUnknownEverything", copy(D::Unknown, M::Unknown, M::Unknown, kMiB).async().on(S::Blocking),
        R::CopyUnknownMemory, H::MayBlock),
      // ---- memset ----
      Implicit("MemsetSyncDevice", memset_of(M::Device), R::MemsetDevice, H::Asynchronous, R::MemsetDevice),
      Implicit("MemsetSyncDevicePerThreadVariantPending", memset_of(M::Device).ptds().pending(), R::MemsetDevice,
               H::Asynchronous, R::MemsetDevice),
      P("MemsetSyncPinnedHost", memset_of(M::Pinned), R::MemsetPinnedHost, H::FullySynchronous),
      P("MemsetSyncManaged", memset_of(M::Managed), R::MemsetManaged, H::FullySynchronous),
      P("MemsetAsyncDevice", memset_of(M::Device).async().on(S::Blocking), R::MemsetAsync, H::Asynchronous),
      P("MemsetAsyncPinnedHost", memset_of(M::Pinned).async().on(S::Blocking), R::MemsetAsync, H::Asynchronous),
      P("MemsetAsyncManaged", memset_of(M::Managed).async().on(S::Blocking), R::MemsetAsync, H::Asynchronous),
      // ---- the legacy default stream, with blocking streams pending ----
      Legacy("LegacyKernelLaunch", launch().on(S::LegacyDefault).pending(), R::LaunchAsync, H::Asynchronous),
      Legacy("LegacyGraphLaunch", api(ApiKind::GraphLaunch).on(S::LegacyDefault).pending(), R::GraphLaunch,
             H::Asynchronous),
      Legacy("LegacyAsyncCopyPinned",
             copy(D::HostToDevice, M::Pinned, M::Device, kMiB).async().on(S::LegacyDefault).pending(),
             R::CopyAsyncPinned, H::Asynchronous),
      Legacy("LegacyAsyncMemset", memset_of(M::Device).async().on(S::LegacyDefault).pending(), R::MemsetAsync,
             H::Asynchronous),
      // The synchronous forms take no stream: they go to the legacy default stream.
      Legacy("LegacySyncCopyD2H", copy(D::DeviceToHost, M::Device, M::Pinned, kMiB).pending(), R::CopySyncD2H,
             H::ReturnsWhenCopyCompletes),
      Legacy("LegacySyncCopyH2DPageable", copy(D::HostToDevice, M::Pageable, M::Device, kMiB).pending(),
             R::CopySyncPageableH2D, H::ReturnsAfterStaging),
      Legacy("LegacySyncCopyH2DSmall", copy(D::HostToDevice, M::Pageable, M::Device, 64).pending(), R::CopySmallH2D,
             H::Asynchronous),
      // Serialization outranks the per-kind implicit synchronization point.
      Legacy("LegacySyncCopyD2D", copy(D::DeviceToDevice, M::Device, M::Device, kMiB).pending(), R::CopyDeviceToDevice,
             H::Asynchronous),
      Legacy("LegacySyncMemsetDevice", memset_of(M::Device).pending(), R::MemsetDevice, H::Asynchronous),
      Legacy("LegacyStreamWaitEvent", api(ApiKind::StreamWaitEvent).on(S::LegacyDefault).pending(), R::AsyncQuery,
             H::Asynchronous),
      Legacy("LegacyEventRecord", api(ApiKind::EventRecord).on(S::LegacyDefault).pending(), R::AsyncQuery,
             H::Asynchronous),
      Legacy("LegacyMallocAsync", api(ApiKind::StreamOrderedAlloc).on(S::LegacyDefault).pending(),
             R::StreamOrderedAlloc, H::Asynchronous),
      Legacy("LegacyFreeAsync", api(ApiKind::StreamOrderedFree).on(S::LegacyDefault).pending(), R::StreamOrderedAlloc,
             H::Asynchronous),
      // ---- streams ----
      P("StreamCreate", api(ApiKind::StreamCreate), R::StreamCreate, H::Asynchronous),
      P("StreamDestroy", api(ApiKind::StreamDestroy).on(S::Blocking), R::StreamDestroy, H::Asynchronous),
      // ---- allocation and free ----
      Implicit("CudaMalloc", api(ApiKind::DeviceAlloc), R::DeviceAlloc, H::MayBlock, R::DeviceAlloc),
      Implicit("CudaMallocManaged", api(ApiKind::ManagedAlloc), R::DeviceAlloc, H::MayBlock, R::DeviceAlloc),
      Implicit("CudaMallocHost", api(ApiKind::PinnedAlloc), R::PinnedAlloc, H::MayBlock, R::PinnedAlloc),
      Implicit("CudaHostRegister", api(ApiKind::HostRegister), R::PinnedAlloc, H::MayBlock, R::PinnedAlloc),
      P("CudaFree", api(ApiKind::Free), R::FreeWaitsForDevice, H::WaitsForDevice),
      P("CudaFreeOfStreamOrderedPointer", api(ApiKind::Free).stream_ordered(), R::FreeStreamOrdered, H::Asynchronous),
      P("CudaFreeHost", api(ApiKind::FreeHost), R::FreeHost, H::MayBlock),
      P("CudaHostUnregister", api(ApiKind::HostUnregister), R::FreeHost, H::MayBlock),
      P("CudaMallocAsync", api(ApiKind::StreamOrderedAlloc).on(S::Blocking), R::StreamOrderedAlloc, H::Asynchronous),
      P("CudaFreeAsync", api(ApiKind::StreamOrderedFree).on(S::NonBlocking), R::StreamOrderedAlloc, H::Asynchronous),
      Implicit("CacheConfig", api(ApiKind::CacheConfig), R::CacheConfig, H::MayBlock, R::CacheConfig),
      // ---- explicit synchronization: host_spins follows the wait mode ----
      W("DeviceSynchronizeAuto", api(ApiKind::DeviceSynchronize), R::DeviceSynchronize, H::WaitsForDevice, true),
      W("DeviceSynchronizeYield", api(ApiKind::DeviceSynchronize).wait(WaitMode::Yield), R::DeviceSynchronize,
        H::WaitsForDevice, true),
      W("DeviceSynchronizeBlockingSync", api(ApiKind::DeviceSynchronize).wait(WaitMode::BlockingSync),
        R::DeviceSynchronize, H::WaitsForDevice, false),
      W("StreamSynchronizeSpin", api(ApiKind::StreamSynchronize).on(S::Blocking).wait(WaitMode::Spin),
        R::StreamSynchronize, H::WaitsForStream, true),
      W("StreamSynchronizeBlockingSync", api(ApiKind::StreamSynchronize).on(S::Blocking).wait(WaitMode::BlockingSync),
        R::StreamSynchronize, H::WaitsForStream, false),
      W("EventSynchronizeAuto", api(ApiKind::EventSynchronize), R::EventSynchronizeSpin, H::WaitsForEvent, true),
      W("EventSynchronizeSpin", api(ApiKind::EventSynchronize).wait(WaitMode::Spin), R::EventSynchronizeSpin,
        H::WaitsForEvent, true),
      W("EventSynchronizeYield", api(ApiKind::EventSynchronize).wait(WaitMode::Yield), R::EventSynchronizeSpin,
        H::WaitsForEvent, true),
      W("EventSynchronizeBlockingSync", api(ApiKind::EventSynchronize).wait(WaitMode::BlockingSync),
        R::EventSynchronizeBlocking, H::WaitsForEvent, false),
      P("StreamQuery", api(ApiKind::StreamQuery).on(S::Blocking), R::AsyncQuery, H::Asynchronous),
      P("StreamWaitEvent", api(ApiKind::StreamWaitEvent).on(S::Blocking).pending(), R::AsyncQuery, H::Asynchronous),
      P("EventRecord", api(ApiKind::EventRecord).on(S::NonBlocking), R::AsyncQuery, H::Asynchronous),
      // ---- launches ----
      P("LaunchNotFirst", launch().on(S::Blocking), R::LaunchAsync, H::Asynchronous),
      P("LaunchNotFirstLazy", launch().on(S::Blocking).loading(ModuleLoading::Lazy), R::LaunchAsync, H::Asynchronous),
      P("LaunchFirstEager", launch().on(S::Blocking).first().loading(ModuleLoading::Eager), R::LaunchAsync,
        H::Asynchronous),
      P("LaunchFirstDefaultLoading", launch().on(S::Blocking).first(), R::FirstLaunchLazyLoading, H::MayBlock),
      P("LaunchFirstLazy", launch().on(S::Blocking).first().loading(ModuleLoading::Lazy), R::FirstLaunchLazyLoading,
        H::MayBlock),
      P("LaunchBlockingEnv", launch().on(S::Blocking).launch_blocking(), R::LaunchBlockingEnv, H::FullySynchronous),
      P("LaunchBlockingEnvOutranksFirstLaunch", launch().on(S::Blocking).first().launch_blocking(),
        R::LaunchBlockingEnv, H::FullySynchronous),
      P("GraphLaunch", api(ApiKind::GraphLaunch).on(S::Blocking), R::GraphLaunch, H::Asynchronous),
      P("GraphLaunchWithAPageableCopyNode", api(ApiKind::GraphLaunch).on(S::Blocking).pageable_node(),
        R::GraphPageableCopyNode, H::ReturnsWhenCopyCompletes),
      // ---- anything else ----
      P("OtherCall", api(ApiKind::Other), R::UndocumentedBlock, H::NotDocumented),
  };
  return cases;
}

class PredictPositive : public ::testing::TestWithParam<Positive> {};

TEST_P(PredictPositive, Predicts) {
  const Positive& c = GetParam();
  const Prediction p = predict(c.call);
  EXPECT_EQ(rule_id(p.host_rule), rule_id(c.rule));
  EXPECT_EQ(host_behavior_text(p.host), host_behavior_text(c.host));
  EXPECT_EQ(gpu_effect_text(p.gpu), gpu_effect_text(c.gpu));
  EXPECT_EQ(rule_id(p.gpu_rule), rule_id(c.gpu_rule));
  EXPECT_EQ(p.host_spins, c.spins);
}

// Invariants that hold for every prediction, checked on every positive case.
TEST_P(PredictPositive, Invariants) {
  const Prediction p = predict(GetParam().call);
  // gpu_rule is set exactly when there is a GPU-side effect.
  EXPECT_EQ(p.gpu_rule.has_value(), p.gpu != G::None);
  if (p.gpu == G::SerializesWithBlockingStreams) {
    EXPECT_EQ(rule_id(p.gpu_rule), "legacy-stream-serialization");
  }
  // Level none means "documented asynchronous", and only those rules predict an asynchronous host.
  EXPECT_EQ(p.host_info().level == Level::None, p.host == H::Asynchronous) << p.host_info().id;
  EXPECT_EQ(&p.host_info(), &rule(p.host_rule));
  // Only a waiting call can spin.
  if (p.host_spins) {
    EXPECT_TRUE(p.host == H::WaitsForDevice || p.host == H::WaitsForStream || p.host == H::WaitsForEvent);
  }
  // Deterministic.
  const Prediction again = predict(GetParam().call);
  EXPECT_EQ(again.host_rule, p.host_rule);
  EXPECT_EQ(again.gpu_rule, p.gpu_rule);
}

INSTANTIATE_TEST_SUITE_P(Rules, PredictPositive, ::testing::ValuesIn(positive_cases()),
                         [](const ::testing::TestParamInfo<Positive>& param_info) { return param_info.param.name; });

// ---- negative cases: the nearest call that must not get a rule, and the rule it gets instead ----

struct Negative {
  std::string name;
  CallDescription call;
  R must_not;   // neither the host rule nor the GPU rule may be this
  R host_rule;  // the host rule it gets instead
};

void PrintTo(const Negative& n, std::ostream* os) { *os << n.name; }

Negative N(std::string name, const Call& c, R must_not, R instead) {
  return Negative{std::move(name), c.desc(), must_not, instead};
}

const std::vector<Negative>& negative_cases() {
  static const std::vector<Negative> cases = {
      // ---- copies ----
      N("AsyncD2HPinnedIsNotPageable", copy(D::DeviceToHost, M::Device, M::Pinned, kMiB).async().on(S::Blocking),
        R::CopyAsyncPageableD2H, R::CopyAsyncPinned),
      N("SyncD2HPageableIsNotAsyncRule", copy(D::DeviceToHost, M::Device, M::Pageable, kMiB), R::CopyAsyncPageableD2H,
        R::CopySyncD2H),
      N("AsyncH2DPageable65536IsSmall", copy(D::HostToDevice, M::Pageable, M::Device, k64K).async().on(S::Blocking),
        R::CopyAsyncPageableH2D, R::CopySmallH2D),
      N("AsyncH2DPinned65537IsNotPageable",
        copy(D::HostToDevice, M::Pinned, M::Device, k64K + 1).async().on(S::Blocking), R::CopyAsyncPageableH2D,
        R::CopyAsyncPinned),
      N("SyncH2DPageable65537IsNotAsyncRule", copy(D::HostToDevice, M::Pageable, M::Device, k64K + 1),
        R::CopyAsyncPageableH2D, R::CopySyncPageableH2D),
      N("AsyncH2DPageable65537IsNotSmall",
        copy(D::HostToDevice, M::Pageable, M::Device, k64K + 1).async().on(S::Blocking), R::CopySmallH2D,
        R::CopyAsyncPageableH2D),
      N("SmallD2HIsNotSmallH2D", copy(D::DeviceToHost, M::Device, M::Pageable, 100).async().on(S::Blocking),
        R::CopySmallH2D, R::CopyAsyncPageableD2H),
      N("SyncH2DPinned65537IsNotSmall", copy(D::HostToDevice, M::Pinned, M::Device, k64K + 1), R::CopySmallH2D,
        R::CopySyncPinnedH2D),
      N("SyncH2DPinnedIsNotAsyncPinned", copy(D::HostToDevice, M::Pinned, M::Device, kMiB), R::CopyAsyncPinned,
        R::CopySyncPinnedH2D),
      N("SyncD2HPinnedIsNotAsyncPinned", copy(D::DeviceToHost, M::Device, M::Pinned, kMiB), R::CopyAsyncPinned,
        R::CopySyncD2H),
      N("AsyncH2DPageableIsNotAsyncPinned", copy(D::HostToDevice, M::Pageable, M::Device, kMiB).async().on(S::Blocking),
        R::CopyAsyncPinned, R::CopyAsyncPageableH2D),
      N("DefaultHostToDeviceIsNotH2H", copy(D::Default, M::Pageable, M::Device, kMiB).async().on(S::Blocking),
        R::CopyHostToHost, R::CopyAsyncPageableH2D),
      N("DefaultHostToManagedIsNotH2H", copy(D::Default, M::Pageable, M::Managed, kMiB).async().on(S::Blocking),
        R::CopyHostToHost, R::CopyManaged),
      N("SyncD2HIsNotD2D", copy(D::DeviceToHost, M::Device, M::Pinned, kMiB), R::CopyDeviceToDevice, R::CopySyncD2H),
      N("DefaultDeviceToPinnedIsNotD2D", copy(D::Default, M::Device, M::Pinned, kMiB).async().on(S::Blocking),
        R::CopyDeviceToDevice, R::CopyAsyncPinned),
      N("AsyncH2DPageableIsNotSyncRule", copy(D::HostToDevice, M::Pageable, M::Device, kMiB).async().on(S::Blocking),
        R::CopySyncPageableH2D, R::CopyAsyncPageableH2D),
      N("SyncH2DPinnedIsNotSyncPageable", copy(D::HostToDevice, M::Pinned, M::Device, kMiB), R::CopySyncPageableH2D,
        R::CopySyncPinnedH2D),
      N("AsyncH2DPinnedIsNotSyncPinned", copy(D::HostToDevice, M::Pinned, M::Device, kMiB).async().on(S::Blocking),
        R::CopySyncPinnedH2D, R::CopyAsyncPinned),
      N("SyncH2DPinned65536IsNotSyncPinned", copy(D::HostToDevice, M::Pinned, M::Device, k64K), R::CopySyncPinnedH2D,
        R::CopySmallH2D),
      N("AsyncD2HPinnedIsNotSyncD2H", copy(D::DeviceToHost, M::Device, M::Pinned, kMiB).async().on(S::Blocking),
        R::CopySyncD2H, R::CopyAsyncPinned),
      N("PinnedToDeviceIsNotManaged", copy(D::HostToDevice, M::Pinned, M::Device, kMiB).async().on(S::Blocking),
        R::CopyManaged, R::CopyAsyncPinned),
      N("KnownPinnedSourceIsNotUnknown", copy(D::HostToDevice, M::Pinned, M::Device, kMiB).async().on(S::Blocking),
        R::CopyUnknownMemory, R::CopyAsyncPinned),
      N("ResolvableDefaultIsNotUnknown", copy(D::Default, M::Pinned, M::Device, kMiB).async().on(S::Blocking),
        R::CopyUnknownMemory, R::CopyAsyncPinned),
      // ---- memset ----
      N("MemsetAsyncDeviceIsNotMemsetDevice", memset_of(M::Device).async().on(S::Blocking), R::MemsetDevice,
        R::MemsetAsync),
      N("MemsetSyncPinnedIsNotMemsetDevice", memset_of(M::Pinned), R::MemsetDevice, R::MemsetPinnedHost),
      N("MemsetAsyncPinnedIsNotSynchronous", memset_of(M::Pinned).async().on(S::Blocking), R::MemsetPinnedHost,
        R::MemsetAsync),
      N("MemsetAsyncManagedIsNotSynchronous", memset_of(M::Managed).async().on(S::Blocking), R::MemsetManaged,
        R::MemsetAsync),
      N("MemsetSyncDeviceIsNotAsync", memset_of(M::Device), R::MemsetAsync, R::MemsetDevice),
      // ---- the legacy default stream ----
      N("LaunchPerThreadDefaultStreamPending", launch().on(S::PerThreadDefault).pending(), R::LegacyStreamSerialization,
        R::LaunchAsync),
      N("LaunchNonBlockingStreamPending", launch().on(S::NonBlocking).pending(), R::LegacyStreamSerialization,
        R::LaunchAsync),
      N("LaunchBlockingStreamPending", launch().on(S::Blocking).pending(), R::LegacyStreamSerialization,
        R::LaunchAsync),
      N("LaunchLegacyNothingPending", launch().on(S::LegacyDefault), R::LegacyStreamSerialization, R::LaunchAsync),
      N("SyncCopyPerThreadVariantPending", copy(D::DeviceToHost, M::Device, M::Pinned, kMiB).ptds().pending(),
        R::LegacyStreamSerialization, R::CopySyncD2H),
      N("SyncCopyLegacyNothingPending", copy(D::DeviceToHost, M::Device, M::Pinned, kMiB), R::LegacyStreamSerialization,
        R::CopySyncD2H),
      N("SyncMemsetPerThreadVariantPending", memset_of(M::Device).ptds().pending(), R::LegacyStreamSerialization,
        R::MemsetDevice),
      N("AsyncCopyPerThreadDefaultStreamPending",
        copy(D::HostToDevice, M::Pinned, M::Device, kMiB).async().ptds().on(S::PerThreadDefault).pending(),
        R::LegacyStreamSerialization, R::CopyAsyncPinned),
      // Host-side waits and allocations are no stream commands.
      N("StreamSynchronizeLegacyPending", api(ApiKind::StreamSynchronize).on(S::LegacyDefault).pending(),
        R::LegacyStreamSerialization, R::StreamSynchronize),
      N("CudaMallocPending", api(ApiKind::DeviceAlloc).pending(), R::LegacyStreamSerialization, R::DeviceAlloc),
      // ---- streams ----
      N("StreamDestroyIsNotCreate", api(ApiKind::StreamDestroy), R::StreamCreate, R::StreamDestroy),
      N("StreamCreateIsNotDestroy", api(ApiKind::StreamCreate), R::StreamDestroy, R::StreamCreate),
      // ---- allocation and free ----
      N("MallocAsyncIsNotDeviceAlloc", api(ApiKind::StreamOrderedAlloc).on(S::Blocking), R::DeviceAlloc,
        R::StreamOrderedAlloc),
      N("HostUnregisterIsNotPinnedAlloc", api(ApiKind::HostUnregister), R::PinnedAlloc, R::FreeHost),
      N("CudaMallocIsNotPinnedAlloc", api(ApiKind::DeviceAlloc), R::PinnedAlloc, R::DeviceAlloc),
      N("FreeOfStreamOrderedPointerDoesNotWait", api(ApiKind::Free).stream_ordered(), R::FreeWaitsForDevice,
        R::FreeStreamOrdered),
      N("FreeOfCudaMallocPointerIsNotStreamOrdered", api(ApiKind::Free), R::FreeStreamOrdered, R::FreeWaitsForDevice),
      N("CudaFreeIsNotFreeHost", api(ApiKind::Free), R::FreeHost, R::FreeWaitsForDevice),
      N("CudaFreeOfStreamOrderedPointerIsNotFreeAsync", api(ApiKind::Free).stream_ordered(), R::StreamOrderedAlloc,
        R::FreeStreamOrdered),
      N("CudaMallocIsNotStreamOrdered", api(ApiKind::DeviceAlloc), R::StreamOrderedAlloc, R::DeviceAlloc),
      N("OtherIsNotCacheConfig", api(ApiKind::Other), R::CacheConfig, R::UndocumentedBlock),
      // ---- explicit synchronization ----
      N("StreamSynchronizeIsNotDeviceSynchronize", api(ApiKind::StreamSynchronize).on(S::Blocking),
        R::DeviceSynchronize, R::StreamSynchronize),
      N("StreamQueryIsNotStreamSynchronize", api(ApiKind::StreamQuery).on(S::Blocking), R::StreamSynchronize,
        R::AsyncQuery),
      N("EventSynchronizeBlockingSyncDoesNotSpin", api(ApiKind::EventSynchronize).wait(WaitMode::BlockingSync),
        R::EventSynchronizeSpin, R::EventSynchronizeBlocking),
      N("EventSynchronizeAutoIsNotBlocking", api(ApiKind::EventSynchronize), R::EventSynchronizeBlocking,
        R::EventSynchronizeSpin),
      N("StreamSynchronizeIsNotQuery", api(ApiKind::StreamSynchronize).on(S::Blocking), R::AsyncQuery,
        R::StreamSynchronize),
      N("EventSynchronizeIsNotQuery", api(ApiKind::EventSynchronize), R::AsyncQuery, R::EventSynchronizeSpin),
      // ---- launches ----
      N("FirstLaunchLazyIsNotAsync", launch().on(S::Blocking).first(), R::LaunchAsync, R::FirstLaunchLazyLoading),
      N("LaunchBlockingEnvIsNotAsync", launch().on(S::Blocking).launch_blocking(), R::LaunchAsync,
        R::LaunchBlockingEnv),
      N("LaunchWithoutEnvIsNotBlocking", launch().on(S::Blocking), R::LaunchBlockingEnv, R::LaunchAsync),
      N("FirstLaunchEagerLoading", launch().on(S::Blocking).first().loading(ModuleLoading::Eager),
        R::FirstLaunchLazyLoading, R::LaunchAsync),
      N("NotFirstLaunchLazyLoading", launch().on(S::Blocking).loading(ModuleLoading::Lazy), R::FirstLaunchLazyLoading,
        R::LaunchAsync),
      N("KernelLaunchIsNotGraphLaunch", launch().on(S::Blocking), R::GraphLaunch, R::LaunchAsync),
      N("GraphWithoutPageableNodeIsAsync", api(ApiKind::GraphLaunch).on(S::Blocking), R::GraphPageableCopyNode,
        R::GraphLaunch),
      // ---- anything else ----
      N("CacheConfigIsDocumented", api(ApiKind::CacheConfig), R::UndocumentedBlock, R::CacheConfig),
      N("StreamCreateIsDocumented", api(ApiKind::StreamCreate), R::UndocumentedBlock, R::StreamCreate),
  };
  return cases;
}

class PredictNegative : public ::testing::TestWithParam<Negative> {};

TEST_P(PredictNegative, DoesNotPredict) {
  const Negative& c = GetParam();
  const Prediction p = predict(c.call);
  EXPECT_NE(rule_id(p.host_rule), rule_id(c.must_not));
  EXPECT_NE(rule_id(p.gpu_rule), rule_id(c.must_not));
  EXPECT_EQ(rule_id(p.host_rule), rule_id(c.host_rule));
  if (c.must_not == R::LegacyStreamSerialization) {
    EXPECT_NE(gpu_effect_text(p.gpu), gpu_effect_text(G::SerializesWithBlockingStreams));
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, PredictNegative, ::testing::ValuesIn(negative_cases()),
                         [](const ::testing::TestParamInfo<Negative>& param_info) { return param_info.param.name; });

// Every rule of the catalog has a positive and a negative case above.
TEST(Coverage, EveryRuleHasPositiveAndNegativeCases) {
  std::set<R> positive, negative;
  for (const Positive& c : positive_cases()) {
    positive.insert(c.rule);
    if (c.gpu_rule) positive.insert(*c.gpu_rule);
  }
  for (const Negative& c : negative_cases()) negative.insert(c.must_not);
  for (const Rule& r : all_rules()) {
    // Cost rules are measured, never predicted: the analysis decides them (tests/analysis/test_analyze.cpp).
    if (r.id.starts_with("cost-")) continue;
    EXPECT_TRUE(positive.count(r.rule)) << "no positive case for " << r.id;
    EXPECT_TRUE(negative.count(r.rule)) << "no negative case for " << r.id;
  }
}

// ---- the required boundaries, spelled out ----

TEST(SmallCopy, ThresholdIs64KiBInclusive) {
  EXPECT_EQ(kSmallCopyBytes, 65536u);
  for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{65535}, uint64_t{65536}}) {
    const Prediction p = predict(copy(D::HostToDevice, M::Pageable, M::Device, n).async().on(S::Blocking).desc());
    EXPECT_EQ(rule_id(p.host_rule), "copy-h2d-small") << n << " bytes";
    EXPECT_FALSE(p.may_hold_host()) << n << " bytes";
  }
  for (uint64_t n : {uint64_t{65537}, uint64_t{1} << 30}) {
    const Prediction p = predict(copy(D::HostToDevice, M::Pageable, M::Device, n).async().on(S::Blocking).desc());
    EXPECT_EQ(rule_id(p.host_rule), "copy-async-pageable-h2d") << n << " bytes";
    EXPECT_TRUE(p.may_hold_host()) << n << " bytes";
  }
}

// ---- resolve_direction ----

struct DirectionCase {
  std::string name;
  D given;
  M src;
  M dst;
  D expected;
};

void PrintTo(const DirectionCase& c, std::ostream* os) { *os << c.name; }

class ResolveDirection : public ::testing::TestWithParam<DirectionCase> {};

TEST_P(ResolveDirection, Resolves) {
  const DirectionCase& c = GetParam();
  const Call call = copy(c.given, c.src, c.dst, kMiB);
  EXPECT_EQ(static_cast<int>(resolve_direction(call.desc())), static_cast<int>(c.expected));
}

INSTANTIATE_TEST_SUITE_P(
    Copies, ResolveDirection,
    ::testing::Values(DirectionCase{"DefaultPageableToDevice", D::Default, M::Pageable, M::Device, D::HostToDevice},
                      DirectionCase{"DefaultPinnedToArray", D::Default, M::Pinned, M::Array, D::HostToDevice},
                      DirectionCase{"DefaultDeviceToPageable", D::Default, M::Device, M::Pageable, D::DeviceToHost},
                      DirectionCase{"DefaultArrayToPinned", D::Default, M::Array, M::Pinned, D::DeviceToHost},
                      DirectionCase{"DefaultDeviceToDevice", D::Default, M::Device, M::Device, D::DeviceToDevice},
                      DirectionCase{"DefaultDeviceToArray", D::Default, M::Device, M::Array, D::DeviceToDevice},
                      DirectionCase{"DefaultPageableToPinned", D::Default, M::Pageable, M::Pinned, D::HostToHost},
                      DirectionCase{"DefaultPinnedToPinned", D::Default, M::Pinned, M::Pinned, D::HostToHost},
                      DirectionCase{"UnknownDirectionResolvedToo", D::Unknown, M::Pinned, M::Device, D::HostToDevice},
                      DirectionCase{"DefaultUnknownSourceStaysDefault", D::Default, M::Unknown, M::Device, D::Default},
                      DirectionCase{"DefaultManagedStaysDefault", D::Default, M::Managed, M::Device, D::Default},
                      DirectionCase{"UnknownStaysUnknown", D::Unknown, M::Unknown, M::Unknown, D::Unknown},
                      DirectionCase{"ExplicitH2DKept", D::HostToDevice, M::Device, M::Device, D::HostToDevice},
                      DirectionCase{"ExplicitD2HKept", D::DeviceToHost, M::Unknown, M::Unknown, D::DeviceToHost},
                      DirectionCase{"ExplicitH2HKept", D::HostToHost, M::Unknown, M::Unknown, D::HostToHost},
                      DirectionCase{"ExplicitD2DKept", D::DeviceToDevice, M::Pageable, M::Pinned, D::DeviceToDevice}),
    [](const ::testing::TestParamInfo<DirectionCase>& param_info) { return param_info.param.name; });

TEST(MemoryKinds, HostAndDeviceHelpers) {
  EXPECT_TRUE(is_host_memory(M::Pageable));
  EXPECT_TRUE(is_host_memory(M::Pinned));
  EXPECT_FALSE(is_host_memory(M::Device));
  EXPECT_FALSE(is_host_memory(M::Array));
  EXPECT_FALSE(is_host_memory(M::Managed));
  EXPECT_FALSE(is_host_memory(M::Unknown));
  EXPECT_TRUE(is_device_memory(M::Device));
  EXPECT_TRUE(is_device_memory(M::Array));
  EXPECT_FALSE(is_device_memory(M::Pageable));
  EXPECT_FALSE(is_device_memory(M::Pinned));
  EXPECT_FALSE(is_device_memory(M::Managed));
  EXPECT_FALSE(is_device_memory(M::Unknown));
}

// ---- Prediction helpers and texts ----

TEST(Prediction, MayHoldHost) {
  const std::vector<H> holding = {H::MayBlock,         H::ReturnsAfterStaging, H::ReturnsWhenCopyCompletes,
                                  H::FullySynchronous, H::WaitsForDevice,      H::WaitsForStream,
                                  H::WaitsForEvent};
  for (H h : holding) {
    Prediction p;
    p.host = h;
    EXPECT_TRUE(p.may_hold_host()) << host_behavior_text(h);
  }
  for (H h : {H::Asynchronous, H::NotDocumented}) {
    Prediction p;
    p.host = h;
    EXPECT_FALSE(p.may_hold_host()) << host_behavior_text(h);
  }
}

TEST(Prediction, DefaultIsUndocumented) {
  const Prediction p;
  EXPECT_EQ(p.host_rule, R::UndocumentedBlock);
  EXPECT_EQ(p.host, H::NotDocumented);
  EXPECT_FALSE(p.gpu_rule.has_value());
  EXPECT_EQ(p.gpu, G::None);
  EXPECT_FALSE(p.host_spins);
}

TEST(Texts, DistinctAndKnown) {
  std::set<std::string> seen;
  for (H h : {H::Asynchronous, H::NotDocumented, H::MayBlock, H::ReturnsAfterStaging, H::ReturnsWhenCopyCompletes,
              H::FullySynchronous, H::WaitsForDevice, H::WaitsForStream, H::WaitsForEvent}) {
    const std::string t(host_behavior_text(h));
    EXPECT_NE(t, "unknown");
    EXPECT_FALSE(t.empty());
    EXPECT_TRUE(seen.insert(t).second) << "duplicate host behaviour text: " << t;
  }
  seen.clear();
  for (G g : {G::None, G::SerializesWithBlockingStreams, G::ImplicitSynchronizationPoint}) {
    const std::string t(gpu_effect_text(g));
    EXPECT_NE(t, "unknown");
    EXPECT_FALSE(t.empty());
    EXPECT_TRUE(seen.insert(t).second) << "duplicate GPU effect text: " << t;
  }
}

// ---- the catalog ----

TEST(Catalog, IdsAreUniqueNonEmptyKebabCase) {
  const std::regex kebab("^[a-z0-9]+(-[a-z0-9]+)*$");
  std::set<std::string_view> ids;
  ASSERT_FALSE(all_rules().empty());
  for (const Rule& r : all_rules()) {
    EXPECT_FALSE(r.id.empty());
    EXPECT_TRUE(std::regex_match(std::string(r.id), kebab)) << "not kebab-case: '" << r.id << "'";
    EXPECT_TRUE(ids.insert(r.id).second) << "duplicate id: " << r.id;
  }
}

TEST(Catalog, EveryRuleIsDocumented) {
  for (const Rule& r : all_rules()) {
    EXPECT_FALSE(r.title.empty()) << r.id;
    EXPECT_FALSE(r.basis.empty()) << r.id;
    EXPECT_FALSE(r.fix.empty()) << r.id;
    EXPECT_EQ(r.url.substr(0, 8), "https://") << r.id << ": " << r.url;
    EXPECT_GT(r.url.size(), 8u) << r.id;
  }
}

TEST(Catalog, RuleLookupMatchesEnumOrder) {
  const auto rules = all_rules();
  for (size_t i = 0; i < rules.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(rules[i].rule), i) << rules[i].id;
    EXPECT_EQ(&rule(rules[i].rule), &rules[i]) << rules[i].id;
  }
}

TEST(Catalog, FindRuleRoundTrips) {
  for (const Rule& r : all_rules()) {
    const std::optional<R> found = find_rule(r.id);
    ASSERT_TRUE(found.has_value()) << r.id;
    EXPECT_EQ(*found, r.rule) << r.id;
    EXPECT_EQ(rule(*found).id, r.id);
  }
  EXPECT_FALSE(find_rule("bogus").has_value());
  EXPECT_FALSE(find_rule("").has_value());
  EXPECT_FALSE(find_rule("copy-h2d-small ").has_value());
}

TEST(Catalog, LevelNamesRoundTrip) {
  const std::vector<std::pair<Level, std::string_view>> levels = {
      {Level::None, "none"}, {Level::Note, "note"}, {Level::Warning, "warning"}, {Level::Error, "error"}};
  for (const auto& [level, name] : levels) {
    EXPECT_EQ(level_name(level), name);
    const std::optional<Level> parsed = parse_level(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(*parsed, level) << name;
  }
  EXPECT_FALSE(parse_level("bogus").has_value());
  EXPECT_FALSE(parse_level("").has_value());
}

// A command recorded into a graph by stream capture is not executed: it serializes nothing, whatever its stream.
TEST(Predict, CapturedCommandsDoNotSerialize) {
  CallDescription c;
  c.api = ApiKind::KernelLaunch;
  c.stream = StreamKind::LegacyDefault;
  c.blocking_streams_pending = true;
  EXPECT_EQ(predict(c).gpu, GpuEffect::SerializesWithBlockingStreams);
  c.captured = true;
  EXPECT_EQ(predict(c).gpu, GpuEffect::None);
  EXPECT_FALSE(predict(c).gpu_rule.has_value());
}

}  // namespace
