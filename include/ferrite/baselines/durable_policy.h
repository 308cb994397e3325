// ferrite/baselines/durable_policy.h — the three persistence policies under
// which Ferrite writes each of Mirror's competitor algorithms once (Harris's
// list and hash table in harris_hash.h, the Natarajan–Mittal BST in
// nm_bst.h, the Herlihy–Shavit skip list in hs_skip_list.h):
//
//   durable::Transient     DRAM, no persistence: the original algorithm;
//   durable::Izraelevitz   the Izraelevitz–Mendes–Scott transform (J.
//                          Izraelevitz, H. Mendes, M. L. Scott,
//                          "Linearizability of Persistent Memory Objects
//                          Under a Full-System-Crash Failure Model", DISC
//                          2016, §5): a write-back and a persist fence after
//                          every shared load and every store/CAS;
//   durable::NVTraverse    the NVTraverse transform (M. Friedman, N.
//                          Ben-David, Y. Wei, G. E. Blelloch, E. Petrank,
//                          "NVTraverse: In NVRAM Data Structures, the
//                          Destination is More Important than the Journey",
//                          PLDI 2020, §3–4): the traversal phase issues no
//                          write-back; at its end ensureReachable and
//                          makePersistent write back the nodes the traversal
//                          returns and a fence orders them; the critical
//                          phase writes back every location it reads and
//                          every CAS, with a fence before each CAS and before
//                          returning.
//
// A policy says what follows each kind of shared access; an algorithm calls
//   traverse_read(a)       a load in the traversal phase;
//   read(a)                a load in the critical phase;
//   cas(a, expected, d)    a CAS (strong) on a shared location;
//   fetch_or(a, bits)      an atomic OR (the BST's bit-test-and-set);
//   publish(p, n)          a fresh node's initializing stores, before the
//                          CAS that links it;
//   make_persistent(p, n)  a location the traversal returns (NVTraverse's
//                          ensureReachable / makePersistent; the others
//                          flushed it when they read it, or never persist);
//   traversal_done()       the fence that ends makePersistent;
//   end_op()               before the operation returns.
//
// Thread safety: the policies are stateless; every function may be called
// concurrently. The fence is psync (a persist fence), as in
// baselines/izraelevitz.h: a value that thread A wrote and thread B read
// must be durable before B's effects can be; on x86 pfence and psync are the
// same sfence.
//
// Broken variants (the crash tests must catch each) are fault bits of the
// durable policies: kNoLinkPwb (persistent_common.h, CASes not written back)
// and the test machinery of internal/durable_faults.h (kNoMakePersistent,
// kNoRecoveryHelp); a policy carries its bits as kFaults.
#pragma once

#include <atomic>
#include <cstddef>

#include "ferrite/baselines/internal/durable_faults.h"
#include "ferrite/baselines/persistent_common.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/ebr.h"

