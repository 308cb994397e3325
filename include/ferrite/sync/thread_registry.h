// ferrite/sync/thread_registry.h — dense thread ids in [0, max_threads).
//
// Combining and Montage index per-thread slots by id. A thread acquires an id
// with `acquire()` and holds it through the returned RAII Handle; exhausting
// the registry throws `RegistryFull` (never undefined behaviour).
//
// Thread safety: all members are safe to call concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ferrite::sync {

class RegistryFull : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ThreadRegistry {
 public:
  static constexpr int kDefaultMaxThreads = 64;

  explicit ThreadRegistry(int max_threads = kDefaultMaxThreads)
      : max_(max_threads), used_(static_cast<std::size_t>(max_threads)) {
    if (max_threads <= 0) throw std::invalid_argument("ThreadRegistry: max_threads must be > 0");
  }
  ThreadRegistry(const ThreadRegistry&) = delete;
  ThreadRegistry& operator=(const ThreadRegistry&) = delete;

  class Handle {
   public:
    Handle() = default;
    Handle(Handle&& o) noexcept : reg_(o.reg_), id_(o.id_) { o.reg_ = nullptr; o.id_ = -1; }
    Handle& operator=(Handle&& o) noexcept {
      if (this != &o) { release(); reg_ = o.reg_; id_ = o.id_; o.reg_ = nullptr; o.id_ = -1; }
      return *this;
    }
    ~Handle() { release(); }
    int id() const { return id_; }
    explicit operator bool() const { return id_ >= 0; }
    void release() {
      if (reg_) reg_->used_[static_cast<std::size_t>(id_)].store(false, std::memory_order_release);
      reg_ = nullptr;
      id_ = -1;
    }

   private:
    friend class ThreadRegistry;
    Handle(ThreadRegistry* r, int id) : reg_(r), id_(id) {}
    ThreadRegistry* reg_ = nullptr;
    int id_ = -1;
  };

  // Lowest free id. Throws RegistryFull when all max_threads ids are held.
  Handle acquire() {
    for (int i = 0; i < max_; ++i) {
      auto& slot = used_[static_cast<std::size_t>(i)];
      bool expected = false;
      // ORDER: acq_rel pairs with the release in Handle::release so the new
      // owner sees everything the previous owner of the id wrote.
      if (!slot.load(std::memory_order_relaxed) &&
          slot.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
        return Handle(this, i);
      }
    }
    throw RegistryFull("ThreadRegistry: all " + std::to_string(max_) + " thread ids are in use");
  }

  int max_threads() const { return max_; }
  int in_use() const {
    int n = 0;
    for (const auto& s : used_) n += s.load(std::memory_order_relaxed) ? 1 : 0;
    return n;
  }

 private:
  int max_;
  std::vector<std::atomic<bool>> used_;
};

}  // namespace ferrite::sync

namespace ferrite {
// A thread's identity in every user-facing API: an id from a ThreadRegistry,
// held for the thread's lifetime (RAII). Structures index per-thread slots by
// its id(); raw ids are for adapters and benchmarks.
using Thread = sync::ThreadRegistry::Handle;

// Thread capacities. A structure created without a count holds
// kDefaultThreads ids (as many as a ThreadRegistry hands out by default, and
// at least this machine's hardware threads on any machine Ferrite targets);
// a structure attached with kAsCreated (attach's default) takes every id of
// the capacity it was created with. Above the capacity, attach throws,
// naming both counts.
inline constexpr int kDefaultThreads = sync::ThreadRegistry::kDefaultMaxThreads;
inline constexpr int kAsCreated = 0;
}  // namespace ferrite
