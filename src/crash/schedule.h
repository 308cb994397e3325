// src/crash/schedule.h — controlled scheduling of multi-threaded crash
// campaigns at persistence-verb boundaries.
//
// Every workload thread passes the simulator's turnstile (sim::Turnstile)
// before each verb, and a scheduling point before each operation; the
// scheduler lets one thread at a time through and records whose turn it was
// (the schedule). A thread is granted only at quiescence: every other live
// thread waits at a point or sleeps in the kernel (blocked on a mutex or a
// condition variable: it moves only once a waiting thread does), as
// /proc/self/task/*/stat reports it. A thread the OS keeps off the CPU
// between two points is runnable, and is waited for however loaded the
// machine is — so what runs until the next point is the granted thread
// alone, and the schedule decides the interleaving. (Waits for another
// thread must call sync::spin_wait() — sync::spin_until does — which is a
// point; a thread that stays runnable between points past the stall limit,
// 200 ms, is given up on: the grant is forced and counted as a stall.)
// Modes:
//   pct     exploration (Burckhardt et al., "A randomized scheduler with
//           probabilistic guarantees of finding bugs", ASPLOS 2010): each
//           thread gets a random priority from the seed; of the threads
//           waiting at a point the highest-priority one goes next; at
//           `depth - 1` verb numbers drawn from the seed the thread that
//           issued that verb drops to the lowest priority. A spinner goes
//           again only after another thread moved — after 1, 2, 4, then 8
//           moves of the others for its 1st, 2nd, 3rd, 4th and later
//           retries in a row (a back-off).
//   random  at every point, one of the waiting threads drawn uniformly from
//           the seed (with the same spinner rule): many short preemptions,
//           where pct makes few — it finds races that need a thread to be
//           overtaken at one exact point more often.
//   replay  enforces a recorded schedule (from a violation's replay line)
//           event by event, waiting for quiescence before each grant as the
//           recording did: the same crash point is reached through the same
//           interleaving. If the recorded thread does not arrive within
//           2 s the replay has diverged: the rest runs unordered and the
//           result says so.
//
// The schedule is encoded for replay lines as runs: a letter per thread and
// kind ('a' = thread 0's verbs … 'z' = 25; 'A' … 'Z' = its operation starts;
// a letter followed by '~': its spin-wait retries),
// '*' when a grant was made while another thread slept between points (or
// stalled), then the run length in decimal, e.g. "A1a4B1b*2a2" (campaigns
// above 26 threads are not scheduled).
//
// Thread safety: turnstile() and finish() are called by workload threads,
// issued() under the simulator lock; everything else before or after the
// run.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace ferrite::crash::internal {

class Scheduler {
 public:
  enum class Mode { kPct, kRandom, kReplay };
  // pct: priorities and change points from `seed`; `verbs_hint` (the dry
  // run's verb count, 0 if unknown) spreads the change points.
  Scheduler(Mode mode, int threads, std::uint64_t seed, int depth, std::uint64_t verbs_hint,
            std::vector<std::uint8_t> replay = {});

  // The workload thread's id (thread_local; -1: not a workload thread).
  static void set_thread(int tid);

  static void turnstile(void* self);  // sim::Turnstile
  // sync::g_spin_hook while `active` is the scheduler of the running campaign:
  // a thread that waits for another one gives up its turn until another
  // thread has moved (an event of the schedule, recorded and replayed).
  static void spin_hook();
  static std::atomic<Scheduler*> active;
  // From the crash hook, under the simulator lock: verb k was issued, and
  // until point_done() (the crash point's work: capture, checks) nobody
  // else is granted — that work is part of the verb, however long it takes.
  void issued(std::uint64_t k);
  void point_done();
  void op_start(int tid);             // before each operation of a workload thread
  void finish(int tid);               // the thread ran its last operation

