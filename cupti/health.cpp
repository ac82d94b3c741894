#include "cupti/health.h"

namespace asynccheck::cupti {

std::string stopped_reason(const Health& h) {
  if (!h.fatal_error.empty()) return "CUPTI reported a fatal error and detached itself (" + h.fatal_error + ")";
  if (!h.subscription_error.empty()) {
    return "our CUPTI subscription was gone at the end (" + h.subscription_error +
           "): another CUPTI client called cuptiFinalize or cuptiUnsubscribe";
  }
  if (h.callbacks_disabled != 0) {
    std::string s = "the CUPTI callbacks of " + std::to_string(h.callbacks_disabled) + " of the " +
                    std::to_string(h.callbacks_checked) + " watched APIs (" + h.first_disabled;
    if (h.callbacks_disabled > 1) s += ", ...";
    return s + ") were turned off by another CUPTI client (cuptiFinalize, cuptiEnableCallback or cuptiEnableDomain)";
  }
  if (h.flush_failures != 0) {
    return "CUPTI stopped delivering GPU activity records (cuptiActivityFlushAll failed " +
           std::to_string(h.flush_failures) + (h.flush_failures == 1 ? " time: " : " times, first: ") + h.flush_error +
           ")";
  }
  return "";
}

}  // namespace asynccheck::cupti
