// src/pmem/root_registry.cc — the root-type registry (pmem/root_registry.h).
#include "ferrite/pmem/root_registry.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <string>

namespace ferrite::pmem {

namespace {
struct Table {
  std::mutex mu;
  std::vector<RootTypeEntry> entries;
  std::vector<std::string> conflicts;  // refused registrations of another type
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
    if (e.tag == entry.tag && e.version == entry.version) {
      if (e.size == entry.size && e.type_name == entry.type_name) return true;
      char tag[16];
      std::snprintf(tag, sizeof tag, "0x%08x", static_cast<unsigned>(entry.tag));
      t.conflicts.push_back(std::string("tag ") + tag + " version " + std::to_string(entry.version) + ": '" +
                            entry.type_name + "' (" + std::to_string(entry.size) + " bytes) refused, '" +
                            e.type_name + "' (" + std::to_string(e.size) + " bytes) holds it");
      return false;
    }
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

std::vector<std::string> root_type_conflicts() {
  Table& t = table();
  std::lock_guard<std::mutex> g(t.mu);
  return t.conflicts;
}

std::vector<RootTypeEntry> registered_root_types() {
  Table& t = table();
  std::lock_guard<std::mutex> g(t.mu);
  return t.entries;
}

}  // namespace ferrite::pmem