namespace ferrite::baselines {

namespace durable {

struct Transient {
  static constexpr bool kDurable = false;
  static constexpr bool kMakesPersistent = false;  // make_persistent is a no-op
  static constexpr unsigned kFaults = kNoFaults;
  template <class T>
  static T traverse_read(const std::atomic<T>& a) {
    return a.load(std::memory_order_acquire);  // ORDER: acquire — the node contents behind a link
  }
  template <class T>
  static T read(const std::atomic<T>& a) {
    return a.load(std::memory_order_acquire);  // ORDER: as traverse_read
  }
  template <class T>
  static bool cas(std::atomic<T>& a, T& expected, T desired) {
    // ORDER: acq_rel publishes a new node; acquire reads the value on failure.
    return a.compare_exchange_strong(expected, desired, std::memory_order_acq_rel, std::memory_order_acquire);
  }
  template <class T>
  static T fetch_or(std::atomic<T>& a, T bits) {
    return a.fetch_or(bits, std::memory_order_acq_rel);  // ORDER: as cas
  }
  static void publish(const void*, std::size_t) {}
  static void make_persistent(const void*, std::size_t) {}
  static void traversal_done() {}
  static void end_op() {}
};

template <unsigned Faults = kNoFaults>
struct Izraelevitz {
  static constexpr bool kDurable = true;
  static constexpr bool kMakesPersistent = false;
  static constexpr unsigned kFaults = Faults;
  template <class T>
  static T read(const std::atomic<T>& a) {
    const T v = a.load(std::memory_order_acquire);  // ORDER: acquire, as Transient
    // PERSIST: IMS'16 §5: a load is followed by a flush of the location and
    // a fence, so the value read is durable before it influences anything.
    persist::pwb(&a);
    persist::psync();
    return v;
  }
  template <class T>
  static T traverse_read(const std::atomic<T>& a) {
    return read(a);  // the transform knows no traversal: every load is flushed
  }
  template <class T>
  static bool cas(std::atomic<T>& a, T& expected, T desired) {
    const bool ok = a.compare_exchange_strong(expected, desired, std::memory_order_acq_rel, std::memory_order_acquire);
    // PERSIST: IMS'16 §5: a CAS (successful or not: it is also a load) is
    // followed by a flush of the location and a fence.
    if constexpr ((Faults & kNoLinkPwb) == 0) persist::pwb(&a);
    persist::psync();
    return ok;
  }
  template <class T>
  static T fetch_or(std::atomic<T>& a, T bits) {
    const T old = a.fetch_or(bits, std::memory_order_acq_rel);  // ORDER: as cas
    // PERSIST: IMS'16 §5: an RMW is a store: flush and fence.
    if constexpr ((Faults & kNoLinkPwb) == 0) persist::pwb(&a);
    persist::psync();
    return old;
  }
  static void publish(const void* p, std::size_t n) {
    // PERSIST: the fresh node's initializing stores, durable before the CAS
    // that publishes it.
    persist::pwb(p, n);
    persist::psync();
  }
  static void make_persistent(const void*, std::size_t) {}  // every load was flushed already
  static void traversal_done() {}
  static void end_op() {
    persist::psync();  // PERSIST: durable before the response (redundant after the rule)
  }
};

template <unsigned Faults = kNoFaults>
struct NVTraverse {
  static constexpr bool kDurable = true;
  static constexpr bool kMakesPersistent = true;
  static constexpr unsigned kFaults = Faults;
  template <class T>
  static T traverse_read(const std::atomic<T>& a) {
    // PERSIST: none — NVTraverse: the traversal phase flushes nothing.
    return a.load(std::memory_order_acquire);  // ORDER: acquire, as Transient
  }
  template <class T>
  static T read(const std::atomic<T>& a) {
    const T v = a.load(std::memory_order_acquire);  // ORDER: acquire, as Transient
    // PERSIST: NVTraverse, critical phase: flush after every read; the
    // fence is the one before the next CAS or before returning.
    persist::pwb(&a);
    return v;
  }
  template <class T>
  static bool cas(std::atomic<T>& a, T& expected, T desired) {
    // PERSIST: NVTraverse: fence before every CAS — what this operation
    // read (and a new node) is durable before its CAS can be seen.
    persist::psync();
    const bool ok = a.compare_exchange_strong(expected, desired, std::memory_order_acq_rel, std::memory_order_acquire);
    // PERSIST: NVTraverse: flush after every CAS (a failed CAS read the
    // location: flushed too).
    if constexpr ((Faults & kNoLinkPwb) == 0) persist::pwb(&a);
    return ok;
  }
  template <class T>
  static T fetch_or(std::atomic<T>& a, T bits) {
    persist::psync();  // PERSIST: as cas: fence before
    const T old = a.fetch_or(bits, std::memory_order_acq_rel);  // ORDER: as cas
    if constexpr ((Faults & kNoLinkPwb) == 0) persist::pwb(&a);  // PERSIST: as cas: flush after
    return old;
  }
  static void publish(const void* p, std::size_t n) {
    // PERSIST: flush after the node's writes; the fence before the CAS
    // that links it orders them.
    persist::pwb(p, n);
  }
  static void make_persistent(const void* p, std::size_t n) {
    // PERSIST: NVTraverse ensureReachable / makePersistent: a location the
    // traversal read without flushing, now part of the answer.
    if constexpr ((Faults & internal::kNoMakePersistent) == 0) persist::pwb(p, n);
  }
  static void traversal_done() {
    persist::psync();  // PERSIST: the fence that ends makePersistent
  }
  static void end_op() {
    persist::psync();  // PERSIST: NVTraverse: fence before returning
  }
};

// Where a policy's nodes live: the pool heap (durable policies; blocks
// from the calling thread's arena) or the C++ heap (Transient). retire hands
// a node to EBR, which frees it once no operation pinned before can hold it.
template <class P>
class NodeMemory {
 public:
  NodeMemory() = default;  // Transient
  explicit NodeMemory(pmem::Heap* heap) : heap_(heap) {}
  void* alloc(std::size_t n, int tid) {
    if constexpr (P::kDurable) return heap_->alloc(n, tid);
    else return ::operator new(n);
  }
  void free_now(void* p, int tid) {
    if constexpr (P::kDurable) heap_->free(p, tid);
    else ::operator delete(p);
  }
  // ORDER: call after the CAS that removed p (and its write-back); EBR
  // frees p only after the caller unpins, after its end_op fence.
  void retire(sync::Ebr& ebr, void* p, int tid) {
    if constexpr (P::kDurable) ebr.retire(tid, p, &free_durable, heap_);
    else ebr.retire(tid, p, &free_dram, nullptr);
  }

 private:
  static void free_durable(void* heap, void* p, int tid) { static_cast<pmem::Heap*>(heap)->free(p, tid); }
  static void free_dram(void*, void* p, int) { ::operator delete(p); }
  pmem::Heap* heap_ = nullptr;
};

}  // namespace durable
}  // namespace ferrite::baselines
