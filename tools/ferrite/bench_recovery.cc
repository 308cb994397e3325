// `ferrite bench --recovery`: nbMontage's recovery time against live size.
//
// What is timed. A structure is filled on one thread to L MiB of live
// payload (keys of 8 bytes and values of --value-size bytes: payload bytes =
// keys x (8 + value size)), synced, and its pool closed cleanly. Each run
// then reopens the pool file and times
//   open     pmem::Pool::open: header validation and pool-level recovery
//            (montage's root hook marks every slab live);
//   recover  the structure's attach with EpochOptions::recovery_threads = R:
//            the epoch system's scan of every block of every slab (§3.4's
//            rules: epoch, descriptor, anti-nodes), the restored global
//            epoch, and the DRAM index rebuilt from the kept payloads.
// A clean close keeps every payload, so recovery does the most work a crash
// could leave it (a crash leaves fewer payloads, never more blocks). The
// recovered structure is checked (its size and a sample of keys) outside
// the timing. Rates: live GB/s = payload bytes / recover seconds, and per
// recovery thread; scanned = slab bytes the scan walked.
//
// The paper's goal (nbMontage, Cai et al., DISC 2021, §6): 1 GB of live data
// recovered in 1.4 s on one thread; the issue's: >= 1 GB/s per thread.
#include "bench_recovery.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/harness.h"
#include "ferrite/montage/bst.h"
#include "ferrite/montage/hash_map.h"
#include "ferrite/montage/skiplist.h"
#include "ferrite/montage/split_ordered.h"
#include "ferrite/pmem/pool.h"

