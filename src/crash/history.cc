#include "ferrite/crash/history.h"

#include <stdexcept>
#include <string>

namespace ferrite::crash {

void History::reset(int threads, std::size_t per_thread) {
  if (threads <= 0) throw std::invalid_argument("History: threads must be positive");
  logs_.clear();
  for (int t = 0; t < threads; ++t) {
    auto log = std::make_unique<Log>();
    log->records = std::make_unique<Record[]>(per_thread);
    log->capacity = per_thread;
    logs_.push_back(std::move(log));
  }
  clock_.store(0, std::memory_order_relaxed);
}

std::size_t History::invoke(int tid, std::uint64_t seq, const Op& op) {
  if (tid < 0 || tid >= threads()) throw std::out_of_range("History: bad thread id " + std::to_string(tid));
  Log& log = *logs_[tid];
  // Single writer: a relaxed load of our own counter is exact.
  const std::size_t i = log.size.load(std::memory_order_relaxed);
  if (i >= log.capacity) throw std::length_error("History: log of thread " + std::to_string(tid) + " is full");
  Record& r = log.records[i];
  r.op = op;
  r.seq = seq;
  r.invoke = stamp();
  r.done.store(0, std::memory_order_relaxed);
  // ORDER: release publishes the record's fields before the new length.
  log.size.store(i + 1, std::memory_order_release);
  return i;
}

void History::respond(int tid, std::size_t index, const Response& resp) {
  Record& r = logs_.at(tid)->records[index];
  r.response = resp;
  r.respond = stamp();
  // ORDER: release publishes response and stamp before the done flag.
  r.done.store(1, std::memory_order_release);
}

std::vector<HistoryOp> History::snapshot() const {
  std::vector<HistoryOp> out;
  for (std::size_t t = 0; t < logs_.size(); ++t) {
    const Log& log = *logs_[t];
    const std::size_t n = log.size.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < n; ++i) {
      const Record& r = log.records[i];
      HistoryOp h;
      h.tid = static_cast<int>(t);
      h.seq = r.seq;
      h.op = r.op;
      h.invoke = r.invoke;
      if (r.done.load(std::memory_order_acquire) != 0) {
        h.respond = r.respond;
        h.response = r.response;
      }
      out.push_back(h);
    }
  }
  return out;
}

}  // namespace ferrite::crash
