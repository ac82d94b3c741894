// The per-thread NVTX range stacks (interpose/nvtx_ranges.cpp), fed the parameter structs CUPTI's NVTX callbacks
// carry (generated_nvtx_meta.h), as CUPTI would deliver them: no GPU, no CUPTI subscription needed.
#include <cupti.h>
#include <generated_nvtx_meta.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "interpose/nvtx_ranges.h"

namespace asynccheck::nvtx_ranges {
namespace {

void push_a(const char* message) {
  nvtxRangePushA_params p{message};
  on_callback(CUPTI_CBID_NVTX_nvtxRangePushA, &p, nullptr);
}

void pop() {
  nvtxRangePop_params p{};
  on_callback(CUPTI_CBID_NVTX_nvtxRangePop, &p, nullptr);
}

nvtxEventAttributes_t ascii_event(const char* message) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  return a;
}

nvtxDomainHandle_t create_domain(const char* name, uintptr_t handle_value) {
  auto handle = reinterpret_cast<nvtxDomainHandle_t>(handle_value);
  nvtxDomainCreateA_params p{name};
  on_callback(CUPTI_CBID_NVTX_nvtxDomainCreateA, &p, &handle);
  return handle;
}

void domain_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t& a) {
  nvtxDomainRangePushEx_params p{domain, {&a}};
  on_callback(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, &p, nullptr);
}

void domain_pop(nvtxDomainHandle_t domain) {
  nvtxDomainRangePop_params p{domain};
  on_callback(CUPTI_CBID_NVTX_nvtxDomainRangePop, &p, nullptr);
}

// The innermost open range of this thread, as a report would name it ("" when none).
NvtxRange innermost() {
  const uint32_t id = current();
  if (id == 0) return {};
  const std::vector<NvtxRange> all = names();
  EXPECT_LE(id, all.size());
  return id <= all.size() ? all[id - 1] : NvtxRange{"?", "?"};
}

TEST(NvtxRanges, NestedPushesAndPopsTrackTheInnermost) {
  EXPECT_EQ(current(), 0u);
  push_a("step");
  EXPECT_EQ(innermost(), (NvtxRange{"", "step"}));
  push_a("forward");
  EXPECT_EQ(innermost(), (NvtxRange{"", "forward"}));
  pop();
  EXPECT_EQ(innermost(), (NvtxRange{"", "step"}));
  pop();
  EXPECT_EQ(current(), 0u);
  pop();  // one pop too many: the program's mistake, nothing changes
  EXPECT_EQ(current(), 0u);
}

TEST(NvtxRanges, ANameIsInternedOnce) {
  push_a("forward");
  const uint32_t first = current();
  pop();
  const nvtxEventAttributes_t a = ascii_event("forward");
  nvtxRangePushEx_params p{&a};
  on_callback(CUPTI_CBID_NVTX_nvtxRangePushEx, &p, nullptr);
  EXPECT_EQ(current(), first);  // the same name in the default domain, by another NVTX call
  pop();
  uint32_t other_thread = 0;
  std::thread([&] {
    push_a("forward");
    other_thread = current();
  }).join();
  EXPECT_EQ(other_thread, first);
}

TEST(NvtxRanges, EachThreadHasItsOwnStack) {
  push_a("main thread");
  const uint32_t mine = current();
  uint32_t before = 1, during = 0;
  std::thread([&] {
    before = current();
    push_a("worker");
    during = current();
    pop();
  }).join();
  EXPECT_EQ(before, 0u);
  EXPECT_NE(during, mine);
  EXPECT_EQ(current(), mine);
  pop();
}

TEST(NvtxRanges, DomainsNameTheirRangesAndPopTheirOwn) {
  const nvtxDomainHandle_t lib = create_domain("mylib", 0x1234);
  push_a("outer");
  domain_push(lib, ascii_event("forward"));
  EXPECT_EQ(innermost(), (NvtxRange{"mylib", "forward"}));
  // The same name in another domain is another range.
  push_a("forward");
  EXPECT_EQ(innermost(), (NvtxRange{"", "forward"}));
  pop();
  // A default-domain pop ends the default domain's innermost range ("outer"), not the library's.
  pop();
  EXPECT_EQ(innermost(), (NvtxRange{"mylib", "forward"}));
  domain_pop(lib);
  EXPECT_EQ(current(), 0u);
}

