// Crash-campaign adapters of the lock-free persistent competitors:
// izraelevitz-ms, izraelevitz-treiber (durably linearizable),
// friedman-durable (durably linearizable), friedman-log (detectable), each
// "correct" plus deliberately broken variants the campaigns must catch.
#include <cstdint>
#include <memory>
#include <vector>

#include "baseline_subjects_common.h"
#include "ferrite/baselines/friedman.h"
#include "ferrite/baselines/izraelevitz.h"

namespace {

namespace fb = ferrite::baselines;
namespace cr = ferrite::crash;
using ferrite::pmem::Pool;
using fb::subjects::factory;

constexpr const char* kRoot = "baseline-subject";

template <unsigned F>
struct IzQueue {
  static constexpr cr::Spec kSpec = cr::Spec::kQueue;
  static constexpr bool kDetectable = false;
  std::unique_ptr<fb::IzraelevitzQueue<F>> q;
  void create(Pool& p, int t) { q = std::make_unique<fb::IzraelevitzQueue<F>>(p, kRoot, t); }
  void recover(Pool& p, int t) {
    fb::subjects::abandon(q);
    q = std::make_unique<fb::IzraelevitzQueue<F>>(p, kRoot, t);
  }
  void insert(int tid, std::uint64_t, std::int64_t v) { q->enqueue(tid, v); }
  bool remove(int tid, std::uint64_t, std::int64_t* v) { return q->try_dequeue(tid, v); }
  std::vector<std::int64_t> observe() { return q->snapshot(); }
};

template <unsigned F>
struct IzStack {
  static constexpr cr::Spec kSpec = cr::Spec::kStack;
  static constexpr bool kDetectable = false;
  std::unique_ptr<fb::IzraelevitzStack<F>> s;
  void create(Pool& p, int t) { s = std::make_unique<fb::IzraelevitzStack<F>>(p, kRoot, t); }
  void recover(Pool& p, int t) {
    fb::subjects::abandon(s);
    s = std::make_unique<fb::IzraelevitzStack<F>>(p, kRoot, t);
  }
  void insert(int tid, std::uint64_t, std::int64_t v) { s->push(tid, v); }
  bool remove(int tid, std::uint64_t, std::int64_t* v) { return s->try_pop(tid, v); }
  std::vector<std::int64_t> observe() { return s->snapshot(); }
};

template <bool kLog, unsigned F>
struct Friedman {
  static constexpr cr::Spec kSpec = cr::Spec::kQueue;
  static constexpr bool kDetectable = kLog;
  using Q = fb::FriedmanQueue<kLog, F>;
  std::unique_ptr<Q> q;
  void create(Pool& p, int t) { q = std::make_unique<Q>(p, kRoot, t); }
  void recover(Pool& p, int t) {
    fb::subjects::abandon(q);
    q = std::make_unique<Q>(p, kRoot, t);
  }
  void insert(int tid, std::uint64_t seq, std::int64_t v) { q->enqueue(tid, seq, v); }
  bool remove(int tid, std::uint64_t seq, std::int64_t* v) { return q->try_dequeue(tid, seq, v); }
  std::vector<std::int64_t> observe() { return q->snapshot(); }
  cr::Response recover_op(int tid, std::uint64_t seq, const cr::Op& op) {
    if constexpr (kLog) {
      std::int64_t v = 0;
      const bool enq = op.kind == cr::kEnqueue;
      const bool r = q->recover_op(tid, seq, enq, op.arg, &v);
      if (enq || !r) return {false, 0};
      return {true, v};
    } else {
      return {};
    }
  }
};

template <unsigned F>
using FriedmanDurable = Friedman<false, F>;
template <unsigned F>
using FriedmanLog = Friedman<true, F>;

}  // namespace

FERRITE_REGISTER_CRASH_SUBJECT("izraelevitz-ms", "correct", false,
                               "MS queue under the Izraelevitz transform (pwb+pfence after every shared access)",
                               factory<IzQueue<fb::kNoFaults>>());
FERRITE_REGISTER_CRASH_SUBJECT("izraelevitz-ms", "no-node-pwb", true,
                               "new nodes are linked without being written back",
                               factory<IzQueue<fb::kNoNodePwb>>());
FERRITE_REGISTER_CRASH_SUBJECT("izraelevitz-ms", "no-cas-pwb", true,
                               "stores and CASes are not written back (loads still are)",
                               factory<IzQueue<fb::kNoLinkPwb>>());
FERRITE_REGISTER_CRASH_SUBJECT("izraelevitz-treiber", "correct", false,
                               "Treiber stack under the Izraelevitz transform",
                               factory<IzStack<fb::kNoFaults>>());
FERRITE_REGISTER_CRASH_SUBJECT("izraelevitz-treiber", "no-node-pwb", true,
                               "new nodes are linked without being written back",
                               factory<IzStack<fb::kNoNodePwb>>());
FERRITE_REGISTER_CRASH_SUBJECT("izraelevitz-treiber", "no-cas-pwb", true,
                               "stores and CASes are not written back (loads still are)",
                               factory<IzStack<fb::kNoLinkPwb>>());
FERRITE_REGISTER_CRASH_SUBJECT("friedman-durable", "correct", false,
                               "Friedman et al. PPoPP'18 durable queue",
                               factory<FriedmanDurable<fb::kNoFaults>>());
FERRITE_REGISTER_CRASH_SUBJECT("friedman-durable", "no-node-pwb", true,
                               "nodes linked without being written back",
                               factory<FriedmanDurable<fb::kNoNodePwb>>());
FERRITE_REGISTER_CRASH_SUBJECT("friedman-durable", "no-link-pwb", true,
                               "the linking CAS (last->next) is not written back",
                               factory<FriedmanDurable<fb::kNoLinkPwb>>());
FERRITE_REGISTER_CRASH_SUBJECT("friedman-log", "correct", false,
                               "Friedman et al. PPoPP'18 log queue (detectable)",
                               factory<FriedmanLog<fb::kNoFaults>>());
FERRITE_REGISTER_CRASH_SUBJECT("friedman-log", "no-log-pwb", true,
                               "per-thread log entries never written back (recover_op guesses wrong)",
                               factory<FriedmanLog<fb::kNoLogPwb>>());
FERRITE_REGISTER_CRASH_SUBJECT("friedman-log", "no-node-pwb", true,
                               "nodes linked without being written back",
                               factory<FriedmanLog<fb::kNoNodePwb>>());
