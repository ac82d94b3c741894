#include "interpose/nvtx_ranges.h"

#include <cupti.h>
#include <generated_nvtx_meta.h>
#include <pthread.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "analysis/utf8.h"

namespace asynccheck::nvtx_ranges {
namespace {

// Lookups by string_view: a push of a name seen before allocates nothing.
struct ViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using NameIndex = std::unordered_map<std::string, uint32_t, ViewHash, std::equal_to<>>;

struct DomainNames {
  std::string name;  // "" = the default domain
  NameIndex ids;
};

// Shared by every thread; taken once per push (and per domain or string registration), never by a CUDA call.
struct Table {
  std::mutex mu;
  std::vector<NvtxRange> names;                                           // id N is names[N - 1]
  std::unordered_map<const void*, std::unique_ptr<DomainNames>> domains;  // by nvtxDomainHandle_t; nullptr = default
  std::unordered_map<const void*, std::string> strings;                   // nvtxStringHandle_t -> its text
  uint32_t too_many = 0;                                                  // the id of kTooMany, once needed
};

Table& table() {
  static Table* t = new Table;  // never destroyed: NVTX calls may come while the process exits
  return *t;
}

// One thread's open ranges, innermost last, each with the domain it was pushed in (pops are per domain).
struct Open {
  const void* domain;
  uint32_t id;
};
struct Stack {
  std::vector<Open> open;
  size_t deeper = 0;  // pushes beyond kMaxDepth, not kept
};

// The innermost open range: what a CUDA call reads. A plain thread-local integer (no constructor, no destructor),
// so reading it costs one load.
thread_local uint32_t t_current = 0;
// Allocated at the thread's first push, freed when it exits (thread-local destructors would run in an order we do
// not control; a pthread key's destructor clears the pointer, so a push after it simply starts a new stack).
thread_local Stack* t_stack = nullptr;
pthread_key_t g_stack_key;

void free_stack(void* p) {
  delete static_cast<Stack*>(p);
  t_stack = nullptr;
  t_current = 0;
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
    if (handle != nullptr) d->name = "(unnamed domain)";
  }
  return *d;
}

// The id of (domain, name); under t.mu.
uint32_t intern(Table& t, const void* domain, std::string_view name) {
  DomainNames& d = domain_names(t, domain);
  if (auto it = d.ids.find(name); it != d.ids.end()) return it->second;
  if (t.names.size() >= kMaxNames) {
    if (t.too_many == 0) {
      t.names.push_back({"", std::string(kTooMany)});
      t.too_many = static_cast<uint32_t>(t.names.size());
    }
    return t.too_many;
  }
  t.names.push_back({d.name, std::string(name)});
  const auto id = static_cast<uint32_t>(t.names.size());
  d.ids.emplace(std::string(name), id);
  return id;
}

void push(const void* domain, uint32_t id) {
  Stack& s = stack();
  if (s.open.size() >= kMaxDepth) {
    ++s.deeper;
    return;
  }
  s.open.push_back({domain, id});
  t_current = id;
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
      break;
    }
  }
  t_current = s.open.empty() ? 0 : s.open.back().id;
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
  uint32_t id;
  {
    std::lock_guard lock(t.mu);
    id = intern(t, domain, name);
  }
  push(domain, id);
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
  uint32_t id;
  {
    std::lock_guard lock(t.mu);
    id = intern(t, domain, message_of(t, a));
  }
  push(domain, id);
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

uint32_t current() { return t_current; }

std::vector<NvtxRange> names() {
  Table& t = table();
  std::lock_guard lock(t.mu);
  return t.names;
}

}  // namespace asynccheck::nvtx_ranges