namespace ferrite::tools {
namespace {

namespace fm = ferrite::montage;
using Clock = std::chrono::steady_clock;

// The i-th key of a fill of n: a bijection of 62 bits (odd multiplier), so
// keys are distinct and arrive in random order (the BST is unbalanced).
std::int64_t fill_key(std::uint64_t i) {
  return static_cast<std::int64_t>((i * 0x9E3779B97F4A7C15ull) & ((std::uint64_t{1} << 62) - 1)) + 1;
}

struct Measured {
  double open_s = 0, recover_s = 0;
  double huge_fraction = -1;  // of the pool mapping's resident bytes mapped by 2 MiB pages (-1: unknown)
  fm::RecoveryStats stats;
  std::string check;  // "" if the recovered structure holds the fill
};

// One map type: fill, then open + attach + check.
struct Target {
  std::string name;
  std::function<void(pmem::Pool&, std::uint64_t keys, std::size_t value_size)> fill;
  std::function<Measured(const std::string& path, const pmem::PoolOptions&, std::uint64_t keys, std::size_t value_size,
                         int rthreads)>
      recover;
};

// The fraction of the resident bytes of the mapping that starts at `base`
// which the kernel maps with 2 MiB pages (/proc/self/smaps: ShmemPmdMapped,
// FilePmdMapped), -1 if the mapping is not found. Recovery touches every
// page of the pool through a fresh mapping, and the page size can decide
// its time (docs/bench.md, "Page size").
double huge_fraction(const void* base) {
  std::ifstream in("/proc/self/smaps");
  const auto want = reinterpret_cast<std::uintptr_t>(base);
  std::string line;
  bool inside = false;
  double rss = 0, pmd = 0;
  while (std::getline(in, line)) {
    std::uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      if (inside) break;  // the next mapping
      inside = lo == want;
      continue;
    }
    if (!inside) continue;
    double kb = 0;
    if (std::sscanf(line.c_str(), "Rss: %lf kB", &kb) == 1) rss = kb;
    else if (std::sscanf(line.c_str(), "ShmemPmdMapped: %lf kB", &kb) == 1 ||
             std::sscanf(line.c_str(), "FilePmdMapped: %lf kB", &kb) == 1)
      pmd += kb;
  }
  if (!inside && rss == 0) return -1;
  return rss > 0 ? pmd / rss : 0;
}

fm::EpochOptions fill_epochs() {
  fm::EpochOptions o;
  o.epoch_length = std::chrono::microseconds{0};  // advance on sync only: no advancer thread
  return o;
}

template <class Map, class Opt>
Target map_target(std::string name, std::function<Opt(std::uint64_t keys, std::size_t value_size)> options) {
  Target t;
  t.name = std::move(name);
  t.fill = [options](pmem::Pool& pool, std::uint64_t keys, std::size_t value_size) {
    auto m = Map::create(pool, "recovery-bench", 1, options(keys, value_size), fill_epochs());
    for (std::uint64_t i = 0; i < keys; ++i) m->put(0, fill_key(i), static_cast<std::int64_t>(i));
    m->sync();
  };
  t.recover = [options](const std::string& path, const pmem::PoolOptions& po, std::uint64_t keys,
                        std::size_t value_size, int rthreads) {
    Measured r;
    auto t0 = Clock::now();
    auto pool = pmem::Pool::open(path, po);
    auto t1 = Clock::now();
    fm::EpochOptions eo = fill_epochs();
    eo.recovery_threads = rthreads;
    auto m = Map::attach(*pool, "recovery-bench", 1, options(keys, value_size), eo, &r.stats);
    auto t2 = Clock::now();
    r.huge_fraction = huge_fraction(pool->base());
    r.open_s = std::chrono::duration<double>(t1 - t0).count();
    r.recover_s = std::chrono::duration<double>(t2 - t1).count();
    if (r.stats.payloads_kept != keys)
      r.check = fmt::format("recovery kept {} payloads, the fill made {}", r.stats.payloads_kept, keys);
    const std::uint64_t step = std::max<std::uint64_t>(1, keys / 1000);
    for (std::uint64_t i = 0; i < keys && r.check.empty(); i += step)
      if (m->get(0, fill_key(i)) != static_cast<std::int64_t>(i))
        r.check = fmt::format("key #{} lost or wrong after recovery", i);
    return r;
  };
  return t;
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = [] {
    std::vector<Target> v;
    v.push_back(map_target<fm::HashMap<>, fm::HashMapOptions>("montage-hashmap", [](std::uint64_t keys, std::size_t vs) {
      fm::HashMapOptions o;
      o.value_bytes = vs;
      o.buckets = std::max<std::size_t>(1024, static_cast<std::size_t>(keys));  // load factor <= 1
      return o;
    }));
    v.push_back(map_target<fm::SplitOrderedMap<>, fm::SplitOrderedOptions>(
        "montage-splitorder", [](std::uint64_t, std::size_t vs) {
          fm::SplitOrderedOptions o;
          o.value_bytes = vs;
          return o;
        }));
    v.push_back(map_target<fm::SkipList<>, fm::SkipListOptions>("montage-skiplist", [](std::uint64_t, std::size_t vs) {
      fm::SkipListOptions o;
      o.value_bytes = vs;
      return o;
    }));
    v.push_back(map_target<fm::Bst<>, fm::BstOptions>("montage-bst", [](std::uint64_t, std::size_t vs) {
      fm::BstOptions o;
      o.value_bytes = vs;
      return o;
    }));
    return v;
  }();
  return all;
}

// A block holds the 64-byte header and the payload, rounded up to a line
// (epoch_sys.h size classes); the pool also needs room for slabs' headers,
// the descriptors and free space for the open's recovery.
std::size_t pool_bytes(std::uint64_t keys, std::size_t value_size) {
  const std::size_t block = fm::EpochSys<>::class_bytes(fm::EpochSys<>::class_for(sizeof(fm::PBlkHeader) + 8 + value_size));
  const std::size_t per_slab = (fm::kSlabBytes - sizeof(fm::SlabHeader)) / block;
  const std::size_t need = static_cast<std::size_t>((keys + per_slab - 1) / per_slab) * fm::kSlabBytes;
  const std::size_t bytes = std::max<std::size_t>(std::size_t{64} << 20, need + need / 4 + (std::size_t{64} << 20));
  return (bytes + (std::size_t{1} << 20) - 1) & ~((std::size_t{1} << 20) - 1);  // whole MiB (a 4 KiB multiple)
}

}  // namespace

const std::vector<std::string>& recovery_bench_techniques() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& t : targets()) n.push_back(t.name);
    return n;
  }();
  return names;
}

