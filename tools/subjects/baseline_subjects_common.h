// Shared pieces of the crash adapters of the persistent competitors
// (tools/subjects/baseline_*.cc): value generation, the container adapter.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "ferrite/crash/subject.h"
#include "ferrite/pmem/pool.h"

namespace ferrite::baselines::subjects {

namespace cr = ferrite::crash;

// Unique nonzero values: (tid + 1) << 32 | per-thread counter.
struct ValueGen {
  std::vector<std::uint64_t> next;
  void reset(int threads) { next.assign(static_cast<std::size_t>(threads), 0); }
  std::int64_t operator()(int tid) {
    const auto n = ++next[static_cast<std::size_t>(tid)];
    return static_cast<std::int64_t>((static_cast<std::uint64_t>(tid) + 1) << 32 | n);
  }
};

inline std::uint64_t next_rand(std::uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

// Impl must provide:
//   static constexpr cr::Spec kSpec; static constexpr bool kDetectable;
//   void create(pmem::Pool&, int threads);   void recover(pmem::Pool&, int threads);
//   void insert(int tid, uint64_t seq, int64_t v);
//   bool remove(int tid, uint64_t seq, int64_t* out);
//   std::vector<int64_t> observe();
//   cr::Response recover_op(int tid, uint64_t seq, const cr::Op& op);   (detectable only)
template <class Impl>
class ContainerSubject final : public cr::Subject {
 public:
  cr::Spec spec() const override { return Impl::kSpec; }
  bool detectable() const override { return Impl::kDetectable; }
  void create(pmem::Pool& pool, int threads) override {
    gen_.reset(threads);
    impl_.create(pool, threads);
  }
  cr::Response apply(int tid, std::uint64_t seq, const cr::Op& op) override {
    if (op.kind == insert_kind()) {
      impl_.insert(tid, seq, op.arg);
      return {false, 0};
    }
    std::int64_t v = 0;
    if (impl_.remove(tid, seq, &v)) return {true, v};
    return {false, 0};
  }
  void recover(pmem::Pool& pool, int threads) override {
    gen_.reset(threads);
    impl_.recover(pool, threads);
  }
  cr::Response recover_op(int tid, std::uint64_t seq, const cr::Op& op) override {
    if constexpr (Impl::kDetectable) {
      return impl_.recover_op(tid, seq, op);
    } else {
      (void)tid, (void)seq, (void)op;
      throw std::logic_error("recover_op on a non-detectable subject");
    }
  }
  std::vector<std::int64_t> observe() override { return impl_.observe(); }
  cr::Op next_op(int tid, std::uint64_t& rng) override {
    if (next_rand(rng) % 2 == 0) return {insert_kind(), gen_(tid), 0};
    return {remove_kind(), 0, 0};
  }

 private:
  static std::int32_t insert_kind() {
    switch (Impl::kSpec) {
      case cr::Spec::kQueue: return cr::kEnqueue;
      case cr::Spec::kStack: return cr::kPush;
      default: return cr::kInsert;
    }
  }
  static std::int32_t remove_kind() {
    switch (Impl::kSpec) {
      case cr::Spec::kQueue: return cr::kDequeue;
      case cr::Spec::kStack: return cr::kPop;
      default: return cr::kDeleteMin;
    }
  }
  Impl impl_;
  ValueGen gen_;
};

template <class Impl>
std::function<std::unique_ptr<cr::Subject>()> factory() {
  return [] { return std::unique_ptr<cr::Subject>(new ContainerSubject<Impl>()); };
}

// In a crashed child the structure object from before the crash must not
// run its destructor (it would hand blocks to the stale heap): leak it.
template <class T>
void abandon(std::unique_ptr<T>& p) {
  (void)p.release();
}

}  // namespace ferrite::baselines::subjects
