// bench/plans.cc — the canned plans of `ferrite bench`: --quick (the tour
// and CI: every pair-workload structure, 1 and 2 threads, main techniques,
// 3 × 0.2 s) and --full (the PBcomb paper's Figures 1-7). See harness.h and
// docs/bench.md.
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"

namespace ferrite::bench {

std::vector<std::string> technique_names(Structure s, bool main_only) {
  std::vector<std::string> v;
  for (const Technique* t : techniques_for(s)) {
    // Ablation variants (e.g. pb-stack-no-elim) are not "main" techniques.
    if (main_only && t->ablation) continue;
    v.push_back(t->name);
  }
  return v;
}

std::vector<Experiment> quick_plan() {
  std::vector<Experiment> plan;
  for (Structure s : {Structure::kRegister, Structure::kStack, Structure::kQueue, Structure::kPriorityQueue}) {
    Experiment e;
    e.label = "quick";
    e.structure = s;
    e.workload = default_workload(s);
    e.techniques = technique_names(s, true);
    e.threads = {1, 2};
    e.duration_s = 0.2;
    e.reps = 3;
    e.warmup = 0;
    e.heap_size = 256;
    if (!e.techniques.empty()) plan.push_back(std::move(e));
  }
  return plan;
}

std::vector<Experiment> full_plan() {
  std::vector<Experiment> plan;
  auto add = [&](const std::string& label, Structure s, const std::string& backend, int heap_size = 1024) {
    Experiment e;
    e.label = label;
    e.structure = s;
    e.workload = default_workload(s);
    e.techniques = technique_names(s, false);
    e.threads = {1, 2, 4, 8};
    e.backend_text = backend;
    if (!persist::parse_backend(backend, &e.backend)) throw std::logic_error("bad backend " + backend);
    e.duration_s = 1.0;
    e.reps = 3;
    e.warmup = 1;
    e.heap_size = heap_size;
    if (!e.techniques.empty()) plan.push_back(std::move(e));
  };
  add("fig1-2", Structure::kRegister, "hardware");  // throughput; pwb per op
  add("fig3", Structure::kRegister, "nosync");      // no psync
  add("fig4-5", Structure::kQueue, "hardware");     // throughput; pwb per op
  add("fig6", Structure::kQueue, "off");            // no pwb (synchronization alone)
  add("fig7a", Structure::kStack, "hardware");
  for (int size : {64, 128, 256, 512, 1024}) add("fig7b", Structure::kPriorityQueue, "hardware", size);
  return plan;
}

}  // namespace ferrite::bench