int run_recovery_bench(const RecoveryBenchArgs& a) {
  const std::uint64_t entry = 8 + a.value_size;  // key + value
  pmem::PoolOptions po;
  po.backend = a.backend;
  nlohmann::ordered_json records = nlohmann::ordered_json::array();
  int rc = 0;
  std::printf("Ferrite bench --recovery — nbMontage recovery time against live size (%zu-byte values, %d rep(s); "
              "median, min..max)\n\n",
              a.value_size, a.reps);
  std::printf("%-19s %8s %10s %11s %3s %9s %21s %9s %13s %8s\n", "technique", "live MiB", "keys", "scanned MiB", "R",
              "open ms", "recover ms", "GB/s", "GB/s/thread", "2M pages");
  for (const auto& name : a.techniques) {
    const Target* t = nullptr;
    for (const auto& x : targets())
      if (x.name == name) t = &x;
    if (t == nullptr) throw std::invalid_argument("no recovery target " + name);
    for (std::uint64_t mib : a.live_mib) {
      const std::uint64_t keys = std::max<std::uint64_t>(1, (mib << 20) / entry);
      const std::string path = bench::fresh_pool_path(a.pool_dir);
      struct Remove {
        const std::string& p;
        ~Remove() { std::remove(p.c_str()); }
      } remove_pool{path};
      std::fprintf(stderr, "ferrite bench: %s: filling %llu keys (%llu MiB live)...\n", name.c_str(),
                   static_cast<unsigned long long>(keys), static_cast<unsigned long long>(mib));
      {
        auto pool = pmem::Pool::create(path, pool_bytes(keys, a.value_size), po);
        t->fill(*pool, keys, a.value_size);
      }
      for (int r : a.recovery_threads) {
        std::vector<double> open_s, rec_s;
        Measured last;
        for (int rep = 0; rep < a.reps; ++rep) {
          last = t->recover(path, po, keys, a.value_size, r);
          open_s.push_back(last.open_s);
          rec_s.push_back(last.recover_s);
          if (!last.check.empty()) break;
        }
        const double live = static_cast<double>(keys * entry);
        const double scanned = static_cast<double>(last.stats.slabs) * 65536.0;
        const double med = bench::median(rec_s);
        const double gbps = med > 0 ? live / med / 1e9 : 0;
        const std::string huge =
            last.huge_fraction < 0 ? std::string("?") : fmt::format("{:.0f}%", last.huge_fraction * 100);
        std::printf("%-19s %8llu %10llu %11.0f %3d %9.1f %9.1f (%5.1f..%5.1f) %9.2f %13.2f %8s%s\n", name.c_str(),
                    static_cast<unsigned long long>(mib), static_cast<unsigned long long>(keys), scanned / 1048576.0, r,
                    bench::median(open_s) * 1e3, med * 1e3, *std::min_element(rec_s.begin(), rec_s.end()) * 1e3,
                    *std::max_element(rec_s.begin(), rec_s.end()) * 1e3, gbps, gbps / r, huge.c_str(),
                    last.check.empty() ? "" : ("  FAILED: " + last.check).c_str());
        std::fflush(stdout);
        if (!last.check.empty()) rc = 1;
        records.push_back({{"technique", name},
                           {"value_size", a.value_size},
                           {"live_bytes", keys * entry},
                           {"keys", keys},
                           {"scanned_bytes", static_cast<std::uint64_t>(scanned)},
                           {"blocks_seen", last.stats.blocks_seen},
                           {"payloads_kept", last.stats.payloads_kept},
                           {"recovery_threads", r},
                           {"open_s", open_s},
                           {"recover_s", rec_s},
                           {"recover_s_median", med},
                           {"live_gb_per_s", gbps},
                           {"live_gb_per_s_per_thread", gbps / r},
                           // of the pool mapping's resident bytes, on 2 MiB pages (-1: unknown)
                           {"pool_huge_page_fraction", last.huge_fraction},
                           {"error", last.check}});
      }
    }
  }
  if (!a.json.empty()) {
    nlohmann::ordered_json doc;
    const bench::Machine m = bench::machine_info();
    doc["machine"] = {{"cpu_model", m.cpu_model}, {"cores", m.cores},        {"build_type", m.build_type},
                      {"git_commit", m.git_commit}, {"timestamp_utc", m.timestamp_utc}};
    doc["recovery"] = records;
    std::ofstream out(a.json, std::ios::binary | std::ios::trunc);
    out << doc.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "ferrite bench: cannot write %s\n", a.json.c_str());
      return 1;
    }
    std::fprintf(stderr, "ferrite bench: wrote %s\n", a.json.c_str());
  }
  return rc;
}

}  // namespace ferrite::tools
