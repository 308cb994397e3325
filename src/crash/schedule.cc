// Controlled scheduling of multi-threaded campaigns (schedule.h).
#include "schedule.h"

#include <algorithm>
#include <stdexcept>

#include "wire.h"

namespace ferrite::crash::internal {

namespace {

using Clock = std::chrono::steady_clock;
thread_local int t_tid = -1;

// How long a thread between two points is waited for before the threads
// already waiting at a point are scheduled without it (it blocks on a mutex
// or spins without sync::spin_wait, or the OS has not run it: 3 threads on
// 2 cores wait for a time slice, longer on a loaded machine).
constexpr auto kQuiescence = std::chrono::microseconds(1000);
// Replay: how long the recorded thread may take to reach its verb.
constexpr auto kDiverged = std::chrono::seconds(2);

}  // namespace

Scheduler::Scheduler(Mode mode, int threads, std::uint64_t seed, int depth, std::uint64_t verbs_hint,
                     std::vector<std::uint8_t> replay)
    : mode_(mode),
      threads_(threads),
      waiting_(static_cast<std::size_t>(threads), 0),
      done_(static_cast<std::size_t>(threads), 0),
      own_events_(static_cast<std::size_t>(threads), 0),
      others_seen_(static_cast<std::size_t>(threads), 0),
      priority_(static_cast<std::size_t>(threads), 0),
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
  const std::uint64_t span = verbs_hint > 0 ? verbs_hint : 1000;
  for (int i = 0; i + 1 < d; ++i) change_at_.push_back((rng = wire::mix(rng)) % span);
  std::sort(change_at_.begin(), change_at_.end());
}

void Scheduler::set_thread(int tid) { t_tid = tid; }

std::atomic<Scheduler*> Scheduler::active{nullptr};

void Scheduler::spin_hook() {
  const int tid = t_tid;
  Scheduler* s = active.load(std::memory_order_acquire);
  if (tid < 0 || s == nullptr) return;
  {
    std::lock_guard<std::mutex> lk(s->mu_);
    // Eligible again only once another thread has moved.
    s->others_seen_[static_cast<std::size_t>(tid)] = s->order_.size() - s->own_events_[static_cast<std::size_t>(tid)];
  }
  s->pass(tid, 3);
  std::lock_guard<std::mutex> lk(s->mu_);
  s->record_locked(tid, kSpin);
  s->cv_.notify_all();
}

void Scheduler::record_locked(int tid, std::uint8_t flags) {
  order_.push_back(static_cast<std::uint8_t>(tid | flags | (forced_ ? kForced : 0)));
  ++own_events_[static_cast<std::size_t>(tid)];
  in_flight_ = false;
  last_event_ = last_issue_ = Clock::now();
}

void Scheduler::turnstile(void* self) {
  const int tid = t_tid;
  if (tid < 0) return;  // not a workload thread
  static_cast<Scheduler*>(self)->pass(tid, 1);
}

void Scheduler::op_start(int tid) {
  pass(tid, 2);
  // No verb follows this grant: the operation start is its own event.
  std::lock_guard<std::mutex> lk(mu_);
  record_locked(tid, kOpStart);
  cv_.notify_all();
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
  if (mode_ == Mode::kReplay && !diverged_ && order_.size() < replay_.size()) {
    const std::uint8_t e = replay_[order_.size()];
    const int want = e & kThread;
    const std::uint8_t kind = (e & kOpStart) != 0 ? 2 : (e & kSpin) != 0 ? 3 : 1;
    // Where the recording waited for every thread to reach a point, so
    // does the replay: only then is the stretch before it the same.
    const bool ready = (e & kForced) != 0 || waiting == live;
    if (want < threads_ && waiting_[static_cast<std::size_t>(want)] == kind && ready) {
      forced_ = (e & kForced) != 0;
      return want;
    }
    if (want < threads_ && done_[static_cast<std::size_t>(want)] == 0 && now - last_issue_ < kDiverged) return -1;
    diverged_ = true;  // the recorded thread is gone or never comes: run on unordered
    diverged_at_ = order_.size();
  }
  // PCT: wait briefly for threads between verbs, then the highest priority.
  if (waiting < live && now - last_event_ < kQuiescence) return -1;
  forced_ = waiting < live;
  // A spinner may go again only once another thread has moved; if nobody
  // else can go, the highest-priority spinner goes anyway (its wait may end
  // through a thread that is between points).
  auto pick = [&](bool spinners_need_progress) {
    int best = -1;
    for (int t = 0; t < threads_; ++t) {
      const auto i = static_cast<std::size_t>(t);
      if (waiting_[i] == 0) continue;
      if (spinners_need_progress && waiting_[i] == 3 && order_.size() - own_events_[i] <= others_seen_[i]) continue;
      if (best < 0 || priority_[i] > priority_[static_cast<std::size_t>(best)]) best = t;
    }
    return best;
  };
  int best = pick(true);
  if (best < 0) {
    if (now - last_event_ < kQuiescence) return -1;
    best = pick(false);
    forced_ = true;
  }
  return best;
}

void Scheduler::pass(int tid, std::uint8_t kind) {
  std::unique_lock<std::mutex> lk(mu_);
  waiting_[static_cast<std::size_t>(tid)] = kind;
  last_event_ = Clock::now();
  cv_.notify_all();
  for (;;) {
    if (granted_ == tid) break;
    if (!in_flight_ && granted_ < 0) {
      const int c = choose_locked();
      if (c >= 0) {
        granted_ = c;
        in_flight_ = true;
        cv_.notify_all();
        if (c == tid) break;
      }
    }
    cv_.wait_for(lk, std::chrono::microseconds(50));
  }
  // ORDER: the grant is consumed; no other thread is granted until this
  // thread's verb is issued (issued(), under the simulator lock).
  granted_ = -1;
  waiting_[static_cast<std::size_t>(tid)] = 0;
}

void Scheduler::issued(std::uint64_t) {
  const int tid = t_tid;
  if (tid < 0) return;
  std::lock_guard<std::mutex> lk(mu_);
  const std::uint64_t k = verb_pos_.size();
  verb_pos_.push_back(order_.size());
  record_locked(tid, 0);
  // PCT change point: the thread that issued verb k drops to the bottom.
  while (!change_at_.empty() && change_at_.front() <= k) {
    change_at_.erase(change_at_.begin());
    priority_[static_cast<std::size_t>(tid)] = --lowest_;
  }
  cv_.notify_all();
}

void Scheduler::finish(int tid) {
  std::lock_guard<std::mutex> lk(mu_);
  done_[static_cast<std::size_t>(tid)] = 1;
  last_event_ = Clock::now();
  cv_.notify_all();
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
