// ferrite/crash/campaign.h — crash campaigns: run a Subject on a simulated
// pool, crash it at persistence verbs, recover every crash image on a
// restarted machine that never saw the crashed run's DRAM, and check the
// result.
//
// Protocol (subject.h has the Subject side; docs/crash.md §3 the picture):
//   0. The farm starts (src/crash/farm.h): a zygote process is forked before
//      the pool exists or any thread starts, and forks the worker processes
//      that play the restarted machine.
//   1. A fresh pool of `pool_size` bytes with backend "sim" under the chosen
//      persistency model (`model`, crash/model.h); subject->create(pool,
//      threads); initial = observe(); the simulator is settled (creation is
//      durable; crash points count from the first op) — unless crash_create,
//      which crashes Pool::create and Subject::create too.
//   2. `threads` threads run ops/threads operations each (next_op, apply),
//      recorded in a History.
//   3. Crash point k = just before the k-th persistence verb (0-based) and
//      the end of the run. One thread: every k (unless crash_points > 0).
//      Several threads: about `crash_points` ks sampled deterministically
//      from the seed (a dry run measures the verb count first).
//   4. At a crash point the thread issuing verb k stops the others (they are
//      given up to 2 ms to reach a verb or finish their op, then stopped by a
//      signal wherever they are, as in a real crash), captures the crash
//      state and builds its images (crash/model.h: every image when they are
//      few, else all-lost, all-persisted and `images` random ones). The
//      farm's workers recover each image in a process forked from the
//      zygote: open the image as a pool (header validation, pool-level
//      recovery), a fresh Subject's recover(), observe(), recover_op() per
//      pending op and observe() again (detectable subjects), then
//      `post_ops` more operations checked against the specification. The
//      outcome is checked (durable linearizability, then detectability for
//      detectable subjects; buffered durable linearizability for buffered
//      ones). With recovery_crash_depth > 0, recovery itself is crashed at
//      some of its verbs and the images of that crash are recovered again.
//      With post_crash_every > 0, the recovered run is crashed again during
//      its post-recovery ops (and syncs) and each such image is recovered
//      and checked against the first recovered state plus a prefix of the
//      post ops.
//      The run then continues.
//   5. Every violation carries a one-line replay command.
//
// Determinism: the workload (next_op streams), the crash points, the
// images and (scheduled runs, the default) the interleaving are functions of
// the seed; a replay line reproduces its violation.
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
  DataSizes sizes;                   // byte-string structures' key/value sizes (subject.h)
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
  // A recovery running longer "hangs" (wall clock; fractions allowed: a
  // test that expects a hang can wait a fraction of a second for it).
  double recovery_timeout_s = 20;
  // A recovery that has used this much CPU time (its process's, user +
  // system) without answering hangs too (0: no CPU limit). A hang that
  // spins is then ended as soon as it has spent its budget, however loaded
  // the machine is, where the wall-clock limit above must allow for a
  // recovery that waits for a core. For tests that expect a spinning hang
  // (a broken recovery's CAS loop); a correct image takes well under 1 ms.
  double recovery_cpu_s = 0;
  // The persistency model (crash/model.h): "abstract" or "x86".
  std::string model = "abstract";
  // Checking processes (0: one per online core).
  int workers = 0;
  // Operations run after recovery (round robin over the threads) and checked
  // one by one against the specification from the recovered state.
  std::size_t post_ops = 8;
  // Crashes during recovery: 0 off; 1 recovery of an image is crashed at
  // `recovery_crash_points` of its persistence verbs (sampled) and each such
  // crash's images (all-lost, all-persisted, `recovery_crash_images` random)
  // are recovered again; 2 those second recoveries are crashed as well (a
  // third crash). Applied to the images of every `recovery_crash_every`-th
  // crash point.
  int recovery_crash_depth = 0;
  std::size_t recovery_crash_points = 3;
  std::size_t recovery_crash_every = 1;
  int recovery_crash_images = 1;
  // A second crash after recovery, during NEW operations (docs/crash.md,
  // "Second crashes"): 0 off; n > 0: for every image of every n-th crash
  // point, a child of the worker recovers the image under the live
  // simulator, completes the pending ops, runs the `post_ops` (syncs
  // included: with this mode on, a workload's kSync ops are applied after
  // recovery instead of skipped) and is crashed at `post_crash_points`
  // verbs spread over the post-ops phase and after its last op; each crash's
  // images (all-lost, all-persisted, `post_crash_images` random) are
  // recovered again. The second recovered state must be the first
  // recovered-and-completed state with a prefix of the post ops applied,
  // a prefix that holds every post op completed before the last completed
  // sync (buffered subjects) or every completed post op (the others); then
  // `post_ops` more ops are checked from it against the specification.
  std::size_t post_crash_every = 0;
  std::size_t post_crash_points = 3;
  int post_crash_images = 1;
  // Crash points during pmem::Pool::create and Subject::create as well (k
  // counts from the pool's creation; the simulator is never settled).
  bool crash_create = false;
  // With crash_create: about this many of the verbs inside creation are
  // crash points, sampled deterministically from the seed (0: every one).
  // The sanitizer passes sample them (tests/common/scale.h); the release
  // pass explores every one.
  std::size_t create_crash_points = 0;
  // With crash_create: false runs creation unsettled as above (so the run's
  // crash images are exactly those of a crash_create campaign) but checks
  // none of creation's own crash points. run_mutation clears it for a site
  // never reached during creation, recovery or post-recovery ops: creation
  // is deterministic, so with such a site suppressed those points' images
  // and their recoveries are the unmutated baseline's, which passed.
  bool check_create_points = true;
  // Multi-threaded runs (2..26 threads) are scheduled: one thread at a time
  // runs between scheduling points (persistence verbs, operation starts,
  // spin-wait retries; src/crash/schedule.h), and the schedule is recorded,
  // so that each violation's replay line reproduces it exactly. kRandom
  // (the default) draws the next thread from the seed at every point;
  // kPct gives threads random priorities with pct_depth - 1 change points;
  // kFree leaves the interleaving to the OS (true parallelism, no replay of
  // the interleaving).
  // `verb_order` (from a replay line) enforces a recorded schedule.
  enum class Schedule { kFree, kPct, kRandom } schedule = Schedule::kRandom;
  int pct_depth = 3;
  std::string verb_order;
  // The restarted machine opens each image with PoolOptions::recover =
  // recover_pool: true (the default) is pool-level recovery before the
  // subject's recover(); false leaves the heap as open() finds it (every
  // block allocated) for a subject that recovers the heap by hand.
  bool recover_pool = true;
  // The instance is created (and recovered) for this many threads when it
  // is more than `threads` (0: `threads`): per-thread areas of a record —
  // PBcomb's responses and tags — then span more cache lines than the
  // workload's threads touch (mutation testing's layouts).
  int instance_threads = 0;
  // Fill the heap's chunks with garbage (durable) right after the pool is
  // created, before the structure is: a used pool, where a block comes back
  // with old bytes. Write-backs of initial state that happens to be all
  // zero bytes are needed here (on a fresh pool the media already is zero).
  bool dirty_heap = false;
  // Options of the calling tool that shape the subject outside this config
  // (crashtest's `--commit-batch N`), repeated verbatim in replay lines.
  std::string replay_extra;
  int instance_size() const { return instance_threads > threads ? instance_threads : threads; }
  // Mutation testing (crash/sites.h): verbs issued from these call sites
  // ("FILE:LINE[:COL][:VERB]") are suppressed, in the run and in recovery.
  std::vector<std::string> mutate_sites;
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
  std::string verb_order;  // scheduled runs: the verb order up to the crash (in `replay` too)
};

