// The one map interface (ferrite/map.h), held to its contract by every
// engine that implements it: the same typed tests run on each. What a user
// of any engine may rely on:
//   * every byte string is a key and a value (the empty one, NUL bytes,
//     0xff bytes, 64 KiB), put says inserted or replaced, get/contains/
//     remove/size agree, the callback form sees the bytes in place;
//   * ordered engines scan [lo, hi) in ascending byte order and stop when
//     the callback says so;
//   * bad input is a clear exception that changes nothing: a key or value
//     over the limit, a pool that is full (the message says so; what was
//     stored before is intact, also after a restart), a thread id beyond
//     the capacity, a root name that holds another type;
//   * a restart (clean close, reopen) finds exactly what was stored.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/temp_pool.h"
#include "ferrite/combining/pb_queue.h"
#include "ferrite/map.h"
#include "ferrite/mirror/bytes_map.h"
#include "ferrite/mirror/bytes_skip_map.h"
#include "ferrite/montage/bytes_hash_map.h"
#include "ferrite/montage/bytes_skip_map.h"
#include "ferrite/pmem/payload.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/thread_registry.h"

namespace ferrite {
namespace {

using pmem::Errc;
using pmem::PoolError;
using test::TempPool;

// Closes a map the way a program that exits cleanly does (nbMontage syncs
// in its destructor; Mirror is durable at every return).
template <class M>
void close(std::unique_ptr<M>& m) {
  m.reset();
}

template <class M>
class MapContract : public ::testing::Test {
 protected:
  static MapOptions options(int threads = 4) {
    MapOptions o;
    o.threads = threads;
    o.buckets = 64;
    return o;
  }
  std::unique_ptr<M> open(pmem::Pool& pool, std::string_view name = "kv", int threads = 4) {
    return pool.template open_or_create<M>(name, options(threads));
  }
  sync::ThreadRegistry registry_{8};
};

using Engines = ::testing::Types<mirror::BytesHashMap<>, montage::BytesHashMap<>, mirror::BytesSkipMap<>,
                                 montage::BytesSkipMap<>>;
TYPED_TEST_SUITE(MapContract, Engines);

template <class M>
class OrderedMapContract : public MapContract<M> {};
using OrderedEngines = ::testing::Types<mirror::BytesSkipMap<>, montage::BytesSkipMap<>>;
TYPED_TEST_SUITE(OrderedMapContract, OrderedEngines);
static_assert(OrderedMap<mirror::BytesSkipMap<>> && OrderedMap<montage::BytesSkipMap<>>);

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

TYPED_TEST(MapContract, EveryByteStringIsAKeyAndAValue) {
  TempPool pool("map-contract");
  auto m = this->open(*pool);
  const Thread t = this->registry_.acquire();
  const std::string big(std::size_t{64} << 10, 'v');
  const std::vector<std::pair<std::string, std::string>> kv = {
      {"", ""},                                // the empty key, the empty value
      {bytes({0}), bytes({0, 0, 0})},          // NUL bytes
      {bytes({0xff, 0xff}), bytes({0xff})},    // 0xff bytes
      {"a", big},                              // 64 KiB value
      {std::string(4096, 'k'), "long key"},    // 4 KiB key
      {"b", "B"},
  };
  for (const auto& [k, v] : kv) EXPECT_TRUE(m->put(t, k, v)) << "a new key is inserted";
  EXPECT_EQ(m->size(), kv.size());
  for (const auto& [k, v] : kv) {
    ASSERT_TRUE(m->contains(t, k));
    EXPECT_EQ(m->get(t, k), std::optional<std::string>(v));
    std::string seen;
    EXPECT_TRUE(m->get(t, k, [&](std::string_view b) { seen.assign(b); }));
    EXPECT_EQ(seen, v);
  }
  EXPECT_FALSE(m->put(t, "b", "")) << "an existing key is replaced";
  EXPECT_EQ(m->get(t, "b"), std::optional<std::string>(""));
  EXPECT_EQ(m->size(), kv.size());
  EXPECT_TRUE(m->remove(t, ""));
  EXPECT_FALSE(m->remove(t, ""));
  EXPECT_FALSE(m->contains(t, ""));
  EXPECT_EQ(m->get(t, ""), std::nullopt);
  EXPECT_FALSE(m->get(t, "", [](std::string_view) { ADD_FAILURE() << "no callback for an absent key"; }));
  EXPECT_FALSE(m->contains(t, "c"));
  EXPECT_EQ(m->size(), kv.size() - 1);
}

TYPED_TEST(MapContract, ARestartFindsExactlyWhatWasStored) {
  TempPool pool("map-contract");
  std::map<std::string, std::string> want;
  {
    auto m = this->open(*pool);
    const Thread t = this->registry_.acquire();
    for (int i = 0; i < 300; ++i) {
      const std::string k = "key-" + std::to_string(i * 7919 % 1000);
      const std::string v(static_cast<std::size_t>(i % 97), static_cast<char>('a' + i % 26));
      m->put(t, k, v);
      want[k] = v;
      if (i % 5 == 0) {
        m->remove(t, k);
        want.erase(k);
      }
    }
    close(m);
  }
  pool.reopen();
  auto m = this->open(*pool, "kv", 2);  // attach for fewer threads than the capacity
  const Thread t = this->registry_.acquire();
  EXPECT_EQ(m->size(), want.size());
  for (const auto& [k, v] : want) EXPECT_EQ(m->get(t, k), std::optional<std::string>(v)) << k;
  for (int i = 0; i < 1000; ++i) {
    const std::string k = "key-" + std::to_string(i);
    EXPECT_EQ(m->contains(t, k), want.count(k) == 1) << k;
  }
}

TYPED_TEST(MapContract, AKeyOrValueOverTheLimitIsRefusedAndChangesNothing) {
  TempPool pool("map-contract", std::size_t{96} << 20);
  auto m = this->open(*pool);
  const Thread t = this->registry_.acquire();
  ASSERT_TRUE(m->put(t, "k", "old"));
  const std::string over(pmem::kMaxPayloadBytes + 1, 'x');
  for (int which = 0; which < 2; ++which) {
    try {
      if (which == 0) m->put(t, "k", over);
      else m->put(t, over, "v");
      ADD_FAILURE() << (which == 0 ? "a value" : "a key") << " over the limit was accepted";
    } catch (const PoolError& e) {
      EXPECT_EQ(e.code(), Errc::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::to_string(pmem::kMaxPayloadBytes)), std::string::npos)
          << "the message names the limit: " << e.what();
    }
  }
  EXPECT_EQ(m->get(t, "k"), std::optional<std::string>("old"));
  EXPECT_EQ(m->size(), 1u);
  // At the limit exactly: stored.
  const std::string at(pmem::kMaxPayloadBytes, 'y');
  EXPECT_FALSE(m->put(t, "k", at));
  EXPECT_EQ(m->get(t, "k")->size(), at.size());
}

TYPED_TEST(MapContract, AFullPoolIsAClearErrorAndLosesNothing) {
  TempPool pool("map-contract", std::size_t{40} << 20);
  std::map<std::string, std::string> stored;
  {
    auto m = this->open(*pool);
    const Thread t = this->registry_.acquire();
    const std::string value(std::size_t{1} << 20, 'v');
    bool full = false;
    for (int i = 0; i < 200 && !full; ++i) {
      const std::string k = "big-" + std::to_string(i);
      try {
        m->put(t, k, value);
        stored[k] = value;
      } catch (const PoolError& e) {
        EXPECT_EQ(e.code(), Errc::kFull) << e.what();
        EXPECT_NE(std::string(e.what()).find("full"), std::string::npos) << e.what();
        full = true;
        EXPECT_FALSE(m->contains(t, k)) << "a put that threw stored nothing";
      }
    }
    ASSERT_TRUE(full) << "a 40 MiB pool took 200 MiB of values";
    ASSERT_GT(stored.size(), 5u);
    for (const auto& [k, v] : stored) ASSERT_EQ(m->get(t, k), std::optional<std::string>(v)) << k;
    // Room comes back when a key goes.
    const auto first = stored.begin()->first;
    ASSERT_TRUE(m->remove(t, first));
    stored.erase(first);
    close(m);
  }
  pool.reopen();
  auto m = this->open(*pool);
  const Thread t = this->registry_.acquire();
  EXPECT_EQ(m->size(), stored.size());
  for (const auto& [k, v] : stored) EXPECT_EQ(m->get(t, k), std::optional<std::string>(v)) << k;
  EXPECT_TRUE(m->put(t, "after-restart", std::string(std::size_t{1} << 20, 'w')))
      << "the removed key's space is free again after the restart";
}

TYPED_TEST(MapContract, AThreadBeyondTheCapacityIsRefused) {
  TempPool pool("map-contract");
  auto m = this->open(*pool, "kv", 2);
  std::vector<Thread> held;
  for (int i = 0; i < 3; ++i) held.push_back(this->registry_.acquire());
  ASSERT_EQ(held[2].id(), 2);
  EXPECT_TRUE(m->put(held[1], "k", "v"));
  EXPECT_ANY_THROW(m->put(held[2], "k2", "v")) << "thread id 2 of a map created for 2 threads";
  EXPECT_FALSE(m->contains(held[1], "k2"));
  EXPECT_EQ(m->size(), 1u);
}

TYPED_TEST(MapContract, ANameThatHoldsAnotherTypeIsRefused) {
  TempPool pool("map-contract");
  { auto q = pool->template open_or_create<combining::PBQueue<>>("jobs", 2); }
  try {
    auto m = this->open(*pool, "jobs");
    ADD_FAILURE() << "a queue's root opened as a map";
  } catch (const PoolError& e) {
    EXPECT_EQ(e.code(), Errc::kRootType) << e.what();
    EXPECT_NE(std::string(e.what()).find("jobs"), std::string::npos) << "the message names the root: " << e.what();
  }
  // And the queue is intact.
  auto q = pool->template open_or_create<combining::PBQueue<>>("jobs", 2);
  EXPECT_NE(q, nullptr);
}

// Scans: [lo, hi) in ascending std::string_view order (bytes compared as
// unsigned: "\xff" after "a"), the empty key first, the callback's false
// stops at once; after a restart the same.
TYPED_TEST(OrderedMapContract, ScansVisitARangeInAscendingByteOrderAndStopWhenTold) {
  TempPool pool("map-contract");
  std::map<std::string, std::string> want;
  auto m = this->open(*pool);
  const Thread t = this->registry_.acquire();
  std::mt19937_64 rng(42);
  for (int i = 0; i < 400; ++i) {
    std::string k(rng() % 6, '\0');
    for (auto& c : k) c = static_cast<char>("a\0\xff\x80z"[rng() % 5]);
    const std::string v(rng() % 40, static_cast<char>('A' + i % 26));
    m->put(t, k, v);
    want[k] = v;
  }
  auto scan = [&](std::string_view lo, std::string_view hi, std::size_t stop_after) {
    std::vector<std::pair<std::string, std::string>> got;
    m->scan(t, lo, hi, [&](std::string_view k, std::string_view v) {
      got.emplace_back(std::string(k), std::string(v));
      return got.size() < stop_after;
    });
    return got;
  };
  auto expect = [&](std::string_view lo, std::string_view hi, std::size_t stop_after) {
    std::vector<std::pair<std::string, std::string>> out;
    for (auto it = want.lower_bound(std::string(lo)); it != want.end() && std::string_view(it->first) < hi; ++it) {
      if (out.size() == stop_after) break;
      out.push_back(*it);
    }
    return out;
  };
  const std::string top(8, '\xff');
  const std::vector<std::pair<std::string, std::string>> ranges = {
      {"", top}, {"a", "z"}, {std::string(1, '\0'), "a"}, {"\x80", "\xff"}, {"z", "a"}, {"a", "a"}, {"", ""}};
  for (const auto& [lo, hi] : ranges) {
    EXPECT_EQ(scan(lo, hi, SIZE_MAX), expect(lo, hi, SIZE_MAX)) << "range of " << lo.size() << "/" << hi.size();
    EXPECT_EQ(scan(lo, hi, 3), expect(lo, hi, 3)) << "the callback's false stops the scan";
  }
  ASSERT_EQ(scan("", top, SIZE_MAX).size(), want.size());
  ASSERT_EQ(scan("", top, SIZE_MAX).front().first, "") << "the empty key is the smallest";
  // scan_from: no upper bound — iteration in key order, stoppable; keys
  // above any finite bound (here, 9 bytes of 0xff) are reached too.
  const std::string above(9, '\xff');
  m->put(t, above, "top");
  want[above] = "top";
  auto scan_from = [&](std::string_view lo, std::size_t stop_after) {
    std::vector<std::pair<std::string, std::string>> got;
    m->scan_from(t, lo, [&](std::string_view k, std::string_view v) {
      got.emplace_back(std::string(k), std::string(v));
      return got.size() < stop_after;
    });
    return got;
  };
  auto expect_from = [&](std::string_view lo, std::size_t stop_after) {
    std::vector<std::pair<std::string, std::string>> out;
    for (auto it = want.lower_bound(std::string(lo)); it != want.end() && out.size() < stop_after; ++it)
      out.push_back(*it);
    return out;
  };
  for (const std::string& lo : {std::string(), std::string("a"), std::string("\x80"), top, above}) {
    EXPECT_EQ(scan_from(lo, SIZE_MAX), expect_from(lo, SIZE_MAX)) << "from " << lo.size() << " bytes";
    EXPECT_EQ(scan_from(lo, 2), expect_from(lo, 2)) << "the callback's false stops it";
  }
  ASSERT_EQ(scan_from("", SIZE_MAX).size(), want.size());
  ASSERT_EQ(scan_from("", SIZE_MAX).back().first, above);
  m.reset();
  pool.reopen();
  m = this->open(*pool);
  EXPECT_EQ(scan("", top, SIZE_MAX), expect("", top, SIZE_MAX)) << "after a restart";
  EXPECT_EQ(scan_from("", SIZE_MAX), expect_from("", SIZE_MAX)) << "after a restart";
}

}  // namespace
}  // namespace ferrite
