#include "interpose/nvtx_ranges.h"

#include <cupti.h>
#include <generated_nvtx_meta.h>
#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "analysis/utf8.h"
#include "common/string_hash.h"
#include "common/thread_local_address.h"
#include "interpose/lock_within.h"

namespace asynccheck::nvtx_ranges {
namespace {

// Lookups by string_view: a push of a name seen before allocates nothing.
using NameIndex = std::unordered_map<std::string, uint32_t, StringViewHash, std::equal_to<>>;

struct DomainNames {
  std::string name;  // "" = the default domain
  NameIndex ids;
};

// Shared by every thread; taken once per push (and per domain or string registration), never by a CUDA call.
// A range as a call records it is a node: a name and the node of the range it is nested in, so that a call knows
// every range it is inside of, not only the innermost (capture_range=nvtx:NAME, regions that name a test).
struct Node {
  uint32_t name;    // index into names
  uint32_t parent;  // node id, 0 = outermost
};
struct Table {
  std::mutex mu;
  std::vector<NvtxRange> names;                                           // distinct (domain, name), parent 0
  std::vector<Node> nodes;                                                // node id N is nodes[N - 1]
  std::unordered_map<uint64_t, uint32_t> node_ids;                        // (name << 32 | parent) -> node id
  std::unordered_map<const void*, std::unique_ptr<DomainNames>> domains;  // by nvtxDomainHandle_t; nullptr = default
  std::unordered_map<const void*, std::string> strings;                   // nvtxStringHandle_t -> its text
  uint32_t too_many_name = UINT32_MAX;                                    // the name index of kTooMany, once needed
  uint32_t too_many_node = 0;                                             // its node, once the nodes ran out
  size_t program_names = 0, region_names = 0, program_nodes = 0, region_nodes = 0;  // of the budgets
  uint64_t unkept = 0;  // nestings past the budget (unkept())
  // The process-wide regions (asynccheck_region_push), outermost first, and the node of the innermost: the base of
  // every thread's own stack. `generation` changes with them; a thread rebuilds its nodes when it sees it change.
  std::vector<uint32_t> regions;  // name indices
  uint32_t region_node = 0;
};

Table& table() {
  static Table* t = new Table;  // never destroyed: NVTX calls may come while the process exits
  return *t;
}

std::atomic<uint32_t> g_generation{0};
// The domain regions are named in: our own, so that a program's "asynccheck" domain cannot pop them.
const char g_region_domain = 0;

// One thread's open ranges, innermost last, each with the domain it was pushed in (pops are per domain).
struct Open {
  const void* domain;
  uint32_t name;
  uint32_t node;
};
struct Stack {
  std::vector<Open> open;
  size_t deeper = 0;  // pushes beyond kMaxDepth, not kept
};

// The innermost open range: what a CUDA call reads. Plain thread-local integers (no constructor, no destructor), in
// one variable (each thread-local of a shared library is a __tls_get_addr away), so reading them costs one of those,
// two loads and a compare with the generation.
struct Innermost {
  uint32_t range = 0;
  uint32_t generation = 0;  // of the regions `range` and the stack's nodes were built on
};
thread_local Innermost t_innermost;
// Allocated at the thread's first push, freed when it exits (thread-local destructors would run in an order we do
// not control; a pthread key's destructor clears the pointer, so a push after it simply starts a new stack).
thread_local Stack* t_stack = nullptr;
pthread_key_t g_stack_key;

void free_stack(void* p) {
  delete static_cast<Stack*>(p);
  t_stack = nullptr;
  t_innermost.range = 0;
  t_innermost.generation = 0;
}

Stack& stack() {
  if (t_stack == nullptr) {
    static const bool key_made = pthread_key_create(&g_stack_key, free_stack) == 0;
    t_stack = new Stack;
    t_stack->open.reserve(16);
    if (key_made) pthread_setspecific(g_stack_key, t_stack);
  }
  return *t_stack;
}

std::string cut(std::string s) {
  if (s.size() > kMaxNameBytes) {
    size_t n = kMaxNameBytes;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // not inside a UTF-8 sequence
    s.resize(n);
    s += "...";
  }
  return s;
}

// UTF-8 of a wide string (UTF-32 on Linux), at most kMaxNameBytes of it.
std::string utf8(const wchar_t* w) {
  std::string out;
  if (w == nullptr) return out;
  for (; *w != 0 && out.size() <= kMaxNameBytes; ++w) {
    // U+FFFD for what is not a code point (a surrogate, a value past U+10FFFF).
    if (!append_utf8(out, static_cast<uint32_t>(*w))) out += "\xEF\xBF\xBD";
  }
  return cut(std::move(out));
}

std::string ascii(const char* s) {
  return s == nullptr ? std::string() : cut(std::string(s, strnlen(s, kMaxNameBytes + 1)));
}

DomainNames& domain_names(Table& t, const void* handle) {
  auto& d = t.domains[handle];
  if (!d) {
    d = std::make_unique<DomainNames>();
    // A handle whose creation we did not see (created before CUPTI was NVTX's tool, or CUPTI gave no handle).
    if (handle == &g_region_domain)
      d->name = std::string(kRegionDomain);
    else if (handle != nullptr)
      d->name = "(unnamed domain)";
  }
  return *d;
}

uint32_t too_many_name(Table& t) {
  if (t.too_many_name == UINT32_MAX) {
    t.too_many_name = static_cast<uint32_t>(t.names.size());
    t.names.push_back({"", std::string(kTooMany)});
  }
  return t.too_many_name;
}

// The index of (domain, name) in t.names; under t.mu. Regions have a budget of their own, so that a program's ranges
// (a counter in their names) cannot take from a test suite's regions the names that attribute its findings.
uint32_t intern_name(Table& t, const void* domain, std::string_view name) {
  DomainNames& d = domain_names(t, domain);
  if (auto it = d.ids.find(name); it != d.ids.end()) return it->second;
  const bool region = domain == &g_region_domain;
  size_t& used = region ? t.region_names : t.program_names;
  if (used >= (region ? kMaxRegionNames : kMaxNames)) return too_many_name(t);
  ++used;
  const auto index = static_cast<uint32_t>(t.names.size());
  t.names.push_back({d.name, std::string(name)});
  d.ids.emplace(std::string(name), index);
  return index;
}

// The node of range `name` nested in node `parent`; under t.mu. Regions' nodes have their own budget (as their
// names). Past kMaxRanges of the program's own, a nesting is recorded as its nearest enclosing node, so that a call
// keeps its region (its test) and outer ranges; an outermost range then gets the one node named kTooMany.
uint32_t intern_node(Table& t, uint32_t name, uint32_t parent, bool region = false) {
  const uint64_t key = static_cast<uint64_t>(name) << 32 | parent;
  if (auto it = t.node_ids.find(key); it != t.node_ids.end()) return it->second;
  size_t& used = region ? t.region_nodes : t.program_nodes;
  if (used >= (region ? kMaxRegionNodes : kMaxRanges)) {
    ++t.unkept;
    if (parent != 0) return parent;
    if (t.too_many_node == 0) {
      t.nodes.push_back({too_many_name(t), 0});
      t.too_many_node = static_cast<uint32_t>(t.nodes.size());
    }
    return t.too_many_node;
  }
  t.nodes.push_back({name, parent});
  const auto id = static_cast<uint32_t>(t.nodes.size());
  try {  // a node without its id would be made again, twice in the report (a throw is caught where CUPTI called us)
    t.node_ids.emplace(key, id);
  } catch (...) {
    t.nodes.pop_back();
    throw;
  }
  ++used;
  return id;
}

// Rebuilds this thread's nodes from open[from] on, nested in the regions of the current generation; under t.mu.
void restack(Table& t, Stack* s, size_t from) {
  const uint32_t generation = g_generation.load(std::memory_order_relaxed);
  // Stale until every node is interned: an allocation that throws below (caught where CUPTI called us) leaves the
  // thread to rebuild its whole stack at its next push, pop or call, not to read a range half rebuilt.
  t_innermost.generation = generation - 1;
  uint32_t parent = t.region_node;
  if (s != nullptr) {
    if (from > 0) parent = s->open[from - 1].node;
    for (size_t i = from; i < s->open.size(); ++i) parent = s->open[i].node = intern_node(t, s->open[i].name, parent);
  }
  t_innermost.range = parent;
  t_innermost.generation = generation;
}

// Opens range `name` on this thread; under t.mu.
void push(Table& t, const void* domain, uint32_t name) {
  Stack& s = stack();
  if (s.open.size() >= kMaxDepth) {
    ++s.deeper;
    return;
  }
  s.open.push_back({domain, name, 0});
  const bool rebuilt = t_innermost.generation != g_generation.load(std::memory_order_relaxed);
  restack(t, &s, rebuilt ? 0 : s.open.size() - 1);
}

// Ends the innermost open range of `domain` on this thread (NVTX nests per thread and per domain). A pop with
// nothing open is the program's mistake (NVTX returns an error for it) and changes nothing here.
void pop(const void* domain) {
  if (t_stack == nullptr) return;
  Stack& s = *t_stack;
  if (s.deeper > 0) {
    --s.deeper;
    return;
  }
  for (size_t i = s.open.size(); i-- > 0;) {
    if (s.open[i].domain == domain) {
      s.open.erase(s.open.begin() + static_cast<std::ptrdiff_t>(i));
      // The ranges above the one that ended (another domain's, still open) are now nested one level less.
      Table& t = table();
      std::lock_guard lock(t.mu);
      const bool rebuilt = t_innermost.generation != g_generation.load(std::memory_order_relaxed);
      restack(t, &s, rebuilt ? 0 : i);
      return;
    }
  }
}

// The text of an event's message. Registered strings are looked up under t.mu.
std::string message_of(Table& t, const nvtxEventAttributes_t* a) {
  // Fields past `size` were not filled in by the program's (older) NVTX.
  if (a == nullptr || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message)) return "(no message)";
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return ascii(a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: return utf8(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED: {
      auto it = t.strings.find(a->message.registered);
      return it != t.strings.end() ? it->second : "(registered string)";
    }
    default: return "(no message)";
  }
}

void push_named(const void* domain, std::string_view name) {
  Table& t = table();
  std::lock_guard lock(t.mu);
  push(t, domain, intern_name(t, domain, name));
}

void push_ascii(const void* domain, const char* message) {
  if (message == nullptr) return push_named(domain, "(no message)");
  // The common case, a name seen before: looked up in place, no copy.
  const std::string_view name(message, strnlen(message, kMaxNameBytes + 1));
  if (name.size() > kMaxNameBytes) return push_named(domain, cut(std::string(name)));
  push_named(domain, name);
}

void push_event(const void* domain, const nvtxEventAttributes_t* a) {
  if (a != nullptr && a->size >= offsetof(nvtxEventAttributes_t, message) + sizeof(a->message) &&
      a->messageType == NVTX_MESSAGE_TYPE_ASCII) {
    return push_ascii(domain, a->message.ascii);
  }
  Table& t = table();
  std::lock_guard lock(t.mu);
  push(t, domain, intern_name(t, domain, message_of(t, a)));
}

// CUPTI's generated_nvtx_meta.h has no struct for nvtxDomainCreateW; its one argument, as nvtxDomainCreateA's.
struct DomainCreateW {
  const wchar_t* name;
};

template <typename Handle>
const void* returned_handle(const void* result) {
  return result == nullptr ? nullptr : static_cast<const void*>(*static_cast<const Handle*>(result));
}

void name_domain(const void* handle, std::string name) {
  if (handle == nullptr) return;
  Table& t = table();
  std::lock_guard lock(t.mu);
  // A handle seen again (the program destroyed a domain and NVTX reused the address): the new name applies to
  // new pushes; ids already given keep the old name.
  auto& d = t.domains[handle];
  d = std::make_unique<DomainNames>();
  d->name = std::move(name);
}

void register_string(const void* handle, std::string text) {
  if (handle == nullptr) return;
  Table& t = table();
  std::lock_guard lock(t.mu);
  t.strings[handle] = std::move(text);
}

}  // namespace

void on_callback(uint32_t cbid, const void* params, const void* result) {
  if (params == nullptr) return;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
      return push_ascii(nullptr, static_cast<const nvtxRangePushA_params*>(params)->message);
    case CUPTI_CBID_NVTX_nvtxRangePushW:
      return push_named(nullptr, utf8(static_cast<const nvtxRangePushW_params*>(params)->message));
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      return push_event(nullptr, static_cast<const nvtxRangePushEx_params*>(params)->eventAttrib);
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
      const auto* p = static_cast<const nvtxDomainRangePushEx_params*>(params);
      return push_event(p->domain, p->core.eventAttrib);
    }
    case CUPTI_CBID_NVTX_nvtxRangePop: return pop(nullptr);
    case CUPTI_CBID_NVTX_nvtxDomainRangePop: return pop(static_cast<const nvtxDomainRangePop_params*>(params)->domain);
    case CUPTI_CBID_NVTX_nvtxDomainCreateA:
      return name_domain(returned_handle<nvtxDomainHandle_t>(result),
                         ascii(static_cast<const nvtxDomainCreateA_params*>(params)->name));
    case CUPTI_CBID_NVTX_nvtxDomainCreateW:
      return name_domain(returned_handle<nvtxDomainHandle_t>(result),
                         utf8(static_cast<const DomainCreateW*>(params)->name));
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA:
      return register_string(returned_handle<nvtxStringHandle_t>(result),
                             ascii(static_cast<const nvtxDomainRegisterStringA_params*>(params)->string));
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringW:
      // CUPTI's header types this `string` as const char*; it is the program's const wchar_t* (nvToolsExt.h).
      return register_string(
          returned_handle<nvtxStringHandle_t>(result),
          utf8(reinterpret_cast<const wchar_t*>(static_cast<const nvtxDomainRegisterStringW_params*>(params)->string)));
    default: return;
  }
}