struct CampaignResult {
  std::string structure, variant;
  int threads = 1;
  std::size_t ops = 0;
  std::uint64_t seed = 0;
  DataSizes sizes;                    // CampaignConfig::sizes
  std::uint64_t verbs = 0;            // persistence verbs issued by the run
  std::uint64_t crash_points = 0;     // crash points explored
  std::uint64_t images_built = 0;     // images constructed (incl. duplicates)
  std::uint64_t images_checked = 0;   // distinct images recovered and checked
  std::uint64_t images_deduped = 0;
  std::uint64_t lines_per_image = 0;  // average lines that differ between images
  std::string model;                  // persistency model
  std::uint64_t points_exhaustive = 0;  // crash points whose every possible image was checked
  double possible_images = 0;         // sum over crash points of the model's possible images
  double coverage = 0;                // images_checked / possible_images (1 = exhaustive)
  std::uint64_t nested_images = 0;    // images checked after crashes during recovery
  std::uint64_t second_images = 0;    // images checked after a second crash during post-recovery ops
  std::uint64_t worker_restarts = 0;  // restarted machines that died (each one a violation)
  std::uint64_t create_points = 0;    // crash points inside create (crash_create)
  std::string schedule = "free";      // "free", "pct", "random" or "replay"
  bool schedule_diverged = false;     // replay: the recorded verb order could not be followed
  std::uint64_t schedule_stalls = 0;  // scheduled: grants forced because a thread stayed runnable between points
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
// `verb_order`: the recorded order of a scheduled run (empty: none).
std::string replay_command(const SubjectInfo& subject, const CampaignConfig& cfg, std::uint64_t k, int image,
                           const std::string& verb_order = {});

}  // namespace ferrite::crash
