// src/pmem/root_registry.cc — the root-type registry (pmem/root_registry.h).
#include "ferrite/pmem/root_registry.h"

#include <algorithm>
#include <mutex>

namespace ferrite::pmem {

namespace {
struct Table {
  std::mutex mu;
  std::vector<RootTypeEntry> entries;
};
// Function-local static: headers register from static initializers of any
// translation unit, in any order.
Table& table() {
  static Table t;
  return t;
}
}  // namespace

bool register_root_type_entry(RootTypeEntry entry) {
  Table& t = table();
  std::lock_guard<std::mutex> g(t.mu);
  for (const auto& e : t.entries)
    if (e.tag == entry.tag && e.version == entry.version)
      return e.size == entry.size && e.type_name == entry.type_name;
  t.entries.push_back(std::move(entry));
  return true;
}

bool find_root_type(std::uint32_t tag, std::uint32_t version, RootTypeEntry* out) {
  Table& t = table();
  std::lock_guard<std::mutex> g(t.mu);
  auto it = std::find_if(t.entries.begin(), t.entries.end(),
                         [&](const RootTypeEntry& e) { return e.tag == tag && e.version == version; });
  if (it == t.entries.end()) return false;
  if (out != nullptr) *out = *it;
  return true;
}

std::vector<RootTypeEntry> registered_root_types() {
  Table& t = table();
  std::lock_guard<std::mutex> g(t.mu);
  return t.entries;
}

}  // namespace ferrite::pmem
