// `ferrite bench --recovery` — nbMontage's recovery time against live size
// (nbMontage, Cai et al., DISC 2021, §6: "recovery ... 1 GB of live data
// in 1.4 s on one thread"). Documentation: docs/bench.md "Recovery time".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ferrite/persist/persist.h"

namespace ferrite::tools {

struct RecoveryBenchArgs {
  std::vector<std::string> techniques;        // of recovery_bench_techniques()
  std::vector<std::uint64_t> live_mib;        // payload bytes (key + value) per run
  std::vector<int> recovery_threads;          // EpochOptions::recovery_threads
  std::size_t value_size = 1024;              // bytes per value (>= 8)
  int reps = 3;                               // recoveries per (size, threads): median, min, max
  std::string pool_dir = "/dev/shm";
  persist::BackendConfig backend{};           // hardware by default
  std::string json;                           // write records as JSON here ("" = no)
};

// The structures whose recovery the mode measures (montage-*).
const std::vector<std::string>& recovery_bench_techniques();

// Fills each structure to each live size, closes its pool, and times
// Pool::open plus the structure's attach (the epoch system's scan and the
// index rebuild) with each recovery thread count. Table on stdout, progress
// on stderr. Returns the exit code (0 ok, 1 a run failed its check).
int run_recovery_bench(const RecoveryBenchArgs& a);

}  // namespace ferrite::tools
