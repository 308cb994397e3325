// Controlled scheduling of multi-threaded campaigns (schedule.h).
#include "schedule.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "wire.h"

namespace ferrite::crash::internal {

namespace {

using Clock = std::chrono::steady_clock;
thread_local int t_tid = -1;


// A thread between two points that the OS reports running or runnable is
// waited for (it computes, or waits for a time slice: 3 threads on 2 cores,
// or a loaded machine); one that sleeps in the kernel (a futex: a mutex, a
// condition variable) is not, since it moves only once a waiting thread
// does. The stall limit bounds the wait for a thread that stays runnable
// without reaching a point (a spin loop that does not call
// sync::spin_wait): past it the grant is forced and counted as a stall.
constexpr auto kStall = std::chrono::milliseconds(200);
// The state of OS thread `tid` from /proc: 'R' running or runnable, 'S'
// sleeping, 'D' in uninterruptible I/O (a page fault), ...; 0 when it is
// gone.
char os_thread_state(long tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  // "tid (comm) S ...": comm may contain ')' — the state follows the last.
  const char* p = std::strrchr(buf, ')');
  return p != nullptr && p[1] == ' ' && p[2] != 0 ? p[2] : 0;
}
// Replay: how long the recorded thread may take to reach its verb.
constexpr auto kDiverged = std::chrono::seconds(2);

}  // namespace

Scheduler::Scheduler(Mode mode, int threads, std::uint64_t seed, int depth, std::uint64_t verbs_hint,
                     std::vector<std::uint8_t> replay)
    : mode_(mode),
      threads_(threads),
      cvs_(new std::condition_variable[static_cast<std::size_t>(threads)]),
      waiting_(static_cast<std::size_t>(threads), 0),
      done_(static_cast<std::size_t>(threads), 0),
      own_events_(static_cast<std::size_t>(threads), 0),
      others_seen_(static_cast<std::size_t>(threads), 0),
      spin_streak_(static_cast<std::size_t>(threads), 0),
      priority_(static_cast<std::size_t>(threads), 0),
      os_tid_(static_cast<std::size_t>(threads), 0),
      arriving_(new std::atomic<std::uint8_t>[static_cast<std::size_t>(threads)]),
      replay_(std::move(replay)),
      last_event_(Clock::now()),
      last_issue_(last_event_) {
  // Distinct random priorities above every lowered one.
  std::vector<int> perm(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) perm[static_cast<std::size_t>(t)] = t;
  std::uint64_t rng = wire::mix(seed ^ 0x7c7c5a5a3c3c1e1eull);
  for (std::size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[(rng = wire::mix(rng)) % i]);
  const int d = std::max(depth, 1);
  for (int t = 0; t < threads; ++t)
    priority_[static_cast<std::size_t>(t)] = d + perm[static_cast<std::size_t>(t)];
  lowest_ = d;
  rng_ = wire::mix(rng ^ 0x5bd1e9955bd1e995ull);
  const std::uint64_t span = verbs_hint > 0 ? verbs_hint : 1000;
  for (int i = 0; i + 1 < d; ++i) change_at_.push_back((rng = wire::mix(rng)) % span);
  std::sort(change_at_.begin(), change_at_.end());
}

void Scheduler::set_thread(int tid) { t_tid = tid; }

std::atomic<Scheduler*> Scheduler::active{nullptr};

void Scheduler::spin_hook() {
  const int tid = t_tid;
  Scheduler* s = active.load(std::memory_order_acquire);
  if (tid < 0 || s == nullptr || s->gave_up()) return;
  s->arrive(tid);
  {
    std::lock_guard<std::mutex> lk(s->mu_);
    // Eligible again only once another thread has moved.
    // (Another spinner's retry is not a move: two spinners that counted each
    // other's retries would take turns forever while the thread they both
    // wait for waits at a point.)
    const auto i = static_cast<std::size_t>(tid);
    s->others_seen_[i] = s->moves_ - s->own_events_[i];
    // Back-off: the n-th retry in a row waits for min(2^(n-1), 8) moves of
    // the others (1, 2, 4, 8, 8, ...), as a real spinner's reads thin out
    // against a long critical section. Each retry is a hand-off between two
    // threads — two context switches — and a thread waiting out another's
    // whole operation retried after every verb of it (Romulus with 3
    // threads: as many retries as verbs). The rule depends on the schedule
    // alone, so replays stay exact.
    ++s->spin_streak_[i];  // choose_locked: spin_need()
  }
  if (!s->pass(tid, 3)) return;
  std::lock_guard<std::mutex> lk(s->mu_);
  s->record_locked(tid, kSpin);
  s->wake_locked();
}

void Scheduler::record_locked(int tid, std::uint8_t flags) {
  order_.push_back(static_cast<std::uint8_t>(tid | flags | (forced_ ? kForced : 0)));
  if ((flags & kSpin) == 0) {
    ++moves_;
    ++own_events_[static_cast<std::size_t>(tid)];
    spin_streak_[static_cast<std::size_t>(tid)] = 0;  // it moved: its next retry is a first one
  }
  in_flight_ = false;
  last_event_ = last_issue_ = Clock::now();
}

void Scheduler::wake_locked() {
  if (gave_up()) {  // every waiter returns
    for (int t = 0; t < threads_; ++t) cvs_[static_cast<std::size_t>(t)].notify_one();
    return;
  }
  if (granted_ >= 0) {  // only the granted thread can move
    cvs_[static_cast<std::size_t>(granted_)].notify_one();
    return;
  }
  if (in_flight_ || at_point_) return;  // nobody can be granted until the event that ends them
  // A grant is to be made: one waiting thread chooses — the poller if there
  // is one, else the first waiting. (Every thread with waiting_ set is
  // inside pass()'s wait: it sets and clears the flag under mu_, which it
  // releases only there.) If the choice must wait, that thread polls.
  int w = poller_;
  for (int t = 0; w < 0 && t < threads_; ++t)
    if (waiting_[static_cast<std::size_t>(t)] != 0) w = t;
  if (w >= 0) cvs_[static_cast<std::size_t>(w)].notify_one();
}

void Scheduler::turnstile(void* self) {
  const int tid = t_tid;
  if (tid < 0) return;  // not a workload thread
  auto* s = static_cast<Scheduler*>(self);
  if (s->gave_up()) return;
  s->arrive(tid);
  s->pass(tid, 1);
}

void Scheduler::note_stall_locked() {
  if (++stalls_ < kMaxStalls) return;
  gave_up_.store(true, std::memory_order_relaxed);
  wake_locked();
}

void Scheduler::arrive(int tid) {
  // ORDER: set before mu_ is taken, read under mu_: a thread blocked on
  // mu_ on its way to a point is not mistaken for one blocked elsewhere.
  arriving_[static_cast<std::size_t>(tid)].store(1, std::memory_order_seq_cst);
}

bool Scheduler::settled_locked() {
  for (int t = 0; t < threads_; ++t) {
    const auto i = static_cast<std::size_t>(t);
    if (done_[i] != 0 || waiting_[i] != 0) continue;
    if (os_tid_[i] == 0) return false;  // not started yet
    const char st = os_thread_state(os_tid_[i]);
    // ORDER: the flag is read after the state: a thread seen asleep on
    // mu_ set its flag before it took mu_, so the flag shows it; read
    // before, a thread that arrived in between would pass for a sleeper.
    if ((st != 'S' && st != 0) || arriving_[i].load(std::memory_order_seq_cst) != 0) return false;
  }
  return true;
}

void Scheduler::op_start(int tid) {
  if (gave_up()) return;
  arrive(tid);
  if (!pass(tid, 2)) return;
  // No verb follows this grant: the operation start is its own event.
  std::lock_guard<std::mutex> lk(mu_);
  record_locked(tid, kOpStart);
  wake_locked();
}

std::string Scheduler::prefix(std::uint64_t k) const {
  return encode(order_, k < verb_pos_.size() ? verb_pos_[k] + 1 : order_.size());
}

int Scheduler::choose_locked() {
  int live = 0, waiting = 0;
  for (int t = 0; t < threads_; ++t) {
    live += done_[static_cast<std::size_t>(t)] == 0 ? 1 : 0;
    waiting += waiting_[static_cast<std::size_t>(t)] != 0 ? 1 : 0;
  }
  if (waiting == 0) return -1;
  const auto now = Clock::now();
  // Quiescence: every live thread waits at a point or sleeps in the kernel.
  // Only then is what runs until the next point the granted thread alone,
  // and the schedule decides the interleaving.
  const bool settled = waiting == live || settled_locked();
  const bool stalled = !settled && now - last_event_ >= kStall;
  if (mode_ == Mode::kReplay && !diverged_ && order_.size() < replay_.size()) {
    const std::uint8_t e = replay_[order_.size()];
    const int want = e & kThread;
    const std::uint8_t kind = (e & kOpStart) != 0 ? 2 : (e & kSpin) != 0 ? 3 : 1;
    // The replay waits for quiescence as the recording did, so the stretch
    // before each grant is the same.
    if (want < threads_ && waiting_[static_cast<std::size_t>(want)] == kind && (settled || stalled)) {
      forced_ = waiting < live;
      if (stalled) note_stall_locked();
      return want;
    }
    if (want < threads_ && done_[static_cast<std::size_t>(want)] == 0 && now - last_issue_ < kDiverged) return -1;
    diverged_ = true;  // the recorded thread is gone or never comes: run on unordered
    diverged_at_ = order_.size();
  }
  if (!settled && !stalled) return -1;
  if (stalled) note_stall_locked();
  forced_ = waiting < live;
  // A spinner may go again only once another thread has moved; if nobody
  // else can go, the highest-priority spinner goes anyway (its wait ends
  // through a thread asleep in the kernel, or it gives its turn away again).
  // pct: the highest priority; random: uniform (reservoir sampling: the
  // n-th eligible thread replaces the choice with probability 1/n).
  auto pick = [&](bool spinners_need_progress) {
    int best = -1, n = 0;
    for (int t = 0; t < threads_; ++t) {
      const auto i = static_cast<std::size_t>(t);
      if (waiting_[i] == 0) continue;
      if (spinners_need_progress && waiting_[i] == 3 && moves_ - own_events_[i] < others_seen_[i] + spin_need(i))
        continue;
      const bool take = mode_ == Mode::kRandom
                            ? (rng_ = wire::mix(rng_)) % static_cast<std::uint64_t>(++n) == 0
                            : best < 0 || priority_[i] > priority_[static_cast<std::size_t>(best)];
      if (take) best = t;
    }
    return best;
  };
  int best = pick(true);
  if (best < 0) {
    best = pick(false);
    forced_ = true;
  }
  return best;
}

bool Scheduler::pass(int tid, std::uint8_t kind) {
  std::unique_lock<std::mutex> lk(mu_);
  const auto me = static_cast<std::size_t>(tid);
  if (os_tid_[me] == 0) os_tid_[me] = static_cast<long>(::syscall(SYS_gettid));
  waiting_[me] = kind;
  arriving_[me].store(0, std::memory_order_seq_cst);
  last_event_ = Clock::now();
  // An arrival is an event: this thread itself chooses below if a grant is
  // to be made (no other waiter needs waking for it).
  // Every change but one is notified (arrivals, grants, verbs, points done,
  // finished threads, giving up). The exception is a thread between points
  // falling asleep in the kernel, which only /proc shows, and the stall
  // limit's clock: while a grant waits for those, ONE waiting thread polls
  // (from kPollMin, doubling to kPollMax until the next event) and the
  // others sleep until notified. (Every waiter polling every 50 µs took the
  // CPU the thread they waited for needed: 3 threads on 2 cores.)
  constexpr auto kPollMin = std::chrono::microseconds(50), kPollMax = std::chrono::microseconds(800);
  auto poll = kPollMin;
  auto seen = last_event_;
  // A poller that leaves (granted, or the scheduler gave up) needs no
  // successor now: the grant it leaves with is in flight until its event
  // (issued/point_done, a spin retry, an operation start), whose
  // wake_locked() wakes a waiter to choose, which becomes the poller if the
  // choice must wait.
  auto leave_polling = [&] {
    if (poller_ == tid) poller_ = -1;
  };
  for (;;) {
    if (granted_ == tid) break;
    if (gave_up_.load(std::memory_order_relaxed)) {
      waiting_[me] = 0;
      leave_polling();
      return false;
    }
    bool undecided = false;
    if (!in_flight_ && !at_point_ && granted_ < 0) {
      const int c = choose_locked();
      if (c >= 0) {
        granted_ = c;
        in_flight_ = true;
        if (c == tid) break;
        wake_locked();  // the granted thread
      } else {
        undecided = true;
      }
    }
    if (undecided && (poller_ < 0 || poller_ == tid)) {
      poller_ = tid;
      if (last_event_ != seen) {
        seen = last_event_;
        poll = kPollMin;
      }
      cvs_[me].wait_for(lk, poll);
      poll = std::min(poll * 2, kPollMax);
    } else {
      leave_polling();
      cvs_[me].wait(lk);
    }
  }
  leave_polling();
  // ORDER: the grant is consumed; no other thread is granted until this
  // thread's verb is issued (issued(), under the simulator lock).
  granted_ = -1;
  waiting_[static_cast<std::size_t>(tid)] = 0;
  return true;
}

void Scheduler::issued(std::uint64_t) {
  const int tid = t_tid;
  if (tid < 0 || gave_up()) return;
  std::lock_guard<std::mutex> lk(mu_);
  if (gave_up()) {  // the grant in flight is the last one
    in_flight_ = false;
    return;
  }
  const std::uint64_t k = verb_pos_.size();
  verb_pos_.push_back(order_.size());
  record_locked(tid, 0);
  at_point_ = true;
  // PCT change point: the thread that issued verb k drops to the bottom.
  while (!change_at_.empty() && change_at_.front() <= k) {
    change_at_.erase(change_at_.begin());
    priority_[static_cast<std::size_t>(tid)] = --lowest_;
  }
  wake_locked();
}

void Scheduler::point_done() {
  if (t_tid < 0) return;
  std::lock_guard<std::mutex> lk(mu_);
  if (!at_point_) return;
  at_point_ = false;
  last_event_ = Clock::now();  // the stall limit counts from here
  wake_locked();
}

void Scheduler::finish(int tid) {
  arrive(tid);
  std::lock_guard<std::mutex> lk(mu_);
  done_[static_cast<std::size_t>(tid)] = 1;
  arriving_[static_cast<std::size_t>(tid)].store(0, std::memory_order_seq_cst);
  last_event_ = Clock::now();
  wake_locked();
}

std::string Scheduler::encode(const std::vector<std::uint8_t>& order, std::size_t n) {
  std::string s;
  n = std::min(n, order.size());
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && order[j] == order[i]) ++j;
    const bool op = (order[i] & kOpStart) != 0;
    s += static_cast<char>((op ? 'A' : 'a') + (order[i] & kThread));
    if (!op && (order[i] & kSpin) != 0) s += '~';
    if ((order[i] & kForced) != 0) s += '*';
    s += std::to_string(j - i);
    i = j;
  }
  return s;
}

std::vector<std::uint8_t> Scheduler::decode(const std::string& s) {
  std::vector<std::uint8_t> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i++];
    const bool op = c >= 'A' && c <= 'Z';
    if (!op && (c < 'a' || c > 'z'))
      throw std::invalid_argument("verb order: expected a thread letter (a-z, A-Z) at '" + s.substr(i - 1, 8) + "'");
    const bool spin = !op && i < s.size() && s[i] == '~';
    if (spin) ++i;
    const bool forced = i < s.size() && s[i] == '*';
    if (forced) ++i;
    std::size_t n = 0, digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && digits < 9) {
      n = n * 10 + static_cast<std::size_t>(s[i++] - '0');
      ++digits;
    }
    if (digits == 0 || n == 0) throw std::invalid_argument("verb order: expected a run length after '" + std::string(1, c) + "'");
    if (out.size() + n > (std::size_t{1} << 28)) throw std::invalid_argument("verb order: too long");
    const int t = op ? c - 'A' : c - 'a';
    out.insert(out.end(), n,
               static_cast<std::uint8_t>(t | (op ? kOpStart : 0) | (spin ? kSpin : 0) | (forced ? kForced : 0)));
  }
  return out;
}

}  // namespace ferrite::crash::internal
