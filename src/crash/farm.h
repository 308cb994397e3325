// src/crash/farm.h — the checking farm of a crash campaign: a zygote and
// the worker processes that play the restarted machine.
//
// Process roles (docs/crash.md §3 has the picture):
//   runner  the campaign's own process: runs the workload on the simulated
//           pool, stops at crash points, builds the crash images and hands
//           them to the farm (runner.cc). It never forks at a crash point.
//   zygote  forked by Farm's constructor, before the campaign creates its
//           pool or starts a thread: single-threaded, it has never seen the
//           crashed run's DRAM. It forks the workers and is their guard: a
//           worker that dies (a recovery that crashed, or hung past
//           CampaignConfig::recovery_timeout_s) is reported to the runner
//           with its wait status and replaced by a fresh fork.
//   worker  the restarted machine (restart.cc): for each image of a job it
//           opens the image as a pool (header validation, pool-level
//           recovery), makes a fresh Subject, recovers, observes, completes
//           the pending operations (detectable subjects), runs the
//           post-recovery operations, and checks the outcome. Images are
//           processed one after the other in the same process; each image
//           gets a fresh Pool and Subject.
// A job's images are spread over the workers (both cores work while the
// runner waits); verdicts come back per image, so a worker's death names
// the image it was recovering, and the rest of its images go to its
// replacement.
//
// Thread safety: a Farm is used by one thread at a time (the runner thread
// that holds the simulator lock at a crash point).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ferrite/crash/campaign.h"
#include "ferrite/crash/checker.h"
#include "ferrite/crash/history.h"
#include "ferrite/crash/sim.h"

namespace ferrite::crash::internal {

// Which part of the run a crash point interrupted.
enum class Phase : std::uint64_t {
  kRun = 0,              // an operation (or the end of the run)
  kCreatePool = 1,       // pmem::Pool::create: the image may not open at all
  kCreateStructure = 2,  // Subject::create: the root may be missing
};
std::string_view phase_name(Phase p);

struct Job {
  std::uint64_t k = 0;
  Phase phase = Phase::kRun;
  int nested_depth = 0;  // crashes during recovery for these images (0: none)
  bool post_crash = false;  // a second crash during the post-recovery ops of these images
  const std::vector<HistoryOp>* ops = nullptr;
  const State* initial = nullptr;
  const std::vector<std::uint64_t>* offsets = nullptr;  // CrashState::lines
  std::vector<const Image*> images;
  int media_fd = -1;  // the simulator's media image (memfd)
  std::size_t media_size = 0;
};

struct Verdict {
  int index = 0;
  CheckResult check;
  std::uint64_t nested = 0;  // images checked after crashes during recovery
  std::uint64_t second = 0;  // images checked after a second crash during post-recovery ops
};

class Farm {
 public:
  // Forks the zygote and `workers` workers (0: one per online core).
  Farm(const SubjectInfo& info, const CampaignConfig& cfg);
  ~Farm();
  Farm(const Farm&) = delete;
  Farm& operator=(const Farm&) = delete;

  // Recovers and checks every image of the job; blocks until every verdict
  // is in (one per image, in any order).
  std::vector<Verdict> check(const Job& job);
  int workers() const { return static_cast<int>(slots_.size()); }
  std::uint64_t restarts() const { return restarts_; }

 private:
  struct Slot {
    int fd = -1;
    pid_t pid = -1;
  };
  void replace(std::size_t slot, std::string* death);
  void guard(int fd) const;
  // The watchdog's patience with a silent worker, in seconds: its alarm's
  // hang limit plus 5 (guard's receive timeout and run's watchdog).
  double patience_s() const { return cfg_.recovery_timeout_s + 5; }
  std::string encode(const Job& job, const std::vector<std::size_t>& which) const;

  const SubjectInfo& info_;
  const CampaignConfig& cfg_;
  int ctl_ = -1;
  pid_t zygote_ = -1;
  std::vector<Slot> slots_;
  std::uint64_t restarts_ = 0;
};

// The worker's loop (restart.cc); never returns.
[[noreturn]] void worker_main(const SubjectInfo& info, const CampaignConfig& cfg, int sock);

}  // namespace ferrite::crash::internal
