// The per-thread NVTX range stacks (interpose/nvtx_ranges.cpp), fed the parameter structs CUPTI's NVTX callbacks
// carry (generated_nvtx_meta.h), as CUPTI would deliver them: no GPU, no CUPTI subscription needed.
#include <cupti.h>
#include <generated_nvtx_meta.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
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

// The innermost open range of this thread, as a report would name it ("" when none): its domain and name.
NvtxRange innermost() {
  const uint32_t id = current();  // before names(): it may intern the node
  if (id == 0) return {};
  const std::vector<NvtxRange> all = names();
  EXPECT_LE(id, all.size());
  return id <= all.size() ? NvtxRange{all[id - 1].domain, all[id - 1].name} : NvtxRange{"?", "?"};
}

// The names of the calling thread's open ranges, outermost first, as the node it would record says: "a > b".
std::string path() {
  const uint32_t top = current();  // first: it may intern the node (regions changed)
  const std::vector<NvtxRange> all = names();
  std::string s;
  for (uint32_t id = top; id != 0; id = all[id - 1].parent) {
    s = all[id - 1].name + (s.empty() ? "" : " > ") + s;
    if (all[id - 1].parent >= id) return s + " (parent not smaller)";
  }
  return s;
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
  for (size_t i = 2; i < kMaxDepth; ++i) push_a("deep");
  const uint32_t deepest = current();
  for (size_t i = 0; i < 10; ++i) push_a("deep");  // past kMaxDepth: counted, not kept
  EXPECT_EQ(current(), deepest);
  EXPECT_EQ(innermost(), (NvtxRange{"", "deep"}));
  for (size_t i = 0; i < 10; ++i) pop();
  EXPECT_EQ(current(), deepest);
  for (size_t i = 2; i < kMaxDepth; ++i) pop();
  EXPECT_EQ(current(), deep);
  pop();
  EXPECT_EQ(current(), bottom);
  pop();
  EXPECT_EQ(current(), 0u);
}

// A call records every range it is in: the same name nested elsewhere is another node, the same nesting the same one.
TEST(NvtxRanges, ANodeNamesEveryEnclosingRange) {
  push_a("step");
  push_a("forward");
  EXPECT_EQ(path(), "step > forward");
  const uint32_t in_step = current();
  pop();
  pop();
  push_a("forward");
  EXPECT_EQ(path(), "forward");
  EXPECT_NE(current(), in_step);
  pop();
  uint32_t other_thread = 0;
  std::thread([&] {
    push_a("step");
    push_a("forward");
    other_thread = current();
  }).join();
  EXPECT_EQ(other_thread, in_step);
  // A pop of another domain's range below the top: the ranges above it are nested one level less.
  const nvtxDomainHandle_t lib = create_domain("mylib2", 0x4321);
  push_a("outer");
  domain_push(lib, ascii_event("libwork"));
  push_a("inner");
  EXPECT_EQ(path(), "outer > libwork > inner");
  domain_pop(lib);
  EXPECT_EQ(path(), "outer > inner");
  pop();
  pop();
  EXPECT_EQ(current(), 0u);
}

// A region is the whole process': every thread's calls are in it, its own ranges nested inside, whenever the thread
// started; it ends for all of them at once.
TEST(NvtxRanges, RegionsHoldEveryThreadsRanges) {
  std::mutex mu;
  std::condition_variable cv;
  int phase = 0;
  std::string worker_before, worker_in_region, worker_after;
  std::thread worker([&] {
    push_a("worker range");
    worker_before = path();
    {
      std::unique_lock lock(mu);
      phase = 1;
      cv.notify_all();
      cv.wait(lock, [&] { return phase == 2; });
    }
    worker_in_region = path();
    {
      std::unique_lock lock(mu);
      phase = 3;
      cv.notify_all();
      cv.wait(lock, [&] { return phase == 4; });
    }
    worker_after = path();
    pop();
  });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return phase == 1; });
  }
  EXPECT_EQ(region_push("test:a"), 1);
  EXPECT_EQ(path(), "test:a");
  EXPECT_EQ(innermost(), (NvtxRange{std::string(kRegionDomain), "test:a"}));
  push_a("mine");
  EXPECT_EQ(path(), "test:a > mine");
  {
    std::unique_lock lock(mu);
    phase = 2;
    cv.notify_all();
    cv.wait(lock, [&] { return phase == 3; });
  }
  pop();
  EXPECT_EQ(region_pop(), 0);
  EXPECT_EQ(region_pop(), -1);  // none open
  EXPECT_EQ(current(), 0u);
  {
    std::unique_lock lock(mu);
    phase = 4;
    cv.notify_all();
  }
  worker.join();
  EXPECT_EQ(worker_before, "worker range");
  EXPECT_EQ(worker_in_region, "test:a > worker range");
  EXPECT_EQ(worker_after, "worker range");
  // Nested regions, and a thread that starts inside them.
  EXPECT_EQ(region_push("session"), 1);
  EXPECT_EQ(region_push("test:b"), 2);
  std::string fresh;
  std::thread([&] { fresh = path(); }).join();
  EXPECT_EQ(fresh, "session > test:b");
  EXPECT_EQ(region_pop(), 1);
  EXPECT_EQ(path(), "session");
  EXPECT_EQ(region_pop(), 0);
  EXPECT_EQ(region_push(nullptr), -1);
  // A program's own NVTX pop in the default domain cannot end a region.
  EXPECT_EQ(region_push("kept"), 1);
  pop();
  EXPECT_EQ(path(), "kept");
  EXPECT_EQ(region_pop(), 0);
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

// Last too: nestings of known names are bounded apart from the names (each name in each parent is a node).
TEST(NvtxRanges, TheNodeTableIsBounded) {
  for (int i = 0; i % 1024 != 0 || names().size() < kMaxRanges; ++i) {  // names() copies: looked at now and then
    push_a(("outer " + std::to_string(i % 128)).c_str());
    push_a(("inner " + std::to_string(i / 128)).c_str());
    pop();
    pop();
  }
  const uint64_t unkept_before = unkept();
  // A nesting past the table is recorded as its nearest enclosing node: the call keeps its outer ranges.
  EXPECT_EQ(region_push("test:kept"), 1);  // regions have a budget of their own
  push_a("outer 0");
  push_a("a nesting too many");
  EXPECT_EQ(path(), "test:kept");  // "outer 0" inside the region is a new nesting too
  EXPECT_EQ(unkept() - unkept_before, 2u);
  pop();
  pop();
  EXPECT_EQ(region_pop(), 0);
  // An outermost range past the table: one node named kTooMany, without a parent.
  push_a("a range too many");
  EXPECT_EQ(innermost(), (NvtxRange{"", std::string(kTooMany)}));
  EXPECT_EQ(path(), std::string(kTooMany));
  pop();
  push_a("outer 1");
  EXPECT_EQ(innermost(), (NvtxRange{"", "outer 1"}));  // known nestings keep their own node
  pop();
  for (const NvtxRange& n : names()) EXPECT_LT(n.parent, names().size() + 1);
}

}  // namespace
}  // namespace asynccheck::nvtx_ranges
