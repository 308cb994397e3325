// LoggedFill, the full-log subject of logfull_crash_test.cc (a fill of
// consecutive words in one region on a log of 8 entries: half the fills
// overflow it and are rolled back in the run, logging::LogFull), shared with
// the mutation guard (logging_mutate_crash_test.cc). The subject and its
// checker are described in logfull_crash_test.cc.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/logging_adapter.h"
#include "ferrite/crash/campaign.h"
#include "ferrite/logging/workloads.h"

namespace ferrite::logging {

class LoggedFill {
 public:
  static constexpr std::uint64_t kWords = 8;
  static constexpr std::size_t kCapacity = 8;
  // begin + kFit stores + end: the last store entry needs two free slots.
  static constexpr std::uint64_t kFit = kCapacity - 2;
  static constexpr std::int64_t kAborted = -1;
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x4C47'464C;  // "LGFL"
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "logging::LoggedFill (test)";
    LogArea log{};
    alignas(64) std::int64_t words[kWords] = {};
  };

  LoggedFill(pmem::Pool& pool, std::string_view name, int threads, const LoggerOptions& opt)
      : root_(pool.has_root(name) ? pool.root<Root>(name) : pool.create_root<Root>(name)),
        log_(pool, &root_->log, threads, opt) {}

  // One region: words[(start + j) % kWords] = v + j for j < len. Returns
  // the old words[start], or kAborted when the region met the full log
  // (rolled back in the run, its lock released: LogFull).
  std::int64_t fill(int tid, std::uint64_t start, std::uint64_t len, std::int64_t v) {
    try {
      Region r(log_, tid, lock_);
      const std::int64_t old = root_->words[start % kWords];
      for (std::uint64_t j = 0; j < len; ++j)
        log_.write(tid, &root_->words[(start + j) % kWords], v + static_cast<std::int64_t>(j));
      r.end();
      return old;
    } catch (const LogFull&) {
      aborted_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
      return kAborted;
    }
  }
  std::vector<std::int64_t> snapshot() {
    lock_.lock_for_read();
    std::vector<std::int64_t> out(root_->words, root_->words + kWords);
    lock_.unlock_for_read();
    return out;
  }
  Logger& logger() { return log_; }
  std::uint64_t aborted() const { return aborted_.load(std::memory_order_relaxed); }

  static void recover_root(pmem::Pool&, Root* r, const std::function<void(void*)>& mark) {
    recover_area(&r->log);
    mark_area(&r->log, mark);
  }

 private:
  Root* root_;
  Logger log_;
  Lock lock_;
  std::atomic<std::uint64_t> aborted_{0};
};

inline const bool kLoggedFillRootRegistered = pmem::register_root_type<LoggedFill::Root>(&LoggedFill::recover_root);

}  // namespace ferrite::logging

