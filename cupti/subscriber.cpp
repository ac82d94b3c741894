#include "cupti/subscriber.h"

#include <glob.h>
#include <unistd.h>

#include <cupti.h>
#include <dlfcn.h>

#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/caught.h"

namespace asynccheck::cupti {
namespace {

Sink g_sink{};
CUpti_SubscriberHandle g_subscriber = nullptr;

// The NVTX calls that open and close push/pop ranges, and those that name what they refer to (interpose/
// nvtx_ranges.h says why start/end ranges are not among them). Marks, categories and resource names are not.
constexpr CUpti_CallbackId kNvtxCallbacks[] = {
    CUPTI_CBID_NVTX_nvtxRangePushA,
    CUPTI_CBID_NVTX_nvtxRangePushW,
    CUPTI_CBID_NVTX_nvtxRangePushEx,
    CUPTI_CBID_NVTX_nvtxRangePop,
    CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
    CUPTI_CBID_NVTX_nvtxDomainRangePop,
    CUPTI_CBID_NVTX_nvtxDomainCreateA,
    CUPTI_CBID_NVTX_nvtxDomainCreateW,
    CUPTI_CBID_NVTX_nvtxDomainRegisterStringA,
    CUPTI_CBID_NVTX_nvtxDomainRegisterStringW,
};
bool g_nvtx = false;  // the callbacks above are enabled

// CUPTI's fatal-error notification (it detaches itself after sending it: health.h), kept as it comes: the callback
// only copies the message, the report reads it at the end. The first one wins.
std::atomic<bool> g_fatal_claimed{false}, g_fatal_ready{false};
char g_fatal_text[256];

void on_fatal_error(const CUpti_StateData* state) {
  if (g_fatal_claimed.exchange(true)) return;
  const char* msg = state != nullptr && state->notification.message != nullptr ? state->notification.message : "";
  std::snprintf(g_fatal_text, sizeof g_fatal_text, "CUPTI error %d%s%s",
                state != nullptr ? static_cast<int>(state->notification.result) : 0, *msg ? ": " : "", msg);
  g_fatal_ready.store(true, std::memory_order_release);
}

std::string result_text(CUptiResult r) {
  const char* msg = nullptr;
  if (cuptiGetResultString(r, &msg) != CUPTI_SUCCESS || msg == nullptr) return "CUPTI error " + std::to_string(r);
  return msg;
}

std::atomic<uint64_t> g_failed_calls{0}, g_failed_others{0};  // failed_callbacks()

void dispatch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_STATE) {
    if (cbid == CUPTI_CBID_STATE_FATAL_ERROR) on_fatal_error(static_cast<const CUpti_StateData*>(data));
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_NVTX) {
    const auto* nvtx = static_cast<const CUpti_NvtxData*>(data);
    if (g_sink.on_nvtx != nullptr && nvtx != nullptr)
      g_sink.on_nvtx(cbid, nvtx->functionParams, nvtx->functionReturnValue);
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
      g_sink.on_mark(MarkKind::ContextCreated);
    else if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED)
      g_sink.on_mark(MarkKind::ModuleLoaded);
    else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
      g_sink.on_mark(MarkKind::ContextDestroyed);
    return;
  }
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  const Domain d = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? Domain::Runtime : Domain::Driver;
  const ApiSpec* spec = find_api(d, cbid);
  if (spec == nullptr) return;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    g_sink.on_enter(*spec, cb->functionParams, cb->correlationData, cb->correlationId);
  } else {
    int32_t result = 0;
    if (cb->functionReturnValue) {
      result = d == Domain::Runtime ? static_cast<int32_t>(*static_cast<const cudaError_t*>(cb->functionReturnValue))
                                    : static_cast<int32_t>(*static_cast<const CUresult*>(cb->functionReturnValue));
    }
    g_sink.on_exit(*spec, cb->functionParams, cb->correlationData, cb->correlationId, result);
  }
}

// Nothing we throw crosses CUPTI's frames (common/caught.h). What a callback changes is undone or left to be rebuilt
// as it unwinds (the capture's guards and counts are RAII; the stack interner and the NVTX ranges undo or mark what
// they had begun), and what it was about (a call, a range, a mark) is missing from the report, which says so.
void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  const bool call = domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API;
  run_caught(call ? g_failed_calls : g_failed_others, [&] { dispatch(domain, cbid, data); });
}

// Whether a GPU device node exists (/dev/nvidia0, or only the one a container was given: /dev/nvidia3), or WSL2's.
bool any_gpu_device() {
  if (access("/dev/dxg", F_OK) == 0) return true;
  glob_t found{};
  const bool any = glob("/dev/nvidia[0-9]*", 0, nullptr, &found) == 0 && found.gl_pathc > 0;
  globfree(&found);
  return any;
}

}  // namespace