uint32_t current() {
  const Innermost& innermost = thread_local_address(t_innermost);
  if (innermost.generation != g_generation.load(std::memory_order_relaxed)) [[unlikely]] {
    Table& t = table();
    std::lock_guard lock(t.mu);
    restack(t, t_stack, 0);
  }
  return innermost.range;
}

std::vector<NvtxRange> names(size_t first) {
  Table& t = table();
  if (!lock_within(t.mu)) return {};  // a thread stopped by a signal holds it: none (a recording writes calls without)
  std::lock_guard lock(t.mu, std::adopt_lock);
  std::vector<NvtxRange> out;
  for (size_t i = first; i < t.nodes.size(); ++i) {
    const Node& n = t.nodes[i];
    out.push_back({t.names[n.name].domain, t.names[n.name].name, n.parent});
  }
  return out;
}

uint64_t unkept() {
  Table& t = table();
  std::lock_guard lock(t.mu);
  return t.unkept;
}

NvtxRange range(uint32_t id) {
  Table& t = table();
  std::lock_guard lock(t.mu);
  if (id == 0 || id > t.nodes.size()) return {};
  const Node& n = t.nodes[id - 1];
  return {t.names[n.name].domain, t.names[n.name].name, n.parent};
}

int region_push(const char* name) {
  if (name == nullptr) return -1;
  Table& t = table();
  std::lock_guard lock(t.mu);
  if (t.regions.size() >= kMaxDepth) return -1;
  const std::string_view view(name, strnlen(name, kMaxNameBytes + 1));
  const uint32_t index = view.size() > kMaxNameBytes ? intern_name(t, &g_region_domain, cut(std::string(view)))
                                                     : intern_name(t, &g_region_domain, view);
  t.regions.push_back(index);
  t.region_node = intern_node(t, index, t.region_node, /*region=*/true);
  g_generation.fetch_add(1, std::memory_order_relaxed);
  return static_cast<int>(t.regions.size());
}

int region_pop() {
  Table& t = table();
  std::lock_guard lock(t.mu);
  if (t.regions.empty()) return -1;
  t.regions.pop_back();
  uint32_t node = 0;
  for (uint32_t index : t.regions) node = intern_node(t, index, node, /*region=*/true);
  t.region_node = node;
  g_generation.fetch_add(1, std::memory_order_relaxed);
  return static_cast<int>(t.regions.size());
}

}  // namespace asynccheck::nvtx_ranges