TEST(NvtxRanges, UnknownDomainHandlesAreSaidToBeUnnamed) {
  domain_push(reinterpret_cast<nvtxDomainHandle_t>(0x9999), ascii_event("x"));
  EXPECT_EQ(innermost(), (NvtxRange{"(unnamed domain)", "x"}));
  domain_pop(reinterpret_cast<nvtxDomainHandle_t>(0x9999));
  // A null domain is the default one.
  domain_push(nullptr, ascii_event("y"));
  EXPECT_EQ(innermost(), (NvtxRange{"", "y"}));
  pop();
  EXPECT_EQ(current(), 0u);
}

TEST(NvtxRanges, WideAndRegisteredMessagesAreNamed) {
  nvtxRangePushW_params w{L"wide \u00e9\u20ac\U0001F600"};
  on_callback(CUPTI_CBID_NVTX_nvtxRangePushW, &w, nullptr);
  EXPECT_EQ(innermost(), (NvtxRange{"", "wide \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"}));
  pop();
  const nvtxDomainHandle_t lib = create_domain("reg", 0x5678);
  auto handle = reinterpret_cast<nvtxStringHandle_t>(0xabc);
  nvtxDomainRegisterStringA_params r{lib, "registered name"};
  on_callback(CUPTI_CBID_NVTX_nvtxDomainRegisterStringA, &r, &handle);
  nvtxEventAttributes_t a = ascii_event(nullptr);
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = handle;
  domain_push(lib, a);
  EXPECT_EQ(innermost(), (NvtxRange{"reg", "registered name"}));
  domain_pop(lib);
  a.message.registered = reinterpret_cast<nvtxStringHandle_t>(0xdef);  // never registered
  domain_push(lib, a);
  EXPECT_EQ(innermost(), (NvtxRange{"reg", "(registered string)"}));
  domain_pop(lib);
}

TEST(NvtxRanges, OddEventsAreNamedNotTrusted) {
  nvtxEventAttributes_t a = ascii_event("never read");
  a.size = 8;  // an NVTX older than the message field
  nvtxRangePushEx_params p{&a};
  on_callback(CUPTI_CBID_NVTX_nvtxRangePushEx, &p, nullptr);
  EXPECT_EQ(innermost(), (NvtxRange{"", "(no message)"}));
  pop();
  push_a(nullptr);
  EXPECT_EQ(innermost(), (NvtxRange{"", "(no message)"}));
  pop();
  const std::string long_name(kMaxNameBytes + 100, 'n');
  push_a(long_name.c_str());
  EXPECT_EQ(innermost().name, std::string(kMaxNameBytes, 'n') + "...");
  pop();
  EXPECT_EQ(current(), 0u);
}

TEST(NvtxRanges, UnbalancedPushesAreBounded) {
  push_a("bottom");
  const uint32_t bottom = current();
  push_a("deep");
  const uint32_t deep = current();
  for (size_t i = 2; i < kMaxDepth + 10; ++i) push_a("deep");
  EXPECT_EQ(current(), deep);
  for (size_t i = 1; i < kMaxDepth + 9; ++i) pop();
  EXPECT_EQ(current(), deep);
  pop();
  EXPECT_EQ(current(), bottom);
  pop();
  EXPECT_EQ(current(), 0u);
}

// Last: it fills the table (ctest runs each test in a process of its own).
TEST(NvtxRanges, TheNameTableIsBounded) {
  for (size_t i = 0; names().size() < kMaxNames; ++i) {
    push_a(("step " + std::to_string(i)).c_str());
    pop();
  }
  push_a("one name too many");
  EXPECT_EQ(innermost(), (NvtxRange{"", std::string(kTooMany)}));
  pop();
  push_a("and another");
  EXPECT_EQ(innermost(), (NvtxRange{"", std::string(kTooMany)}));
  pop();
  EXPECT_EQ(names().size(), kMaxNames + 1);
  push_a("step 0");  // names already known keep their own id
  EXPECT_EQ(innermost(), (NvtxRange{"", "step 0"}));
  pop();
}

}  // namespace
}  // namespace asynccheck::nvtx_ranges