bool subscribe(const Sink& sink, std::string& error) {
  g_sink = sink;
  CUpti_SubscriberParams params;
  std::memset(&params, 0, sizeof params);
  char holder[256] = {};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = kSubscriberName;
  params.oldSubscriberName = holder;
  params.oldSubscriberSize = sizeof holder;
  CUptiResult r = cuptiSubscribe_v2(&g_subscriber, on_callback, nullptr, &params);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && std::strstr(holder, kSubscriberName) != nullptr) {
    error = kHeldByUs;  // CUPTI names it "CUPTI for asynccheck"
    return false;
  }
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    error =
        std::string("CUPTI is already in use by ") +
        (holder[0] && std::strcmp(holder, "<not provided>") != 0 ? holder : "another tool (CUPTI did not name it)") +
        " (only one CUPTI subscriber per process)";
    return false;
  }
  if (r != CUPTI_SUCCESS) {
    // CUPTI says CUPTI_ERROR_UNKNOWN when there is no driver or no GPU: say which is missing.
    if (access("/proc/driver/nvidia/version", R_OK) != 0 && access("/dev/dxg", F_OK) != 0) {  // dxg: WSL2's driver
      error = "no NVIDIA driver is loaded (/proc/driver/nvidia/version is missing; CUPTI: " + result_text(r) + ")";
    } else if (!any_gpu_device()) {
      error = "no GPU (no /dev/nvidia0, /dev/nvidia1, ...; CUPTI: " + result_text(r) + ")";
    } else {
      error = "cannot subscribe to CUPTI: " + result_text(r);
    }
    return false;
  }
  for (const ApiSpec& spec : watched_apis()) {
    const CUpti_CallbackDomain domain =
        spec.domain == Domain::Runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
    r = cuptiEnableCallback(1, g_subscriber, domain, spec.cbid);
    if (r != CUPTI_SUCCESS) {
      error = std::string("cannot enable the CUPTI callback for ") + spec.name + ": " + result_text(r);
      return false;
    }
  }
  for (CUpti_CallbackId id : {CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_MODULE_LOADED,
                              CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING}) {
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, id);
  }
  // Optional, like the resource callbacks: without it a fatal error still shows at the end (check_subscription).
  cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR);
  return true;
}

void check_subscription(Health& h) {
  if (g_fatal_ready.load(std::memory_order_acquire)) h.fatal_error = g_fatal_text;
  if (g_subscriber == nullptr) return;
  for (const ApiSpec& spec : watched_apis()) {
    uint32_t enabled = 0;
    const CUptiResult r = cuptiGetCallbackState(
        &enabled, g_subscriber,
        spec.domain == Domain::Runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, spec.cbid);
    if (r != CUPTI_SUCCESS) {
      h.subscription_error = result_text(r);
      return;
    }
    ++h.callbacks_checked;
    if (enabled == 0 && h.callbacks_disabled++ == 0) h.first_disabled = spec.name;
  }
}

// Why NVTX_INJECTION64_PATH and not libasynccheck.so as NVTX's tool (its own InitializeInjectionNvtx2): NVTX hands
// its tool a table of every NVTX function to fill in, versioned per module (core, CUDA, sync, ...), and CUPTI
// already implements it and turns the calls into the callbacks we subscribe to anyway; implementing that table
// ourselves would be a second, larger interface to keep in step with NVTX for the same four calls. Either way
// there is one NVTX tool per process, so another tool's NVTX_INJECTION64_PATH wins in both designs.
//
// Why here and not in the `asynccheck` command: the path must be the very CUPTI this process loaded (dlopen of the
// same path returns the same library; another copy would be a second CUPTI that our subscription never sees), and
// only the process knows which one the loader picked (RUNPATH, LD_LIBRARY_PATH). The command runs the program with
// LD_PRELOAD, so this covers it, raw LD_PRELOAD use and the program's children alike.
bool enable_nvtx(std::string& why) {
  if (g_subscriber == nullptr || g_sink.on_nvtx == nullptr) {
    why = "not subscribed to CUPTI";
    return false;
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiSubscribe_v2), &info) == 0 || info.dli_fname == nullptr ||
      std::strchr(info.dli_fname, '/') == nullptr) {
    why = "cannot tell the path of the CUPTI library this process loaded";
    return false;
  }
  const std::string cupti = info.dli_fname;
  void* self = dlopen(cupti.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  const bool can_inject = self != nullptr && dlsym(self, "InitializeInjectionNvtx2") != nullptr;
  if (self != nullptr) dlclose(self);
  if (!can_inject) {
    why = "the CUPTI library " + cupti + " cannot be NVTX's tool (no InitializeInjectionNvtx2)";
    return false;
  }
  const char* set = std::getenv("NVTX_INJECTION64_PATH");
  if (set != nullptr && *set != '\0') {
    // Ours already (a child of a process we watch inherits it): ranges are on. Anything else is another tool's.
    char a[PATH_MAX], b[PATH_MAX];
    if (realpath(set, a) == nullptr || realpath(cupti.c_str(), b) == nullptr || std::strcmp(a, b) != 0) {
      why = std::string("NVTX_INJECTION64_PATH is already set (to ") + set +
            "): another tool receives the program's NVTX calls";
      return false;
    }
  }
  for (CUpti_CallbackId id : kNvtxCallbacks) {
    const CUptiResult r = cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_NVTX, id);
    if (r != CUPTI_SUCCESS) {
      for (CUpti_CallbackId undo : kNvtxCallbacks) cuptiEnableCallback(0, g_subscriber, CUPTI_CB_DOMAIN_NVTX, undo);
      why = "cannot enable CUPTI's NVTX callbacks: " + result_text(r);
      return false;
    }
  }
  g_nvtx = true;
  if (set == nullptr || *set == '\0') setenv("NVTX_INJECTION64_PATH", cupti.c_str(), 1);
  return true;
}

void stop_callbacks() {
  if (g_subscriber == nullptr) return;
  if (g_nvtx) {
    for (CUpti_CallbackId id : kNvtxCallbacks) cuptiEnableCallback(0, g_subscriber, CUPTI_CB_DOMAIN_NVTX, id);
  }
  for (const ApiSpec& spec : watched_apis()) {
    cuptiEnableCallback(0, g_subscriber,
                        spec.domain == Domain::Runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API,
                        spec.cbid);
  }
}

FailedCallbacks failed_callbacks() {
  return {g_failed_calls.load(std::memory_order_relaxed), g_failed_others.load(std::memory_order_relaxed)};
}

uint64_t timestamp() {
  uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

}  // namespace asynccheck::cupti
