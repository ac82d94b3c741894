#include "cupti/subscriber.h"

#include <cupti.h>

#include <cstring>

namespace asynccheck::cupti {
namespace {

Sink g_sink{};
CUpti_SubscriberHandle g_subscriber = nullptr;

std::string result_text(CUptiResult r) {
  const char* msg = nullptr;
  if (cuptiGetResultString(r, &msg) != CUPTI_SUCCESS || msg == nullptr) return "CUPTI error " + std::to_string(r);
  return msg;
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) g_sink.on_mark(MarkKind::ContextCreated);
    else if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) g_sink.on_mark(MarkKind::ModuleLoaded);
    else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) g_sink.on_mark(MarkKind::ContextDestroyed);
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
    error = std::string("CUPTI is already in use by ") +
            (holder[0] && std::strcmp(holder, "<not provided>") != 0 ? holder
                                                                     : "another tool (CUPTI did not name it)") +
            " (only one CUPTI subscriber per process)";
    return false;
  }
  if (r != CUPTI_SUCCESS) {
    error = "cannot subscribe to CUPTI: " + result_text(r);
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
  return true;
}

void stop_callbacks() {
  if (g_subscriber == nullptr) return;
  for (const ApiSpec& spec : watched_apis()) {
    cuptiEnableCallback(0, g_subscriber, spec.domain == Domain::Runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API,
                        spec.cbid);
  }
}

uint64_t timestamp() {
  uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

}  // namespace asynccheck::cupti
