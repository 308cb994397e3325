// The checking farm: zygote, guard and the runner's side of the workers
// (farm.h).
#include "farm.h"

#include <malloc.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "wire.h"

namespace ferrite::crash::internal {

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::kRun: return "run";
    case Phase::kCreatePool: return "pool-create";
    case Phase::kCreateStructure: return "structure-create";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;

// Control messages, zygote -> runner.
constexpr std::uint64_t kWorkerUp = 1;    // slot, pid; the runner's end of its socket rides along
constexpr std::uint64_t kWorkerDied = 2;  // slot, pid, wait status

// A worker maps and unmaps a pool image per crash image. Unmapping flushes
// the TLB of every CPU the process has run on (an inter-processor interrupt
// per munmap, costly under a hypervisor: a third of a campaign's CPU time
// in a 1-thread Mirror run). A worker that stays on one CPU flushes its own
// TLB only. The slot-th CPU the process may use, round robin: two workers
// on two cores take one each.
void pin_to_one_cpu(std::size_t slot) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  const int n = CPU_COUNT(&allowed);
  if (n <= 1) return;
  int want = static_cast<int>(slot % static_cast<std::size_t>(n));
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (want-- == 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      (void)::sched_setaffinity(0, sizeof one, &one);  // best effort: unpinned is only slower
      return;
    }
  }
}

// A campaign allocates and frees a pool image's worth of memory per crash
// image: the workers (recovery's copies, the structure's rebuilt DRAM
// index) and the runner's workload threads (their per-thread arenas).
// glibc's malloc gives freed memory back to the kernel whenever more than
// its trim threshold is free at the top of a heap (`brk` shrinking in the
// main arena, `madvise` in thread arenas), and the next image takes it back:
// each give-back unmaps pages and flushes the TLB, an inter-processor
// interrupt under a hypervisor. perf on a 3-thread nbMontage campaign
// (MontageBroken, montage-hashmap/accept-uncommitted): 22% of its CPU in the
// workers' `brk` shrinks, 8% in the runner's `madvise`. So the runner, and
// with it (by fork) the zygote and every worker, keep what they free: no
// trimming, and blocks up to 32 MiB come from the heap, not an mmap/munmap
// of their own (fixing the mmap threshold also stops glibc's dynamic
// threshold, which would move the trim threshold with it). The calling
// process keeps these settings after the campaign (its freed memory is
// reused, not returned). Best effort: a sanitizer's allocator ignores
// mallopt, which is only slower.
void keep_freed_memory() {
  (void)::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  (void)::mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

[[noreturn]] void zygote_main(const SubjectInfo& info, const CampaignConfig& cfg, int ctl, std::size_t n) {
  // CRASH: the runner is this process's parent; if it dies, so do we (and
  // the workers follow us the same way).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::signal(SIGPIPE, SIG_IGN);
  std::map<pid_t, std::size_t> slot_of;
  auto spawn = [&](std::size_t slot) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) ::_exit(4);
    const pid_t pid = ::fork();
    if (pid < 0) ::_exit(4);
    if (pid == 0) {
      ::close(sv[0]);
      ::close(ctl);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      pin_to_one_cpu(slot);
      worker_main(info, cfg, sv[1]);
    }
    ::close(sv[1]);
    slot_of[pid] = slot;
    wire::Writer w;
    w.u64(kWorkerUp);
    w.u64(slot);
    w.i64(pid);
    const bool sent = wire::send_msg(ctl, w.data(), sv[0]);
    ::close(sv[0]);
    if (!sent) ::_exit(0);  // the runner is gone
  };
  for (std::size_t s = 0; s < n; ++s) spawn(s);
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      ::_exit(0);  // no children left: the runner closed every worker
    }
    auto it = slot_of.find(pid);
    if (it == slot_of.end()) continue;
    const std::size_t slot = it->second;
    slot_of.erase(it);
    // A worker leaves with status 0 only when the runner closed its socket.
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    wire::Writer w;
    w.u64(kWorkerDied);
    w.u64(slot);
    w.i64(pid);
    w.i64(status);
    if (!wire::send_msg(ctl, w.data())) ::_exit(0);
    spawn(slot);
  }
}

int online_cores() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace

