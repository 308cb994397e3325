// ferrite/op.h — the one operation vocabulary of Ferrite.
//
// Every abstract structure Ferrite knows (queue, stack, priority queue, set,
// map, register, log), its operations and their typed responses, named once.
// The crash checkers (crash/checker.h) interpret histories of these
// operations against a sequential specification; the adapters
// (adapters/adapter.h) translate them into a structure's own calls; the
// benchmark workloads generate them; a detectable structure's recovery
// answers them (ferrite/detectable.h).
//
// Encoding. An operation is (kind, arg, arg2):
//   queue           kEnqueue(v) -> ack             kDequeue -> v | empty
//   stack           kPush(v) -> ack                kPop -> v | empty
//   priority queue  kInsert(k) -> ack | full       kDeleteMin -> k | empty, kGetMin -> k | empty
//   set             kInsert(k) / kRemove(k) / kContains(k) -> bool
//   map             kPut(k, v) -> old | none       kGet(k) -> v | none, kErase(k) -> old | none
//   register        kMul(f) -> old value           kRead -> value   (values are double bits:
//                                                   the PBcomb paper's AtomicFloat)
//   log             kAppend(v) -> index
//   every structure kSync -> ack (nbMontage's sync(); a no-op on the abstract state)
// A Response is (has_value, value): ack / empty / none is {false, 0}; a value,
// an old value, an index is {true, v}; a bool is {true, 0 or 1}.
//
// The numeric values of Kind are part of the detectable operation record's
// on-media format (ferrite/detectable.h): append, never renumber.
//
// Thread safety: plain values; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ferrite::op {

// The abstract structures (sequential specifications the checkers know).
enum class Abstract : std::uint8_t {
  kQueue,
  kStack,
  kPriorityQueue,  // min-first
  kSet,
  kMap,
  kRegister,  // AtomicFloat: a double multiplied in place
  kLog,       // append-only log
};

// Unscoped on purpose: `op::kPush` reads well, converts to the int32 kind
// field of Op, and Kind::kPush also works where a scoped name reads better.
enum Kind : std::int32_t {
  kNone = 0,
  kEnqueue = 1,
  kDequeue,
  kPush,
  kPop,
  kInsert,
  kDeleteMin,
  kGetMin,
  kRemove,
  kContains,
  kPut,
  kGet,
  kErase,
  kMul,
  kRead,
  kAppend,
  // Accepted by every abstract structure as a no-op on its state: a
  // structure's sync() (nbMontage). Buffered durable linearizability uses
  // its response time as the durability bound.
  kSync,
};

struct Op {
  std::int32_t kind = kNone;
  std::int64_t arg = 0;   // value / key / factor bits
  std::int64_t arg2 = 0;  // map value
  friend bool operator==(const Op&, const Op&) = default;
};

struct Response {
  bool has_value = false;  // false: ack / empty / none
  std::int64_t value = 0;
  friend bool operator==(const Response&, const Response&) = default;

  static Response ack() { return {}; }
  static Response none() { return {}; }
  static Response of(std::int64_t v) { return {true, v}; }
  static Response boolean(bool b) { return {true, b ? 1 : 0}; }
  static Response from(const std::optional<std::int64_t>& v) { return v ? of(*v) : none(); }
  std::optional<std::int64_t> as_optional() const {
    return has_value ? std::optional<std::int64_t>(value) : std::nullopt;
  }
};

// Names used on the command line and in JSON output ("queue", "stack",
// "heap", "set", "map", "atomic-float", "log": the benchmark's names, which
// its JSON schema fixes).
constexpr std::string_view abstract_name(Abstract a) {
  switch (a) {
    case Abstract::kQueue: return "queue";
    case Abstract::kStack: return "stack";
    case Abstract::kPriorityQueue: return "heap";
    case Abstract::kSet: return "set";
    case Abstract::kMap: return "map";
    case Abstract::kRegister: return "atomic-float";
    case Abstract::kLog: return "log";
  }
  return "?";
}
inline bool parse_abstract(std::string_view s, Abstract* out) {
  for (auto a : {Abstract::kQueue, Abstract::kStack, Abstract::kPriorityQueue, Abstract::kSet,
                 Abstract::kMap, Abstract::kRegister, Abstract::kLog}) {
    if (abstract_name(a) == s) {
      *out = a;
      return true;
    }
  }
  if (s == "priority-queue" || s == "pq") return *out = Abstract::kPriorityQueue, true;
  if (s == "register" || s == "float") return *out = Abstract::kRegister, true;
  return false;
}

constexpr std::string_view kind_name(std::int32_t k) {
  switch (k) {
    case kNone: return "none";
    case kEnqueue: return "enqueue";
    case kDequeue: return "dequeue";
    case kPush: return "push";
    case kPop: return "pop";
    case kInsert: return "insert";
    case kDeleteMin: return "delete_min";
    case kGetMin: return "get_min";
    case kRemove: return "remove";
    case kContains: return "contains";
    case kPut: return "put";
    case kGet: return "get";
    case kErase: return "erase";
    case kMul: return "mul";
    case kRead: return "read";
    case kAppend: return "append";
    case kSync: return "sync";
  }
  return "?";
}

// The update that adds an element / the one that takes one out (the
// benchmark's pair workloads): enqueue/dequeue, push/pop, insert/delete-min,
// insert/remove, put/erase, mul/read, append/none.
constexpr Kind insert_kind(Abstract a) {
  switch (a) {
    case Abstract::kQueue: return kEnqueue;
    case Abstract::kStack: return kPush;
    case Abstract::kPriorityQueue: return kInsert;
    case Abstract::kSet: return kInsert;
    case Abstract::kMap: return kPut;
    case Abstract::kRegister: return kMul;
    case Abstract::kLog: return kAppend;
  }
  return kNone;
}
constexpr Kind remove_kind(Abstract a) {
  switch (a) {
    case Abstract::kQueue: return kDequeue;
    case Abstract::kStack: return kPop;
    case Abstract::kPriorityQueue: return kDeleteMin;
    case Abstract::kSet: return kRemove;
    case Abstract::kMap: return kErase;
    case Abstract::kRegister: return kRead;
    case Abstract::kLog: return kNone;
  }
  return kNone;
}
// The read-only lookup of keyed structures (kContains / kGet); kNone else.
constexpr Kind lookup_kind(Abstract a) {
  return a == Abstract::kSet ? kContains : a == Abstract::kMap ? kGet : kNone;
}
// True when `k` changes no abstract state of `a`.
constexpr bool is_read_only(Abstract a, std::int32_t k) {
  return k == kContains || k == kGet || k == kGetMin || k == kSync ||
         (a == Abstract::kRegister && k == kRead);
}

}  // namespace ferrite::op