namespace ferrite::adapters::logging {

inline constexpr std::int32_t kFill = 120;

template <>
struct Workload<ferrite::logging::LoggedFill> {
  static constexpr op::Abstract kAbstract = op::Abstract::kMap;  // unused: region spec
  static constexpr const char* kName = "fill";
  static auto make(pmem::Pool& p, const Setup& s, const ferrite::logging::LoggerOptions& o) {
    return std::make_unique<ferrite::logging::LoggedFill>(p, s.name, s.threads, o);
  }
  // arg: start * 64 + len; arg2: the first value.
  static op::Response apply(ferrite::logging::LoggedFill& f, int tid, const op::Op& o) {
    switch (o.kind) {
      case kFill: {
        const auto a = static_cast<std::uint64_t>(o.arg);
        return op::Response::of(f.fill(tid, a / 64, a % 64, o.arg2));
      }
      case op::kSync: return op::Response::ack();
      default: unsupported("logging fill", o);
    }
  }
  static State observe(ferrite::logging::LoggedFill& f) { return f.snapshot(); }
  // Half fills that fit (1..kFit words), half that overflow the log
  // (kFit + 1 .. kFit + 3 words); unique values, 16 apart.
  static op::Op next_op(int tid, std::uint64_t& rng, adapters::Workload& w) {
    const std::uint64_t r = adapters::Workload::step(rng);
    const std::uint64_t start = (r >> 8) % ferrite::logging::LoggedFill::kWords;
    constexpr std::uint64_t kFit = ferrite::logging::LoggedFill::kFit;
    const std::uint64_t len = r % 2 == 0 ? 1 + (r >> 16) % kFit : kFit + 1 + (r >> 16) % 3;
    return {kFill, static_cast<std::int64_t>(start * 64 + len), 16 * w.unique(tid)};
  }
  static crash::RegionSpec region_spec() {
    crash::RegionSpec s;
    s.name = "fill";
    s.apply = [](State& st, const op::Op& o) {
      if (st.size() != ferrite::logging::LoggedFill::kWords) throw std::invalid_argument("fill: malformed state");
      if (o.kind != kFill) throw std::invalid_argument("fill: not a fill");
      const auto a = static_cast<std::uint64_t>(o.arg);
      const std::uint64_t start = a / 64, len = a % 64;
      if (len > ferrite::logging::LoggedFill::kFit) return op::Response::of(ferrite::logging::LoggedFill::kAborted);
      const std::int64_t old = st[start % ferrite::logging::LoggedFill::kWords];
      for (std::uint64_t j = 0; j < len; ++j)
        st[(start + j) % ferrite::logging::LoggedFill::kWords] = o.arg2 + static_cast<std::int64_t>(j);
      return op::Response::of(old);
    };
    s.format = [](const op::Op& o) {
      const auto a = static_cast<std::uint64_t>(o.arg);
      return "fill(" + std::to_string(a / 64) + ", " + std::to_string(a % 64) + " words, " + std::to_string(o.arg2) +
             ")";
    };
    return s;
  }
};

}  // namespace ferrite::adapters::logging

namespace ferrite::test::logging {

// The adapter traits, on LoggedFill's small log, counting the fills the
// run rolled back (the campaign runs the workload in this process).
template <ferrite::logging::Language L, ferrite::logging::Instrumentation I,
          unsigned F = ferrite::logging::internal::kNoFaults>
struct Fill : ferrite::adapters::logging::Logged<ferrite::logging::LoggedFill, L, I, F> {
  using Base = ferrite::adapters::logging::Logged<ferrite::logging::LoggedFill, L, I, F>;
  using Handle = typename Base::Handle;
  static ferrite::logging::LoggerOptions options(const ferrite::adapters::Setup& s) {
    auto o = Base::options(s);
    o.capacity = ferrite::logging::LoggedFill::kCapacity;
    return o;
  }
  static Handle create(ferrite::pmem::Pool* pool, const ferrite::adapters::Setup& s) {
    return Base::T::make(*pool, s, options(s));
  }
  static Handle attach(ferrite::pmem::Pool& pool, const ferrite::adapters::Setup& s) { return create(&pool, s); }
  static inline std::atomic<std::uint64_t> aborted{0};  // the most in one run
  static ferrite::op::Response apply(Handle& h, int tid, std::uint64_t seq, const ferrite::op::Op& o) {
    auto r = Base::apply(h, tid, seq, o);
    const std::uint64_t n = h->aborted();
    for (std::uint64_t m = aborted.load(); m < n && !aborted.compare_exchange_weak(m, n);) {
    }
    return r;
  }
};

template <class A>
ferrite::crash::SubjectInfo fill_subject(const std::string& name, const char* variant, bool broken) {
  ferrite::crash::SubjectInfo info;
  info.structure = name;
  info.variant = variant;
  info.expect_violation = broken;
  info.make = [] { return std::unique_ptr<ferrite::crash::Subject>(new ferrite::adapters::internal::Subject<A>()); };
  return info;
}

}  // namespace ferrite::test::logging
