// Whether monitoring stood to the end (cupti/health.h): the decision on fabricated states, no GPU needed. What CUPTI
// answers on a GPU is checked by tests/robustness/test_monitoring_stops.cpp (label gpu).
#include <gtest/gtest.h>

#include "cupti/health.h"

namespace asynccheck::cupti {
namespace {

TEST(Health, AllCallbacksEnabledAndEveryFlushFineIsStillOn) {
  Health h;
  h.callbacks_checked = 120;
  EXPECT_EQ(stopped_reason(h), "");
}

TEST(Health, AFatalErrorSaysCuptiDetachedItself) {
  Health h;
  h.fatal_error = "CUPTI error 999: out of memory";
  h.subscription_error = "CUPTI_ERROR_INVALID_PARAMETER";  // what the detach brings: the first cause explains it
  h.flush_failures = 3;
  EXPECT_EQ(stopped_reason(h), "CUPTI reported a fatal error and detached itself (CUPTI error 999: out of memory)");
}

TEST(Health, ASubscriptionGoneNamesCuptisAnswer) {
  Health h;
  h.subscription_error = "CUPTI_ERROR_INVALID_PARAMETER";
  h.flush_failures = 1;
  h.flush_error = "CUPTI_ERROR_INVALID_OPERATION";
  EXPECT_EQ(stopped_reason(h),
            "our CUPTI subscription was gone at the end (CUPTI_ERROR_INVALID_PARAMETER): another CUPTI client called "
            "cuptiFinalize or cuptiUnsubscribe");
}

TEST(Health, DisabledCallbacksAreCountedAndTheFirstNamed) {
  Health h;
  h.callbacks_checked = 120;
  h.callbacks_disabled = 1;
  h.first_disabled = "cudaMemcpyAsync";
  EXPECT_EQ(
      stopped_reason(h),
      "the CUPTI callbacks of 1 of the 120 watched APIs (cudaMemcpyAsync) were turned off by another CUPTI client "
      "(cuptiFinalize, cuptiEnableCallback or cuptiEnableDomain)");
  h.callbacks_disabled = 120;
  EXPECT_NE(stopped_reason(h).find("of 120 of the 120 watched APIs (cudaMemcpyAsync, ...)"), std::string::npos);
}

TEST(Health, FailedFlushesSayRecordsStoppedComing) {
  Health h;
  h.callbacks_checked = 120;
  h.flush_failures = 1;
  h.flush_error = "CUPTI_ERROR_INVALID_OPERATION";
  EXPECT_EQ(stopped_reason(h),
            "CUPTI stopped delivering GPU activity records (cuptiActivityFlushAll failed 1 time: "
            "CUPTI_ERROR_INVALID_OPERATION)");
  h.flush_failures = 7;
  EXPECT_NE(stopped_reason(h).find("failed 7 times, first: CUPTI_ERROR_INVALID_OPERATION"), std::string::npos);
}

}  // namespace
}  // namespace asynccheck::cupti
