// src/crash/wire.h — byte encoding and framed messages between the crash
// campaign's processes (runner, zygote, workers, recovery-crash children).
//
// Private to src/crash/. Everything is little-endian 8-byte words, written
// and read by the same binary, so no versioning is needed. Messages on the
// stream sockets are framed (8-byte length + payload); a file descriptor may
// ride along with a message (SCM_RIGHTS). Sends never raise SIGPIPE: a peer
// that died shows up as a false return.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "ferrite/crash/checker.h"
#include "ferrite/crash/history.h"

namespace ferrite::crash::wire {

// The encoding, over any sink that provides raw(p, n) (append n bytes):
// a string (Writer, below) or a fixed shared area (restart.cc's report
// area for the children that crash recovery).
template <class Sink>
class Encoder {
 public:
  void u64(std::uint64_t v) { sink().raw(&v, 8); }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void str(std::string_view s) {
    u64(s.size());
    sink().raw(s.data(), s.size());
  }
  void vec(const std::vector<std::int64_t>& v) {
    u64(v.size());
    sink().raw(v.data(), v.size() * 8);
  }

 private:
  Sink& sink() { return static_cast<Sink&>(*this); }
};

class Writer : public Encoder<Writer> {
 public:
  void raw(const void* p, std::size_t n) {
    if (n > 0) buf_.append(static_cast<const char*>(p), n);
  }
  const std::string& data() const { return buf_; }
  std::string& data() { return buf_; }
  void clear() { buf_.clear(); }

 private:
  std::string buf_;
};

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  bool ok() const { return ok_; }
  bool done() const { return pos_ == s_.size(); }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    if (!ok_ || pos_ + 8 > s_.size()) {
      ok_ = false;
      return 0;
    }
    std::memcpy(&v, s_.data() + pos_, 8);
    pos_ += 8;
    return v;
  }
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  // n bytes in place (nullptr and !ok() when short).
  const char* raw(std::size_t n) {
    if (!ok_ || n > s_.size() - pos_) {
      ok_ = false;
      return nullptr;
    }
    const char* p = s_.data() + pos_;
    pos_ += n;
    return p;
  }
  std::string str() {
    const auto n = u64();
    const char* p = raw(n);
    return p != nullptr ? std::string(p, n) : std::string();
  }
  std::vector<std::int64_t> vec() {
    const auto n = u64();
    std::vector<std::int64_t> v;
    if (!ok_ || n > (s_.size() - pos_) / 8) {
      ok_ = false;
      return v;
    }
    v.resize(n);
    if (n > 0) std::memcpy(v.data(), raw(n * 8), n * 8);
    return v;
  }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

void put(Writer& w, const std::vector<HistoryOp>& ops);
std::vector<HistoryOp> get_history(Reader& r);
void put(Writer& w, const CheckResult& c);
CheckResult get_check(Reader& r);

// Framed messages on a stream socket. send: false when the peer is gone.
bool send_msg(int sock, const std::string& payload, int fd = -1);
// false on end of stream or error; *fd (if given) receives a passed
// descriptor or -1.
bool recv_msg(int sock, std::string& payload, int* fd = nullptr);

// Everything until end of file (pipes from short-lived children).
std::string read_all(int fd);
// Writes everything (EINTR retried); false on error.
bool write_all(int fd, const void* p, std::size_t n);
// waitpid, retried on EINTR; the status.
int wait_child(pid_t pid);
// "killed by Segmentation fault", "exited with status 3", "hung (...)"
std::string describe_status(int status, double timeout_s, double cpu_s = 0);
// alarm(2) to the microsecond: SIGALRM after `seconds` of wall clock, and
// SIGPROF after `cpu_seconds` of the process's CPU time (each 0: disarmed).
// The hang limits of a recovery (CampaignConfig::recovery_timeout_s,
// recovery_cpu_s).
void arm_alarm(double seconds, double cpu_seconds = 0);

// splitmix64 finalizer: the campaign's deterministic hash.
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// splitmix64 as a generator: the next value of the sequence `state` walks.
inline std::uint64_t splitmix(std::uint64_t& state) {
  const std::uint64_t r = mix(state);
  state += 0x9e3779b97f4a7c15ull;
  return r;
}

}  // namespace ferrite::crash::wire