  // The schedule up to and including verb k, encoded.
  std::string prefix(std::uint64_t k) const;
  const std::vector<std::uint8_t>& order() const { return order_; }
  bool diverged() const { return diverged_; }
  std::uint64_t diverged_at() const { return diverged_at_; }
  // Grants made without quiescence because a thread stayed runnable between
  // points past the stall limit (a spin loop without sync::spin_wait).
  std::uint64_t stalls() const { return stalls_; }
  // After kMaxStalls stalls the scheduler gives up: the rest of the run is
  // unscheduled (free) and unrecorded, so later violations carry no schedule.
  static constexpr std::uint64_t kMaxStalls = 10;
  bool gave_up() const { return gave_up_.load(std::memory_order_relaxed); }

  static constexpr std::uint8_t kOpStart = 0x80;  // flag on an order entry: an operation start
  static constexpr std::uint8_t kForced = 0x40;   // flag: granted while another thread was between points
  static constexpr std::uint8_t kSpin = 0x20;     // flag: a spin-wait retry (with kOpStart clear)
  static constexpr std::uint8_t kThread = 0x1f;
  static std::string encode(const std::vector<std::uint8_t>& order, std::size_t n);
  // Throws std::invalid_argument on a malformed string.
  static std::vector<std::uint8_t> decode(const std::string& s);

 private:
  bool pass(int tid, std::uint8_t kind);  // false: the scheduler gave up (no grant)
  void note_stall_locked();
  int choose_locked();  // -1: nobody yet
  void arrive(int tid);  // on the way to a point (before mu_ is taken)
  // True when every live thread not waiting at a point sleeps in the kernel.
  bool settled_locked();

  const Mode mode_;
  const int threads_;
  std::mutex mu_;
  // One condition variable per workload thread, each waited on only by its
  // thread in pass(): wake_locked() wakes the one thread that can act on a
  // change, not all of them (wake-ups are context switches, dear under a
  // hypervisor).
  std::unique_ptr<std::condition_variable[]> cvs_;
  void wake_locked();
  void record_locked(int tid, std::uint8_t flags);
  std::vector<std::uint8_t> waiting_, done_;  // waiting_: 0, 1 verb, 2 operation start, 3 spin
  // Spin eligibility: moves (events other than spin retries), in all and
  // per thread; others_seen_: the other threads' moves at a spinner's retry.
  std::uint64_t moves_ = 0;
  std::vector<std::uint64_t> own_events_, others_seen_;
  // A spinner's retries in a row (reset when it moves); its next retry
  // waits for spin_need() moves of the others (spin_hook's back-off).
  std::vector<std::uint64_t> spin_streak_;
  std::uint64_t spin_need(std::size_t i) const {
    return std::uint64_t{1} << std::min<std::uint64_t>(spin_streak_[i] > 0 ? spin_streak_[i] - 1 : 0, 3);
  }
  std::vector<std::int64_t> priority_;
  std::vector<long> os_tid_;  // the workload threads' kernel ids (0: not arrived yet)
  std::unique_ptr<std::atomic<std::uint8_t>[]> arriving_;
  std::uint64_t stalls_ = 0;
  std::atomic<bool> gave_up_{false};
  std::uint64_t rng_ = 0;  // random mode
  std::vector<std::uint64_t> change_at_;  // sorted verb numbers
  std::vector<std::uint8_t> replay_;
  std::vector<std::uint8_t> order_;     // whose turn, in order (| kOpStart for operation starts)
  std::vector<std::size_t> verb_pos_;   // verb k is order_[verb_pos_[k]]
  int granted_ = -1;                 // may issue the next verb
  int poller_ = -1;                  // the waiting thread that polls for quiescence (pass())
  bool in_flight_ = false;           // granted, its verb not issued yet
  bool at_point_ = false;            // between issued() and point_done()
  bool forced_ = false;              // the grant in flight did not wait for quiescence
  bool diverged_ = false;
  std::uint64_t diverged_at_ = 0;
  std::int64_t lowest_ = 0;
  std::chrono::steady_clock::time_point last_event_;  // any arrival, grant or verb
  std::chrono::steady_clock::time_point last_issue_;  // the last verb
};

}  // namespace ferrite::crash::internal
