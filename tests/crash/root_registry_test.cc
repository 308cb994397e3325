// Every durable structure's root type is registered under a (tag, version)
// of its own: this binary links every adapter, so every structure header
// registered here. A clash (a refused registration) would let a pool holding
// one type be recovered — and its blocks marked — by the other's hook.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

#include "ferrite/pmem/root_registry.h"

namespace root_registry_test {  // this file's names, apart in a unity build

TEST(RootRegistry, EveryStructureRegistersADistinctRootType) {
  const auto conflicts = ferrite::pmem::root_type_conflicts();
  std::string all;
  for (const auto& c : conflicts) all += "  " + c + "\n";
  EXPECT_TRUE(conflicts.empty()) << "root types registered twice:\n" << all;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> seen;
  for (const auto& t : ferrite::pmem::registered_root_types()) {
    const auto [it, fresh] = seen.emplace(std::make_pair(t.tag, t.version), t.type_name);
    EXPECT_TRUE(fresh) << t.type_name << " and " << it->second;
  }
  EXPECT_GT(seen.size(), 20u) << "this binary should link every structure";
}

}  // namespace root_registry_test
