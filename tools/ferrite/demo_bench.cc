// tools/ferrite/demo_bench.cc — step 3 of the tour: the quick benchmark
// table (bench/harness.h) with ratios against the competitors, bench.json
// and the plots in --out.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "bench/harness.h"
#include "tools/ferrite/demo.h"

namespace ferrite::tools::demo {

StepResult step_bench(const Options& o) {
  auto plan = bench::quick_plan();
  if (plan.empty()) {
    std::printf("  NOT YET AVAILABLE: no technique is registered with the benchmark.\n");
    return StepResult::kUnavailable;
  }
  for (auto& e : plan) {
    e.duration_s = o.bench_seconds;
    e.reps = 3;
    e.pool_dir = o.pool_dir;
  }
  for (const auto& w : bench::build_warnings()) std::printf("  WARNING: %s\n", w.c_str());
  std::size_t points = 0;
  for (const auto& e : plan) points += e.techniques.size() * e.threads.size();
  std::printf("  %zu points (technique x threads), 3 reps of %.2f s each; progress on stderr\n", points,
              o.bench_seconds);
  std::fflush(stdout);
  std::size_t done = 0;
  const auto records = bench::run_experiments(plan, [&](const std::string& line) {
    if (line.find("rep 3/3") != std::string::npos || line.find("FAILED") != std::string::npos)
      std::fprintf(stderr, "  [%zu/%zu] %s\n", ++done, points, line.c_str());
  });
  std::printf("\n%s", bench::format_table(records).c_str());
  bool failed = false;
  for (const auto& r : records)
    if (!r.error.empty()) failed = true;
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  const std::string json = o.out + "/bench.json";
  {
    std::ofstream f(json);
    f << bench::to_json(records, bench::machine_info()).dump(2) << "\n";
  }
  std::string msg;
  const bool plotted = bench::make_plots(json, o.out, &msg);
  std::printf("  results: %s\n  %s\n", std::filesystem::absolute(json).c_str(), msg.c_str());
  // Missing matplotlib does not fail the tour; the numbers are there.
  if (!plotted && msg.find("skipped") == std::string::npos) failed = true;
  std::printf(failed ? "  FAILED: some benchmark points did not run (see the table).\n"
                     : "  MEASURED: throughput and persistence verbs per operation of every registered technique,\n"
                       "  side by side in one process (ratio column: against the reference named under each table).\n");
  return failed ? StepResult::kFailed : StepResult::kPassed;
}

}  // namespace ferrite::tools::demo
