// src/crash/schedule.h — controlled scheduling of multi-threaded crash
// campaigns at persistence-verb boundaries.
//
// Every workload thread passes the simulator's turnstile (sim::Turnstile)
// before each verb, and a scheduling point before each operation; the
// scheduler lets one thread at a time through and records whose turn it was
// (the schedule). Between two of its points a thread runs alone unless
// another thread is between points too — one that spins on a lock or
// waits for a combiner's answer never reaches its next point, and is waited
// for only briefly (the quiescence window, below). Modes:
//   pct     exploration (Burckhardt et al., "A randomized scheduler with
//           probabilistic guarantees of finding bugs", ASPLOS 2010): each
//           thread gets a random priority from the seed; of the threads
//           waiting at a verb the highest-priority one goes next; at
//           `depth - 1` verb numbers drawn from the seed the thread that
//           issued that verb drops to the lowest priority. A thread that is
//           between verbs (computing, or spinning on another thread) is
//           waited for only briefly (the quiescence window): the schedule
//           adapts to code that needs another thread to move, and whatever
//           it decided is recorded.
//   replay  enforces a recorded verb order (from a violation's replay line)
//           verb by verb: the same crash point is reached through the same
//           sequence of verbs by the same threads. Code between verbs runs
//           freely, so a bug that depends on a race between two plain stores
//           of different threads is reproduced as far as the verb order
//           pins it down (in practice: the PBcomb/PWFcomb races, which
//           communicate through lines the verbs write back). If the
//           recorded thread does not arrive within 2 s the replay has
//           diverged: the rest runs unordered and the result says so.
//
// The schedule is encoded for replay lines as runs: a letter per thread and
// kind ('a' = thread 0's verbs … 'z' = 25; 'A' … 'Z' = its operation starts;
// a letter followed by '~': its spin-wait retries),
// '*' when the grants were forced (another thread was still between points
// when the quiescence window ran out: that stretch ran concurrently and its
// replay is only as exact as the OS makes it), then the run length in
// decimal, e.g. "A1a4B1b*2a2" (campaigns above 26 threads are not
// scheduled). A replay waits for quiescence wherever the recording did.
//
// Thread safety: turnstile() and finish() are called by workload threads,
// issued() under the simulator lock; everything else before or after the
// run.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace ferrite::crash::internal {

class Scheduler {
 public:
  enum class Mode { kPct, kReplay };
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
  void issued(std::uint64_t k);       // from the crash hook, under the simulator lock
  void op_start(int tid);             // before each operation of a workload thread
  void finish(int tid);               // the thread ran its last operation

  // The schedule up to and including verb k, encoded.
  std::string prefix(std::uint64_t k) const;
  const std::vector<std::uint8_t>& order() const { return order_; }
  bool diverged() const { return diverged_; }
  std::uint64_t diverged_at() const { return diverged_at_; }

  static constexpr std::uint8_t kOpStart = 0x80;  // flag on an order entry: an operation start
  static constexpr std::uint8_t kForced = 0x40;   // flag: granted while another thread was between points
  static constexpr std::uint8_t kSpin = 0x20;     // flag: a spin-wait retry (with kOpStart clear)
  static constexpr std::uint8_t kThread = 0x1f;
  static std::string encode(const std::vector<std::uint8_t>& order, std::size_t n);
  // Throws std::invalid_argument on a malformed string.
  static std::vector<std::uint8_t> decode(const std::string& s);

 private:
  void pass(int tid, std::uint8_t kind);
  int choose_locked();  // -1: nobody yet

  const Mode mode_;
  const int threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  void record_locked(int tid, std::uint8_t flags);
  std::vector<std::uint8_t> waiting_, done_;  // waiting_: 0, 1 verb, 2 operation start, 3 spin
  std::vector<std::uint64_t> own_events_, others_seen_;  // spin eligibility
  std::vector<std::int64_t> priority_;
  std::vector<std::uint64_t> change_at_;  // sorted verb numbers
  std::vector<std::uint8_t> replay_;
  std::vector<std::uint8_t> order_;     // whose turn, in order (| kOpStart for operation starts)
  std::vector<std::size_t> verb_pos_;   // verb k is order_[verb_pos_[k]]
  int granted_ = -1;                 // may issue the next verb
  bool in_flight_ = false;           // granted, its verb not issued yet
  bool forced_ = false;              // the grant in flight did not wait for quiescence
  bool diverged_ = false;
  std::uint64_t diverged_at_ = 0;
  std::int64_t lowest_ = 0;
  std::chrono::steady_clock::time_point last_event_;  // any arrival, grant or verb
  std::chrono::steady_clock::time_point last_issue_;  // the last verb
};

}  // namespace ferrite::crash::internal