Farm::Farm(const SubjectInfo& info, const CampaignConfig& cfg) : info_(info), cfg_(cfg) {
  keep_freed_memory();  // before the fork: the zygote and the workers inherit it
  const int n = cfg.workers > 0 ? cfg.workers : online_cores();
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw std::system_error(errno, std::generic_category(), "crash campaign: socketpair");
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    throw std::system_error(errno, std::generic_category(), "crash campaign: fork (zygote)");
  }
  if (pid == 0) {
    ::close(sv[0]);
    zygote_main(info, cfg, sv[1], static_cast<std::size_t>(n));
  }
  ::close(sv[1]);
  ctl_ = sv[0];
  zygote_ = pid;
  slots_.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    std::string msg;
    int fd = -1;
    if (!wire::recv_msg(ctl_, msg, &fd)) throw std::runtime_error("crash campaign: the zygote did not start its workers");
    wire::Reader r(msg);
    const auto type = r.u64(), slot = r.u64();
    const auto wpid = static_cast<pid_t>(r.i64());
    if (!r.ok() || type != kWorkerUp || slot >= slots_.size() || fd < 0)
      throw std::runtime_error("crash campaign: garbled message from the zygote");
    slots_[slot] = {fd, wpid};
    guard(fd);
  }
}

// A read from a worker never blocks longer than the watchdog's patience (a
// worker whose memory a recovery corrupted may stop mid-message).
void Farm::guard(int fd) const {
  const double p = patience_s();
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(p);
  tv.tv_usec = static_cast<suseconds_t>((p - static_cast<double>(tv.tv_sec)) * 1e6);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

Farm::~Farm() {
  for (auto& s : slots_)
    if (s.fd >= 0) ::close(s.fd);  // each worker sees end of stream and leaves
  if (ctl_ >= 0) ::close(ctl_);
  if (zygote_ > 0) (void)wire::wait_child(zygote_);
}

// A worker's socket closed: read the zygote's news until its death and its
// replacement are known.
void Farm::replace(std::size_t slot, std::string* death) {
  // It may still live (a garbled or timed-out message): make sure it dies,
  // or the zygote never reports it.
  ::kill(slots_[slot].pid, SIGKILL);
  ::close(slots_[slot].fd);
  slots_[slot].fd = -1;
  ++restarts_;
  bool died = false;
  while (slots_[slot].fd < 0) {
    std::string msg;
    int fd = -1;
    if (!wire::recv_msg(ctl_, msg, &fd)) throw std::runtime_error("crash campaign: the zygote died");
    wire::Reader r(msg);
    const auto type = r.u64(), s = r.u64();
    const auto pid = static_cast<pid_t>(r.i64());
    if (!r.ok() || s >= slots_.size()) throw std::runtime_error("crash campaign: garbled message from the zygote");
    if (type == kWorkerDied) {
      const int status = static_cast<int>(r.i64());
      if (s == slot && pid == slots_[slot].pid) {
        died = true;
        if (death != nullptr) *death = wire::describe_status(status, cfg_.recovery_timeout_s, cfg_.recovery_cpu_s);
      }
    } else if (type == kWorkerUp && fd >= 0) {
      if (slots_[s].fd >= 0 && s != slot) ::close(slots_[s].fd);  // (cannot happen: one death at a time)
      slots_[s] = {fd, pid};
      guard(fd);
    }
  }
  if (!died && death != nullptr) *death = "the worker process ended";
}

std::string Farm::encode(const Job& job, const std::vector<std::size_t>& which) const {
  wire::Writer w;
  w.u64(job.k);
  w.u64(static_cast<std::uint64_t>(job.phase));
  w.u64(static_cast<std::uint64_t>(job.nested_depth));
  w.u64(job.post_crash ? 1 : 0);
  w.u64(job.media_size);
  wire::put(w, *job.ops);
  w.vec(*job.initial);
  w.u64(job.offsets->size());
  w.raw(job.offsets->data(), job.offsets->size() * 8);
  w.u64(which.size());
  for (auto i : which) {
    const Image& img = *job.images[i];
    w.i64(img.index);
    for (const auto& l : img.lines) w.raw(l.data(), l.size());
  }
  return w.data();
}

std::vector<Verdict> Farm::check(const Job& job) {
  std::vector<Verdict> out;
  if (job.images.empty()) return out;
  const std::size_t nw = std::min(slots_.size(), job.images.size());
  // Per worker: the images it still owes a verdict for.
  std::vector<std::vector<std::size_t>> owed(nw);
  for (std::size_t i = 0; i < job.images.size(); ++i) owed[i % nw].push_back(i);
  std::vector<bool> busy(nw, false);
  auto dispatch = [&](std::size_t s) {
    while (!owed[s].empty()) {
      if (wire::send_msg(slots_[s].fd, encode(job, owed[s]), job.media_fd)) {
        busy[s] = true;
        return;
      }
      // The worker died before the job reached it (a previous job killed
      // it late): replace it and retry.
      replace(s, nullptr);
    }
  };
  for (std::size_t s = 0; s < nw; ++s) dispatch(s);
  std::size_t open = 0;
  for (std::size_t s = 0; s < nw; ++s) open += busy[s] ? 1 : 0;
  // Watchdog: a worker that sends nothing for this long is killed (a
  // recovery may have scribbled over its memory and left it waiting for a
  // job it never got). Its alarm catches an ordinary hang much sooner.
  const auto patience =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(patience_s()));
  std::vector<Clock::time_point> heard(nw, Clock::now());
  std::vector<bool> killed(nw, false);
  std::vector<pollfd> pfds(nw);
  while (open > 0) {
    auto next = Clock::time_point::max();
    for (std::size_t s = 0; s < nw; ++s) {
      pfds[s] = {busy[s] ? slots_[s].fd : -1, POLLIN, 0};
      if (busy[s] && !killed[s]) next = std::min(next, heard[s] + patience);
    }
    const auto wait_ms = next == Clock::time_point::max()
                             ? -1
                             : static_cast<int>(std::max<std::int64_t>(
                                   0, std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count() + 1));
    const int n = ::poll(pfds.data(), nw, wait_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "crash campaign: poll");
    }
    for (std::size_t s = 0; s < nw; ++s)
      if (busy[s] && !killed[s] && Clock::now() >= heard[s] + patience) {
        ::kill(slots_[s].pid, SIGKILL);  // its end of stream follows
        killed[s] = true;
      }
    for (std::size_t s = 0; s < nw; ++s) {
      if (!busy[s] || pfds[s].revents == 0) continue;
      std::string msg;
      bool garbled = false;
      Verdict v;
      std::uint64_t type = 0;
      const bool got = wire::recv_msg(slots_[s].fd, msg);
      if (got) {
        wire::Reader r(msg);
        type = r.u64();
        if (type == 1) {
          v.index = static_cast<int>(r.i64());
          v.check = wire::get_check(r);
          v.nested = r.u64();
          v.second = r.u64();
        }
        garbled = !r.ok() || (type != 1 && type != 2 && type != 3) ||
                  (type == 1 && (owed[s].empty() || job.images[owed[s].front()]->index != v.index)) ||
                  (type == 2 && !owed[s].empty());
      }
      if (!got || garbled) {
        // CRASH: the worker died recovering the first image it owes: that
        // image's recovery crashed or hung (or scribbled over the worker,
        // which then said something that makes no sense). The rest go to
        // its replacement.
        std::string death;
        replace(s, &death);
        if (killed[s])
          death = "stopped answering for " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(patience).count()) +
                  " s and was killed (a recovery may have corrupted its memory)";
        else if (garbled)
          death = "sent a garbled answer and was killed (a recovery may have corrupted its memory)";
        killed[s] = false;
        heard[s] = Clock::now();
        busy[s] = false;
        --open;
        if (owed[s].empty()) continue;  // it died after its last verdict
        v = Verdict{};
        v.index = job.images[owed[s].front()]->index;
        v.check.verdict = CheckResult::Verdict::kViolation;
        v.check.property = "recovery";
        v.check.engine = "-";
        v.check.reason = "the restarted machine " + death + " (during recovery, observation or post-recovery ops)";
        out.push_back(std::move(v));
        owed[s].erase(owed[s].begin());
        dispatch(s);
        if (busy[s]) ++open;
        continue;
      }
      heard[s] = Clock::now();
      if (type == 3) continue;  // alive (crashes during recovery take long)
      if (type == 2) {  // job done
        busy[s] = false;
        --open;
        continue;
      }
      owed[s].erase(owed[s].begin());
      out.push_back(std::move(v));
    }
  }
  return out;
}

}  // namespace ferrite::crash::internal
