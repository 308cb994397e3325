// tools/ferrite/demo.h — the steps of `ferrite demo` (the tour), one file
// each: demo_kill.cc (step 1), demo_campaigns.cc (step 2), demo_bench.cc
// (step 3); demo.cc parses the options and runs the steps.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>
#include <string>

namespace ferrite::tools::demo {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Options {
  std::string out = "out/demo";
  std::string pool_dir = "/dev/shm";
  int kills = 40;
  int jobs = 4000;
  int threads = 2;
  int job_us = 500;  // enough work that every kill lands while jobs are in progress
  std::uint64_t seed = 0;  // 0: from the clock
  std::string steps = "1,2,3";
  double bench_seconds = 0.1;
  bool break_recovery = false;  // step 1: workers skip detectable recovery (must fail)
};

enum class StepResult { kPassed, kFailed, kUnavailable };

// 1. Exactly-once across real crashes: the example program exactly-once
//    (examples/exactly_once.cc, next to this binary) SIGKILLed and restarted.
StepResult step_exactly_once(const Options& o, std::mt19937_64& rng);
// 1, second part. A Mirror map survives SIGKILL: the example program
//    mirror-kv (examples/mirror_kv.cc) killed, restarted and verified
//    min(kills, 20) times.
StepResult step_mirror_kills(const Options& o, std::mt19937_64& rng);
// 2. Crash campaigns: every registered structure's correct variants, and for
//    each structure a deliberately broken variant caught.
StepResult step_campaigns(const Options& o);
// 3. The quick benchmark table against the competitors, and the plots.
StepResult step_bench(const Options& o);

}  // namespace ferrite::tools::demo
