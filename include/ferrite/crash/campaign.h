// ferrite/crash/campaign.h — crash campaigns: run a Subject on a simulated
// pool, crash it at persistence verbs, recover every crash image in a
// fork()ed child and check the result.
//
// Protocol (subject.h has the Subject side):
//   1. A fresh pool of `pool_size` bytes with backend "sim" in `pool_dir`;
//      subject->create(pool, threads); initial = observe(); the simulator is
//      settled (creation is durable; crash points count from the first op).
//   2. `threads` threads run ops/threads operations each (next_op, apply),
//      recorded in a History.
//   3. Crash point k = just before the k-th persistence verb (0-based) and
//      the end of the run. One thread: every k (unless crash_points > 0).
//      Several threads: about `crash_points` ks sampled deterministically
//      from the seed (a dry run measures the verb count first).
//   4. At a crash point the thread issuing verb k fork()s (other threads are
//      given up to 2 ms to reach a verb or finish their op; they are gone in
//      the child, as in a real crash). The child captures the crash state and
//      builds images 0 (all lost), 1 (all persisted) and `images` random ones,
//      deduplicated by hash. Each distinct image is installed and recovered
//      in its own grandchild (recover, observe, recover_op per pending op,
//      observe), which reports back through a pipe; the child checks the
//      results (durable linearizability, then detectability for detectable
//      subjects; buffered durable linearizability for buffered ones) and
//      reports to the parent, which continues the run.
//   5. Every violation carries a one-line replay command.
//
// Determinism: the workload (next_op streams), the crash points and the
// images are functions of the seed. With one thread a replay reproduces the
// exact crash point and image; with several threads the interleaving is up
// to the scheduler, so a replay re-crashes at the same k with the same image
// choice but not necessarily the same state.
//
// Thread safety: one campaign per process at a time (the simulator models
// one pool).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ferrite/crash/checker.h"
#include "ferrite/crash/subject.h"

namespace ferrite::crash {

struct CampaignProgress {
  std::uint64_t k = 0;              // last crash point
  std::uint64_t crash_points = 0;
  std::uint64_t images_checked = 0;
  std::uint64_t violations = 0;
  std::uint64_t ops_done = 0;       // completed operations so far (all threads)
  double seconds = 0;
};

struct CampaignConfig {
  int threads = 1;
  std::size_t ops = 200;             // total, split across threads
  int images = 8;                    // random images per crash point (+2 fixed)
  std::uint64_t seed = 1;
  std::size_t pool_size = std::size_t{1} << 20;
  std::string pool_dir = "/dev/shm";
  // 0: every verb with one thread, 300 sampled points with several threads.
  std::size_t crash_points = 0;
  bool tearing = true;
  // Replay exactly one crash point and image.
  struct Replay {
    std::uint64_t k;
    int image;
  };
  std::optional<Replay> replay;
  CheckOptions check;
  std::size_t max_details = 20;      // violations kept with details
  // Stop crashing once this many violations were found (0: never). For
  // broken variants, where one violation is the verdict: the rest of the
  // workload runs without crash points.
  std::uint64_t stop_after_violations = 0;
  int recovery_timeout_s = 20;       // a recovery running longer "hangs"
  // The restarted machine opens each image with PoolOptions::recover =
  // recover_pool: true (the default) is pool-level recovery before the
  // subject's recover(); false leaves the heap as open() finds it (every
  // block allocated) for a subject that recovers the heap by hand.
  bool recover_pool = true;
  // Called after each crash point from the crashing thread (throttle it).
  std::function<void(const CampaignProgress&)> progress;
};

struct Violation {
  std::uint64_t k = 0;
  int image = 0;
  std::string property;  // "durable-linearizability", "detectability", "recovery", ...
  std::string engine;    // checker engine
  std::string reason;
  std::string image_how; // how the image was built
  std::string replay;    // `ferrite crashtest ... --replay K:IMAGE`
};

struct CampaignResult {
  std::string structure, variant;
  int threads = 1;
  std::size_t ops = 0;
  std::uint64_t seed = 0;
  std::uint64_t verbs = 0;            // persistence verbs issued by the run
  std::uint64_t crash_points = 0;     // crash points explored
  std::uint64_t images_built = 0;     // images constructed (incl. duplicates)
  std::uint64_t images_checked = 0;   // distinct images recovered and checked
  std::uint64_t images_deduped = 0;
  std::uint64_t lines_per_image = 0;  // average lines that differ between images
  std::uint64_t violations = 0;
  std::uint64_t inconclusive = 0;
  std::map<std::string, std::uint64_t> engines;  // checker engine -> images
  std::vector<Violation> details;                // first max_details violations
  std::string error;                             // setup failure (pool, subject)
  double seconds = 0;
  double images_per_second = 0;
  bool replay_reached = true;                    // replay: the crash point existed
  bool ok() const { return violations == 0 && error.empty(); }
};

CampaignResult run_campaign(const SubjectInfo& subject, const CampaignConfig& cfg);

// The command line that reproduces crash point k, image `image`.
std::string replay_command(const SubjectInfo& subject, const CampaignConfig& cfg, std::uint64_t k, int image);

}  // namespace ferrite::crash
