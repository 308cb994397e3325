// Stress tests of nbMontage's ordered byte-string map and byte-string queue
// (montage/bytes_skip_map.h, montage/bytes_queue.h) with four threads, the
// background advancer on a short epoch, small to-be-persisted buffers and
// explicit syncs racing it — the test TSan runs. Readers validate every
// byte they see (a freed or reused payload read by a scan or a dequeue
// shows as a value no thread wrote). Each ends with a clean restart that
// must recover exactly the state at the close.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/scale.h"
#include "common/temp_pool.h"
#include "ferrite/montage/bytes_queue.h"
#include "ferrite/montage/bytes_skip_map.h"

namespace montage_bytes_structures_stress_test {  // this file's names, apart in a unity build

namespace fm = ferrite::montage;
using ferrite::test::scaled;
using ferrite::test::TempPool;

namespace {

constexpr int kThreads = 4;

fm::EpochOptions fast_epochs() {
  fm::EpochOptions o;
  o.epoch_length = std::chrono::microseconds{200};
  o.tbp_capacity = 8;  // the full-buffer path too
  return o;
}
// A value that names its key and its writer's counter, checkable byte for
// byte: "<key>#<n>#" then filler derived from n, (n % 200) bytes.
std::string value_of(const std::string& key, std::uint64_t n) {
  std::string v = key + "#" + std::to_string(n) + "#";
  for (std::uint64_t i = 0; i < n % 200; ++i) v.push_back(static_cast<char>('a' + (n + i) % 26));
  return v;
}
bool valid_value(std::string_view key, std::string_view v) {
  if (v.substr(0, key.size() + 1) != std::string(key) + "#") return false;
  const auto rest = v.substr(key.size() + 1);
  const auto hash = rest.find('#');
  if (hash == std::string_view::npos || hash == 0 || hash > 20) return false;
  const std::uint64_t n = std::stoull(std::string(rest.substr(0, hash)));
  return v == value_of(std::string(key), n);
}

// Three updaters own disjoint key ranges (a model each); the fourth thread
// scans the whole map and checks order, bounds and every value's bytes.
TEST(MontageBytesStructuresStress, SkipMapUpdatesAndScans) {
  TempPool pool{"bso-stress", std::size_t{256} << 20};
  const int per_thread = scaled(20000, 500);
  std::map<std::string, std::string> own[kThreads - 1];
  std::atomic<int> errors{0};
  std::atomic<bool> done{false};
  ferrite::MapOptions mo;
  mo.threads = kThreads;
  {
    auto m = fm::BytesSkipMap<>::create(*pool, "m", mo, fast_epochs());
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads - 1; ++t)
      ts.emplace_back([&, t] {
        std::uint64_t r = 77 + static_cast<std::uint64_t>(t);
        for (int i = 0; i < per_thread; ++i) {
          r = r * 6364136223846793005ull + 1442695040888963407ull;
          const std::string key = std::string(1, static_cast<char>('a' + t)) + std::to_string((r >> 40) % 97);
          const auto c = (r >> 20) % 10;
          if (c < 5) {
            const std::string v = value_of(key, r >> 33);
            if (m->put(t, key, v) != (own[t].count(key) == 0)) ++errors;
            own[t][key] = v;
          } else if (c < 8) {
            if (m->remove(t, key) != (own[t].count(key) != 0)) ++errors;
            own[t].erase(key);
          } else if (c < 9) {
            const auto got = m->get(t, key);
            const auto it = own[t].find(key);
            if (got != (it == own[t].end() ? std::nullopt : std::optional<std::string>(it->second))) ++errors;
          } else if (i % 64 == 0) {
            m->sync();
          }
        }
      });
    ts.emplace_back([&] {
      long scans = 0;
      while (!done.load(std::memory_order_relaxed) || scans == 0) {
        std::string last;
        bool first = true;
        m->scan(kThreads - 1, "", "\x7f", [&](std::string_view k, std::string_view v) {
          if (!first && !(last < k)) ++errors;
          if (!valid_value(k, v)) ++errors;
          last = k;
          first = false;
          return true;
        });
        ++scans;
      }
    });
    for (int t = 0; t < kThreads - 1; ++t) ts[static_cast<std::size_t>(t)].join();
    done = true;
    ts.back().join();
    EXPECT_EQ(errors.load(), 0);
  }  // a clean close syncs
  pool.reopen();
  auto m = fm::BytesSkipMap<>::attach(*pool, "m", mo, fast_epochs());
  std::map<std::string, std::string> want;
  for (const auto& o : own) want.insert(o.begin(), o.end());
  const auto got = m->contents();
  ASSERT_EQ(got.size(), want.size());
  const std::vector<std::pair<std::string, std::string>> want_v(want.begin(), want.end());
  EXPECT_TRUE(got == want_v);
  EXPECT_EQ(m->size(), want.size());
}

// Two producers, two consumers; every dequeued value validated, each once,
// each producer's in order; the rest recovered at the restart.
TEST(MontageBytesStructuresStress, QueueLosesNothingDuplicatesNothing) {
  TempPool pool{"bsq-stress", std::size_t{256} << 20};
  const int per_thread = scaled(20000, 500);
  std::vector<std::string> got[2];
  std::vector<std::string> left;
  std::atomic<int> producing{2};
  {
    auto q = fm::BytesQueue<>::create(*pool, "q", kThreads, fast_epochs());
    std::vector<std::thread> ts;
    for (int p = 0; p < 2; ++p)
      ts.emplace_back([&, p] {
        for (int i = 0; i < per_thread; ++i) {
          q->enqueue(p, value_of(std::string(1, static_cast<char>('0' + p)), static_cast<std::uint64_t>(i)));
          if (i % 512 == 0) q->sync();
        }
        --producing;
      });
    for (int c = 0; c < 2; ++c)
      ts.emplace_back([&, c] {
        for (;;) {
          auto v = q->dequeue(2 + c);
          if (v) got[c].push_back(std::move(*v));
          else if (producing.load() == 0) break;
          if (got[c].size() >= static_cast<std::size_t>(per_thread) * 3 / 4) break;  // leave some behind
        }
      });
    for (auto& t : ts) t.join();
    left = q->contents();
  }
  pool.reopen();
  auto q = fm::BytesQueue<>::attach(*pool, "q", kThreads, fast_epochs());
  EXPECT_EQ(q->contents(), left);
  std::vector<int> seen(2 * static_cast<std::size_t>(per_thread), 0);
  for (const auto* seq : {&got[0], &got[1], &left}) {
    long last[2] = {-1, -1};
    for (const std::string& v : *seq) {
      const int p = v[0] - '0';
      ASSERT_TRUE((p == 0 || p == 1) && valid_value(v.substr(0, 1), v)) << v.substr(0, 40);
      const long n = std::stol(v.substr(2, v.find('#', 2) - 2));
      EXPECT_GT(n, last[p]);
      last[p] = n;
      ++seen[static_cast<std::size_t>(p * per_thread + n)];
    }
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
}

}  // namespace

}  // namespace montage_bytes_structures_stress_test
